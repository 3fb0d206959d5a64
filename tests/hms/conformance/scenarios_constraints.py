"""Primary and foreign keys: add, list, drop, create_table_with_constraints, drop and rename of
tables that have them."""

from __future__ import annotations

import re

from tests.hms.conformance.builders import cols, database, table
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T

DB = "cfpk_db"
DB2 = "cfpk_other"
GENERATED = re.compile(r"^(pk|fk)_(-?\d+)_\d+_(\d+)$")


def gen(name):
    """Generated constraint names end in a clock value: keep the rest."""
    if name is None:
        return None
    m = GENERATED.match(name)
    return f"{m.group(1)}_{m.group(2)}_<ms>_{m.group(3)}" if m else name


def pks(resp):
    return sorted((k.table_db, k.table_name, k.column_name, k.key_seq, gen(k.pk_name),
                   k.enable_cstr, k.validate_cstr, k.rely_cstr) for k in resp.primaryKeys)


def fks(resp):
    return sorted((k.pktable_db, k.pktable_name, k.pkcolumn_name, k.fktable_db, k.fktable_name,
                   k.fkcolumn_name, k.key_seq, k.update_rule, k.delete_rule, gen(k.fk_name),
                   gen(k.pk_name), k.enable_cstr, k.validate_cstr, k.rely_cstr)
                  for k in resp.foreignKeys)


def mine(resp):
    """Foreign keys of this scenario's databases only (the server is shared)."""
    return [k for k in fks(resp) if str(k[3]).startswith("cfpk_")]


def pk(tbl, column, seq, name, db=DB, enable=False, validate=False, rely=True):
    return T.SQLPrimaryKey(table_db=db, table_name=tbl, column_name=column, key_seq=seq,
                           pk_name=name, enable_cstr=enable, validate_cstr=validate,
                           rely_cstr=rely)


def fk(ptbl, pcol, ctbl, ccol, seq, name, pdb=DB, cdb=DB, update=0, delete=0, pk_name=None):
    return T.SQLForeignKey(pktable_db=pdb, pktable_name=ptbl, pkcolumn_name=pcol,
                           fktable_db=cdb, fktable_name=ctbl, fkcolumn_name=ccol, key_seq=seq,
                           update_rule=update, delete_rule=delete, fk_name=name, pk_name=pk_name,
                           enable_cstr=False, validate_cstr=False, rely_cstr=False)


def rename(c, rec, db, old, new):
    tbl = c.get_table(db, old)
    tbl.tableName = new
    rec.call("alter_table", db, old, tbl, label=f"rename {old} to {new}")


def protocol_error(rec, method, *args, label):
    """HMS answers a missing required field with PROTOCOL_ERROR and then cannot read the
    connection's next message: open a new one."""
    rec.call(method, *args, label=label, msg=True)
    rec._reconnect()


def get_pk(rec, tbl, db=DB, label=None, **kw):
    rec.call("get_primary_keys", T.PrimaryKeysRequest(db, tbl), transform=pks, label=label, **kw)


def get_fk(rec, pdb, ptbl, cdb, ctbl, label=None, transform=fks, **kw):
    rec.call("get_foreign_keys", T.ForeignKeysRequest(pdb, ptbl, cdb, ctbl), transform=transform,
             label=label, **kw)


@scenario
def constraints_primary_keys(c, rec):
    rec.call("create_database", database(DB))
    rec.call("create_table", table(DB, "parent", cols("id int", "code string", "name string")))
    rec.call("create_table", table(DB, "other", cols("x int", "y int")))
    rec.call("create_table", table(DB, "third", cols("a int", "b int")))
    get_pk(rec, "parent", label="get_primary_keys none yet")
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([
        pk("parent", "id", 1, "cfpk_parent_pk"), pk("parent", "code", 2, "cfpk_parent_pk")]),
        label="add_primary_key composite named")
    get_pk(rec, "parent")
    get_pk(rec, "PARENT", db="CFPK_DB", label="get_primary_keys upper case")
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("parent", "name", 1, "cfpk_second")]),
             label="add_primary_key second key", msg=True)
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("nosuch", "id", 1, "cfpk_x")]),
             label="add_primary_key missing table", msg=True)
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("parent", "id", 1, "cfpk_x",
                                                           db="cfpk_nodb")]),
             label="add_primary_key missing database", msg=True)
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("other", "nocol", 1, "cfpk_x")]),
             label="add_primary_key missing column", msg=True)
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("other", "x", 1, "cfpk_x"),
                                                        pk("other", "nocol", 2, "cfpk_x")]),
             label="add_primary_key second column missing", msg=True)
    get_pk(rec, "other", label="nothing stored after a failed add")
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("other", "x", 1, "cfpk_parent_pk")]),
             label="add_primary_key name of another table's key")
    get_pk(rec, "other", label="after duplicate name")
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("third", "A", 1, None, enable=True,
                                                           validate=True, rely=False),
                                                        pk("third", "b", 2, None)]),
             label="add_primary_key generated name, upper-case column")
    get_pk(rec, "third")
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([]), label="add_primary_key empty list")
    protocol_error(rec, "add_primary_key", T.AddPrimaryKeyRequest(None),
                   label="add_primary_key null list")
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([T.SQLPrimaryKey()]),
             label="add_primary_key all fields null", msg=True)
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk(None, "x", 1, "cfpk_y")]),
             label="add_primary_key null table", msg=True)
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("other", None, 1, "cfpk_y")]),
             label="add_primary_key null column", msg=True)
    rec.call("create_table", table(DB, "fourth", cols("a int", "b int")))
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("fourth", "a", 2, None)]),
             label="add_primary_key null name, first seq 2", msg=True)
    get_pk(rec, "fourth")
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("fourth", "a", 1, "CfPk_Mixed"),
                                                        pk("fourth", "b", 1, "CfPk_Mixed")]),
             label="add_primary_key same position twice")
    get_pk(rec, "fourth", label="get_primary_keys after same position twice")
    rec.call("create_table", table(DB, "fifth", cols("a int")))
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("fifth", "a", 1, "cfpk_" + "n" * 251)]),
             label="add_primary_key 256-character name", msg=True)
    get_pk(rec, "fifth", label="after a long name")
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([pk("fifth", "a", 1, "cfpk_" + "n" * 250)]),
             label="add_primary_key 255-character name", msg=True)
    get_pk(rec, "fifth", label="after a 255-character name")
    get_pk(rec, "nosuch", label="get_primary_keys missing table")
    get_pk(rec, "parent", db="cfpk_nodb", label="get_primary_keys missing database")
    protocol_error(rec, "get_primary_keys", T.PrimaryKeysRequest(DB, None),
                   label="get_primary_keys null table")
    protocol_error(rec, "get_primary_keys", T.PrimaryKeysRequest(None, "parent"),
                   label="get_primary_keys null database")
    rec.call("get_primary_keys", None, label="get_primary_keys null request", msg=True)
    # drop_constraint
    rec.call("drop_constraint", T.DropConstraintRequest(DB, "parent", "nosuch_cstr"),
             label="drop_constraint missing", msg=True)
    rec.call("drop_constraint", T.DropConstraintRequest(DB, "other", "cfpk_parent_pk"),
             label="drop_constraint name of the other table's key")
    get_pk(rec, "parent", label="parent after dropping the other table's same-named key")
    get_pk(rec, "other", label="other after drop")
    rec.call("drop_constraint", T.DropConstraintRequest(DB, "third", "CfPk_Mixed"),
             label="drop_constraint of another table", msg=True)
    rec.call("drop_constraint", T.DropConstraintRequest(DB, "FOURTH", "CfPk_Mixed"),
             label="drop_constraint upper-case table", msg=True)
    rec.call("drop_constraint", T.DropConstraintRequest(DB, "fourth", "cfpk_mixed"),
             label="drop_constraint lower-case name", msg=True)
    rec.call("drop_constraint", T.DropConstraintRequest(DB, "fourth", "CfPk_Mixed"))
    get_pk(rec, "fourth", label="fourth after drop")
    rec.call("drop_constraint", T.DropConstraintRequest(DB, "nosuch", "x"),
             label="drop_constraint missing table", msg=True)
    protocol_error(rec, "drop_constraint", T.DropConstraintRequest(None, "parent", "x"),
                   label="drop_constraint null database")
    protocol_error(rec, "drop_constraint", T.DropConstraintRequest(DB, "parent", None),
                   label="drop_constraint null name")
    rec.call("drop_constraint", None, label="drop_constraint null request", msg=True)
    # drop and rename of tables with keys
    rec.call("drop_table", DB, "third", True)
    get_pk(rec, "third", label="get_primary_keys after drop_table")
    rec.call("create_table", table(DB, "third", cols("a int", "b int")))
    get_pk(rec, "third", label="get_primary_keys after re-create")
    rename(c, rec, DB, "parent", "parent_renamed")
    get_pk(rec, "parent_renamed", label="get_primary_keys after rename")
    get_pk(rec, "parent", label="get_primary_keys old name after rename")
    rec.call("drop_database", DB, True, True)


@scenario
def constraints_foreign_keys(c, rec):
    for db in (DB + "_fk", DB2):
        rec.call("create_database", database(db))
    d = DB + "_fk"
    rec.call("create_table", table(d, "parent", cols("id int", "code string", "name string")))
    rec.call("create_table", table(d, "child", cols("cid int", "pid int", "pcode string")))
    rec.call("create_table", table(DB2, "remote", cols("rid int", "pid int")))
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([
        pk("parent", "id", 1, "cffk_parent_pk", db=d), pk("parent", "code", 2, "cffk_parent_pk", db=d)]))
    get_fk(rec, d, "parent", d, None, label="get_foreign_keys none yet")
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "id", "child", "pid", 1, "cffk_child_fk", pdb=d, cdb=d, update=1, delete=2),
        fk("parent", "CODE", "child", "pcode", 2, "cffk_child_fk", pdb=d, cdb=d, update=1, delete=2)]),
        label="add_foreign_key composite named")
    get_fk(rec, d, "parent", d, "child", label="by parent and child")
    get_fk(rec, d, "parent", None, None, label="by parent without child database", msg=True)
    get_fk(rec, d, "parent", d, None, label="by parent")
    get_fk(rec, None, None, d, "child", label="by child")
    get_fk(rec, d, None, d, None, label="by parent database")
    get_fk(rec, None, None, d, None, label="by child database")
    get_fk(rec, None, "parent", d, None, label="by parent table name")
    get_fk(rec, d.upper(), "PARENT", d, None, label="upper-case parent")
    get_fk(rec, None, None, d.upper(), None, label="upper-case child database")
    get_fk(rec, None, None, d, "CHILD", label="upper-case child table")
    get_fk(rec, d, "child", d, None, label="child as parent")
    get_fk(rec, None, None, d, "nosuch", label="missing child table")
    get_fk(rec, None, None, "cfpk_nodb", None, label="missing child database")
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "id", "remote", "pid", 1, None, pdb=d, cdb=DB2)]),
        label="add_foreign_key generated name, other database")
    get_fk(rec, d, "parent", d, None, label="by parent, child database")
    get_fk(rec, d, "parent", DB2, None, label="by parent, other child database")
    get_fk(rec, None, None, DB2, "remote", label="remote")
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "name", "child", "cid", 1, "cffk_not_pk", pdb=d, cdb=d)]),
        label="add_foreign_key to a column outside the primary key")
    get_fk(rec, d, "parent", d, "child", label="after non-key reference")
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("nosuch", "id", "child", "pid", 1, "cffk_x", pdb=d, cdb=d)]),
        label="add_foreign_key missing parent table", msg=True)
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "id", "nosuch", "pid", 1, "cffk_x", pdb=d, cdb=d)]),
        label="add_foreign_key missing child table", msg=True)
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "nocol", "child", "pid", 1, "cffk_x", pdb=d, cdb=d)]),
        label="add_foreign_key missing parent column", msg=True)
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "id", "child", "nocol", 1, "cffk_x", pdb=d, cdb=d)]),
        label="add_foreign_key missing child column", msg=True)
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "id", "child", "pid", 1, "cffk_x", pdb="cfpk_nodb", cdb=d)]),
        label="add_foreign_key missing parent database", msg=True)
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "id", "child", "pid", 1, "cffk_child_fk", pdb=d, cdb=d)]),
        label="add_foreign_key duplicate name")
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "id", "child", "pid", 1, "cffk_parent_pk", pdb=d, cdb=d)]),
        label="add_foreign_key name of a primary key")
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "id", "child", "pid", 1, "cffk_partial", pdb=d, cdb=d),
        fk("parent", "code", "child", "pcode", 2, "cffk_child_fk", pdb=d, cdb=d)]),
        label="add_foreign_key second row duplicate", msg=True)
    rec.call("add_foreign_key", T.AddForeignKeyRequest([
        fk("parent", "id", "child", "pid", 2, None, pdb=d, cdb=d)]),
        label="add_foreign_key null name, first seq 2", msg=True)
    get_fk(rec, d, "parent", d, "child", label="after duplicates")
    rec.call("add_foreign_key", T.AddForeignKeyRequest([]), label="add_foreign_key empty list")
    protocol_error(rec, "add_foreign_key", T.AddForeignKeyRequest(None),
                   label="add_foreign_key null list")
    rec.call("add_foreign_key", T.AddForeignKeyRequest([T.SQLForeignKey()]),
             label="add_foreign_key all fields null", msg=True)
    rec.call("get_foreign_keys", None, label="get_foreign_keys null request", msg=True)
    # drop_constraint of a foreign key, from either side
    rec.call("drop_constraint", T.DropConstraintRequest(d, "parent", "cffk_not_pk"),
             label="drop_constraint foreign key by parent table")
    rec.call("drop_constraint", T.DropConstraintRequest(DB2, "remote", "cffk_child_fk"),
             label="drop_constraint foreign key of another table", msg=True)
    get_fk(rec, d, "parent", d, None, label="after drop by parent")
    # dropping the primary key leaves the foreign keys stored but no longer listed
    rec.call("drop_constraint", T.DropConstraintRequest(d, "parent", "cffk_parent_pk"),
             label="drop_constraint primary key referenced by foreign keys")
    get_fk(rec, d, "parent", d, None, label="after the primary key is dropped")
    get_fk(rec, None, None, DB2, "remote", label="remote after the primary key is dropped")
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([
        pk("parent", "id", 1, "cffk_parent_pk2", db=d), pk("parent", "code", 2, "cffk_parent_pk2", db=d)]))
    get_fk(rec, d, "parent", d, None, label="after a new primary key")
    get_fk(rec, None, None, DB2, None, label="remote after a new primary key")
    # renaming the parent carries the references, dropping it drops them
    rename(c, rec, d, "parent", "parent2")
    get_fk(rec, d, "parent2", d, None, label="after parent rename")
    get_pk(rec, "parent2", db=d, label="primary key after parent rename")
    get_fk(rec, None, None, DB2, "remote", label="remote after parent rename")
    get_fk(rec, None, None, d, "child", label="child after parent rename")
    rename(c, rec, d, "child", "child2")
    get_fk(rec, None, None, d, "child2", label="after child rename")
    get_fk(rec, None, None, d, "child", label="old child name after rename")
    rec.call("drop_table", d, "parent2", True)
    rec.call("create_table", table(d, "parent2", cols("id int", "code string")))
    rec.call("add_primary_key", T.AddPrimaryKeyRequest([
        pk("parent2", "id", 1, "cffk_parent_pk3", db=d), pk("parent2", "code", 2, "cffk_parent_pk3", db=d)]),
        label="re-created parent with the same key")
    get_fk(rec, None, None, d, "child2", label="child after parent dropped")
    get_fk(rec, None, None, DB2, "remote", label="remote after parent dropped")
    rec.call("drop_database", d, True, True)
    rec.call("drop_database", DB2, True, True)


@scenario
def constraints_create_table(c, rec):
    d = DB + "_ct"
    rec.call("create_database", database(d))
    rec.call("create_table_with_constraints", table(d, "dept", cols("id int", "name string")),
             [pk("dept", "id", 1, "cfct_dept_pk", db=d)], [], label="with a primary key")
    rec.call("get_table", d, "dept")
    get_pk(rec, "dept", db=d)
    rec.call("create_table_with_constraints", table(d, "emp", cols("id int", "dept_id int",
                                                                   "boss int")),
             [pk("emp", "id", 1, None, db=d)],
             [fk("dept", "id", "emp", "dept_id", 1, "cfct_emp_dept", pdb=d, cdb=d),
              fk("emp", "id", "emp", "boss", 1, None, pdb=d, cdb=d)],
             label="with a primary key and foreign keys (one to itself)")
    get_pk(rec, "emp", db=d)
    get_fk(rec, None, None, d, "emp", label="foreign keys of emp")
    rec.call("create_table_with_constraints", table(d, "bad1", cols("id int")),
             [pk("bad1", "nocol", 1, "cfct_bad", db=d)], [], label="missing primary key column",
             msg=True)
    rec.call("get_table", d, "bad1", label="table not created after a failed key", msg=True)
    rec.call("create_table_with_constraints", table(d, "bad2", cols("id int")), [],
             [fk("nosuch", "id", "bad2", "id", 1, "cfct_bad", pdb=d, cdb=d)],
             label="foreign key to a missing table", msg=True)
    rec.call("get_table", d, "bad2", label="bad2 not created", msg=True)
    rec.call("create_table_with_constraints", table(d, "bad3", cols("id int")),
             [pk("other", "id", 1, "cfct_bad", db=d)], [],
             label="primary key naming another table", msg=True)
    rec.call("create_table_with_constraints", table(d, "dept", cols("id int")),
             [pk("dept", "id", 1, "cfct_dup", db=d)], [], label="existing table", msg=True)
    rec.call("create_table_with_constraints", table(d, "nulls1", cols("id int")), None, None,
             label="null lists")
    rec.call("create_table_with_constraints", table(d, "nulls2", cols("id int")),
             [pk("nulls2", "id", 1, "cfct_nulls2", db=d)], None, label="null foreign keys",
             msg=True)
    rec.call("get_table", d, "nulls2", label="nulls2 after null foreign keys", msg=True)
    get_pk(rec, "nulls2", db=d)
    rec.call("create_table_with_constraints", table(d, "nulls3", cols("id int")), None, [],
             label="null primary keys", msg=True)
    rec.call("get_table", d, "nulls3", label="nulls3 after null primary keys", msg=True)
    rec.call("create_table_with_constraints", table(d, "dupname", cols("id int")),
             [pk("dupname", "id", 1, "cfct_dept_pk", db=d)], [],
             label="primary key name already used", msg=True)
    rec.call("get_table", d, "dupname", label="dupname after duplicate constraint name", msg=True)
    rec.call("drop_table", d, "dept", True)
    get_fk(rec, None, None, d, "emp", label="emp after dept dropped")
    get_pk(rec, "dept", db=d, label="dept after drop")
    rec.call("drop_database", d, True, True)


@scenario
def constraints_dropped_with_database(c, rec):
    """drop_database(cascade) drops each table as drop_table does: foreign keys that other
    databases hold on its tables go with them, and a table of the same name created later
    inherits nothing."""
    parent_db, child_db = "cfpk_dbdrop_p", "cfpk_dbdrop_c"
    rec.call("create_database", database(parent_db))
    rec.call("create_database", database(child_db))
    rec.call("create_table_with_constraints",
             table(parent_db, "users", cols("id int", "name string")),
             [pk("users", "id", 1, "cfpk_dbdrop_users_pk", db=parent_db)], [])
    rec.call("create_table_with_constraints",
             table(child_db, "orders", cols("id int", "user_id int")), [],
             [fk("users", "id", "orders", "user_id", 1, "cfpk_dbdrop_orders_fk", pdb=parent_db,
                 cdb=child_db, pk_name="cfpk_dbdrop_users_pk")])
    request = T.ForeignKeysRequest(None, None, child_db, "orders")
    rec.call("get_foreign_keys", request, transform=fks, label="foreign keys before")
    rec.call("drop_database", parent_db, True, True)
    rec.call("get_foreign_keys", request, transform=fks, label="foreign keys after the drop")
    rec.call("create_database", database(parent_db))
    rec.call("create_table_with_constraints",
             table(parent_db, "users", cols("id int", "name string")),
             [pk("users", "id", 1, "cfpk_dbdrop_users_pk2", db=parent_db)], [])
    rec.call("get_foreign_keys", request, transform=fks, label="foreign keys after re-creating")
    rec.call("drop_database", parent_db, True, True)
    rec.call("drop_database", child_db, True, True)
