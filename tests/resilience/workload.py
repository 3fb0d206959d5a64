"""A mixed write workload whose every write can be checked after a crash.

Each operation writes something no later operation rewrites, so after ``kill -9`` of the
server and a restart on the same store the state says, for every operation, whether it took
effect: every *acknowledged* one must have, whole; the one in flight when the server died may
have or not, but never in part (five partitions of one ``add_partitions`` are all there or
none; a dropped table is gone with its partitions or all there).

Operations (``i`` a unique number):

* ``add``: ``add_partitions`` of five partitions ``p=i_0..i_4`` to ``rz.base``;
* ``table``: ``create_table rz.t_i`` (partitioned by ``p``) and, acknowledged separately,
  ``add_partitions`` of three partitions to it (``fill``);
* ``param``: ``alter_table rz.base`` adding parameter ``k_i``;
* ``drop``: ``drop_table rz.t_j`` (with its partitions) of an earlier filled table;
* ``unpart``: ``drop_partition rz.base p=j_0`` of an earlier ``add``.

With ``heavy`` (the lakeFS kill run: writes of many keys, the ones a store without
transactions would half-apply), also:

* ``bulk``: ``create_table rz.b_i`` and, acknowledged separately, ``add_partitions`` of
  1,000 partitions to it (``bulkfill``);
* ``rename``: ``alter_table`` renaming ``rz.b_j`` (with its 1,000 partitions) to ``rz.r_j``;
* ``dbmake``: ``create_database x_i``, then a table in it with three partitions (``dbtable``,
  ``dbfill``); ``dropdb``: ``drop_database x_j`` cascading, of an earlier filled one.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from hms_proxy.thrift.gen.hive_metastore import ttypes as T

DB = "rz"
BULK = 1000  # partitions of a heavy add_partitions


def sd(location=None):
    return T.StorageDescriptor(
        cols=[T.FieldSchema("id", "bigint", None)], location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        serdeInfo=T.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde."
                                    "ParquetHiveSerDe", {}), bucketCols=[], sortCols=[],
        parameters={})


def table(name: str, db: str = DB) -> T.Table:
    return T.Table(name, db, "rz", 0, 0, 0, sd(), [T.FieldSchema("p", "string", None)], {},
                   None, None, "MANAGED_TABLE")


def partitions(tbl: str, values: list[str], db: str = DB) -> list[T.Partition]:
    return [T.Partition([v], db, tbl, 0, 0, sd(), {}) for v in values]


def namespace(writer: int) -> tuple[str, str]:
    """The database and the prefix of the databases of writer number ``writer`` (several
    writers at once each write their own names: a ledger is checked alone)."""
    return (DB, "x_") if writer == 0 else (f"{DB}{writer}", f"x{writer}_")


@dataclass
class Op:
    kind: str
    i: int
    target: int | None = None  # the earlier operation a drop undoes


@dataclass
class Ledger:
    """What the writer did: acknowledged operations, and the one in flight (if any)."""
    acked: list[Op] = field(default_factory=list)
    in_flight: Op | None = None
    stopped_by: BaseException | None = None  # what ended the run early (the server killed?)


def setup(client, db: str = DB) -> None:
    client.create_database(T.Database(db, "", None, {}))
    client.create_table(table("base", db))


class Writer:
    """Issues the workload's operations on a client, recording them in a ledger."""

    def __init__(self, client, seed: int, heavy: bool = False, writer: int = 0):
        self.client = client
        self.db, self.xp = namespace(writer)
        self.heavy = heavy
        self.bulks: list[int] = []  # tables of 1,000 partitions, not renamed
        self.dbs: list[int] = []  # databases with a filled table, not dropped
        self.rng = random.Random(seed)
        self.ledger = Ledger()
        self.i = 0
        self.adds: list[int] = []  # add operations whose first partition is still there
        self.filled: list[int] = []  # tables created and filled, not dropped

    def _next(self) -> Op:
        self.i += 1
        roll = self.rng.random()
        if self.heavy:
            if roll < 0.08:
                return Op("bulk", self.i)
            if roll < 0.12 and self.bulks:
                return Op("rename", self.i, self.bulks.pop(self.rng.randrange(len(self.bulks))))
            if roll < 0.16:
                return Op("dbmake", self.i)
            if roll < 0.2 and self.dbs:
                return Op("dropdb", self.i, self.dbs.pop(self.rng.randrange(len(self.dbs))))
            roll = self.rng.random()
        if roll < 0.4 or not self.adds:
            return Op("add", self.i)
        if roll < 0.6:
            return Op("table", self.i)
        if roll < 0.8:
            return Op("param", self.i)
        if roll < 0.9 and self.filled:
            return Op("drop", self.i, self.filled.pop(self.rng.randrange(len(self.filled))))
        return Op("unpart", self.i, self.adds.pop(self.rng.randrange(len(self.adds))))

    def _do(self, op: Op) -> None:
        c = self.client
        if op.kind == "add":
            c.add_partitions(partitions("base", [f"{op.i}_{k}" for k in range(5)], self.db))
            self.adds.append(op.i)
        elif op.kind == "table":
            c.create_table(table(f"t_{op.i}", self.db))
        elif op.kind == "fill":
            c.add_partitions(partitions(f"t_{op.i}", [f"f{k}" for k in range(3)], self.db))
            self.filled.append(op.i)
        elif op.kind == "param":
            base = c.get_table(self.db, "base")
            base.parameters[f"k_{op.i}"] = "v"
            c.alter_table(self.db, "base", base)
        elif op.kind == "drop":
            c.drop_table(self.db, f"t_{op.target}", True)
        elif op.kind == "unpart":
            c.drop_partition(self.db, "base", [f"{op.target}_0"], True)
        elif op.kind == "bulk":
            c.create_table(table(f"b_{op.i}", self.db))
        elif op.kind == "bulkfill":
            c.add_partitions(partitions(f"b_{op.i}", [f"{k:04d}" for k in range(BULK)],
                                        self.db))
            self.bulks.append(op.i)
        elif op.kind == "rename":
            moved = c.get_table(self.db, f"b_{op.target}")
            moved.tableName = f"r_{op.target}"
            c.alter_table(self.db, f"b_{op.target}", moved)
        elif op.kind == "dbmake":
            c.create_database(T.Database(f"{self.xp}{op.i}", "", None, {}))
        elif op.kind == "dbtable":
            made = table("t")
            made.dbName = f"{self.xp}{op.i}"
            c.create_table(made)
        elif op.kind == "dbfill":
            c.add_partitions([T.Partition([f"f{k}"], f"{self.xp}{op.i}", "t", 0, 0, sd(), {})
                              for k in range(3)])
            self.dbs.append(op.i)
        elif op.kind == "dropdb":
            c.drop_database(f"{self.xp}{op.target}", True, True)

    def run(self, count: int) -> Ledger:
        """Up to ``count`` operations; stops at the first failure (the server died), which
        it records as ``ledger.stopped_by`` for the caller to judge."""
        for _ in range(count):
            op = self._next()
            steps = {"table": [op, Op("fill", op.i)], "bulk": [op, Op("bulkfill", op.i)],
                     "dbmake": [op, Op("dbtable", op.i), Op("dbfill", op.i)]
                     }.get(op.kind, [op])
            for step in steps:
                self.ledger.in_flight = step
                try:
                    self._do(step)
                except Exception as exc:  # noqa: BLE001 - the server killed under us?
                    self.ledger.stopped_by = exc
                    return self.ledger
                self.ledger.acked.append(step)
                self.ledger.in_flight = None
        return self.ledger


def check(client, ledger: Ledger, writer: int = 0) -> dict:
    """The state after a restart against the ledger: ``{"lost": [...], "partial": [...],
    "acked": n, "in_flight": "took effect" | "did not" | None}`` (``writer``: whose names)."""
    db, xp = namespace(writer)
    base_parts = set(client.get_partition_names(db, "base", -1))
    tables = set(client.get_all_tables(db))
    params = client.get_table(db, "base").parameters or {}
    databases = set(client.get_all_databases())

    def count(db, tbl):
        return len(client.get_partition_names(db, tbl, -1))

    def whole(n, full):
        return True if n == full else False if n == 0 else "partial"

    def state(op: Op):
        """True (took effect, whole), False (no effect), or "partial"."""
        if op.kind == "add":
            there = [f"p={op.i}_{k}" in base_parts for k in range(5)]
            # a later drop of partition i_0 is its own operation
            there_rest = there[1:]
            return all(there_rest) if all(there_rest) or not any(there_rest) else "partial"
        if op.kind == "table":
            return f"t_{op.i}" in tables
        if op.kind == "fill":
            if f"t_{op.i}" not in tables:
                return None  # dropped later: judged by the drop
            names = set(client.get_partition_names(db, f"t_{op.i}", -1))
            there = [f"p=f{k}" in names for k in range(3)]
            return all(there) if all(there) or not any(there) else "partial"
        if op.kind == "param":
            return f"k_{op.i}" in params
        if op.kind == "drop":
            if f"t_{op.target}" not in tables:
                return True
            names = set(client.get_partition_names(db, f"t_{op.target}", -1))
            return False if len(names) == 3 else "partial"
        if op.kind == "unpart":
            return f"p={op.target}_0" not in base_parts
        if op.kind == "bulk":
            return f"b_{op.i}" in tables or f"r_{op.i}" in tables
        if op.kind == "bulkfill":
            name = f"b_{op.i}" if f"b_{op.i}" in tables else f"r_{op.i}"
            return whole(count(db, name), BULK) if name in tables else False
        if op.kind == "rename":
            old, new = f"b_{op.target}" in tables, f"r_{op.target}" in tables
            if old == new:
                return "partial"
            return whole(count(db, f"r_{op.target}"), BULK) if new else False
        if op.kind == "dbmake":
            return f"{xp}{op.i}" in databases
        if op.kind == "dbtable":
            if f"{xp}{op.i}" not in databases:
                return None  # dropped later: judged by the drop
            return "t" in client.get_all_tables(f"{xp}{op.i}")
        if op.kind == "dbfill":
            if f"{xp}{op.i}" not in databases:
                return None
            return whole(count(f"{xp}{op.i}", "t"), 3)
        if op.kind == "dropdb":
            if f"{xp}{op.target}" not in databases:
                return True
            there = "t" in client.get_all_tables(f"{xp}{op.target}")
            return False if there and count(f"{xp}{op.target}", "t") == 3 else "partial"
        raise ValueError(op.kind)

    dropped = {op.target for op in ledger.acked if op.kind == "drop"}
    if ledger.in_flight is not None and ledger.in_flight.kind == "drop":
        dropped.add(ledger.in_flight.target)
    gone = {op.target for op in ledger.acked if op.kind == "dropdb"}
    if ledger.in_flight is not None and ledger.in_flight.kind == "dropdb":
        gone.add(ledger.in_flight.target)
    lost, partial = [], []
    for op in ledger.acked:
        if op.kind in ("table", "fill") and op.i in dropped:
            continue
        if op.kind in ("dbmake", "dbtable", "dbfill") and op.i in gone:
            continue
        got = state(op)
        if got == "partial":
            partial.append(op)
        elif got is False:
            lost.append(op)
    in_flight = None
    if ledger.in_flight is not None:
        got = state(ledger.in_flight)
        if got == "partial":
            partial.append(ledger.in_flight)
        in_flight = {True: "took effect", False: "did not", None: "n/a"}.get(got, "partial")
    return {"lost": lost, "partial": partial, "acked": len(ledger.acked),
            "in_flight": in_flight}
