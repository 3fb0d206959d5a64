"""The server's memory while it answers get_partitions of a very large table.

``python -m hms_proxy.tools.bench.listing_memory --partitions 1000000`` builds (or reuses) a store
holding one table of N Spark-like partitions (``ds``/``hr``, Parquet, 6 columns, Spark's
statistics parameters), committed in one commit, starts ``hms-proxy serve`` on it, and calls
``get_partitions(db, tbl, -1)`` from a client that reads the whole reply off the socket and
checks its framing, while the server's resident memory (RSS, psutil) is sampled every 10 ms.
It prints the reply's size, the server's RSS before the call and at its peak, and the growth
against the reply (the bound in issue 7: at most 2x).

The client is a raw reader (the reply is counted and checked, not decoded into Python objects,
which would take minutes); ``--decode`` decodes it with the generated client instead.
"""
from __future__ import annotations

import argparse
import datetime
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from hms_proxy.thrift.gen.hive_metastore import ttypes as t
from hms_proxy.tools import metastores
from hms_proxy.tools.bench.report import logger, write_outputs
from kvmodel import catalog, codec
from kvmodel.locations import open_catalog_store

DB, TABLE = "bench", "huge"
LAYOUT = "listing-memory-v1"
_DS, _HR = "QQQQQQQQQQ", "ZZ"  # placeholders of fixed width in the template partition
FIRST_DAY = datetime.date(1900, 1, 1)


log = logger("listing-memory")


# --- the store --------------------------------------------------------------------------------
def _template() -> tuple[bytes, bytes]:
    """(table bytes, partition template bytes) as the catalog stores them."""

    cols = [t.FieldSchema(n, typ, None) for n, typ in
            (("id", "bigint"), ("user_id", "bigint"), ("event", "string"), ("amount", "double"),
             ("country", "string"), ("ts", "timestamp"))]
    serde = t.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                        {"serialization.format": "1"})

    def sd(location):
        return t.StorageDescriptor(
            cols, location, "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
            "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat", False, -1, serde,
            [], [], {}, t.SkewedInfo([], [], {}), False)

    root = f"s3a://warehouse/{DB}.db/{TABLE}"
    table = t.Table(TABLE, DB, "bench", 1_700_000_000, 0, 0, sd(root),
                    [t.FieldSchema("ds", "string", None), t.FieldSchema("hr", "string", None)],
                    {"EXTERNAL": "TRUE", "spark.sql.sources.provider": "parquet"}, None, None,
                    "EXTERNAL_TABLE")
    part = t.Partition([_DS, _HR], DB, TABLE, 1_700_000_000, 0,
                       sd(f"{root}/ds={_DS}/hr={_HR}"),
                       {"numFiles": "4", "totalSize": "52428800", "numRows": "1000000",
                        "rawDataSize": "120000000",
                        "COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}',
                        "transient_lastDdlTime": "1700000000",
                        "spark.sql.statistics.numRows": "1000000",
                        "spark.sql.statistics.totalSize": "52428800"})
    return codec.encode(table), codec.encode(part)


def partition_values(i: int) -> tuple[str, str]:
    day, hr = divmod(i, 24)
    return (FIRST_DAY + datetime.timedelta(days=day)).isoformat(), f"{hr:02d}"


def build_store(path: Path, partitions: int) -> dict:
    """A store at ``path`` whose main holds ``bench.huge`` with ``partitions`` partitions (one
    commit, written with commit_snapshot: no staging); reused when an earlier run built it."""

    fingerprint = {"bench": LAYOUT, "partitions": str(partitions)}
    store = open_catalog_store(path)
    try:
        head = store.get_commit(store.resolve("main").commit)
        table_bytes, template = _template()
        if head.metadata == fingerprint:
            log(f"{path}: reusing the store of an earlier run")
            return {"reused": True, "partition_bytes": len(template)}
        if head.parents:
            raise SystemExit(f"{path} holds another store; use an empty directory")
        assert template.count(_DS.encode()) == 2 and template.count(_HR.encode()) == 2
        log(f"{path}: building {partitions:,} partitions")
        t0 = time.perf_counter()

        def entries():
            yield catalog.db_key(DB), codec.encode(t.Database(DB, "", "s3a://warehouse/bench.db",
                                                               {}, ownerName="bench"))
            yield catalog.table_key(DB, TABLE), table_bytes
            ds_b, hr_b = _DS.encode(), _HR.encode()
            for i in range(partitions):
                ds, hr = partition_values(i)
                yield (catalog.part_key(DB, TABLE, f"ds={ds}/hr={hr}"),
                       template.replace(ds_b, ds.encode()).replace(hr_b, hr.encode()))

        head_id = store.resolve("main").commit
        store.commit_snapshot("main", [head_id], entries(),
                              f"listing-memory bench: {partitions} partitions", "bench",
                              fingerprint, expected_head=head_id)
        seconds = time.perf_counter() - t0
        log(f"  built in {seconds:.1f} s")
        return {"reused": False, "build_seconds": round(seconds, 1),
                "partition_bytes": len(template)}
    finally:
        store.close()


# --- the client -----------------------------------------------------------------------------
def _call(name: str, seqid: int, args: bytes) -> bytes:
    raw = name.encode()
    return struct.pack("!iI", -2147418112 | 1, len(raw)) + raw + struct.pack("!i", seqid) + args


def get_partitions_message(db: str, tbl: str, max_parts: int = -1) -> bytes:
    def string(fid, text):
        data = text.encode()
        return struct.pack("!bhi", 11, fid, len(data)) + data
    return _call("get_partitions", 1, string(1, db) + string(2, tbl)
                 + struct.pack("!bhh", 6, 3, max_parts) + b"\x00")


def read_listing(host: str, port: int, db: str, tbl: str, expect_items: int,
                 item_bytes: int) -> dict:
    """Send get_partitions and read its reply (all partitions being ``item_bytes`` long):
    checks the message and list headers, counts the bytes, returns what it saw."""
    sock = socket.create_connection((host, port), timeout=600)
    try:
        t0 = time.perf_counter()
        sock.sendall(get_partitions_message(db, tbl))
        buf = bytearray(1 << 20)
        view = memoryview(buf)

        def read_exact(n: int) -> bytes:
            out = bytearray()
            while len(out) < n:
                got = sock.recv(n - len(out))
                if not got:
                    raise ConnectionError("server closed the connection")
                out += got
            return bytes(out)

        version, name_len = struct.unpack("!iI", read_exact(8))
        name = read_exact(name_len).decode()
        (seqid,) = struct.unpack("!i", read_exact(4))
        ftype, fid = struct.unpack("!bh", read_exact(3))
        if (ftype, fid) != (15, 0):
            raise AssertionError(f"not a list in the success field: {(ftype, fid)} "
                                 f"(an exception?) {read_exact(200)!r}")
        etype, count = struct.unpack("!bi", read_exact(5))
        first = time.perf_counter() - t0
        remaining = count * item_bytes + 1  # the items, then the result's stop byte
        total = remaining
        last = b""
        while remaining:
            n = sock.recv_into(view, min(len(buf), remaining))
            if not n:
                raise ConnectionError("server closed the connection mid-reply")
            remaining -= n
            last = bytes(view[n - 1:n])
        seconds = time.perf_counter() - t0
        if last != b"\x00" or count != expect_items or name != "get_partitions" or etype != 12:
            raise AssertionError(f"unexpected reply: {name} count={count} last={last!r}")
        return {"count": count, "reply_bytes": 8 + name_len + 4 + 3 + 5 + total,
                "seconds": round(seconds, 2), "first_byte_seconds": round(first, 2)}
    finally:
        sock.close()


class RssSampler:
    """The peak RSS of a process, sampled every ``interval`` seconds in a thread."""

    def __init__(self, pid: int, interval: float = 0.01):
        import psutil

        self.proc = psutil.Process(pid)
        self.interval = interval
        self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)


def measure(store: Path, partitions: int, workdir: Path, serve_args: list[str] = (),
            decode: bool = False) -> dict:
    """Serve ``store`` and measure one get_partitions of all its partitions."""

    built = build_store(store, partitions)
    item_bytes = built["partition_bytes"]
    server = metastores.start_proxy(workdir, *serve_args, store=store, warehouse=False,
                                    cwd=Path(__file__).resolve().parents[3])
    import psutil

    try:
        _get_table(server.host, server.port)  # the code paths of a call, imported once
        time.sleep(0.5)
        baseline = psutil.Process(server.popen.pid).memory_info().rss
        with RssSampler(server.popen.pid) as sampler:
            if decode:
                seen = _decoded(server.host, server.port, partitions)
            else:
                seen = read_listing(server.host, server.port, DB, TABLE, partitions, item_bytes)
        after = psutil.Process(server.popen.pid).memory_info().rss
    finally:
        server.stop()
    growth = sampler.peak - baseline
    return {"partitions": partitions, **built, **seen,
            "baseline_rss": baseline, "peak_rss": sampler.peak, "after_rss": after,
            "rss_growth": growth, "growth_ratio": round(growth / seen["reply_bytes"], 3),
            "serve_args": list(serve_args)}


def _get_table(host: str, port: int) -> None:
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    sock = TSocket.TSocket(host, port)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    try:
        ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport)).get_table(DB, TABLE)
    finally:
        transport.close()


def _decoded(host: str, port: int, partitions: int) -> dict:
    """get_partitions through the generated client (decoding every partition)."""
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    sock = TSocket.TSocket(host, port)
    sock.setTimeout(600_000)
    transport = TTransport.TBufferedTransport(sock, 1 << 20)
    transport.open()
    try:
        t0 = time.perf_counter()
        client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(transport))
        parts = client.get_partitions(DB, TABLE, -1)
        seconds = time.perf_counter() - t0
        assert len(parts) == partitions
        assert parts[0].values == list(partition_values(0))
        assert parts[-1].values == list(partition_values(partitions - 1))
        size = 8 + len("get_partitions") + 4 + 3 + 5 + sum(len(codec.encode(p)) for p in parts) + 1
        return {"count": len(parts), "reply_bytes": size, "seconds": round(seconds, 2)}
    finally:
        transport.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m hms_proxy.tools.bench.listing_memory",
        description="Server RSS while it answers get_partitions of one very large table.")
    p.add_argument("--partitions", type=int, default=1_000_000,
                   help="partitions of the table (default 1000000)")
    p.add_argument("--store", metavar="DIR",
                   help="the store directory (built there unless an earlier run did; kept); "
                        "default: a temporary one, deleted afterwards")
    p.add_argument("--decode", action="store_true",
                   help="read the reply with the generated client, decoding every partition")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("serve_args", nargs="*", metavar="-- SERVE_ARG",
                   help="extra arguments of hms-proxy serve (after --)")
    args = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="hms-listing-memory-"))
    try:
        store = Path(args.store) if args.store else tmp / "store"
        result = measure(store, args.partitions, tmp / "server", args.serve_args, args.decode)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    mib = 1 << 20
    print(f"partitions          {result['partitions']:,}")
    reply = result["reply_bytes"]
    print(f"reply               {reply:,} bytes ({reply / mib:.1f} MiB) in {result['seconds']} s")
    print(f"server RSS before   {result['baseline_rss'] / mib:.1f} MiB")
    print(f"server RSS peak     {result['peak_rss'] / mib:.1f} MiB")
    print(f"growth              {result['rss_growth'] / mib:.1f} MiB = "
          f"{result['growth_ratio']:.3f} x the reply (bound: 2x)")
    write_outputs(args, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
