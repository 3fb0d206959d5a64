"""A materialized view's creation metadata, the ids the server gives tables, and partition specs
of another catalog, as Hive 3.1 and 4.x clients meet them, sent the same to the stock HMS 3.1.3
or 4.0.1 and to us (tests/hms/test_catalog_names.py, tests/hms/test_stock_hms4.py), and what a
Hive 2.3 client sees of such a view (tests/hms/test_stock_hms23_answers.py against the stock
2.3.10, tests/hms/test_stock_hms4.py against the stock 4.0.1).

- ``creationMetadata`` is ``Table``'s id 16 to a 3.x/4.x client (a struct; 2.3.10's ``catName``,
  a string, at the same id): created with the view, answered by ``get_table(_req)`` and
  ``get_table_objects_by_name(_req)``, replaced by ``update_creation_metadata`` (and its errors
  for a missing database, view or creation metadata), kept by an alter, dropped by a rename.
  The tables here are written and read in the 3.x/4.x layout (:class:`Table3`, :func:`call`).
- ``Table.id``: given by the server at creation (what a client sends is not kept), the same
  after an alter and a rename; compared by the order each value first shows (``id1``,
  ``id2``...), never by value. Times likewise (``t1``...).
- ``get_partitions_pspec`` / ``get_part_specs_by_filter`` of a table in a second catalog: the
  specs' ``catName``.

What is compared: each answer (the fields above) or error (class and message), in order.
"""
from __future__ import annotations

from thrift.protocol import fastbinary
from thrift.Thrift import TApplicationException, TMessageType, TType

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes as T
from tests.support.client import text_table

DB = "mvc_db"
CAT = "mvc_cat"
CAT_DB = "mvc_cat_db"
TXNS = "1:9223372036854775807::"
SENT_TIME = 1234  # a client's materialization time: the stock keeps its own
SENT_ID, OTHER_ID = 424242, 77  # ids a client sends: the stock keeps its own


class Table3(T.Table):
    """``Table`` as a Hive 3.x/4.x client writes and reads it: id 16 is ``creationMetadata``."""
    thrift_spec = tuple(
        (16, TType.STRUCT, "creationMetadata", [T.CreationMetadata, T.CreationMetadata.thrift_spec],
         None) if f is not None and f[0] == 16 else
        (14, TType.BOOL, "temporary", None, None) if f is not None and f[0] == 14 else f
        for f in T.Table.thrift_spec)

    def __init__(self, creationMetadata=None, temporary=None, **kw):
        super().__init__(temporary=temporary, **kw)  # None when not answered (not False)
        self.creationMetadata = creationMetadata

    def write(self, oprot):  # the generated write() knows 2.3's id 16 only
        oprot.trans.write(fastbinary.encode_binary(self, [Table3, self.thrift_spec]))


def table3(base: T.Table, **changes) -> Table3:
    fields = {f[2]: getattr(base, f[2], None) for f in T.Table.thrift_spec if f is not None}
    fields.pop("catName", None)
    table = Table3(creationMetadata=getattr(base, "creationMetadata", None), **fields)
    for key, value in changes.items():
        setattr(table, key, value)
    return table


_NEWER: dict[type, type] = {}


def _newer_args(ttype, targ):
    if ttype == TType.STRUCT:
        cls = _newer(targ[0])
        return [cls, cls.thrift_spec]
    if ttype in (TType.LIST, TType.SET):
        return (targ[0], _newer_args(targ[0], targ[1]), targ[2])
    return targ


def _newer(cls):
    """``cls`` (a result or a struct) with every ``Table`` in it read as :class:`Table3`."""
    if cls is T.Table:
        return Table3
    if cls not in _NEWER:
        spec = tuple(None if f is None else (f[0], f[1], f[2], _newer_args(f[1], f[3]), f[4])
                     for f in cls.thrift_spec)
        _NEWER[cls] = type(cls.__name__, (cls,), {"thrift_spec": spec})
    return _NEWER[cls]


def call(client, method: str, *args):
    """``client.<method>(*args)``, the answer read in the 3.x/4.x layout (a table's id 16 a
    creation metadata)."""
    getattr(client, "send_" + method)(*args)
    iprot = client._iprot
    _, mtype, _ = iprot.readMessageBegin()
    if mtype == TMessageType.EXCEPTION:
        x = TApplicationException()
        x.read(iprot)
        iprot.readMessageEnd()
        raise x
    cls = _newer(getattr(ThriftHiveMetastore, method + "_result"))
    result = cls()
    fastbinary.decode_binary(result, iprot, [cls, cls.thrift_spec])
    iprot.readMessageEnd()
    if result.success is not None:
        return result.success
    for f in cls.thrift_spec[1:]:
        if f is not None and getattr(result, f[2]) is not None:
            raise getattr(result, f[2])
    return None


class Labels:
    """Volatile values (server times, ids) named by the order each first shows. ``ids``: whether
    the client reads ``Table.id`` (4.x's id 25; 3.1.3's ``Table`` has none, so a 3.1 client
    skips it, whatever a server sends)."""

    def __init__(self, ids: bool = True, catalogs: bool = True):
        self.seen: dict[tuple, str] = {}
        self.ids = ids
        self.catalogs = catalogs  # whether the client reads Table's id 17 (2.3's does not)

    def __call__(self, kind: str, value, keep=()):
        if kind == "id" and not self.ids:
            return None
        if value is None or value in keep:
            return value
        nth = sum(k == kind for k, _ in self.seen) + 1
        return self.seen.setdefault((kind, value), f"{kind}{nth}")


def _creation(cm, labels: Labels):
    if cm is None:
        return None
    sources = None
    if cm.sourceTables is not None:
        sources = sorted((s.table.dbName, s.table.tableName, labels("id", s.table.id),
                          s.insertedCount, s.updatedCount, s.deletedCount)
                         for s in cm.sourceTables)
    return ("CreationMetadata", cm.catName, cm.dbName, cm.tblName, sorted(cm.tablesUsed or ()),
            cm.validTxnList, labels("t", cm.materializationTime, (SENT_TIME,)), sources)


def shape(value, labels: Labels):
    if isinstance(value, list):
        shapes = [shape(v, labels) for v in value]
        return sorted(shapes, key=repr) if all(isinstance(v, T.Table) for v in value) else shapes
    if isinstance(value, T.GetTableResult):
        return shape(value.table, labels)
    if isinstance(value, T.GetTablesResult):
        return shape(value.tables, labels)
    if isinstance(value, T.Table):
        return ("Table", value.dbName, value.tableName, value.tableType, value.temporary,
                value.rewriteEnabled, value.catalogName if labels.catalogs else None,
                value.parameters.get("k"),
                _creation(getattr(value, "creationMetadata", None), labels),
                labels("id", value.id, (SENT_ID, OTHER_ID)))
    if isinstance(value, T.PartitionSpec):
        parts = value.sharedSDPartitionSpec.partitions if value.sharedSDPartitionSpec else \
            value.partitionList.partitions
        return ("PartitionSpec", value.catName, value.dbName, value.tableName,
                bool(value.rootPath), sorted((p.catName, p.dbName, p.tableName, p.values)
                                             for p in parts))
    return value


def _answer(fn, labels: Labels):
    try:
        return ("ok", shape(fn(), labels))
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        return ("error", type(exc).__name__, getattr(exc, "message", None) or str(exc))


def _base(name: str, db: str = DB, kind="EXTERNAL_TABLE", keys=True) -> T.Table:
    table = text_table(name, db, kind)
    if not keys:
        table.partitionKeys = []
    table.sd.location = None
    table.catalogName = "hive"
    return table


def _view(name: str, creation) -> Table3:
    base = _base(name, kind="MATERIALIZED_VIEW", keys=False)
    base.viewOriginalText = base.viewExpandedText = f"select id, v from {DB}.src"
    return table3(base, rewriteEnabled=True, creationMetadata=creation)


def _cm(tables, txns=TXNS, sources=(), **kw):
    return T.CreationMetadata(
        catName="hive", dbName=DB, tblName="mv", tablesUsed=set(tables), validTxnList=txns,
        sourceTables=[T.SourceTable(T.Table(tableName=t, dbName=DB), *counts)
                      for t, counts in sources] or None, **kw)


def setup(c) -> None:
    c.create_database(T.Database(DB, "", None, {}))
    c.create_table(_base("src", keys=False))
    c.create_table(_base("pt"))


def _got(c, name: str):
    return call(c, "get_table_req", T.GetTableRequest(DB, name, catName="hive")).table


def _altered(c, name: str, **changes):
    table = table3(_got(c, name), **changes)
    table.parameters["k"] = changes.pop("k", "v")
    return table


def cases(hive4: bool, root: str) -> list:
    """(label, call(c)) in order, each on a connection of its own: later ones depend on earlier
    ones."""
    def get(name):
        return lambda c: call(c, "get_table_req", T.GetTableRequest(DB, name, catName="hive"))

    out = [
        ("create the view", lambda c: c.create_table(_view("mv", _cm(
            [f"{DB}.src"], materializationTime=SENT_TIME)))),
        ("get_table_req", get("mv")),
        ("get_table_req of its source", get("src")),
        ("get_table", lambda c: call(c, "get_table", DB, "mv")),
        ("get_table_objects_by_name_req", lambda c: call(
            c, "get_table_objects_by_name_req", T.GetTablesRequest(DB, ["mv", "src"]))),
        ("get_table_objects_by_name", lambda c: call(
            c, "get_table_objects_by_name", DB, ["mv", "src"])),
        ("update_creation_metadata", lambda c: c.update_creation_metadata("hive", DB, "mv", _cm(
            [f"{DB}.src", f"{DB}.pt"], "2:9223372036854775807::",
            [("src", (3, 4, 5))]))),
        ("get_table_req updated", get("mv")),
        ("update with other names in the struct", lambda c: c.update_creation_metadata(
            "hive", DB, "mv", T.CreationMetadata("hive", "zz", "zz", {f"{DB}.src"}, TXNS))),
        ("get_table_req renamed in the struct", get("mv")),
        ("update with a missing table used", lambda c: c.update_creation_metadata(
            "hive", DB, "mv", _cm([f"{DB}.src", f"{DB}.nosuch"]))),
        ("get_table_req after it", get("mv")),
        ("update a missing view", lambda c: c.update_creation_metadata(
            "hive", DB, "nomv", _cm([f"{DB}.src"]))),
        ("update a table", lambda c: c.update_creation_metadata(
            "hive", DB, "src", _cm([f"{DB}.src"]))),
        ("update in a missing database", lambda c: c.update_creation_metadata(
            "hive", "mvc_nodb", "mv", _cm([f"{DB}.src"]))),
        ("update with no catalog", lambda c: c.update_creation_metadata(
            None, DB, "mv", _cm([f"{DB}.src"]))),
        ("update with no creation metadata", lambda c: c.update_creation_metadata(
            "hive", DB, "mv", None)),
        ("alter, no creation metadata", lambda c: c.alter_table(DB, "mv", _altered(
            c, "mv", creationMetadata=None))),
        ("get_table_req altered", get("mv")),
        ("alter with another creation metadata", lambda c: c.alter_table(DB, "mv", _altered(
            c, "mv", k="w", creationMetadata=_cm([f"{DB}.pt"], "5:9223372036854775807::")))),
        ("get_table_req altered again", get("mv")),
        ("a view with no creation metadata", lambda c: c.create_table(_view("mv_nocm", None))),
        ("get_table_req of it", get("mv_nocm")),
        ("rename the view", lambda c: c.alter_table(DB, "mv", _altered(c, "mv", tableName="mv2"))),
        ("get_table_req renamed", get("mv2")),
        ("get_table_req old name", get("mv")),
        ("update the renamed view", lambda c: c.update_creation_metadata(
            "hive", DB, "mv2", _cm([f"{DB}.src"]))),
        ("rename a table", lambda c: c.alter_table(DB, "src", _altered(
            c, "src", tableName="src2"))),
        ("get_table_req of the renamed table", get("src2")),
        ("create with an id", lambda c: c.create_table(table3(_base("withid", keys=False),
                                                             id=SENT_ID))),
        ("get_table_req of it with an id", get("withid")),
        ("alter with another id", lambda c: c.alter_table(DB, "withid", _altered(
            c, "withid", id=OTHER_ID))),
        ("get_table_req of it altered", get("withid")),
        ("drop the view", lambda c: c.drop_table(DB, "mv2", True)),
        ("get_table_req dropped", get("mv2")),
        # partition specs of a table in another catalog
        ("create a catalog", lambda c: c.create_catalog(T.CreateCatalogRequest(
            T.Catalog(CAT, "", f"file:{root}/{CAT}")))),
        ("create a database in it", lambda c: c.create_database(T.Database(
            CAT_DB, "", None, {}, catalogName=CAT))),
        ("create a table in it", lambda c: c.create_table(table3(
            _base("t", CAT_DB), catalogName=CAT))),
        ("add partitions to it", lambda c: c.add_partitions([
            T.Partition([v], CAT_DB, "t", 0, 0, _base("t", CAT_DB).sd, {}, None, CAT)
            for v in ("a", "b")])),
        ("get_partitions_pspec", lambda c: c.get_partitions_pspec(f"@{CAT}#{CAT_DB}", "t", -1)),
        ("get_part_specs_by_filter", lambda c: c.get_part_specs_by_filter(
            f"@{CAT}#{CAT_DB}", "t", 'ds = "b"', -1)),
        ("get_partitions_pspec of hive's", lambda c: c.get_partitions_pspec(DB, "pt", -1)),
        ("get_partitions_pspec missing catalog", lambda c: c.get_partitions_pspec(
            f"@mvc_nocat#{CAT_DB}", "t", -1)),
        ("get_table_req in the catalog", lambda c: call(c, "get_table_req", T.GetTableRequest(
            CAT_DB, "t", catName=CAT))),
    ]
    return out


def run(connection, hive4: bool, root: str) -> list:
    """(label, answer) of every case; ``connection()`` yields a client speaking 3.1 or 4.x."""
    labels = Labels(ids=hive4)
    with connection() as c:
        setup(c)
    out = []
    for label, fn in cases(hive4, root):
        with connection() as c:
            out.append((label, _answer(lambda: fn(c), labels)))
    return out


def differences(stock: list, ours: list, skip=()) -> list[str]:
    return [f"{label}: stock {a!r} / ours {b!r}"
            for (label, a), (_, b) in zip(stock, ours) if a != b and label not in skip]


def after_2_3_alter(c):
    """The view of the 2.3 cases as a 3.x/4.x client reads it (its creation metadata kept
    through the 2.3 client's alter)."""
    return _answer(lambda: call(c, "get_table_req", T.GetTableRequest(DB23, "mv")), Labels())

# --- what a Hive 2.3 client sees ----------------------------------------------------------
DB23 = "mvc23_db"
#: answers of the 4.x run where ours differs from the stock 4.0.1 on purpose: the stock 4.0.1
#: no longer has these two (Invalid method name), ours keeps them for 2.3 clients
#: (docs/compatibility.md, "Hive 3.x and 4.x clients"); ours answers them as get_table_req
KEPT_IN_4 = ("get_table", "get_table_objects_by_name")


def _read_any(iprot, ttype):
    """A value read whatever the IDL says: a struct is {id: (wire type, value)}."""
    if ttype == TType.STRUCT:
        out = {}
        iprot.readStructBegin()
        while True:
            _, ftype, fid = iprot.readFieldBegin()
            if ftype == TType.STOP:
                break
            out[fid] = (ftype, _read_any(iprot, ftype))
            iprot.readFieldEnd()
        iprot.readStructEnd()
        return out
    if ttype in (TType.LIST, TType.SET):
        etype, size = iprot.readListBegin() if ttype == TType.LIST else iprot.readSetBegin()
        values = [_read_any(iprot, etype) for _ in range(size)]
        iprot.readListEnd() if ttype == TType.LIST else iprot.readSetEnd()
        return values
    if ttype == TType.MAP:
        ktype, vtype, size = iprot.readMapBegin()
        values = [(_read_any(iprot, ktype), _read_any(iprot, vtype)) for _ in range(size)]
        iprot.readMapEnd()
        return values
    iprot.skip(ttype)
    return None


def _table_fields(client, method: str, *args) -> list:
    """The ids and wire types of the fields of the table a client is answered (``method``'s
    success: a Table, a GetTableResult's or the first of a list)."""
    getattr(client, "send_" + method)(*args)
    iprot = client._iprot
    _, mtype, _ = iprot.readMessageBegin()
    if mtype == TMessageType.EXCEPTION:
        x = TApplicationException()
        x.read(iprot)
        iprot.readMessageEnd()
        raise x
    result = _read_any(iprot, TType.STRUCT)
    iprot.readMessageEnd()
    _, table = result[0]
    if isinstance(table, list):
        table = table[0]
    elif method == "get_table_req":
        _, table = table[1]
    # the ids of 2.3.10's Table: a 2.3 client skips any other (ours also answers 18, 19 and 25,
    # 3.x/4.x's ownerType, writeId and id, which the stock 2.3.10 does not have)
    return sorted((fid, ftype) for fid, (ftype, _) in table.items() if fid <= 16)


def _altered23(c):
    table = c.get_table_req(T.GetTableRequest(DB23, "mv")).table  # as a 2.3 client reads it
    table.parameters["k"] = "v"
    return _as23(table3(table, id=None, creationMetadata=None))


def _as23(table):
    """``table`` with only what a 2.3 client sends (and a creation metadata at 16, if any)."""
    table.catalogName = table.ownerType = table.writeId = None
    return table


def cases23(with_removed: bool) -> list:
    """(label, call(c)) on a 2.3 client; ``with_removed``: also the calls the stock 4.0.1 has
    no more and the fields of the answers (against the stock 2.3.10)."""
    def view():
        base = _base("mv", DB23, "MATERIALIZED_VIEW", keys=False)
        base.viewOriginalText = base.viewExpandedText = f"select id, v from {DB23}.src"
        creation = _cm([f"{DB23}.src"])
        creation.dbName = DB23
        return _as23(table3(base, rewriteEnabled=True, creationMetadata=creation))

    out = [
        ("create the view, with a creation metadata", lambda c: c.create_table(view())),
        ("get_table_req", lambda c: c.get_table_req(T.GetTableRequest(DB23, "mv"))),
        ("get_table_objects_by_name_req", lambda c: c.get_table_objects_by_name_req(
            T.GetTablesRequest(DB23, ["mv", "src"]))),
        ("alter the view", lambda c: c.alter_table(DB23, "mv", _altered23(c))),
        ("get_table_req altered", lambda c: c.get_table_req(T.GetTableRequest(DB23, "mv"))),
    ]
    if with_removed:
        out += [
            ("get_table", lambda c: c.get_table(DB23, "mv")),
            ("get_table_objects_by_name", lambda c: c.get_table_objects_by_name(
                DB23, ["mv", "src"])),
            ("get_table fields", lambda c: _table_fields(c, "get_table", DB23, "mv")),
            ("get_table_req fields", lambda c: _table_fields(
                c, "get_table_req", T.GetTableRequest(DB23, "mv"))),
            ("get_table_objects_by_name fields", lambda c: _table_fields(
                c, "get_table_objects_by_name", DB23, ["mv"])),
        ]
    return out


def run23(connection, with_removed: bool) -> list:
    """(label, answer) of every case of a 2.3 client (``connection()`` yields one): what it
    reads is what its IDL knows (no creation metadata, no id)."""
    labels = Labels(ids=False, catalogs=False)
    with connection() as c:
        c.create_database(T.Database(DB23, "", None, {}))
        c.create_table(_as23(_base("src", DB23, keys=False)))
    out = []
    for label, fn in cases23(with_removed):
        with connection() as c:
            out.append((label, _answer(lambda: fn(c), labels)))
    return out
