"""Partition specs and partition exchange (add_partitions_pspec, get_partitions_pspec,
get_part_specs_by_filter, exchange_partition, exchange_partitions), as HMS 2.3 answers them.
"""
from __future__ import annotations

from hms_proxy.family import Family


class PartitionSpecCalls(Family):
    pass
