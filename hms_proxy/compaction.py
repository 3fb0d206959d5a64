"""Compaction requests (compact, compact2, show_compact), as HMS 2.3's TxnHandler answers them.
"""
from __future__ import annotations

from hms_proxy.family import Family


class CompactionCalls(Family):
    pass
