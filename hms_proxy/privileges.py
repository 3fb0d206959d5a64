"""Privileges on the global object, databases, tables, partitions and columns (grant_privileges,
revoke_privileges, grant_revoke_privileges, list_privileges, get_privilege_set), as HMS 2.3 answers them.
"""
from __future__ import annotations

from hms_proxy.family import Family


class PrivilegeCalls(Family):
    pass
