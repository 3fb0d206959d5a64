"""``exchange_partition(s)`` as a Hive 3.1 or 4.x client calls them (database names carrying
the catalog, ``@hive#db``), run the same on the stock HMS 3.1.3 or 4.0.1 and on us: each case
in a database of its own, with a source table of five partitions (year, month, day) and an
empty destination of the same shape. What is compared: the answer or the error (class and
message, the warehouse's path left out), then the partition names of both tables and which of
their directories exist. Used by tests/hms/test_catalog_names.py (3.1.3) and
tests/hms/test_stock_hms4.py (4.0.1). A 2.3 client's exchanges are the conformance scenario
``exchange_partitions`` (tests/hms/conformance/scenarios_pspecs.py)."""
from __future__ import annotations

import os
import shutil
from urllib.parse import urlparse

from hms_proxy.thrift.gen.hive_metastore import ttypes as T

KEYS = ("year", "month", "day")
PARTS = (("2017", "march", "15"), ("2017", "march", "22"), ("2017", "april", "23"),
         ("2017", "may", "23"), ("2018", "april", "23"))
COLS = [T.FieldSchema("test_id", "int", "test col id"),
        T.FieldSchema("test_value", "string", "test col value")]


def _q(db: str | None) -> str:
    """A database name as a Hive 3.1/4.x client sends it (its prependCatalogToDbName: a null
    name is the catalog alone, an empty one is marked)."""
    return "@hive#" + ("" if db is None else db or "!")


def _table(db, name, cols=COLS, keys=KEYS, key_types=None, location=None):
    key_types = key_types or {}
    sd = T.StorageDescriptor(
        cols=list(cols), location=location,
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=T.SerDeInfo(None, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", {}),
        bucketCols=[], sortCols=[], parameters={})
    return T.Table(name, db, "ann", 0, 0, 0, sd,
                   [T.FieldSchema(k, key_types.get(k, "string"), None) for k in keys],
                   {"EXTERNAL": "TRUE"}, None, None, "EXTERNAL_TABLE")


def _spec(values) -> dict:
    return dict(zip(KEYS, values))


class World:
    """One case's database: ``src`` with the five partitions, ``dst`` empty."""

    def __init__(self, client, db: str):
        self.c, self.db = client, db
        client.create_database(T.Database(db, "", None, {}))
        client.create_table(_table(db, "src"))
        client.create_table(_table(db, "dst"))
        self.src = client.get_table_req(T.GetTableRequest(db, "src")).table
        for values in PARTS:
            self.add("src", values)

    def __init_reader__(self, client, db: str) -> "World":
        self.c, self.db = client, db
        return self

    def add(self, table: str, values, location=None, cols=COLS):
        t = self.c.get_table_req(T.GetTableRequest(self.db, table)).table
        sd = t.sd
        sd.location = location
        self.c.add_partition(T.Partition(list(values), self.db, table, 0, 0, sd, {}))

    def root(self) -> str:
        """The warehouse directory, as the server's locations name it."""
        return self.src.sd.location.rsplit(f"/{self.db}.db/", 1)[0]

    def state(self) -> dict:
        out = {}
        for table in ("src", "dst"):
            try:
                t = self.c.get_table_req(T.GetTableRequest(self.db, table)).table
            except T.NoSuchObjectException:
                out[table] = "no such table"
                continue
            base = t.sd.location
            parts = self.c.get_partitions(self.db, table, -1)
            out[table] = sorted(
                ("/".join(p.values), p.sd.location.replace(base, "<table>"),
                 os.path.isdir(urlparse(p.sd.location).path)) for p in parts)
        return out


def _answer(call, root: str):
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        message = getattr(exc, "message", None) or str(exc)
        return ("error", type(exc).__name__, message.replace(root, "<wh>"))
    if isinstance(value, list):
        return ("ok", sorted("/".join(p.values) for p in value))
    if isinstance(value, T.Partition):
        return ("ok", value == T.Partition(createTime=0, lastAccessTime=0) or repr(value))
    return ("ok", value)


def cases() -> list:
    """(label, method, spec, source db, source table, dest db, dest table, prepare) where the
    dbs are ``None`` (null), ``"."`` (the case's own), ``""`` or another name; ``prepare``
    runs on the world first."""
    def other_db(w):
        w.c.create_database(T.Database(w.db + "_b", "", None, {}))
        w.c.create_table(_table(w.db + "_b", "dst"))

    def dest_has(values, location_under=None):
        def prep(w):
            loc = None
            if location_under:
                t = w.c.get_table_req(T.GetTableRequest(w.db, "dst")).table
                loc = t.sd.location + "/" + location_under
            w.add("dst", values, location=loc)
        return prep

    def dest_shaped(cols=COLS, keys=KEYS, key_types=None):
        def prep(w):
            w.c.drop_table(w.db, "dst", True)
            w.c.create_table(_table(w.db, "dst", cols=cols, keys=keys, key_types=key_types))
        return prep

    def wipe_dirs(w):
        shutil.rmtree(urlparse(w.src.sd.location).path)

    def custom_part_location(w):
        w.add("src", ("2019", "march", "22"), location=w.src.sd.location + "/2019m22")

    p1 = _spec(PARTS[1])
    return [
        ("partitions: one", "exchange_partitions", p1, ".", "src", ".", "dst", None),
        ("partitions: year only", "exchange_partitions", _spec(("2017", "", "")), ".", "src",
         ".", "dst", None),
        ("partitions: year and month", "exchange_partitions", _spec(("2017", "march", "")),
         ".", "src", ".", "dst", None),
        ("partitions: dest has others", "exchange_partitions", p1, ".", "src", ".", "dst",
         dest_has(("2019", "march", "15"), "destPart1")),
        ("partitions: between databases", "exchange_partitions", _spec(("2017", "march", "")),
         ".", "src", "._b", "dst", other_db),
        ("partitions: custom partition location", "exchange_partitions",
         _spec(("2019", "march", "22")), ".", "src", ".", "dst", custom_part_location),
        ("partitions: directories gone", "exchange_partitions", p1, ".", "src", ".", "dst",
         wipe_dirs),
        ("partitions: missing source table", "exchange_partitions", p1, ".", "nope", ".",
         "dst", None),
        ("partitions: missing source db", "exchange_partitions", p1, "nodb", "src", ".",
         "dst", None),
        ("partitions: missing dest table", "exchange_partitions", p1, ".", "src", ".", "nope",
         None),
        ("partitions: missing dest db", "exchange_partitions", p1, ".", "src", "nodb", "dst",
         None),
        ("partitions: empty source table", "exchange_partitions", p1, ".", "", ".", "dst",
         None),
        ("partitions: empty source db", "exchange_partitions", p1, "", "src", ".", "dst", None),
        ("partitions: empty dest table", "exchange_partitions", p1, ".", "src", ".", "", None),
        ("partitions: empty dest db", "exchange_partitions", p1, ".", "src", "", "dst", None),
        ("partitions: null source table", "exchange_partitions", p1, ".", None, ".", "dst",
         None),
        ("partitions: null source db", "exchange_partitions", p1, None, "src", ".", "dst",
         None),
        ("partitions: null dest table", "exchange_partitions", p1, ".", "src", ".", None, None),
        ("partitions: null dest db", "exchange_partitions", p1, ".", "src", None, "dst", None),
        ("partitions: empty spec", "exchange_partitions", {}, ".", "src", ".", "dst", None),
        ("partitions: null spec", "exchange_partitions", None, ".", "src", ".", "dst", None),
        ("partitions: already in dest", "exchange_partitions", p1, ".", "src", ".", "dst",
         dest_has(PARTS[1])),
        ("partitions: one of several in dest", "exchange_partitions", _spec(("2017", "", "")),
         ".", "src", ".", "dst", dest_has(PARTS[1])),
        ("partitions: other columns", "exchange_partitions", p1, ".", "src", ".", "dst",
         dest_shaped(cols=COLS + [T.FieldSchema("test_name", "string", None)])),
        ("partitions: other column type", "exchange_partitions", p1, ".", "src", ".", "dst",
         dest_shaped(cols=[T.FieldSchema("test_id", "string", None), COLS[1]])),
        ("partitions: other partition keys", "exchange_partitions", p1, ".", "src", ".", "dst",
         dest_shaped(keys=KEYS[:2])),
        ("partitions: other partition key type", "exchange_partitions", p1, ".", "src", ".",
         "dst", dest_shaped(key_types={"month": "int"})),
        ("partitions: fewer keys in spec", "exchange_partitions",
         {"year": "2017", "month": "march"}, ".", "src", ".", "dst", None),
        ("partitions: more keys in spec", "exchange_partitions", {**p1, "hour": "18"}, ".",
         "src", ".", "dst", None),
        ("partitions: unknown keys in spec", "exchange_partitions",
         {"year": "2017", "honap": "march", "nap": "22"}, ".", "src", ".", "dst", None),
        ("partitions: no known key in spec", "exchange_partitions",
         {"ev": "2017", "honap": "march", "nap": "22"}, ".", "src", ".", "dst", None),
        ("partitions: month only", "exchange_partitions", _spec(("", "march", "")), ".", "src",
         ".", "dst", None),
        ("partitions: year and day", "exchange_partitions", _spec(("2017", "", "22")), ".",
         "src", ".", "dst", None),
        ("partitions: no such partition", "exchange_partitions", _spec(("2017", "march", "25")),
         ".", "src", ".", "dst", None),
        ("partitions: no such year and month", "exchange_partitions",
         _spec(("2017", "august", "")), ".", "src", ".", "dst", None),
        ("partition: one", "exchange_partition", p1, ".", "src", ".", "dst", None),
        ("partition: year only", "exchange_partition", _spec(("2017", "", "")), ".", "src", ".",
         "dst", None),
        ("partition: missing source table", "exchange_partition", p1, ".", "nope", ".", "dst",
         None),
        ("partition: null spec", "exchange_partition", None, ".", "src", ".", "dst", None),
        ("partition: no such partition", "exchange_partition", _spec(("2017", "march", "25")),
         ".", "src", ".", "dst", None),
    ]


def _db(name, own: str):
    if name is None or name == "":
        return name
    return own + name[1:] if name.startswith(".") else name


def run(connection) -> list:
    """(label, answer, state after it) of every case, each on a connection of its own
    (``connection()``: a context manager yielding a client that speaks 3.1 or 4.x): the stock
    HMS leaves its transaction open after some failed exchanges, and the next failure on that
    connection rolls back what came between (the 2.3 scenario records it; we do not copy it)."""
    out = []
    for i, (label, method, spec, sdb, stbl, ddb, dtbl, prepare) in enumerate(cases()):
        with connection() as client:
            world = World(client, f"exch_{i}")
            if prepare is not None:
                prepare(world)
            sdb_, ddb_ = _db(sdb, world.db), _db(ddb, world.db)
            call = getattr(client, method)
            answer = _answer(lambda: call(spec, _q(sdb_), stbl, _q(ddb_), dtbl), world.root())
        with connection() as client:
            out.append((label, answer, World.__new__(World).__init_reader__(client, world.db)
                        .state()))
    return out


def differences(stock: list, ours: list) -> list[str]:
    return [f"{label}: stock {a!r} {sa!r} / ours {b!r} {sb!r}"
            for (label, a, sa), (_, b, sb) in zip(stock, ours) if (a, sa) != (b, sb)]
