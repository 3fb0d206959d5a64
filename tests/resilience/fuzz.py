"""A structured Thrift fuzzer: malformed messages at a live server, which must stay up.

Seeds are well-formed HMS calls written by the generated client into memory (a struct-heavy
``create_table``, a list-heavy ``add_partitions``, filters, locks, ``set_ugi``, an unknown
method...). Each message sent is a seed mutated one to four times: bits flipped, bytes
overwritten, inserted or deleted, a 4-byte field set to a huge, negative or zero length, a
type byte changed, the message cut short, a chunk repeated; one in a hundred is random bytes.
Senders (threads) write a message, drain whatever comes back for a few milliseconds,
reconnect when the server closes the connection, and open a fresh one every
:data:`PER_CONNECTION` messages (a malformed message leaves the stream out of step: the next
ones are read from the middle of it). Every ``--sample``
messages the server's RSS is read; at the end a well-formed call must be answered.

    python -m tests.resilience.fuzz --messages 100000        # docs/resilience.md

Exit status 1 when the server died, stopped answering, or grew past ``--max-growth`` MiB.
"""
from __future__ import annotations

import argparse
import random
import socket
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

from thrift.protocol import TBinaryProtocol
from thrift.transport import TTransport

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from hms_proxy.tools import metastores
from tests.resilience.workload import partitions, table
from tests.support.client import connect
from tests.support.wait import wait_until


def seeds() -> list[bytes]:
    """Well-formed request messages of several shapes."""
    out = []

    def record(call, *args):
        buf = TTransport.TMemoryBuffer()
        client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(buf))
        getattr(client, "send_" + call)(*args)
        out.append(buf.getvalue())

    record("get_all_databases")
    record("get_table", "rz", "base")
    record("create_table", table("fz"))
    record("add_partitions", partitions("base", [f"v{i}" for i in range(20)]))
    record("get_partitions_by_filter", "rz", "base", "p > 'a' and p < 'z'", -1)
    record("get_partitions_by_names", "rz", "base", [f"p=v{i}" for i in range(10)])
    record("alter_table", "rz", "base", table("base"))
    record("lock", T.LockRequest([T.LockComponent(T.LockType.SHARED_READ, T.LockLevel.TABLE,
                                                  "rz", "base")], user="u", hostname="h"))
    record("set_ugi", "fuzzer", ["g1", "g2"])
    record("create_database", T.Database("fz", "d", None, {"k": "v" * 50}))
    record("drop_table", "rz", "nope", True)
    buf = TTransport.TMemoryBuffer()  # an unknown method
    proto = TBinaryProtocol.TBinaryProtocol(buf)
    proto.writeMessageBegin("no_such_method", 1, 0)
    proto.writeStructBegin("args")
    proto.writeFieldStop()
    proto.writeStructEnd()
    proto.writeMessageEnd()
    out.append(buf.getvalue())
    return out


def mutate(msg: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.01:
        return rng.randbytes(rng.randint(1, 512))
    data = bytearray(msg)
    for _ in range(rng.randint(1, 4)):
        if not data:
            data = bytearray(rng.randbytes(8))
        kind = rng.randrange(8)
        pos = rng.randrange(len(data))
        if kind == 0:
            data[pos] ^= 1 << rng.randrange(8)
        elif kind == 1:
            data[pos] = rng.randrange(256)
        elif kind == 2:
            data[pos:pos] = rng.randbytes(rng.randint(1, 16))
        elif kind == 3:
            del data[pos:pos + rng.randint(1, 16)]
        elif kind == 4 and len(data) >= 4:
            at = rng.randrange(len(data) - 3)
            value = rng.choice([0x7FFFFFFF, -1, 0, 2 ** 30, -2 ** 31, 65536])
            data[at:at + 4] = struct.pack("!i", value)
        elif kind == 5:
            data[pos] = rng.choice([0, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15, 16, 255])
        elif kind == 6:
            data = data[:pos]
        else:
            chunk = data[pos:pos + rng.randint(1, 64)]
            data[pos:pos] = chunk * rng.randint(1, 8)
    return bytes(data)


PER_CONNECTION = 16  # messages a connection carries before the sender opens another


class Sender(threading.Thread):
    def __init__(self, host, port, messages: list[bytes], rng_seed: int):
        super().__init__(daemon=True)
        self.host, self.port = host, port
        self.messages = messages
        self.rng = random.Random(rng_seed)
        self.sent = 0
        self.reconnects = 0
        self.sock = None
        self.error: BaseException | None = None  # what stopped it before its last message

    def run(self):
        try:
            self._send_all()
        except BaseException as exc:  # noqa: BLE001 - reported by run()
            self.error = exc
        finally:
            if self.sock is not None:
                self.sock.close()

    def _connect(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = socket.create_connection((self.host, self.port), timeout=5)
        self.sock.settimeout(0.003)
        self.reconnects += 1

    def _send_all(self):
        self._connect()
        for n, msg in enumerate(self.messages):
            if n and n % PER_CONNECTION == 0:  # a fresh stream now and then: a new parse
                try:
                    self._connect()
                except OSError:
                    time.sleep(0.05)
            try:
                self.sock.sendall(mutate(msg, self.rng))
                try:
                    while self.sock.recv(65536):
                        pass
                    self._connect()  # the server closed it
                except socket.timeout:
                    pass
            except OSError:
                try:
                    self._connect()
                except OSError:
                    time.sleep(0.05)
                    continue
            self.sent += 1
        if self.sock is not None:
            self.sock.close()


def run(messages: int, threads: int = 4, sample: int = 5000, seed: int = 7,
        workdir: Path | None = None, out=print) -> dict:
    import psutil

    with tempfile.TemporaryDirectory(prefix="hms-fuzz-") as tmp:
        work = workdir or Path(tmp)
        server = metastores.start_proxy(work / "server", "--max-message-size", "16m")
        try:
            with connect(server) as client:
                client.create_database(T.Database("rz", "", None, {}))
                client.create_table(table("base"))
            proc = psutil.Process(server.popen.pid)
            base = proc.memory_info().rss
            pool = seeds()
            rng = random.Random(seed)
            per = [[rng.choice(pool) for _ in range(messages // threads)]
                   for _ in range(threads)]
            senders = [Sender(server.host, server.port, msgs, seed * 100 + i)
                       for i, msgs in enumerate(per)]
            started = time.monotonic()
            for s in senders:
                s.start()
            samples = [(0, base)]
            while any(s.is_alive() for s in senders):
                time.sleep(0.5)
                done = sum(s.sent for s in senders)
                if done - samples[-1][0] >= sample:
                    samples.append((done, proc.memory_info().rss))
                    out(f"{done:,} messages, server RSS {samples[-1][1] / 2**20:.1f} MiB")
            took = time.monotonic() - started

            def done() -> bool:
                """The server is done with every message: it closed each sender's connection
                (or it died, which is reported below)."""
                if not server.alive():
                    return True
                try:
                    return not [k for k in proc.net_connections("tcp")
                                if k.laddr.port == server.port
                                and k.status != psutil.CONN_LISTEN]
                except psutil.NoSuchProcess:
                    return True
            wait_until(done, what="the server done with the fuzzer's connections")
            alive = server.alive()
            answered = False
            if alive:
                with connect(server, timeout=30) as client:
                    answered = "rz" in client.get_all_databases()
            final = proc.memory_info().rss if alive else None
            samples.append((sum(s.sent for s in senders), final))
            return {"messages": sum(s.sent for s in senders), "seconds": round(took, 1),
                    "errors": [repr(s.error) for s in senders if s.error is not None],
                    "reconnects": sum(s.reconnects for s in senders), "alive": alive,
                    "answered": answered, "rss_start_mib": round(base / 2**20, 1),
                    "rss_peak_mib": round(max(r for _, r in samples if r) / 2**20, 1),
                    "rss_end_mib": round(final / 2**20, 1) if final else None,
                    "samples": [(n, round(r / 2**20, 1) if r else None) for n, r in samples]}
        finally:
            server.stop()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.resilience.fuzz",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--sample", type=int, default=5000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--max-growth", type=float, default=64.0, metavar="MIB")
    args = p.parse_args(argv)
    res = run(args.messages, args.threads, args.sample, args.seed)
    growth = (res["rss_end_mib"] or 0) - res["rss_start_mib"]
    print(f"{res['messages']:,} malformed messages in {res['seconds']} s "
          f"({res['reconnects']:,} connections closed by the server and reopened); server "
          f"alive: {res['alive']}, answering: {res['answered']}; RSS {res['rss_start_mib']} "
          f"MiB at the start, peak {res['rss_peak_mib']}, end {res['rss_end_mib']} "
          f"(growth {growth:.1f} MiB)")
    for error in res["errors"]:
        print(f"a sender stopped early: {error}")
    return 0 if (res["alive"] and res["answered"] and growth <= args.max_growth
                 and not res["errors"]) else 1


if __name__ == "__main__":
    sys.exit(main())
