"""Roles and role grants; table names by filter (owner, last access, parameters)."""

from __future__ import annotations

from tests.hms.conformance.builders import database, table
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T

USER, GROUP, ROLE = T.PrincipalType.USER, T.PrincipalType.GROUP, T.PrincipalType.ROLE
PREFIX = "cfrole_"


def mine(names):
    """Role names of this scenario plus the built-in ones (the server is shared)."""
    return sorted(n for n in names if n.startswith(PREFIX) or n in ("admin", "public"))


def roles(result):
    return sorted((r.roleName, r.ownerName, bool(r.createTime)) for r in result)


def grants(items):
    """RolePrincipalGrant lists (grantTime kept as set / unset: it is a clock value)."""
    return sorted((g.roleName, g.principalName, g.principalType, g.grantOption, bool(g.grantTime),
                   g.grantorName, g.grantorPrincipalType) for g in items)


@scenario
def roles_and_grants(c, rec):
    r = PREFIX
    rec.call("get_role_names", transform=mine)
    rec.call("create_role", T.Role(r + "analyst", 0, "alice"))
    rec.call("create_role", T.Role(r + "Engineer", 0, None))
    rec.call("create_role", T.Role(r + "parent", 0, "bob"))
    rec.call("create_role", T.Role(r + "analyst", 0, "carol"), label="create_role duplicate", msg=True)
    rec.call("create_role", T.Role("public", 0, "x"), label="create_role public", msg=True)
    rec.call("create_role", T.Role("admin", 0, "x"), label="create_role admin", msg=True)
    rec.call("get_role_names", transform=mine)
    rec.call("list_roles", r + "dave", USER, transform=roles, label="list_roles user without grants")
    rec.call("list_roles", r + "devs", GROUP, transform=roles, label="list_roles group without grants")
    rec.call("list_roles", r + "analyst", ROLE, transform=roles, label="list_roles role without grants")
    rec.call("grant_role", r + "analyst", r + "dave", USER, "alice", USER, False)
    rec.call("grant_role", r + "analyst", r + "dave", USER, "alice", USER, True,
             label="grant_role again", msg=True)
    rec.call("grant_role", r + "analyst", r + "devs", GROUP, "admin", ROLE, True)
    rec.call("grant_role", r + "Engineer", r + "dave", USER, "bob", USER, True)
    rec.call("grant_role", r + "parent", r + "analyst", ROLE, "alice", USER, False,
             label="grant_role role to role")
    rec.call("grant_role", r + "analyst", r + "parent", ROLE, "alice", USER, False,
             label="grant_role cycle", msg=True)
    rec.call("grant_role", r + "analyst", r + "analyst", ROLE, "alice", USER, False,
             label="grant_role to itself", msg=True)
    rec.call("grant_role", r + "parent", r + "nosuchrole", ROLE, "alice", USER, False,
             label="grant_role missing principal role", msg=True)
    rec.call("grant_role", r + "missing", r + "dave", USER, "alice", USER, False,
             label="grant_role missing role", msg=True)
    rec.call("grant_role", "public", r + "dave", USER, "alice", USER, False,
             label="grant_role public", msg=True)
    rec.call("grant_role", "admin", r + "erin", USER, "alice", USER, False, label="grant_role admin")
    rec.call("grant_role", r + "engineer", r + "dave", USER, "bob", USER, False,
             label="grant_role other case", msg=True)
    rec.call("list_roles", r + "dave", USER, transform=roles)
    rec.call("list_roles", r + "devs", GROUP, transform=roles)
    rec.call("list_roles", r + "analyst", ROLE, transform=roles)
    rec.call("list_roles", r + "dave", GROUP, transform=roles, label="list_roles other type")
    rec.call("get_principals_in_role", T.GetPrincipalsInRoleRequest(r + "analyst"),
             transform=lambda x: grants(x.principalGrants))
    rec.call("get_principals_in_role", T.GetPrincipalsInRoleRequest(r + "parent"),
             transform=lambda x: grants(x.principalGrants))
    rec.call("get_principals_in_role", T.GetPrincipalsInRoleRequest("public"),
             transform=lambda x: grants(x.principalGrants))
    rec.call("get_principals_in_role", T.GetPrincipalsInRoleRequest("admin"),
             transform=lambda x: grants(x.principalGrants))
    rec.call("get_principals_in_role", T.GetPrincipalsInRoleRequest(r + "missing"),
             transform=lambda x: grants(x.principalGrants), label="get_principals_in_role missing",
             msg=True)
    rec.call("get_role_grants_for_principal", T.GetRoleGrantsForPrincipalRequest(r + "dave", USER),
             transform=lambda x: grants(x.principalGrants))
    rec.call("get_role_grants_for_principal", T.GetRoleGrantsForPrincipalRequest(r + "devs", GROUP),
             transform=lambda x: grants(x.principalGrants))
    rec.call("get_role_grants_for_principal", T.GetRoleGrantsForPrincipalRequest(r + "nobody", USER),
             transform=lambda x: grants(x.principalGrants), label="role grants unknown user")
    rec.call("get_role_grants_for_principal", T.GetRoleGrantsForPrincipalRequest(r + "analyst", ROLE),
             transform=lambda x: grants(x.principalGrants))
    req = T.GrantRevokeRoleRequest(T.GrantRevokeType.GRANT, r + "parent", r + "ops", GROUP,
                                   "root", USER, True)
    rec.call("grant_revoke_role", req, label="grant_revoke_role grant")
    req = T.GrantRevokeRoleRequest(T.GrantRevokeType.GRANT, r + "parent", r + "frank", USER,
                                   "root", USER)
    rec.call("grant_revoke_role", req, label="grant_revoke_role grant without option")
    rec.call("get_principals_in_role", T.GetPrincipalsInRoleRequest(r + "parent"),
             transform=lambda x: grants(x.principalGrants))
    req = T.GrantRevokeRoleRequest(T.GrantRevokeType.REVOKE, r + "parent", r + "ops", GROUP,
                                   None, None, True)
    rec.call("grant_revoke_role", req, label="grant_revoke_role revoke grant option")
    rec.call("grant_revoke_role", req, label="grant_revoke_role revoke grant option again", msg=True)
    rec.call("get_role_grants_for_principal", T.GetRoleGrantsForPrincipalRequest(r + "ops", GROUP),
             transform=lambda x: grants(x.principalGrants))
    req = T.GrantRevokeRoleRequest(T.GrantRevokeType.REVOKE, r + "parent", r + "ops", GROUP)
    rec.call("grant_revoke_role", req, label="grant_revoke_role revoke")
    rec.call("grant_revoke_role", req, label="grant_revoke_role revoke again", msg=True)
    req = T.GrantRevokeRoleRequest(T.GrantRevokeType.REVOKE, "public", r + "ops", GROUP)
    rec.call("grant_revoke_role", req, label="grant_revoke_role revoke public", msg=True)
    rec.call("revoke_role", r + "analyst", r + "dave", USER)
    rec.call("revoke_role", r + "analyst", r + "dave", USER, label="revoke_role again", msg=True)
    rec.call("revoke_role", r + "missing", r + "dave", USER, label="revoke_role missing role", msg=True)
    rec.call("revoke_role", "public", r + "dave", USER, label="revoke_role public", msg=True)
    rec.call("revoke_role", "admin", r + "erin", USER, label="revoke_role admin")
    rec.call("list_roles", r + "dave", USER, transform=roles)
    rec.call("grant_role", r + "Engineer", r + "parent", ROLE, "bob", USER, False,
             label="grant_role to the role about to be dropped")
    req = T.GrantRevokeRoleRequest(T.GrantRevokeType.REVOKE, r + "parent", r + "nobody", USER,
                                   None, None, True)
    rec.call("grant_revoke_role", req, label="revoke grant option of a non-member", msg=True)
    rec.call("grant_role", r + "parent", r + "gina", USER, None, None, False,
             label="grant_role without grantor", msg=True)
    rec.call("drop_role", r + "parent")
    rec.call("get_principals_in_role", T.GetPrincipalsInRoleRequest(r + "Engineer"),
             transform=lambda x: grants(x.principalGrants), label="principals after a member role dropped")
    rec.call("list_roles", r + "analyst", ROLE, transform=roles, label="list_roles after parent dropped")
    rec.call("get_principals_in_role", T.GetPrincipalsInRoleRequest(r + "parent"),
             transform=lambda x: grants(x.principalGrants), label="principals of dropped role")
    rec.call("drop_role", r + "parent", label="drop_role again", msg=True)
    rec.call("drop_role", "admin", msg=True)
    rec.call("drop_role", "public", msg=True)
    rec.call("drop_role", r + "engineer", label="drop_role other case", msg=True)
    rec.call("drop_role", r + "Engineer")
    rec.call("drop_role", r + "analyst")
    rec.call("get_role_names", transform=mine)
    rec.call("list_roles", r + "dave", USER, transform=roles, label="list_roles after drops")


def tparams(db, name, owner, params, last_access=0):
    t = table(db, name, owner=owner, parameters=params)
    t.lastAccessTime = last_access
    return t


@scenario
def table_names_by_filter(c, rec):
    db = "cftf_db"
    rec.call("create_database", database(db))
    rec.call("create_table", tparams(db, "t_alice", "alice", {"tier": "gold", "team": "a"}))
    rec.call("create_table", tparams(db, "t_bob", "bob", {"tier": "silver"}, 100))
    rec.call("create_table", tparams(db, "t_bob2", "bob", {"tier": "gold"}, 200))
    rec.call("create_table", tparams(db, "t_none", None, {}))
    rec.call("create_table", tparams(db, "T_Upper", "Alice", {"Tier": "gold"}))

    def f(text, max_tables=-1, label=None, msg=False):
        rec.call("get_table_names_by_filter", db, text, max_tables, unordered=True,
                 label=label or f"filter {text!r} max {max_tables}", msg=msg)

    f('hive_filter_field_owner__ = "bob"')
    f('hive_filter_field_owner__ = "Bob"')
    f('hive_filter_field_owner__ <> "bob"')
    f('hive_filter_field_owner__ != "bob"')
    f('hive_filter_field_owner__ > "alice"')
    f('hive_filter_field_owner__ >= "alice"')
    f('"bob" > hive_filter_field_owner__')
    f('hive_filter_field_owner__ like "b.*"')
    f('hive_filter_field_owner__ like "a.ice"')
    f('hive_filter_field_owner__ like "(?i)A.*"')
    f('"b.*" like hive_filter_field_owner__', msg=True)
    f('hive_filter_field_owner__ = "bob" or hive_filter_field_owner__ = "alice"')
    f('hive_filter_field_owner__ = "bob" and hive_filter_field_last_access__ = 200')
    f('hive_filter_field_last_access__ = 0')
    f('hive_filter_field_last_access__ > 50')
    f('hive_filter_field_last_access__ <> 100')
    f('hive_filter_field_last_access__ like "1.*"', msg=True)
    f('hive_filter_field_params__tier = "gold"')
    f('hive_filter_field_params__tier <> "gold"')
    f('hive_filter_field_params__tier != "gold"')
    f('hive_filter_field_params__Tier = "gold"')
    f('hive_filter_field_params__team = "a"')
    f('hive_filter_field_params__tier like "g.*"', msg=30)
    f('hive_filter_field_params__tier > "a"', msg=5)
    f('hive_filter_field_params__tier = "gold" and hive_filter_field_owner__ = "bob"')
    rec.call("get_table_names_by_filter", db, 'hive_filter_field_params__tier = "gold"', 1,
                               transform=len, label="filter max 1 (count)")
    f('hive_filter_field_params__tier = "gold"', 0)
    rec.call("get_table_names_by_filter", db, 'hive_filter_field_owner__ like ".*"', 2,
                 transform=len, label="like all max 2 (count)")
    f('owner = "bob"', msg=True)
    f('hive_filter_field_owner__ = "bob', msg=True)
    f('', label="empty filter")
    rec.call("get_table_names_by_filter", db, None, -1, label="null filter", msg=True)
    rec.call("get_table_names_by_filter", "cftf_nodb", 'hive_filter_field_owner__ = "bob"', -1,
             label="missing db", msg=True)
    rec.call("get_table_names_by_filter", "", 'hive_filter_field_owner__ = "bob"', -1,
             label="empty db", msg=True)
    rec.call("get_table_names_by_filter", "CFTF_DB", 'hive_filter_field_owner__ = "bob"', -1,
             unordered=True, label="db upper case")
    f('hive_filter_field_last_access__ = "100"', msg=True)
    f('hive_filter_field_last_access__ <> "100"', msg=True)
    f('hive_filter_field_last_access__ > "1"', msg=True)
    f('hive_filter_field_owner__ = 5', msg=True)
    f('hive_filter_field_owner__ <> 5', msg=True)
    f('hive_filter_field_owner__ > 5', msg=True)
    f('hive_filter_field_params__tier <> 5', msg=True)
    f('hive_filter_field_params__tier like "GOLD"', msg=True)
    f('hive_filter_field_params__nokey <> "x"', msg=True)
    f('hive_filter_field_owner__ = "bob" or hive_filter_field_params__tier = "silver"')
    f('hive_filter_field_owner__ = "bob" or nokey = "silver"', msg=True)
    f('hive_filter_field_owner__ in ("bob", "alice")', msg=True)
    f('hive_filter_field_owner__ between "a" and "b"', msg=True)
    f('hive_filter_field_owner__ = ""', msg=True)
    f('hive_filter_field_owner__ = "bob   "', msg=True)
    f('hive_filter_field_params__tier = 5', msg=True)
