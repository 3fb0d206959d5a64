"""Privileges on the global object, databases, tables, partitions and columns (grant_privileges,
revoke_privileges, grant_revoke_privileges, list_privileges, get_privilege_set), as HMS 2.3's
HMSHandler and ObjectStore answer them.

Stored with the catalog, one key per granted privilege, the value a HiveObjectPrivilege (its
object reference with the stored names)::

    priv/global/<tail>                                            global
    db/<db>/priv/<tail>                                           database
    db/<db>/table/<tbl>/priv/table/<tail>                         table
    db/<db>/table/<tbl>/priv/col/<column>/<tail>                  table column
    db/<db>/table/<tbl>/priv/part/<part name>/<tail>              partition
    db/<db>/table/<tbl>/priv/partcol/<part name>/<column>/<tail>  partition column

    <tail> = <principal type>/<principal>/<privilege>/<grantor>

Segments are kept as given (HMS compares principals, privileges and grantors case-sensitively)
with ``%`` and ``/`` percent-escaped and a null written ``%00``. Database and table privileges
live in their subtree, so dropping the database or table drops them; a table rename carries them
(``tables.RENAME_REWRITERS``); dropping or renaming a partition drops or moves its own
(:func:`drop_partition_privileges`, :func:`move_partition_privileges`), dropping a role drops the
role's (:func:`drop_principal_privileges`). A table with ``PARTITION_LEVEL_PRIVILEGE=TRUE``
copies its table and column privileges to each partition added (:func:`copy_to_new_partition`)
and its partitions carry the caller's privilege set in the ``*_with_auth`` calls
(:func:`with_auth`).

Where HMS lets an exception escape unchecked (a duplicate grant, revoking what was not granted,
a missing database or role, null fields), the client gets an internal error, as from HMS.
"""
from __future__ import annotations

from hms_proxy.hms import names
from hms_proxy.hms.family import Family, lower, now
from hms_proxy.hms.names import part_name
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.thrift.gen.hive_metastore import ttypes as t
from kvmodel import catalog as keys
from kvmodel import codec

ADMIN, PUBLIC = "admin", "public"
BUILT_IN = (ADMIN, PUBLIC)  # the roles HMS creates itself

GLOBAL_PREFIX = "priv/global/"
PART_LEVEL = "PARTITION_LEVEL_PRIVILEGE"
NULL = "%00"


def _seg(text) -> str:
    if text is None:
        return NULL
    return str(text).replace("%", "%25").replace("/", "%2F")


def db_prefix(db: str) -> str:
    return f"db/{_seg(db)}/priv/"  # valid names have no '%' or '/': the key of the database


def _table_root(db: str, tbl: str) -> str:
    return f"{keys.table_key(_seg(db), _seg(tbl))}/priv/"


def table_prefix(db: str, tbl: str) -> str:
    return _table_root(db, tbl) + "table/"


def col_prefix(db: str, tbl: str, col: str | None = None) -> str:
    return _table_root(db, tbl) + "col/" + ("" if col is False else f"{_seg(col)}/")


def part_prefix(db: str, tbl: str, part: str) -> str:
    return _table_root(db, tbl) + f"part/{_seg(part)}/"


def partcol_prefix(db: str, tbl: str, part: str, col=False) -> str:
    base = _table_root(db, tbl) + f"partcol/{_seg(part)}/"
    return base if col is False else base + f"{_seg(col)}/"


def _name_ok(name) -> bool:
    """A database or table name that can be looked up by key (HMS names never hold '/')."""
    return name is not None and "/" not in name and "%" not in name


def _principal_tail(type_name: str, principal) -> str:
    return f"{type_name}/{_seg(principal)}/"


def _java_split(text: str) -> list[str]:
    """String.split(","): trailing empty strings dropped, a string without a comma kept."""
    if "," not in text:
        return [text]
    parts = text.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def obj_kind_allows_twins(kind) -> bool:
    """HMS's indexes on table, partition and column grants are not unique: a grant its
    duplicate check misses (no grantor, twice in one request) is stored twice."""
    return kind not in (1, 2)  # GLOBAL, DATABASE


def _free_key(cat, key: str) -> str:
    """``key``, or ``key/<n>`` for the next twin of a grant stored under it already."""
    if cat.raw(key) is None:
        return key
    n = 2
    while cat.raw(f"{key}/{n}") is not None:
        n += 1
    return f"{key}/{n}"


# --- helpers for the other families ------------------------------------------------------------
def _rename_rewrite(value: bytes, new):

    item = codec.decode(ttypes.HiveObjectPrivilege, value)
    if item.hiveObject is not None:
        item.hiveObject.dbName, item.hiveObject.objectName = new.dbName, new.tableName
    return item


def drop_partition_privileges(cat, db: str, tbl: str, part_name: str) -> None:
    """ObjectStore.dropPartitionCommon: the partition's grants and its columns' grants go."""
    cat.delete_prefix(part_prefix(db, tbl, part_name))
    cat.delete_prefix(partcol_prefix(db, tbl, part_name))


def move_partition_privileges(cat, db: str, tbl: str, old_name: str, new_name: str,
                              new_values) -> None:
    """A renamed partition keeps its grants (HMS alters the partition row in place)."""

    for old_prefix, new_prefix in ((part_prefix(db, tbl, old_name), part_prefix(db, tbl, new_name)),
                                   (partcol_prefix(db, tbl, old_name),
                                    partcol_prefix(db, tbl, new_name))):
        for key, value in list(cat.view.scan_prefix(old_prefix)):
            item = codec.decode(ttypes.HiveObjectPrivilege, value)
            if item.hiveObject is not None:
                item.hiveObject.partValues = list(new_values or [])
            cat.put(new_prefix + key[len(old_prefix):], item)
        cat.delete_prefix(old_prefix)


def copy_to_new_partition(cat, table, part_name: str, values) -> None:
    """ObjectStore.addPartition(s): a table with PARTITION_LEVEL_PRIVILEGE=TRUE gives each new
    partition a copy of its table grants and table column grants."""

    if (table.parameters or {}).get(PART_LEVEL, "").upper() != "TRUE":
        return
    db, tbl = table.dbName, table.tableName
    stamp = now()
    for key, value in list(cat.view.scan_prefix(table_prefix(db, tbl))):
        item = codec.decode(t.HiveObjectPrivilege, value)
        item.hiveObject = t.HiveObjectRef(t.HiveObjectType.PARTITION, db, tbl, list(values), None)
        item.grantInfo.createTime = stamp
        cat.put(part_prefix(db, tbl, part_name) + key[len(table_prefix(db, tbl)):], item)
    root = col_prefix(db, tbl, False)
    for key, value in list(cat.view.scan_prefix(root)):
        item = codec.decode(t.HiveObjectPrivilege, value)
        col = item.hiveObject.columnName if item.hiveObject is not None else None
        item.hiveObject = t.HiveObjectRef(t.HiveObjectType.COLUMN, db, tbl, list(values), col)
        item.grantInfo.createTime = stamp
        cat.put(partcol_prefix(db, tbl, part_name) + key[len(root):], item)


def store_table_privileges(cat, table, privileges) -> None:
    """ObjectStore.createTable: the PrincipalPrivilegeSet given with the table becomes table
    grants, stamped now."""

    if privileges is None:
        return
    stamp = now()
    db, tbl = table.dbName, table.tableName
    for ptype, side in ((t.PrincipalType.USER, privileges.userPrivileges),
                        (t.PrincipalType.GROUP, privileges.groupPrivileges),
                        (t.PrincipalType.ROLE, privileges.rolePrivileges)):
        type_name = t.PrincipalType._VALUES_TO_NAMES[ptype]
        for principal, infos in (side or {}).items():
            for info in infos or []:
                if info is None:
                    continue
                if info.grantorType not in t.PrincipalType._VALUES_TO_NAMES:
                    raise errors.InternalError("grantorType.toString() on null")
                key = _free_key(cat, table_prefix(db, tbl) + _principal_tail(type_name, principal)
                                + f"{_seg(info.privilege)}/{_seg(info.grantor)}")
                cat.put(key, t.HiveObjectPrivilege(
                    hiveObject=t.HiveObjectRef(t.HiveObjectType.TABLE, db, tbl, None, None),
                    principalName=principal, principalType=ptype,
                    grantInfo=t.PrivilegeGrantInfo(info.privilege, stamp, info.grantor,
                                                   info.grantorType, bool(info.grantOption))))


def _all_privilege_prefixes(cat):
    """Every prefix holding privileges, in HMS's listing order of kinds."""
    dbs = cat.database_names()
    yield "global", GLOBAL_PREFIX
    for db in dbs:
        yield "database", db_prefix(db)
    tables = [(db, tbl) for db in dbs for tbl in cat.table_names(db)]
    for kind, sub in (("table", "table/"), ("partition", "part/"), ("column", "col/"),
                      ("partcol", "partcol/")):
        for db, tbl in tables:
            yield kind, _table_root(db, tbl) + sub


def drop_principal_privileges(cat, type_name: str, principal: str) -> None:
    """ObjectStore.removeRole: every grant to the role, on every object, goes."""

    ptype = t.PrincipalType._NAMES_TO_VALUES[type_name]
    for _, prefix in list(_all_privilege_prefixes(cat)):
        for key, value in list(cat.view.scan_prefix(prefix)):
            item = codec.decode(t.HiveObjectPrivilege, value)
            if item.principalName == principal and item.principalType == ptype:
                cat.delete(key)


def with_auth(cat, t, db: str, tbl: str, found: list, user, groups) -> list:
    """Partitions (Raw replies) for the *_with_auth calls: with the caller's privilege set when
    their table has PARTITION_LEVEL_PRIVILEGE=TRUE (ObjectStore.getPartitionWithAuth), else
    as stored."""

    table = cat.table(db, tbl)
    if table is None or (table.parameters or {}).get(PART_LEVEL, "").upper() != "TRUE":
        return found
    key_names = [k.name for k in table.partitionKeys or []]
    out = []
    for raw in found:
        part = codec.decode(t.Partition, raw.data)
        name = names.make_part_name(key_names, part.values)
        part.privileges = _privilege_set(cat, t, lambda p: part_prefix(db, tbl, p), name, user,
                                         groups)
        out.append(part)
    return out


def _role_members(cat) -> dict:
    """(principal type name, principal) -> role names granted to it."""

    out: dict = {}
    for key, _ in cat.view.scan_prefix(keys.ROLE_GRANT_PREFIX):
        role, type_name, principal = keys.split_role_grant_key(key)
        out.setdefault((type_name, principal), []).append(role)
    return out


def roles_in_hierarchy(cat, user, groups) -> list[str]:
    """ObjectStore.listAllRolesInHierarchy: the roles of the user (with the implicit public) and
    of its groups, and all their ancestors."""
    members = _role_members(cat)
    direct: list[str] = []
    if user is not None:
        direct += members.get(("USER", user), []) + ["public"]
    for group in groups or []:
        direct += members.get(("GROUP", group), [])
    seen: list[str] = []

    def visit(role):
        if role in seen:
            return
        seen.append(role)
        for parent in members.get(("ROLE", role), []):
            visit(parent)

    for role in direct:
        visit(role)
    return seen


def _infos(cat, t, prefix: str | None, type_name: str, principal) -> list:
    if prefix is None or principal is None:
        return []
    out = []
    for _, value in cat.view.scan_prefix(prefix + _principal_tail(type_name, principal)):
        out.append(codec.decode(t.HiveObjectPrivilege, value).grantInfo)
    return out


def _privilege_set(cat, t, prefix_of, part_or_none, user, groups):
    """getDBPrivilegeSet / getTablePrivilegeSet / getPartitionPrivilegeSet /
    getColumnPrivilegeSet: ``prefix_of(x)`` is the object's key prefix (None: nothing)."""
    prefix = prefix_of(part_or_none)
    result = t.PrincipalPrivilegeSet()
    if user is not None:
        result.userPrivileges = {user: _infos(cat, t, prefix, "USER", user)}
    if groups:
        result.groupPrivileges = {g: _infos(cat, t, prefix, "GROUP", g) for g in groups}
    roles = roles_in_hierarchy(cat, user, groups)
    if roles:
        result.rolePrivileges = {r: _infos(cat, t, prefix, "ROLE", r) for r in roles}
    return result


class PrivilegeCalls(Family):
    RENAME_REWRITES = {"priv/": _rename_rewrite}  # a renamed table's grants follow it

    def _type_name(self, ptype) -> str:
        name = self.t.PrincipalType._VALUES_TO_NAMES.get(ptype)
        if name is None:  # HMS: principalType.toString() on null
            raise errors.InternalError(f"principal type {ptype!r}")
        return name

    def _decode(self, value):
        return codec.decode(self.t.HiveObjectPrivilege, value)

    def _scan(self, cat, prefix):
        return [(key, self._decode(value)) for key, value in cat.view.scan_prefix(prefix)]

    @staticmethod
    def _table_of(cat, db, tbl, exc=errors.InternalError):
        """HMSHandler.get_table_core, whose NoSuchObjectException is unchecked here."""
        table = cat.table(lower(db), lower(tbl)) if _name_ok(db) and _name_ok(tbl) else None
        if table is None:
            raise exc(f"{db}.{tbl} table not found")
        return table

    @staticmethod
    def _part_name(table, values) -> str:
        if values is None:  # Warehouse.makePartName: vals.size() on null
            raise errors.InternalError("partition values are null")
        return part_name(table, values)

    # --- grant --------------------------------------------------------------------------
    def grant_privileges(self, ctx, privileges):
        if privileges is None:
            raise errors.InternalError("privileges is null")
        t = self.t
        kinds = t.HiveObjectType
        with self.writing(ctx) as cat:
            rows = []
            for item in privileges.privileges or []:
                if item is None:
                    raise errors.InternalError("null privilege definition")
                obj, info = item.hiveObject, item.grantInfo
                if obj is None or info is None or info.privilege is None:
                    raise errors.InternalError("null privilege definition")
                if info.grantorType not in t.PrincipalType._VALUES_TO_NAMES:
                    raise errors.InternalError("grantorType.toString() on null")
                privs = _java_split(info.privilege)
                principal = item.principalName
                if item.principalType == t.PrincipalType.ROLE:
                    self._require_role(cat, principal)
                type_name = self._type_name(item.principalType)
                prefix, ref = self._grant_target(cat, obj)
                if prefix is None:
                    continue
                base = prefix + _principal_tail(type_name, principal)
                existing = [g.grantInfo for _, g in self._scan(cat, base)]
                taken = set()
                for g in existing:
                    if g.grantor is None:
                        if obj.objectType != kinds.TABLE:  # HMS: getGrantor().equalsIgnoreCase
                            raise errors.InternalError("stored grant without grantor")
                        continue
                    if info.grantor is not None and g.grantor.lower() == info.grantor.lower():
                        taken.add(g.privilege)
                for name in privs:
                    if name in taken:  # InvalidObjectException "... is already granted by ..."
                        raise errors.InternalError(f"{name} is already granted by {info.grantor}")
                    rows.append((base + f"{_seg(name)}/{_seg(info.grantor)}", t.HiveObjectPrivilege(
                        hiveObject=ref, principalName=principal, principalType=item.principalType,
                        grantInfo=t.PrivilegeGrantInfo(name, now(), info.grantor,
                                                       info.grantorType, bool(info.grantOption)))))
            for key, row in rows:
                if obj_kind_allows_twins(row.hiveObject.objectType):
                    key = _free_key(cat, key)
                cat.put(key, row)
        return True

    def _require_role(self, cat, name):
        if name in BUILT_IN:
            return
        if name is None or cat.role(name) is None:  # NoSuchObjectException, unchecked
            raise errors.InternalError(f"Role {name} does not exist")

    def _grant_target(self, cat, obj):
        """(key prefix, stored object reference) of a grant's object; (None, None) where HMS
        silently grants nothing (a missing table or partition)."""
        t = self.t
        kinds = t.HiveObjectType
        kind = obj.objectType
        if kind == kinds.GLOBAL:
            return GLOBAL_PREFIX, t.HiveObjectRef(kinds.GLOBAL, None, None, None, None)
        if kind == kinds.DATABASE:
            if not _name_ok(obj.dbName) or cat.database(lower(obj.dbName)) is None:
                raise errors.InternalError(f"There is no database named {obj.dbName}")
            db = lower(obj.dbName)
            return db_prefix(db), t.HiveObjectRef(kinds.DATABASE, db, None, None, None)
        if kind not in (kinds.TABLE, kinds.PARTITION, kinds.COLUMN):
            return None, None
        table = None
        if _name_ok(obj.dbName) and _name_ok(obj.objectName):
            table = cat.table(lower(obj.dbName), lower(obj.objectName))
        if kind == kinds.TABLE:
            if table is None:
                return None, None
            db, tbl = table.dbName, table.tableName
            return table_prefix(db, tbl), t.HiveObjectRef(kinds.TABLE, db, tbl, None, None)
        if kind == kinds.COLUMN and obj.partValues is None:
            if table is None:
                return None, None
            db, tbl = table.dbName, table.tableName
            return (col_prefix(db, tbl, obj.columnName),
                    t.HiveObjectRef(kinds.COLUMN, db, tbl, None, obj.columnName))
        if table is None:
            return None, None
        db, tbl = table.dbName, table.tableName
        name = self._part_name(table, obj.partValues)
        data = cat.raw(keys.part_key(db, tbl, name))
        if data is None:
            return None, None
        values = codec.decode(t.Partition, data).values
        if kind == kinds.PARTITION:
            return part_prefix(db, tbl, name), t.HiveObjectRef(kinds.PARTITION, db, tbl, values, None)
        return (partcol_prefix(db, tbl, name, obj.columnName),
                t.HiveObjectRef(kinds.COLUMN, db, tbl, values, obj.columnName))

    # --- revoke -------------------------------------------------------------------------
    def revoke_privileges(self, ctx, privileges):
        return self._revoke(ctx, privileges, False)

    def _revoke(self, ctx, privileges, grant_option):
        if privileges is None:
            raise errors.InternalError("privileges is null")
        with self.writing(ctx) as cat:
            matched: dict = {}
            for item in privileges.privileges or []:
                if item is None:
                    raise errors.InternalError("null privilege definition")
                obj, info = item.hiveObject, item.grantInfo
                if obj is None or info is None:
                    raise errors.InternalError("null privilege definition")
                if info.privilege is None or not info.privilege.strip():
                    continue
                privs = _java_split(info.privilege)
                type_name = self._type_name(item.principalType)
                prefix, exact = self._revoke_target(cat, obj)
                if prefix is None:
                    continue
                grants = self._scan(cat, prefix + _principal_tail(type_name, item.principalName))
                found = False
                for name in privs:
                    for key, grant in grants:
                        have = grant.grantInfo.privilege
                        same = have == name if exact else (
                            have is not None and have.lower() == name.lower())
                        if same:
                            found = True
                            if grant_option:
                                if not grant.grantInfo.grantOption:
                                    raise errors.MetaError(
                                        f"User {item.principalName} does not have grant option "
                                        f"with privilege {name}")
                                grant.grantInfo.grantOption = False
                            matched[key] = grant
                            break
                    if not found:  # InvalidObjectException "No ... grant found ...", unchecked
                        raise errors.InternalError(f"No grant ({name}) found")
            for key, grant in matched.items():
                if grant_option:
                    cat.put(key, grant)
                else:
                    cat.delete(key)
        return True

    def _revoke_target(self, cat, obj):
        """(key prefix, case-sensitive privilege match) of a revoke's object."""
        kinds = self.t.HiveObjectType
        kind = obj.objectType
        if kind == kinds.GLOBAL:
            return GLOBAL_PREFIX, True
        if kind == kinds.DATABASE:
            if not _name_ok(obj.dbName) or cat.database(lower(obj.dbName)) is None:
                raise errors.InternalError(f"There is no database named {obj.dbName}")
            return db_prefix(lower(obj.dbName)), True
        db, tbl = lower(obj.dbName), lower(obj.objectName)
        if kind == kinds.TABLE:
            return table_prefix(db, tbl), False
        if kind not in (kinds.PARTITION, kinds.COLUMN):
            return None, False
        table = cat.table(db, tbl) if _name_ok(obj.dbName) and _name_ok(obj.objectName) \
            else None
        if table is None:  # HMS: tabObj.getPartitionKeys() / getTableName() on null
            raise errors.InternalError(f"{db}.{tbl} table not found")
        name = None
        if obj.partValues is not None:
            name = self._part_name(table, obj.partValues)
        if kind == kinds.PARTITION:
            return (part_prefix(db, tbl, name) if name is not None else _table_root(db, tbl)
                    + "part/%00/"), False
        col = lower(obj.columnName) if obj.columnName is not None else None
        if name is not None:
            return partcol_prefix(db, tbl, name, col), False
        return col_prefix(db, tbl, col), False

    def grant_revoke_privileges(self, ctx, request):
        kind = self.t.GrantRevokeType
        if request is None or request.requestType not in (kind.GRANT, kind.REVOKE):
            raise errors.InternalError("request type is null")  # HMS: a switch on null
        if request.requestType == kind.GRANT:
            ok = self.grant_privileges(ctx, request.privileges)
        else:
            ok = self._revoke(ctx, request.privileges, bool(request.revokeGrantOption))
        return self.t.GrantRevokePrivilegeResponse(success=ok)

    # --- list ---------------------------------------------------------------------------
    def list_privileges(self, ctx, principal_name, principal_type, hiveObject):
        if hiveObject is None:
            raise errors.InternalError("hiveObject is null")
        kinds = self.t.HiveObjectType
        kind = hiveObject.objectType
        with self.reading(ctx) as cat:
            if kind is None:
                if principal_name is not None:
                    self._type_name(principal_type)
                return self._all_of(cat, principal_name, principal_type, None)
            if kind == kinds.GLOBAL:
                return self._list_global(cat, principal_name, principal_type)
            if kind == kinds.DATABASE:
                return self._list_db(cat, principal_name, principal_type, hiveObject)
            if kind == kinds.TABLE:
                return self._list_table(cat, principal_name, principal_type, hiveObject)
            if kind == kinds.PARTITION:
                return self._list_partition(cat, principal_name, principal_type, hiveObject)
            if kind == kinds.COLUMN:
                return self._list_column(cat, principal_name, principal_type, hiveObject)
        return None

    def _all_of(self, cat, principal, ptype, only_kind):
        """Every grant of a principal (of everyone for a null principal or type) of one kind
        (of all kinds for None), with their stored object references."""
        out = []
        for kind, prefix in _all_privilege_prefixes(cat):
            if only_kind is not None and kind != only_kind:
                continue
            for _, item in self._scan(cat, prefix):
                if principal is not None and ptype is not None and (
                        item.principalName != principal or item.principalType != ptype):
                    continue
                out.append(item)
        return out

    def _principal_grants(self, cat, prefix, principal, ptype, ref):
        type_name = self._type_name(ptype)
        out = []
        for _, item in self._scan(cat, prefix + _principal_tail(type_name, principal)):
            if ref is not None:
                stored_col = item.hiveObject.columnName if item.hiveObject else None
                item.hiveObject = self.t.HiveObjectRef(ref.objectType, ref.dbName, ref.objectName,
                                                       ref.partValues, stored_col)
            out.append(item)
        return out

    @staticmethod
    def _exact(name) -> bool:
        """Whether a name HMS does not normalise can match a stored (lower-case) one."""
        return _name_ok(name) and name == lower(name)

    def _list_global(self, cat, principal, ptype):
        if principal is None:
            return [item for _, item in self._scan(cat, GLOBAL_PREFIX)]
        return self._principal_grants(cat, GLOBAL_PREFIX, principal, ptype, None)

    def _list_db(self, cat, principal, ptype, obj):
        if obj.dbName is None:
            return self._all_of(cat, principal, ptype, "database")
        prefix = db_prefix(lower(obj.dbName))
        if principal is None:
            return [item for _, item in self._scan(cat, prefix)]
        ref = self.t.HiveObjectRef(self.t.HiveObjectType.DATABASE, obj.dbName, None, None, None)
        return self._principal_grants(cat, prefix, principal, ptype, ref)

    def _list_table(self, cat, principal, ptype, obj):
        if obj.dbName is None:
            return self._all_of(cat, principal, ptype, "table")
        if principal is None:
            if not (self._exact(obj.dbName) and self._exact(obj.objectName)):
                return []
            return [item for _, item in self._scan(cat, table_prefix(obj.dbName, obj.objectName))]
        if obj.objectName is None:
            self._type_name(ptype)
            return []
        ref = self.t.HiveObjectRef(self.t.HiveObjectType.TABLE, obj.dbName, obj.objectName,
                                   None, None)
        return self._principal_grants(cat, table_prefix(lower(obj.dbName), lower(obj.objectName)),
                                      principal, ptype, ref)

    def _list_partition(self, cat, principal, ptype, obj):
        if obj.dbName is None:
            return self._all_of(cat, principal, ptype, "partition")
        table = self._table_of(cat, obj.dbName, obj.objectName)
        name = self._part_name(table, obj.partValues)
        if principal is None:
            if not (self._exact(obj.dbName) and self._exact(obj.objectName)):
                return []
            return [item for _, item in self._scan(cat, part_prefix(obj.dbName, obj.objectName,
                                                                    name))]
        ref = self.t.HiveObjectRef(self.t.HiveObjectType.PARTITION, obj.dbName, obj.objectName,
                                   obj.partValues, None)
        return self._principal_grants(cat, part_prefix(table.dbName, table.tableName, name),
                                      principal, ptype, ref)

    def _list_column(self, cat, principal, ptype, obj):
        kinds = self.t.HiveObjectType
        if not obj.partValues:
            if obj.dbName is None:
                return self._all_of(cat, principal, ptype, "column")
            if principal is None:
                if not (self._exact(obj.dbName) and self._exact(obj.objectName)):
                    return []
                return [item for _, item in self._scan(
                    cat, col_prefix(obj.dbName, obj.objectName, obj.columnName))]
            if obj.objectName is None:
                self._type_name(ptype)
                return []
            col = lower(obj.columnName) if obj.columnName is not None else None
            ref = self.t.HiveObjectRef(kinds.COLUMN, obj.dbName, obj.objectName, None, None)
            return self._principal_grants(
                cat, col_prefix(lower(obj.dbName), lower(obj.objectName), col), principal, ptype,
                ref)
        if obj.dbName is None:
            return self._all_of(cat, principal, ptype, "partcol")
        table = self._table_of(cat, obj.dbName, obj.objectName)
        name = self._part_name(table, obj.partValues)
        if principal is None:
            if not (self._exact(obj.dbName) and self._exact(obj.objectName)):
                return []
            return [item for _, item in self._scan(
                cat, partcol_prefix(obj.dbName, obj.objectName, name, obj.columnName))]
        col = lower(obj.columnName) if obj.columnName is not None else None
        ref = self.t.HiveObjectRef(kinds.COLUMN, obj.dbName, obj.objectName, obj.partValues, None)
        return self._principal_grants(cat, partcol_prefix(table.dbName, table.tableName, name, col),
                                      principal, ptype, ref)

    # --- privilege sets -----------------------------------------------------------------
    def get_privilege_set(self, ctx, hiveObject, user_name, group_names):
        if hiveObject is None:
            raise errors.InternalError("hiveObject is null")
        t = self.t
        kinds = t.HiveObjectType
        kind = hiveObject.objectType
        with self.reading(ctx) as cat:
            if kind == kinds.GLOBAL:
                return self._user_set(cat, user_name, group_names)
            if kind not in (kinds.DATABASE, kinds.TABLE, kinds.PARTITION, kinds.COLUMN):
                return None  # HMS answers null: the client sees MISSING_RESULT
            if hiveObject.dbName is None or (kind != kinds.DATABASE and (
                    hiveObject.objectName is None
                    or (kind == kinds.COLUMN and hiveObject.columnName is None))):
                raise errors.InternalError("normalizeIdentifier(null)")
            db = lower(hiveObject.dbName)
            if kind == kinds.DATABASE:
                return _privilege_set(cat, t, lambda _: db_prefix(db), None, user_name, group_names)
            tbl = lower(hiveObject.objectName)
            if kind == kinds.TABLE:
                return _privilege_set(cat, t, lambda _: table_prefix(db, tbl), None, user_name,
                                      group_names)
            name = None
            if hiveObject.partValues:
                table = self._table_of(cat, hiveObject.dbName, hiveObject.objectName,
                                       errors.MetaError)
                name = self._part_name(table, hiveObject.partValues)
            if kind == kinds.PARTITION:
                return _privilege_set(
                    cat, t, lambda p: None if p is None else part_prefix(db, tbl, p), name,
                    user_name, group_names)
            col = lower(hiveObject.columnName)
            return _privilege_set(
                cat, t, lambda p: col_prefix(db, tbl, col) if p is None
                else partcol_prefix(db, tbl, p, col), name, user_name, group_names)

    def _user_set(self, cat, user, groups):
        """ObjectStore.getUserPrivilegeSet: global grants of the user and groups (no roles); a
        principal without grants is left out."""
        t = self.t
        result = t.PrincipalPrivilegeSet()
        if user is not None:
            mine = _infos(cat, t, GLOBAL_PREFIX, "USER", user)
            if mine:
                result.userPrivileges = {user: mine}
        if groups:
            result.groupPrivileges = {}
            for group in groups:
                found = _infos(cat, t, GLOBAL_PREFIX, "GROUP", group)
                if found:
                    result.groupPrivileges[group] = found
        return result

