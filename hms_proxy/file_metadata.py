"""File metadata calls (get_file_metadata, get_file_metadata_by_expr, put_file_metadata,
clear_file_metadata, cache_file_metadata), as HMS 2.3 answers them over its SQL store.
"""
from __future__ import annotations

from hms_proxy.family import Family


class FileMetadataCalls(Family):
    pass
