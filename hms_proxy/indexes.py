"""Indexes (add_index, alter_index, drop_index_by_name, get_index_by_name, get_index_names,
get_indexes), as HMS 2.3 answers them.
"""
from __future__ import annotations

from hms_proxy.family import Family


class IndexCalls(Family):
    pass
