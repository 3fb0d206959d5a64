"""Privileges: grant, revoke, list and privilege sets on the global object, databases, tables,
partitions and columns; privileges given to create_table; PARTITION_LEVEL_PRIVILEGE tables and
the *_with_auth partition calls; what drops and renames do to privileges."""

from __future__ import annotations

from tests.hms.conformance.builders import cols, database, partition, table
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T

USER, GROUP, ROLE = T.PrincipalType.USER, T.PrincipalType.GROUP, T.PrincipalType.ROLE
GLOBAL, DATABASE, TABLE = T.HiveObjectType.GLOBAL, T.HiveObjectType.DATABASE, T.HiveObjectType.TABLE
PARTITION, COLUMN = T.HiveObjectType.PARTITION, T.HiveObjectType.COLUMN
GRANT, REVOKE = T.GrantRevokeType.GRANT, T.GrantRevokeType.REVOKE
P = "cfpriv_"


def ref(kind, db=None, obj=None, values=None, col=None):
    return T.HiveObjectRef(objectType=kind, dbName=db, objectName=obj, partValues=values,
                           columnName=col)


def priv(obj, principal, ptype, privilege, grantor="admin", gtype=USER, option=False):
    return T.HiveObjectPrivilege(
        hiveObject=obj, principalName=principal, principalType=ptype,
        grantInfo=T.PrivilegeGrantInfo(privilege=privilege, createTime=0, grantor=grantor,
                                       grantorType=gtype, grantOption=option))


def bag(*privs):
    return T.PrivilegeBag(privileges=list(privs))


def info(g):
    return (g.privilege, bool(g.createTime), g.grantor, g.grantorType, g.grantOption)


def flat(items):
    """HiveObjectPrivilege lists as tuples, sorted: HMS's JDOQL queries have no ORDER BY, and
    Derby answers them in an order of its plan (index order, insertion order...)."""
    if items is None:
        return None
    out = []
    for p in items:
        o = p.hiveObject
        out.append((o.objectType, o.dbName, o.objectName, o.partValues, o.columnName,
                    p.principalName, p.principalType) + info(p.grantInfo))
    return sorted(out, key=repr)


def mine(items):
    """Only this module's principals (listings of all principals see the whole server)."""
    return [x for x in flat(items) if str(x[5]).lower().startswith(P)]


def pset(s):
    if s is None:
        return None

    def side(m):
        if m is None:
            return None
        return {k: sorted((info(g) for g in v), key=repr) for k, v in m.items()}
    return {"user": side(s.userPrivileges), "group": side(s.groupPrivileges),
            "role": side(s.rolePrivileges)}


def parts_auth(items):
    if items is None:
        return None
    return [(p.values, pset(p.privileges)) for p in items]


@scenario
def privileges_grant_revoke(c, rec):
    db, tbl = P + "db", "t1"
    user, group, role = P + "user", P + "group", P + "role"
    rec.call("create_database", database(db))
    t = table(db, tbl, cols("id int", "name string"), partition_keys=cols("ds string"))
    rec.call("create_table", t)
    rec.call("add_partition", partition(t, ["2024-01-01"]))
    rec.call("create_role", T.Role(role, 0, "admin"))
    rec.call("grant_role", role, user, USER, "admin", USER, False)

    objs = {
        "global": ref(GLOBAL),
        "database": ref(DATABASE, db),
        "table": ref(TABLE, db, tbl),
        "partition": ref(PARTITION, db, tbl, ["2024-01-01"]),
        "column": ref(COLUMN, db, tbl, None, "id"),
        "partcol": ref(COLUMN, db, tbl, ["2024-01-01"], "id"),
    }
    for name, o in objs.items():
        rec.call("grant_privileges", bag(priv(o, user, USER, "SELECT"),
                                         priv(o, group, GROUP, "UPDATE", option=True),
                                         priv(o, role, ROLE, "SELECT,DROP", "root", ROLE)),
                 label=f"grant on {name}")
    for name, o in objs.items():
        rec.call("list_privileges", user, USER, o, transform=flat, label=f"list {name} user")
        rec.call("list_privileges", group, GROUP, o, transform=flat, label=f"list {name} group")
        rec.call("list_privileges", role, ROLE, o, transform=flat, label=f"list {name} role")
        rec.call("list_privileges", None, None, o, transform=mine, label=f"list {name} all")
        rec.call("list_privileges", user, GROUP, o, transform=flat, label=f"list {name} other type")
    for name, o in objs.items():
        rec.call("grant_privileges", bag(priv(o, user, USER, "SELECT")), msg=True,
                 label=f"grant duplicate on {name}")
        rec.call("grant_privileges", bag(priv(o, user, USER, "SELECT", "ADMIN")), msg=True,
                 label=f"grant duplicate other grantor case on {name}")
        rec.call("grant_privileges", bag(priv(o, user, USER, "SELECT", "bob")), msg=True,
                 label=f"grant same by another grantor on {name}")
        rec.call("grant_privileges", bag(priv(o, user, USER, "select")), msg=True,
                 label=f"grant other case on {name}")
        rec.call("list_privileges", user, USER, o, transform=flat, label=f"list {name} user after")
    # revokes
    for name, o in objs.items():
        rec.call("revoke_privileges", bag(priv(o, user, USER, "INSERT")), msg=True,
                 label=f"revoke not granted on {name}")
        rec.call("revoke_privileges", bag(priv(o, user, USER, "SELECT,INSERT")), msg=True,
                 label=f"revoke one granted one not on {name}")
        rec.call("list_privileges", user, USER, o, transform=flat, label=f"list {name} after revoke")
        req = T.GrantRevokePrivilegeRequest(REVOKE, bag(priv(o, group, GROUP, "UPDATE")), True)
        rec.call("grant_revoke_privileges", req, msg=True, label=f"revoke grant option on {name}")
        rec.call("grant_revoke_privileges", req, msg=True,
                 label=f"revoke grant option again on {name}")
        rec.call("list_privileges", group, GROUP, o, transform=flat,
                 label=f"list {name} group after revoke grant option")
        req = T.GrantRevokePrivilegeRequest(REVOKE, bag(priv(o, role, ROLE, "drop")))
        rec.call("grant_revoke_privileges", req, msg=True, label=f"revoke other case on {name}")
        rec.call("list_privileges", role, ROLE, o, transform=flat, label=f"list {name} role after")
    rec.call("drop_role", role)
    rec.call("list_privileges", role, ROLE, objs["global"], transform=flat,
             label="list global of dropped role")
    g = objs["global"]
    rec.call("revoke_privileges", bag(priv(g, user, USER, "SELECT,select"), priv(g, group, GROUP, "UPDATE")))
    rec.call("list_privileges", None, None, g, transform=mine, label="global at end")
    rec.call("drop_table", db, tbl, True)
    rec.call("list_privileges", None, None, objs["table"], transform=mine, label="table after drop")
    rec.call("drop_database", db, True, True)


@scenario
def privileges_sets_and_objects(c, rec):
    db, tbl = P + "db2", "t2"
    user, role, parent = P + "u2", P + "r2", P + "r2parent"
    groups = [P + "g2", P + "g2b"]
    rec.call("create_database", database(db))
    t = table(db, tbl, cols("id int", "name string"), partition_keys=cols("ds string"))
    rec.call("create_table", t)
    rec.call("add_partition", partition(t, ["a"]))
    rec.call("create_role", T.Role(role, 0, "admin"))
    rec.call("create_role", T.Role(parent, 0, "admin"))
    rec.call("grant_role", role, user, USER, "admin", USER, False)
    rec.call("grant_role", parent, role, ROLE, "admin", USER, False)
    rec.call("grant_role", role, groups[1], GROUP, "admin", USER, False)
    objs = {
        "global": ref(GLOBAL),
        "database": ref(DATABASE, db),
        "table": ref(TABLE, db, tbl),
        "partition": ref(PARTITION, db, tbl, ["a"]),
        "column": ref(COLUMN, db, tbl, None, "id"),
        "partcol": ref(COLUMN, db, tbl, ["a"], "id"),
    }
    for name, o in objs.items():
        rec.call("grant_privileges", bag(priv(o, user, USER, "SELECT"),
                                         priv(o, groups[0], GROUP, "UPDATE", option=True),
                                         priv(o, role, ROLE, "ALTER", "root", ROLE),
                                         priv(o, parent, ROLE, "DROP"),
                                         priv(o, "public", ROLE, "CREATE")),
                 label=f"grant on {name}")
    for name, o in objs.items():
        rec.call("get_privilege_set", o, user, groups, transform=pset, label=f"set {name}")
        rec.call("get_privilege_set", o, user, [], transform=pset, label=f"set {name} no groups")
        rec.call("get_privilege_set", o, None, groups, transform=pset, label=f"set {name} no user")
        rec.call("get_privilege_set", o, P + "nobody", None, transform=pset,
                 label=f"set {name} unknown user")
    rec.call("get_privilege_set", ref(TABLE, db.upper(), tbl.upper()), user, groups, transform=pset,
             label="set table upper case")
    rec.call("get_privilege_set", ref(TABLE, db, "nosuch"), user, groups, transform=pset,
             label="set missing table")
    rec.call("get_privilege_set", ref(PARTITION, db, "nosuch", ["a"]), user, groups,
             transform=pset, label="set partition missing table", msg=True)
    rec.call("get_privilege_set", ref(PARTITION, db, tbl, ["zz"]), user, groups,
             transform=pset, label="set missing partition", msg=True)
    rec.call("get_privilege_set", ref(PARTITION, db, tbl, ["a", "b"]), user, groups,
             transform=pset, label="set partition too many values", msg=True)
    rec.call("get_privilege_set", ref(PARTITION, db, tbl, []), user, groups,
             transform=pset, label="set partition no values", msg=True)
    rec.call("get_privilege_set", ref(None), user, groups, transform=pset,
             label="set null type", msg=True)
    rec.call("get_privilege_set", ref(COLUMN, db, tbl, None, "ID"), user, groups,
             transform=pset, label="set column upper case")
    # listings: names in other case, missing objects, all of a principal
    rec.call("list_privileges", user, USER, ref(TABLE, db.upper(), tbl.upper()), transform=flat,
             label="list table upper case")
    rec.call("list_privileges", None, None, ref(TABLE, db.upper(), tbl.upper()), transform=mine,
             label="list table all upper case")
    rec.call("list_privileges", user, USER, ref(DATABASE, db.upper()), transform=flat,
             label="list db upper case")
    rec.call("list_privileges", None, None, ref(DATABASE, db.upper()), transform=mine,
             label="list db all upper case")
    rec.call("list_privileges", user, USER, ref(COLUMN, db.upper(), tbl.upper(), None, "ID"),
             transform=flat, label="list column upper case")
    rec.call("list_privileges", None, None, ref(COLUMN, db.upper(), tbl.upper(), None, "ID"),
             transform=mine, label="list column all upper case")
    rec.call("list_privileges", user, USER, ref(PARTITION, db.upper(), tbl.upper(), ["a"]),
             transform=flat, label="list partition upper case")
    rec.call("list_privileges", None, None, ref(PARTITION, db.upper(), tbl.upper(), ["a"]),
             transform=mine, label="list partition all upper case")
    rec.call("list_privileges", user, USER, ref(COLUMN, db.upper(), tbl.upper(), ["a"], "ID"),
             transform=flat, label="list partcol upper case")
    rec.call("list_privileges", user, USER, ref(PARTITION, db, "nosuch", ["a"]), transform=flat,
             label="list partition missing table", msg=True)
    rec.call("list_privileges", user, USER, ref(PARTITION, db, tbl, ["a", "b"]), transform=flat,
             label="list partition bad values", msg=True)
    rec.call("list_privileges", user, USER, ref(TABLE, db, "nosuch"), transform=flat,
             label="list missing table", msg=True)
    rec.call("list_privileges", user, USER, ref(DATABASE, P + "nodb"), transform=flat,
             label="list missing db", msg=True)
    rec.call("list_privileges", user, USER, ref(None), transform=flat, label="list all of user")
    rec.call("list_privileges", role, ROLE, ref(None), transform=flat, label="list all of role")
    rec.call("list_privileges", user, USER, ref(DATABASE), transform=mine,
             label="list db of user in all dbs")
    rec.call("list_privileges", user, USER, ref(TABLE), transform=mine,
             label="list tables of user in all dbs")
    rec.call("list_privileges", user, USER, ref(COLUMN), transform=mine,
             label="list columns of user in all dbs")
    rec.call("list_privileges", user, None, ref(GLOBAL), transform=flat,
             label="list principal without type", msg=True)
    rec.call("list_privileges", user, USER, None, transform=flat, label="list null object",
             msg=True)
    # grants on missing objects
    rec.call("grant_privileges", bag(priv(ref(TABLE, db, "nosuch"), user, USER, "SELECT")),
             label="grant on missing table", msg=True)
    rec.call("grant_privileges", bag(priv(ref(DATABASE, P + "nodb"), user, USER, "SELECT")),
             label="grant on missing db", msg=True)
    rec.call("grant_privileges", bag(priv(ref(PARTITION, db, tbl, ["zz"]), user, USER, "SELECT")),
             label="grant on missing partition", msg=True)
    rec.call("grant_privileges", bag(priv(ref(COLUMN, db, tbl, ["zz"], "id"), user, USER, "SELECT")),
             label="grant on column of missing partition", msg=True)
    rec.call("grant_privileges", bag(priv(ref(COLUMN, db, tbl, None, "nocol"), user, USER, "SELECT")),
             label="grant on missing column", msg=True)
    rec.call("grant_privileges", bag(priv(ref(TABLE, db.upper(), tbl.upper()), user, USER, "INSERT")),
             label="grant on table upper case", msg=True)
    rec.call("grant_privileges", bag(priv(ref(GLOBAL), user, USER, "ALL", "x", None)),
             label="grant without grantor type", msg=True)
    rec.call("grant_privileges", bag(priv(ref(GLOBAL), user, None, "ALL")),
             label="grant without principal type", msg=True)
    rec.call("grant_privileges", bag(priv(ref(GLOBAL), P + "norole", ROLE, "ALL")),
             label="grant to missing role", msg=True)
    rec.call("grant_privileges", bag(), label="grant empty bag", msg=True)
    rec.call("grant_privileges", None, label="grant null bag", msg=True)
    rec.call("revoke_privileges", bag(priv(ref(TABLE, db, "nosuch"), user, USER, "SELECT")),
             label="revoke on missing table", msg=True)
    rec.call("revoke_privileges", bag(priv(ref(DATABASE, P + "nodb"), user, USER, "SELECT")),
             label="revoke on missing db", msg=True)
    rec.call("revoke_privileges", bag(priv(ref(PARTITION, db, "nosuch", ["a"]), user, USER, "SELECT")),
             label="revoke on partition of missing table", msg=True)
    rec.call("revoke_privileges", bag(priv(ref(GLOBAL), user, USER, "")),
             label="revoke empty privilege", msg=True)
    rec.call("revoke_privileges", bag(), label="revoke empty bag", msg=True)
    req = T.GrantRevokePrivilegeRequest(None, bag())
    rec.call("grant_revoke_privileges", req, label="grant_revoke without type", msg=True)
    req = T.GrantRevokePrivilegeRequest(GRANT, bag(priv(ref(GLOBAL), user, USER, "LOCK")))
    rec.call("grant_revoke_privileges", req, label="grant_revoke grant")
    rec.call("list_privileges", user, USER, ref(GLOBAL), transform=flat, label="list global after")
    # create_table with privileges; with_auth calls on a partition-level privilege table
    t3 = table(db, "t3", cols("id int"), partition_keys=cols("ds string"),
               parameters={"PARTITION_LEVEL_PRIVILEGE": "TRUE"})
    t3.privileges = T.PrincipalPrivilegeSet(
        userPrivileges={user: [T.PrivilegeGrantInfo("SELECT", 5, "admin", USER, True)]},
        groupPrivileges={groups[0]: [T.PrivilegeGrantInfo("INSERT", 0, "bob", USER, False),
                                     T.PrivilegeGrantInfo("UPDATE", 0, "bob", USER, False)]},
        rolePrivileges={role: [T.PrivilegeGrantInfo("ALL", 0, "admin", ROLE, False)]})
    rec.call("create_table", t3)
    rec.call("get_table", db, "t3", transform=lambda x: x.privileges, label="get_table privileges")
    rec.call("list_privileges", None, None, ref(TABLE, db, "t3"), transform=mine,
             label="list t3 all")
    rec.call("grant_privileges", bag(priv(ref(COLUMN, db, "t3", None, "id"), user, USER, "SELECT")),
             label="grant column of t3")
    rec.call("add_partition", partition(t3, ["p1"]), transform=lambda x: x.privileges)
    rec.call("add_partitions", [partition(t3, ["p2"]), partition(t3, ["p3"])])
    rec.call("list_privileges", None, None, ref(PARTITION, db, "t3", ["p1"]), transform=mine,
             label="list t3 p1 all")
    rec.call("list_privileges", None, None, ref(PARTITION, db, "t3", ["p2"]), transform=mine,
             label="list t3 p2 all")
    rec.call("list_privileges", None, None, ref(COLUMN, db, "t3", ["p3"], "id"), transform=mine,
             label="list t3 p3 column all")
    rec.call("get_partition_with_auth", db, "t3", ["p1"], user, groups,
             transform=lambda p: pset(p.privileges))
    rec.call("get_partition_with_auth", db, "t3", ["p1"], None, None,
             transform=lambda p: pset(p.privileges), label="get_partition_with_auth no user")
    rec.call("get_partition_with_auth", db, "t3", ["zz"], user, groups, msg=True,
             transform=lambda p: pset(p.privileges), label="get_partition_with_auth missing")
    rec.call("get_partitions_with_auth", db, "t3", -1, user, groups, transform=parts_auth)
    rec.call("get_partitions_with_auth", db, "t3", 1, user, [], transform=parts_auth,
             label="get_partitions_with_auth max 1")
    rec.call("get_partitions_ps_with_auth", db, "t3", ["p2"], -1, user, groups,
             transform=parts_auth)
    rec.call("get_partitions_ps_with_auth", db, "t3", [""], -1, user, None,
             transform=parts_auth, label="get_partitions_ps_with_auth all")
    rec.call("get_partition_with_auth", db, tbl, ["a"], user, groups,
             transform=lambda p: pset(p.privileges), label="get_partition_with_auth plain table")
    rec.call("get_partitions_with_auth", db, tbl, -1, user, groups, transform=parts_auth,
             label="get_partitions_with_auth plain table")
    # partition drop, table rename, table drop, role drop, database drop
    rec.call("drop_partition", db, "t3", ["p1"], True)
    rec.call("list_privileges", None, None, ref(PARTITION, db, "t3", ["p2"]), transform=mine,
             label="list p2 after p1 dropped")
    rec.call("list_privileges", None, None, ref(TABLE), transform=mine,
             label="list all table privileges")
    rec.call("list_privileges", None, None, ref(PARTITION), transform=mine,
             label="list all partition privileges")
    p2 = c.get_partition(db, "t3", ["p2"])
    p2.values = ["p9"]
    rec.call("rename_partition", db, "t3", ["p2"], p2)
    rec.call("list_privileges", None, None, ref(PARTITION, db, "t3", ["p9"]), transform=mine,
             label="list renamed partition")
    t3b = c.get_table(db, "t3")
    t3b.tableName = "t3b"
    rec.call("alter_table", db, "t3", t3b)
    rec.call("list_privileges", None, None, ref(TABLE, db, "t3b"), transform=mine,
             label="list renamed table")
    rec.call("list_privileges", None, None, ref(COLUMN, db, "t3b", None, "id"), transform=mine,
             label="list renamed table column")
    rec.call("list_privileges", None, None, ref(PARTITION, db, "t3b", ["p3"]), transform=mine,
             label="list renamed table partition")
    rec.call("list_privileges", None, None, ref(TABLE, db, "t3"), transform=mine,
             label="list old name")
    rec.call("drop_table", db, "t3b", True)
    rec.call("create_table", table(db, "t3b", cols("id int"), partition_keys=cols("ds string")))
    rec.call("list_privileges", None, None, ref(TABLE, db, "t3b"), transform=mine,
             label="list recreated table")
    rec.call("list_privileges", user, USER, ref(None), transform=flat, label="list all of user again")
    rec.call("drop_role", parent)
    rec.call("list_privileges", parent, ROLE, ref(None), transform=flat,
             label="list all of dropped role")
    rec.call("drop_database", db, True, True)
    d = database(db)
    d.privileges = T.PrincipalPrivilegeSet(
        userPrivileges={user: [T.PrivilegeGrantInfo("SELECT", 0, "admin", USER, True)]})
    rec.call("create_database", d)
    rec.call("list_privileges", None, None, ref(DATABASE, db), transform=mine,
             label="list recreated db")
    rec.call("get_database", db, transform=lambda x: x.privileges, label="get_database privileges")
    rec.call("list_privileges", user, USER, ref(None), transform=flat, label="list all of user at end")
    rec.call("revoke_privileges", bag(priv(ref(GLOBAL), user, USER, "SELECT,LOCK")))
    rec.call("revoke_privileges", bag(priv(ref(GLOBAL), groups[0], GROUP, "UPDATE")))
    rec.call("drop_role", role)
    rec.call("revoke_privileges", bag(priv(ref(GLOBAL), "public", ROLE, "CREATE")))
    rec.call("list_privileges", None, None, ref(GLOBAL), transform=mine, label="global at end")
    rec.call("drop_database", db, True, True)


@scenario
def privileges_edge_cases(c, rec):
    db, tbl = P + "db3", "t4"
    user = P + "u3"
    rec.call("create_database", database(db))
    t = table(db, tbl, cols("id int", "Name string"), partition_keys=cols("k1 string", "K2 int"))
    rec.call("create_table", t)
    rec.call("add_partition", partition(t, ["a/b", "1"]), transform=lambda p: p.values)
    rec.call("add_partition", partition(t, ["x=y", "2"]), transform=lambda p: p.values)
    part = ref(PARTITION, db, tbl, ["a/b", "1"])
    rec.call("grant_privileges", bag(priv(part, user, USER, "SELECT"),
                                     priv(ref(PARTITION, db, tbl, ["x=y", "2"]), user, USER, "ALL"),
                                     priv(ref(COLUMN, db, tbl, ["a/b", "1"], "Name"), user, USER,
                                          "SELECT"),
                                     priv(ref(COLUMN, db, tbl, None, "Name"), user, USER, "SELECT")),
             label="grant on escaped partitions and an upper-case column")
    rec.call("list_privileges", user, USER, part, transform=flat)
    rec.call("list_privileges", None, None, ref(PARTITION, db, tbl, ["x=y", "2"]), transform=mine)
    rec.call("list_privileges", user, USER, ref(COLUMN, db, tbl, None, "Name"), transform=flat,
             label="list upper-case column by user")
    rec.call("list_privileges", None, None, ref(COLUMN, db, tbl, None, "Name"), transform=mine,
             label="list upper-case column all")
    rec.call("list_privileges", None, None, ref(COLUMN, db, tbl, None, "name"), transform=mine,
             label="list lower-case column all")
    rec.call("list_privileges", None, None, ref(COLUMN, db, tbl, ["a/b", "1"], "Name"),
             transform=mine, label="list partition upper-case column all")
    rec.call("list_privileges", user, USER, ref(COLUMN, db, tbl, [], "Name"), transform=flat,
             label="list column with empty values")
    rec.call("get_privilege_set", ref(COLUMN, db, tbl, None, "Name"), user, None, transform=pset,
             label="set upper-case column")
    rec.call("get_privilege_set", ref(PARTITION, db, tbl, None), user, None, transform=pset,
             label="set partition without values")
    rec.call("get_privilege_set", ref(PARTITION, db, tbl, ["a/b", "1"]), user, None,
             transform=pset, label="set escaped partition")
    rec.call("get_privilege_set", ref(TABLE, db, None), user, None, transform=pset,
             label="set table without name", msg=True)
    rec.call("get_privilege_set", None, user, None, transform=pset, label="set null object",
             msg=True)
    rec.call("grant_privileges", bag(priv(ref(PARTITION, db, tbl, ["a/b"]), user, USER, "SELECT")),
             label="grant partition with too few values", msg=True)
    rec.call("grant_privileges", bag(priv(ref(COLUMN, db, tbl, [], "id"), user, USER, "SELECT")),
             label="grant column with empty values", msg=True)
    rec.call("grant_privileges", bag(priv(ref(PARTITION, db, tbl, None), user, USER, "SELECT")),
             label="grant partition without values", msg=True)
    rec.call("revoke_privileges", bag(priv(ref(PARTITION, db, tbl, ["a/b"]), user, USER, "SELECT")),
             label="revoke partition with too few values", msg=True)
    rec.call("revoke_privileges", bag(priv(ref(PARTITION, db, tbl, None), user, USER, "SELECT")),
             label="revoke partition without values", msg=True)
    rec.call("revoke_privileges", bag(priv(ref(COLUMN, db, tbl, None, "Name"), user, USER, "SELECT")),
             label="revoke upper-case column", msg=True)
    rec.call("grant_privileges", bag(priv(ref(TABLE, db, tbl), user, USER, "SELECT,")),
             label="grant with a trailing comma")
    rec.call("grant_privileges", bag(priv(ref(TABLE, db, tbl), user, USER, ",INSERT")),
             label="grant with a leading comma")
    rec.call("grant_privileges", bag(priv(ref(TABLE, db, tbl), user, USER, "UPDATE", None)),
             label="grant without grantor")
    rec.call("grant_privileges", bag(priv(ref(TABLE, db, tbl), user, USER, "UPDATE", None)),
             label="grant without grantor again")
    rec.call("grant_privileges", bag(priv(ref(TABLE, db, tbl), "admin", ROLE, "ALTER")),
             label="grant to the admin role")
    rec.call("grant_privileges", bag(priv(ref(TABLE, db, tbl), user, USER, "DROP", "alice"),
                                     priv(ref(TABLE, db, tbl), user, USER, "DROP", "bob", option=True)),
             label="grant by two grantors")
    rec.call("list_privileges", user, USER, ref(TABLE, db, tbl), transform=flat)
    rec.call("list_privileges", "admin", ROLE, ref(TABLE, db, tbl), transform=flat)
    req = T.GrantRevokePrivilegeRequest(REVOKE, bag(priv(ref(TABLE, db, tbl), user, USER, "drop")), True)
    rec.call("grant_revoke_privileges", req, label="revoke grant option of one of two grants",
             msg=True)
    rec.call("list_privileges", user, USER, ref(TABLE, db, tbl), transform=flat,
             label="list after revoking a grant option")
    rec.call("revoke_privileges", bag(priv(ref(TABLE, db, tbl), user, USER, "DROP")),
             label="revoke one of two grants")
    rec.call("revoke_privileges", bag(priv(ref(TABLE, db, tbl), user, USER, "UPDATE,INSERT,")),
             label="revoke several")
    rec.call("list_privileges", user, USER, ref(TABLE, db, tbl), transform=flat,
             label="list after revokes")
    req = T.GrantRevokePrivilegeRequest(3, bag())
    rec.call("grant_revoke_privileges", req, label="grant_revoke unknown type", msg=True)
    rec.call("get_partitions_ps_with_auth", db, tbl, ["a/b"], -1, user, [], transform=parts_auth,
             label="ps_with_auth plain table")
    rec.call("get_partition_with_auth", db, "nosuch", ["a"], user, [], msg=True,
             label="get_partition_with_auth missing table")
    rec.call("get_partitions_with_auth", db, "nosuch", -1, user, [], msg=True,
             label="get_partitions_with_auth missing table")
    # a rename to another database carries the grants; dropping partitions by request drops theirs
    rec.call("create_database", database(P + "db3b"))
    moved = c.get_table(db, tbl)
    moved.dbName = P + "db3b"
    moved.tableName = "t4moved"
    rec.call("alter_table", db, tbl, moved)
    rec.call("list_privileges", user, USER, ref(None), transform=mine, label="after move")
    req = T.DropPartitionsRequest(P + "db3b", "t4moved", T.RequestPartsSpec(names=["k1=x%3Dy/k2=2"]),
                                  deleteData=True)
    rec.call("drop_partitions_req", req, transform=lambda r: len(r.partitions))
    rec.call("list_privileges", user, USER, ref(PARTITION), transform=mine,
             label="partitions after drop_partitions_req")
    rec.call("drop_database", P + "db3b", True, True)
    rec.call("drop_database", db, True, True)
    rec.call("list_privileges", user, USER, ref(None), transform=mine, label="at end")


@scenario
def privileges_twins_and_missing_tables(c, rec):
    db = P + "db4"
    user = P + "u4"
    rec.call("create_database", database(db))
    t5 = table(db, "t5", cols("id int"), partition_keys=cols("ds string"),
               parameters={"PARTITION_LEVEL_PRIVILEGE": "true"})
    t5.privileges = T.PrincipalPrivilegeSet(userPrivileges={user: [
        T.PrivilegeGrantInfo("ALL", 0, "admin", USER, False),
        T.PrivilegeGrantInfo("ALL", 0, "admin", USER, False)]})
    rec.call("create_table", t5)
    o = ref(TABLE, db, "t5")
    rec.call("grant_privileges", bag(priv(o, user, USER, "SELECT"), priv(o, user, USER, "SELECT")),
             label="the same grant twice in one request")
    rec.call("list_privileges", user, USER, o, transform=flat)
    rec.call("append_partition", db, "t5", ["d1"], transform=lambda p: p.values)
    rec.call("list_privileges", user, USER, ref(PARTITION, db, "t5", ["d1"]), transform=flat,
             label="appended partition grants")
    rec.call("get_partitions_ps_with_auth", db, "t5", ["d1"], -1, user, [], transform=parts_auth,
             label="ps_with_auth lower-case true")
    rec.call("revoke_privileges", bag(priv(o, user, USER, "ALL,SELECT")))
    rec.call("list_privileges", user, USER, o, transform=flat, label="after revoking one of each")
    rec.call("get_partitions_ps_with_auth", db, "nosuch", ["d1"], -1, user, [], msg=True,
             transform=parts_auth, label="ps_with_auth missing table")
    rec.call("get_partition_with_auth", db, "t5", ["d1", "x"], user, [], msg=True,
             transform=lambda p: pset(p.privileges), label="with_auth too many values")
    # names that are no HMS names
    odd = db + "/table/t5"
    rec.call("grant_privileges", bag(priv(ref(DATABASE, odd), user, USER, "SELECT")),
             label="grant on a database name with a slash", msg=True)
    rec.call("grant_privileges", bag(priv(ref(TABLE, odd, "x%2Fy"), user, USER, "SELECT")),
             label="grant on a table name with a slash", msg=True)
    rec.call("list_privileges", user, USER, ref(TABLE, db + "/table", "t5"), transform=flat,
             label="list a table under a name with a slash")
    rec.call("list_privileges", None, None, ref(TABLE, db + "/table", "t5"), transform=flat,
             label="list all of a table under a name with a slash")
    rec.call("list_privileges", user, USER, ref(DATABASE, odd), transform=flat,
             label="list a database name with a slash")
    rec.call("get_privilege_set", ref(TABLE, db + "/table", "t5"), user, [], transform=pset,
             label="set of a table under a name with a slash")
    rec.call("revoke_privileges", bag(priv(ref(TABLE, db + "/table", "t5"), user, USER, "ALL")),
             label="revoke on a table under a name with a slash", msg=True)
    rec.call("drop_database", db, True, True)
