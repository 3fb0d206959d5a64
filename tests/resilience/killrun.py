"""``kill -9`` of the server at random points of a mixed write workload, round after round.

Each round: a server over a fresh embedded store, one writer doing up to ``--writes``
operations of :mod:`tests.resilience.workload`, and the server killed (SIGKILL, its whole
process group) once a random number of them has been acknowledged, a random fraction of a
millisecond later, so the kill lands anywhere in a call (reading the request, inside the store
transaction, writing the answer). Then a new server on the same store must start, and every
acknowledged write must be there, whole; the write in flight may or may not have taken
effect, but never in part.

    python -m tests.resilience.killrun --rounds 20 --writes 10000     # docs/resilience.md
    python -m tests.resilience.killrun --lakefs --rounds 20 --writes 2000

``--lakefs``: the store is a fresh repository of the real lakeFS of the tests
(:mod:`tests.support.lakefs`, started once) each round, instead of an embedded store, and
the workload adds writes of many keys (``add_partitions`` of 1,000, a rename carrying 1,000
partitions, a cascading ``drop_database``: :mod:`tests.resilience.workload`, ``heavy``).

Prints one line per round and a summary; exit status 1 if any write was lost or half-applied
or a store failed to reopen.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from thrift.transport.TTransport import TTransportException

from hms_proxy.tools import metastores
from tests.resilience import workload
from tests.support.client import connect
from tests.support.wait import DEADLINE


# a server's start, and its restart over what the killed one left, on a machine that may be
# running a test suite beside this run
STARTUP_TIMEOUT = 180.0


def one_round(work: Path, writes: int, seed: int, lakefs: bool = False,
              writers: int = 1, servers: int = 1) -> dict:
    rng = random.Random(seed)
    if lakefs:  # a fresh repository of the tests' real lakeFS
        from tests.support.lakefs import new_repository, real_lakefs

        store, env = f"lakefs://{new_repository('kill')}", dict(os.environ, **real_lakefs().env())
        where = {"warehouse": False, "env": env}
    else:
        store, where = work / "store", {"warehouse": work / "wh"}
    kill_at = rng.randint(1, writes)
    peers: list = []  # --servers: the others over the same repository, killed at the end
    server = None
    try:
        server = metastores.start_proxy(work / "s1", store=store, name="victim",
                                        timeout=STARTUP_TIMEOUT, **where)
        for k in range(1, servers):
            peers.append(metastores.start_proxy(work / f"peer{k}", store=store,
                                                name=f"peer{k}", timeout=STARTUP_TIMEOUT,
                                                **where))
    except Exception as exc:  # noqa: BLE001 - nothing written yet: a round that did not start
        for started_server in (*peers, *([server] if server is not None else [])):
            started_server.stop()
        return {"seed": seed, "kill_at": kill_at, "started": False,
                "error": str(exc).splitlines()[0]}
    on = [server, *peers]  # writer w writes through on[w % servers]
    workers: list[workload.Writer] = []
    killing = threading.Event()  # set just before the kill: a failure after it is expected
    killed = threading.Event()

    def acked() -> int:
        return sum(len(w.ledger.acked) for w in workers)

    def killer():
        while not killed.is_set():
            if workers and acked() >= kill_at:
                # a fraction of a millisecond later; on lakeFS up to 0.3 s, the length of its
                # heavy writes, so the kill also lands inside an add_partitions of 1,000
                time.sleep(rng.random() * (0.3 if lakefs else 0.001))
                killing.set()
                os.killpg(server.popen.pid, signal.SIGKILL)
                killed.set()
                return
            time.sleep(0.0005)

    started = time.monotonic()
    clients = contextlib.ExitStack()
    try:
        # several writers: each its own connection and its own names (its ledger checked
        # alone), all on the one branch at once (on lakeFS their writes go in groups)
        for w in range(writers):
            client = clients.enter_context(connect(on[w % len(on)], timeout=30))
            workload.setup(client, workload.namespace(w)[0])
            # writer 0 keeps the round's own seed: one writer replays the runs made before
            workers.append(workload.Writer(client, seed if w == 0 else seed * 100 + w,
                                           heavy=lakefs, writer=w))
        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        share = max(1, writes // writers)
        runs = [threading.Thread(target=w.run, args=(share,)) for w in workers]
        for run in runs:
            run.start()
        for run in runs:
            run.join()
        # what ended a writer early must be the kill: for the victim's writers a socket
        # error or an end of file (TSocket makes either a TTransportException) once the kill
        # began; a peer's writer may be answered an error by its server for the write in
        # flight when the victim died (handed to it: the peer cannot tell whether it was
        # made), which its check below judges like any write in flight
        unexpected = next((repr(w.ledger.stopped_by) for k, w in enumerate(workers)
                           if w.ledger.stopped_by is not None and not (
                               killing.is_set()
                               and (type(w.ledger.stopped_by) is TTransportException
                                    or k % len(on) != 0))), None)
        peer_errors = [f"{w.ledger.in_flight.kind}: {str(w.ledger.stopped_by)[:200]}"
                       for k, w in enumerate(workers)
                       if k % len(on) != 0 and w.ledger.stopped_by is not None]
        if not killed.is_set():  # they finished first: kill it now (an idle server)
            killing.set()
            os.killpg(server.popen.pid, signal.SIGKILL)
            killed.set()
        thread.join(DEADLINE)
        if thread.is_alive():
            raise AssertionError("the killer thread did not end after the kill")
    finally:
        try:
            clients.close()
        except Exception:  # noqa: BLE001 - the server is gone
            pass
        server.popen.wait(30)
        server.stop()
        for peer in peers:  # what they acknowledged must be in lakeFS already: no clean stop
            os.killpg(peer.popen.pid, signal.SIGKILL)
            peer.popen.wait(30)
            peer.stop()
    took = time.monotonic() - started
    reopened = time.monotonic()
    try:
        again = metastores.start_proxy(work / "s2", store=store, name="restarted",
                                       timeout=STARTUP_TIMEOUT, **where)
    except Exception as exc:  # noqa: BLE001 - the store did not reopen: the worst outcome
        return {"seed": seed, "kill_at": kill_at, "reopened": False, "error": str(exc)}
    try:
        restart_s = time.monotonic() - reopened
        with connect(again, timeout=60) as client:
            results = [workload.check(client, w.ledger, i) for i, w in enumerate(workers)]
    finally:
        again.stop()
    flights = [(r["in_flight"], w.ledger.in_flight.kind)
               for r, w in zip(results, workers) if w.ledger.in_flight is not None]
    return {"seed": seed, "kill_at": kill_at, "reopened": True,
            "acked": sum(r["acked"] for r in results), "unexpected": unexpected,
            "lost": [f"{o.kind} {o.i}" for r in results for o in r["lost"]],
            "partial": [f"{o.kind} {o.i}" for r in results for o in r["partial"]],
            "in_flight": "; ".join(f for f, _ in flights) or None,
            "seconds": round(took, 1),
            "kinds": dict(collections.Counter(op.kind for w in workers for op in w.ledger.acked)),
            "in_flight_kind": "; ".join(k for _, k in flights) or None,
            "writers": writers, "servers": servers, "peer_errors": peer_errors,
            "restart_s": round(restart_s, 2)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.resilience.killrun",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--writes", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--first-round", type=int, default=1, metavar="N",
                   help="start at round N of --rounds (same seeds): to carry a stopped run on")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--writers", type=int, default=1, metavar="N",
                   help="N writers at once on the server's one branch, each with its own "
                        "names (--writes shared between them)")
    p.add_argument("--servers", type=int, default=1, metavar="N",
                   help="with --lakefs: N servers over the repository, writer w on server "
                        "w mod N; the first is killed among the writes, the others once "
                        "their writers end")
    p.add_argument("--lakefs", action="store_true",
                   help="a fresh repository of a real lakeFS each round (started once)")
    args = p.parse_args(argv)
    if args.servers > 1 and not args.lakefs:
        p.error("--servers needs --lakefs (an embedded store has one server)")
    results = []
    bad = 0
    with tempfile.TemporaryDirectory(prefix="hms-killrun-") as tmp:
        for r in range(args.first_round - 1, args.rounds):
            res = one_round(Path(tmp) / f"round{r}", args.writes, args.seed * 1000 + r,
                            lakefs=args.lakefs, writers=args.writers, servers=args.servers)
            results.append(res)
            if res.get("started") is False:  # no write was made: not a finding about writes
                bad += 1
                print(f"round {r + 1}/{args.rounds}: THE SERVER DID NOT START over a fresh "
                      f"store: {res['error']}", flush=True)
                continue
            ok = (res.get("reopened") and not res.get("lost") and not res.get("partial")
                  and not res.get("unexpected"))
            bad += not ok
            print(f"round {r + 1}/{args.rounds}: kill after {res['kill_at']} acks; "
                  + (f"reopened in {res['restart_s']} s, {res['acked']} acknowledged writes "
                     f"checked, lost {len(res['lost'])}, half-applied {len(res['partial'])}, "
                     f"in flight: {res['in_flight']} ({res['in_flight_kind']}); acknowledged: "
                     + ", ".join(f"{n} {k}" for k, n in sorted(res["kinds"].items()))
                     + (f"; peers answered errors at the kill: {res['peer_errors']}"
                        if res.get("peer_errors") else "")
                     + (f"; UNEXPECTED FAILURE: {res['unexpected']}" if res["unexpected"] else "")
                     if res.get("reopened")
                     else f"STORE DID NOT REOPEN: {res.get('error')}"), flush=True)
    acked = sum(r.get("acked", 0) for r in results)
    print(f"{len(results)} rounds, {acked} acknowledged writes checked, "
          f"{sum(len(r.get('lost', [])) for r in results)} lost, "
          f"{sum(len(r.get('partial', [])) for r in results)} half-applied, "
          f"{sum(1 for r in results if r.get('started', True) and not r.get('reopened'))} "
          f"stores not reopened, "
          f"{sum(1 for r in results if r.get('started') is False)} servers that did not start")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
