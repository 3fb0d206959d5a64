"""Primary and foreign keys (create_table_with_constraints, get_primary_keys, get_foreign_keys,
add_primary_key, add_foreign_key, drop_constraint), as HMS 2.3 answers them.
"""
from __future__ import annotations

from hms_proxy.family import Family


class ConstraintCalls(Family):
    pass
