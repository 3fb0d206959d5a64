"""User types (create_type, get_type, drop_type, get_type_all), as HMS 2.3 answers them.
"""
from __future__ import annotations

from hms_proxy.family import Family


class TypeCalls(Family):
    pass
