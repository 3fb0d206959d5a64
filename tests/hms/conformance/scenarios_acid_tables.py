"""Transactional (ACID) tables: the checks HMS 2.3's TransactionalValidationListener makes on
create_table* and alter_table* (the ``transactional`` parameter, bucketing, ACID formats,
external tables, no way back once transactional), and where they come among HMS's other checks."""

from __future__ import annotations

import copy

from tests.hms.conformance.builders import cols, database, table
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T

PREFIX = "cfacid_"
ORC_IN = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"


def acid_table(db, name, parameters=None, bucketed=True, orc=True, **kw):
    """A table as Hive sends it for CREATE TABLE ... CLUSTERED BY (id) INTO 2 BUCKETS STORED AS
    ORC (or not bucketed / stored as text when told)."""
    tbl = table(db, name, parameters=parameters, **kw)
    if orc:
        tbl.sd.inputFormat, tbl.sd.outputFormat = ORC_IN, ORC_OUT
        tbl.sd.serdeInfo.serializationLib = ORC_SERDE
    if bucketed:
        tbl.sd.bucketCols, tbl.sd.numBuckets = ["id"], 2
    return tbl


def params(tbl):
    return tbl.parameters


def shape(tbl):
    return {"parameters": tbl.parameters, "tableType": tbl.tableType,
            "bucketCols": tbl.sd.bucketCols, "inputFormat": tbl.sd.inputFormat}


def drop_all(rec, db):
    rec.call("drop_database", db, True, True, label=f"drop_database {db} cascade")


@scenario
def acid_create_transactional_values(c, rec):
    db = PREFIX + "create"
    rec.call("create_database", database(db))
    ok = [("plain_true", {"transactional": "true"}),
          ("upper_key", {"TRANSACTIONAL": "TRUE", "other": "x"}),
          ("mixed_key", {"Transactional": "True"}),
          ("false_value", {"transactional": "false", "other": "y"}),
          ("false_upper", {"TRANSACTIONAL": "FALSE"}),
          ("false_only_key", {"Transactional": "fAlSe"}),
          ("no_key", {"other": "z"}),
          ("empty_params", {}),
          ("props_insert_only", {"transactional": "true",
                                 "transactional_properties": "insert_only"}),
          ("props_bad", {"transactional": "true", "transactional_properties": "bogus"}),
          ("props_upper", {"Transactional": "TRUE", "TRANSACTIONAL_PROPERTIES": "DEFAULT"}),
          ("props_legacy", {"transactional": "true", "Transactional_Properties": "Legacy"}),
          ("props_empty", {"transactional": "true", "transactional_properties": ""}),
          ("props_false", {"transactional": "false", "TRANSACTIONAL_PROPERTIES": "Bogus"}),
          ("props_alone", {"transactional_properties": "default"}),
          ("props_alone_bad", {"Transactional_properties": "NOPE"})]
    for name, p in ok:
        rec.call("create_table", acid_table(db, name, p), label=f"create_table {name}", msg=True)
        rec.call("get_table", db, name, transform=params, label=f"get_table {name}")
    # plain text, not bucketed: with 'false' the key just goes
    rec.call("create_table", table(db, "text_false", parameters={"transactional": "false"}))
    rec.call("get_table", db, "text_false", transform=params)
    bad = [("bad_yes", {"transactional": "yes"}),
           ("bad_empty", {"transactional": ""}),
           ("bad_one", {"TRANSACTIONAL": "1"}),
           ("bad_space", {"transactional": "true "}),
           ("bad_key_space", {"transactional ": "true"})]
    for name, p in bad:
        rec.call("create_table", table(db, name, parameters=p), label=f"create_table {name}",
                 msg=True)
    rec.call("get_table", db, "bad_key_space", transform=params)
    rec.call("get_all_tables", db, unordered=True)
    drop_all(rec, db)


@scenario
def acid_create_format_and_bucketing(c, rec):
    db = PREFIX + "fmt"
    rec.call("create_database", database(db))
    tx = {"transactional": "true"}
    rec.call("create_table", table(db, "text_nobucket", parameters=tx), msg=True,
             label="text, not bucketed")
    rec.call("create_table", acid_table(db, "text_bucketed", tx, orc=False), msg=True,
             label="text, bucketed")
    rec.call("create_table", acid_table(db, "orc_nobucket", tx, bucketed=False), msg=True,
             label="orc, not bucketed")
    t = acid_table(db, "orc_numbuckets_only", tx, bucketed=False)
    t.sd.numBuckets = 4
    rec.call("create_table", t, msg=True, label="orc, numBuckets but no bucketCols")
    t = acid_table(db, "orc_bucketcols_only", tx)
    t.sd.numBuckets = -1
    rec.call("create_table", t, msg=True, label="orc, bucketCols but numBuckets -1")
    rec.call("get_table", db, "orc_bucketcols_only", transform=shape)
    t = acid_table(db, "orc_nullbuckets", tx)
    t.sd.bucketCols = None
    rec.call("create_table", t, msg=True, label="orc, bucketCols null")
    cases = [("no_such_input", "com.example.NoSuchInputFormat", ORC_OUT),
             ("no_such_output", ORC_IN, "com.example.NoSuchOutputFormat"),
             ("empty_input", "", ORC_OUT),
             ("text_input", "org.apache.hadoop.mapred.TextInputFormat", ORC_OUT),
             ("text_output", ORC_IN, "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"),
             ("text_input_bad_output", "org.apache.hadoop.mapred.TextInputFormat", "nope"),
             ("parquet", "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
              "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"),
             ("interfaces", "org.apache.hadoop.hive.ql.io.AcidInputFormat",
              "org.apache.hadoop.hive.ql.io.AcidOutputFormat"),
             ("lower_case_orc", ORC_IN.lower(), ORC_OUT)]
    for name, inp, out in cases:
        t = acid_table(db, name, tx)
        t.sd.inputFormat, t.sd.outputFormat = inp, out
        rec.call("create_table", t, msg=True, label=f"create_table {name}")
    # not bucketed comes first, before any format is looked at
    t = acid_table(db, "nobucket_badformat", tx, bucketed=False)
    t.sd.inputFormat = "com.example.NoSuchInputFormat"
    rec.call("create_table", t, msg=True, label="not bucketed, unknown input format")
    t = acid_table(db, "null_input", tx)
    t.sd.inputFormat = None
    rec.call("create_table", t, msg=True, label="input format null")
    t = acid_table(db, "null_output", tx)
    t.sd.outputFormat = None
    rec.call("create_table", t, msg=True, label="output format null")
    t = acid_table(db, "null_sd", tx)
    t.sd = None
    rec.call("create_table", t, msg=True, label="storage descriptor null")
    t = table(db, "null_sd_plain")
    t.sd = None
    rec.call("create_table", t, msg=True, label="storage descriptor null, not transactional")
    # a view: its storage is not bucketed
    v = table(db, "a_view", parameters=dict(tx), table_type="VIRTUAL_VIEW",
              viewOriginalText="select 1", viewExpandedText="select 1")
    rec.call("create_table", v, msg=True, label="view declared transactional")
    # 'false' on a view or any format is dropped
    v = table(db, "b_view", parameters={"transactional": "false"}, table_type="VIRTUAL_VIEW",
              viewOriginalText="select 1", viewExpandedText="select 1")
    rec.call("create_table", v, msg=True, label="view transactional false")
    rec.call("get_table", db, "b_view", transform=params)
    rec.call("get_all_tables", db, unordered=True)
    drop_all(rec, db)


@scenario
def acid_create_external_and_types(c, rec):
    db = PREFIX + "ext"
    rec.call("create_database", database(db))
    tx = {"transactional": "true"}
    t = acid_table(db, "ext1", tx, table_type="EXTERNAL_TABLE")
    rec.call("create_table", t, msg=True, label="external table")
    t = acid_table(db.upper(), "Ext_Mixed", tx, table_type="EXTERNAL_TABLE")
    rec.call("create_table", t, msg=True, label="external table, names as given")
    t = acid_table(db, "ext_type_only", tx, table_type="EXTERNAL_TABLE")
    del t.parameters["EXTERNAL"]
    rec.call("create_table", t, msg=True, label="EXTERNAL_TABLE type without EXTERNAL param")
    t = acid_table(db, "managed_ext_param", dict(tx, EXTERNAL="TRUE"))
    rec.call("create_table", t, msg=True, label="MANAGED_TABLE type with EXTERNAL=TRUE")
    rec.call("get_table", db, "managed_ext_param", transform=shape)
    t = acid_table(db, "ext_not_bucketed", tx, bucketed=False, table_type="EXTERNAL_TABLE")
    rec.call("create_table", t, msg=True, label="external and not bucketed")
    t = acid_table(db, "ext_false", {"transactional": "false"}, table_type="EXTERNAL_TABLE")
    rec.call("create_table", t, msg=True, label="external, transactional false")
    rec.call("get_table", db, "ext_false", transform=shape)
    t = acid_table(db, "null_type", tx, table_type=None)
    rec.call("create_table", t, msg=True, label="table type null")
    t = acid_table(db, "odd_type", tx, table_type="INDEX_TABLE")
    rec.call("create_table", t, msg=True, label="table type INDEX_TABLE")
    got = rec.call("get_table", db, "odd_type")
    rec.note("odd_type", got and shape(got))
    if got is not None:  # an index table cannot be dropped as a table: make it a plain one
        got.tableType = "MANAGED_TABLE"
        rec.call("alter_table", db, "odd_type", got, msg=True, label="alter INDEX_TABLE type")
    rec.call("get_all_tables", db, unordered=True)
    drop_all(rec, db)


@scenario
def acid_create_check_order(c, rec):
    """The listener runs after the name/column checks and before the database / table-exists
    checks; also through create_table_with_environment_context and _with_constraints."""
    db = PREFIX + "order"
    rec.call("create_database", database(db))
    tx = {"transactional": "true"}
    rec.call("create_table", table(PREFIX + "nosuchdb", "t", parameters=tx), msg=True,
             label="missing database, bad acid table")
    rec.call("create_table", table(PREFIX + "nosuchdb", "t", parameters={"transactional": "x"}),
             msg=True, label="missing database, bad transactional value")
    rec.call("create_table", acid_table(PREFIX + "nosuchdb", "t", tx), msg=True,
             label="missing database, good acid table")
    rec.call("create_table", table(db, "plain"))
    rec.call("create_table", table(db, "plain", parameters=tx), msg=True,
             label="existing table, bad acid table")
    rec.call("create_table", acid_table(db, "plain", tx), msg=True,
             label="existing table, good acid table")
    rec.call("create_table", table(db, "bad name!", parameters=tx), msg=True,
             label="invalid name, bad acid table")
    rec.call("create_table", table(db, "badcol", cols("a int", "a string"), parameters=tx),
             msg=True, label="duplicate column, bad acid table")
    rec.call("create_table", table(db, "badtype", cols("a no_such_type"), parameters=tx),
             msg=True, label="invalid column type, bad acid table")
    env = T.EnvironmentContext(properties={"k": "v"})
    rec.call("create_table_with_environment_context", table(db, "env1", parameters=tx), env,
             msg=True)
    rec.call("create_table_with_environment_context",
             table(db, "env2", parameters={"transactional": "no"}), env, msg=True)
    rec.call("create_table_with_environment_context",
             acid_table(db, "env3", {"TRANSACTIONAL": "TRUE"}), env, msg=True)
    rec.call("get_table", db, "env3", transform=params)
    pk = [T.SQLPrimaryKey(table_db=db, table_name="con1", column_name="id", key_seq=1,
                          pk_name="cfacid_pk1", enable_cstr=False, validate_cstr=False,
                          rely_cstr=False)]
    rec.call("create_table_with_constraints", table(db, "con1", parameters=tx), pk, [],
             msg=True)
    rec.call("create_table_with_constraints",
             acid_table(db, "con2", {"transactional": "maybe"}), pk, [], msg=True)
    rec.call("create_table_with_constraints",
             acid_table(db, "con3", {"Transactional": "false"}), [], [], msg=True)
    rec.call("get_table", db, "con3", transform=params)
    long_name = "t" * 200
    rec.call("create_table", table(PREFIX + "nosuchdb", long_name), msg=True,
             label="missing database, name too long")
    rec.call("create_table", table(db, long_name, parameters=tx), msg=True,
             label="name too long, bad acid table")
    rec.call("create_table", table(db, long_name), msg=True, label="name of 200")
    for n in (256, 257):
        rec.call("create_table", table(db, "t" * n, location=rec.scratch("long")), msg=True,
                 label=f"name of {n}")
    rec.call("drop_table", db, long_name, True, label="drop_table name of 200")
    rec.call("drop_table", db, "t" * 256, False, label="drop_table name of 256")
    rec.call("create_table", table(PREFIX + "nosuchdb", "dup", cols("a int", "A string")),
             msg=True, label="missing database, duplicate column")
    rec.call("create_table", table(db, "plain", cols("a int", "A string")), msg=True,
             label="existing table, duplicate column")
    rec.call("get_all_tables", db, unordered=True)
    drop_all(rec, db)


@scenario
def acid_create_key_variants(c, rec):
    """Several spellings of the key at once: the value of the last one in Java's HashSet
    order is the one that counts, and all of them go."""
    db = PREFIX + "keys"
    rec.call("create_database", database(db))
    variants = [("v1", {"transactional": "true", "TRANSACTIONAL": "false"}),
                ("v2", {"TRANSACTIONAL": "false", "transactional": "true"}),
                ("v3", {"transactional": "false", "Transactional": "true"}),
                ("v4", {"Transactional": "true", "transactional": "false"}),
                ("v5", {"transactional": "yes", "TRANSACTIONAL": "true", "tRANSACTIONAL": "false"}),
                ("v6", {"TransactionaL": "false", "transactionaL": "true", "a": "1", "b": "2",
                        "c": "3"}),
                ("v7", {"transactional": "true", "TRANSACTIONAL": "TRUE", "x": "y"})]
    for name, p in variants:
        rec.call("create_table", acid_table(db, name, p), msg=True, label=f"create_table {name}")
        rec.call("get_table", db, name, transform=params, label=f"get_table {name}")
        rec.call("create_table", table(db, name + "_text", parameters=p), msg=True,
                 label=f"create_table {name} as text")
        rec.call("get_table", db, name + "_text", transform=params,
                 label=f"get_table {name} as text")
    rec.call("create_table", acid_table(db, "unicode_key", {"TRANSACT\u0130ONAL": "true"}),
             msg=True, label="dotted capital I in the key")
    rec.call("get_table", db, "unicode_key", transform=params)
    rec.call("create_table", table(db, "unicode_val", parameters={"transactional": "fal\u017fe"}),
             msg=True, label="long s in the value")
    rec.call("get_table", db, "unicode_val", transform=params)
    props = [("p1", {"transactional": "true", "transactional_properties": "default",
                     "TRANSACTIONAL_PROPERTIES": "bogus"}),
             ("p2", {"transactional": "true", "TRANSACTIONAL_PROPERTIES": "bogus",
                     "transactional_properties": "default"}),
             ("p3", {"transactional": "true", "Transactional_Properties": "LEGACY",
                     "transactional_properties": "default", "a": "b"})]
    for name, p in props:
        rec.call("create_table", acid_table(db, name, p), msg=True, label=f"create_table {name}")
        rec.call("get_table", db, name, transform=params, label=f"get_table {name}")
    rec.call("get_all_tables", db, unordered=True)
    drop_all(rec, db)


def altered(base, **changes):
    t = copy.deepcopy(base)
    for k, v in changes.items():
        setattr(t, k, v)
    return t


@scenario
def acid_alter_rules(c, rec):
    db = PREFIX + "alter"
    rec.call("create_database", database(db))
    rec.call("create_table", table(db, "plain"))
    rec.call("create_table", acid_table(db, "orc"))
    plain = rec.call("get_table", db, "plain", transform=params) or table(db, "plain")
    orc = rec.call("get_table", db, "orc", transform=params) or acid_table(db, "orc")
    # a plain (text, not bucketed) table cannot become transactional
    rec.call("alter_table", db, "plain", altered(plain, parameters={"transactional": "true"}),
             msg=True, label="plain -> transactional")
    rec.call("alter_table", db, "plain", altered(plain, parameters={"transactional": "false"}),
             msg=True, label="plain -> transactional false")
    rec.call("alter_table", db, "plain", altered(plain, parameters={"TRANSACTIONAL": "yes"}),
             msg=True, label="plain -> transactional yes")
    rec.call("alter_table", db, "plain", altered(plain, parameters={"a": "b"}), msg=True,
             label="plain, no transactional key")
    rec.call("get_table", db, "plain", transform=params)
    # a bucketed ORC table can (the value is kept as given, the key is normalised)
    rec.call("alter_table", db, "orc", altered(orc, parameters={"Transactional": "TRUE"}),
             msg=True, label="orc -> Transactional=TRUE")
    rec.call("get_table", db, "orc", transform=params)
    cur = rec.call("get_table", db, "orc") or orc
    base = copy.deepcopy(cur)
    base.parameters = {k: v for k, v in (cur.parameters or {}).items()
                       if k != "transient_lastDdlTime"}
    steps = [
        ("unset", {"other": "1"}),
        ("false", {"transactional": "false"}),
        ("FALSE", {"transactional": "FALSE"}),
        ("empty", {"transactional": ""}),
        ("same TRUE", {"transactional": "TRUE"}),
        ("lower true", {"TRANSACTIONAL": "true"}),
    ]
    for label, p in steps:
        rec.call("alter_table", db, "orc", altered(base, parameters=p), msg=True,
                 label=f"orc transactional: {label}")
        rec.call("get_table", db, "orc", transform=params, label=f"get_table after {label}")
    rec.call("alter_table", db, "orc", altered(base, parameters=None), msg=True,
             label="orc, parameters null")
    rec.call("alter_table", db, "orc", altered(base, parameters={}), msg=True,
             label="orc, parameters empty")
    tx = {"transactional": "true"}
    nobucket = altered(base, parameters=dict(tx))
    nobucket.sd.bucketCols = []
    rec.call("alter_table", db, "orc", nobucket, msg=True, label="orc transactional, unbucketed")
    text = altered(base, parameters=dict(tx))
    text.sd.inputFormat = "org.apache.hadoop.mapred.TextInputFormat"
    rec.call("alter_table", db, "orc", text, msg=True, label="orc transactional, to text")
    unknown = altered(base, parameters=dict(tx))
    unknown.sd.outputFormat = "com.example.Nope"
    rec.call("alter_table", db, "orc", unknown, msg=True, label="orc transactional, unknown format")
    ext = altered(base, parameters=dict(tx, EXTERNAL="TRUE"), tableType="EXTERNAL_TABLE")
    rec.call("alter_table", db, "orc", ext, msg=True, label="orc transactional, to external")
    ext = altered(base, parameters=dict(tx), tableType="EXTERNAL_TABLE", dbName="CFACID_Alter",
                  tableName="ORC")
    rec.call("alter_table", db, "orc", ext, msg=True, label="external, names as given")
    ext = altered(base, parameters=dict(tx, EXTERNAL="TRUE"))
    rec.call("alter_table", db, "orc", ext, msg=True, label="EXTERNAL=TRUE, managed type")
    rec.call("get_table", db, "orc", transform=shape)
    rec.call("alter_table", db, "orc", altered(base, parameters=dict(tx), tableType=None),
             msg=True, label="orc transactional, type null")
    rec.call("alter_table", db, "orc", altered(base, parameters={"transactional": "false"},
                                               tableType=None),
             msg=True, label="unset, type null")
    nosd = altered(base, parameters=dict(tx))
    nosd.sd.inputFormat = None
    rec.call("alter_table", db, "orc", nosd, msg=True, label="orc transactional, input null")
    rec.call("get_table", db, "orc", transform=shape)
    rec.call("alter_table", db, "orc", altered(base, parameters=dict(tx), sd=None), msg=True,
             label="orc transactional, sd null")
    rec.call("alter_table", db, "orc", altered(base, parameters=dict(tx), dbName=None,
                                               tableType="EXTERNAL_TABLE"),
             msg=True, label="external, db name null")
    drop_all(rec, db)


@scenario
def acid_alter_check_order(c, rec):
    """The listener runs after the table lookup and before the alter handler's own checks
    (name, columns, partition keys, rename); all three alter_table variants run it."""
    db = PREFIX + "alt2"
    rec.call("create_database", database(db))
    orc = acid_table(db, "orc", {"transactional": "true"})
    rec.call("create_table", orc)
    base = rec.call("get_table", db, "orc") or orc
    base.parameters = {}
    rec.call("alter_table", db, "missing", altered(base, parameters={"transactional": "x"}),
             msg=True, label="missing table, would unset")
    rec.call("alter_table", db, "orc", altered(base, tableName="bad name!"), msg=True,
             label="invalid new name, unset")
    rec.call("alter_table", db, "orc", altered(base, tableName="bad name!",
                                               parameters={"transactional": "true"}),
             msg=True, label="invalid new name, kept")
    badcol = altered(base)
    badcol.sd.cols = cols("a int", "b no_such_type")
    rec.call("alter_table", db, "orc", badcol, msg=True, label="invalid column, unset")
    pk = altered(base, partitionKeys=cols("ds string"))
    rec.call("alter_table", db, "orc", pk, msg=True, label="partition keys, unset")
    rec.call("alter_table", db, "orc", altered(base, tableName="orc2"), msg=True,
             label="rename, unset")
    rec.call("alter_table", db, "orc", altered(base, tableName="orc2",
                                               parameters={"transactional": "TRUE"}),
             msg=True, label="rename, kept")
    rec.call("get_table", db, "orc2", transform=shape)
    cur = rec.call("get_table", db, "orc2") or base
    back = altered(cur, tableName="orc")
    back.parameters = {"transactional": "true"}
    rec.call("alter_table_with_environment_context", db, "orc2", back,
             T.EnvironmentContext(properties={"CASCADE": "true"}), msg=True)
    rec.call("alter_table_with_environment_context", db, "orc",
             altered(base, parameters={"transactional": "false"}), None, msg=True)
    rec.call("alter_table_with_cascade", db, "orc",
             altered(base, parameters={"a": "b"}), True, msg=True)
    ok = altered(base, parameters={"TRANSACTIONAL": "true", "a": "c"})
    rec.call("alter_table_with_cascade", db, "orc", ok, False, msg=True)
    rec.call("get_table", db, "orc", transform=shape)
    rec.call("alter_table", db, "orc", altered(base, parameters={
        "transactional": "true", "TRANSACTIONAL": "false"}), msg=True, label="two spellings")
    rec.call("alter_table", db, "orc", altered(base, parameters={
        "Transactional": "false", "TRANSACTIONAL": "TRUE", "x": "1"}), msg=True,
        label="two spellings again")
    rec.call("get_table", db, "orc", transform=params)
    drop_all(rec, db)


@scenario
def acid_transactional_properties(c, rec):
    """transactional_properties: checked and lower-cased when a table becomes transactional;
    fixed once it is."""
    db = PREFIX + "props"
    rec.call("create_database", database(db))
    rec.call("create_table", acid_table(db, "plain"))
    rec.call("create_table", acid_table(db, "acid", {"transactional": "true"}))
    rec.call("create_table", acid_table(db, "acidp", {"transactional": "true",
                                                     "transactional_properties": "DEFAULT"}))
    plain = rec.call("get_table", db, "plain") or acid_table(db, "plain")
    acid = rec.call("get_table", db, "acid") or acid_table(db, "acid")
    acidp = rec.call("get_table", db, "acidp") or acid_table(db, "acidp")
    rec.note("acidp parameters", params(acidp))

    def alter(name, base, p, label):
        rec.call("alter_table", db, name, altered(base, parameters=p), msg=True, label=label)
        rec.call("get_table", db, name, transform=params, label=f"get_table after {label}")

    # not transactional (before and after): a transactional_properties is checked
    alter("plain", plain, {"transactional_properties": "bogus"}, "plain, bad properties")
    alter("plain", plain, {"TRANSACTIONAL_PROPERTIES": "Legacy"}, "plain, Legacy properties")
    alter("plain", plain, {"other": "1"}, "plain, properties dropped")
    alter("plain", plain, {"transactional_properties": "default",
                           "TRANSACTIONAL_PROPERTIES": "bogus"}, "plain, two spellings")
    alter("plain", plain, {"TRANSACTIONAL_PROPERTIES": "bogus",
                           "transactional_properties": "Legacy"}, "plain, two spellings again")
    alter("plain", plain, {"other": "1"}, "plain, properties dropped again")
    # becoming transactional: checked, lower-cased
    alter("plain", plain, {"transactional": "true", "transactional_properties": "nope"},
          "plain -> acid, bad properties")
    alter("plain", plain, {"transactional": "TRUE", "Transactional_Properties": "DEFAULT"},
          "plain -> acid, DEFAULT properties")
    # transactional without properties: none may be added
    alter("acid", acid, {"transactional": "true", "transactional_properties": "default"},
          "acid, add properties")
    alter("acid", acid, {"transactional_properties": "default"},
          "acid, add properties, no transactional")
    alter("acid", acid, {"transactional": "true", "x": "y"}, "acid, no properties")
    # transactional with properties: same value (any case) kept as given, others refused
    alter("acidp", acidp, {"transactional": "true", "transactional_properties": "LEGACY"},
          "acidp, other properties")
    alter("acidp", acidp, {"transactional": "true", "TRANSACTIONAL_PROPERTIES": "Default"},
          "acidp, same properties other case")
    alter("acidp", acidp, {"transactional": "true", "transactional_properties": "bogus"},
          "acidp, bad properties")
    alter("acidp", acidp, {"transactional": "true"}, "acidp, properties dropped")
    alter("acidp", acidp, {"transactional": "true", "transactional_properties": "default"},
          "acidp, properties back")
    rec.call("get_all_tables", db, unordered=True)
    drop_all(rec, db)
