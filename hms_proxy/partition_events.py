"""Partition marking (markPartitionForEvent, isPartitionMarkedForEvent), as HMS 2.3 answers it.
"""
from __future__ import annotations

from hms_proxy.family import Family


class PartitionEventCalls(Family):
    pass
