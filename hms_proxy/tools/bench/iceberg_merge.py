"""``hms-proxy bench iceberg-merge``: what merging an Iceberg table costs when both branches
committed to it (kvmodel.iceberg_merge: the source's snapshots replayed on the destination's).

For each store and history H: a table on main with H appends (pyiceberg through our REST door;
the embedded store with ``--autocommit``, or a repository of a real lakeFS with its defaults,
committed before each merge as a lakeFS user commits); branches made from main; K appends on a
branch for each K; one more append on main; then each branch is merged into main
(``merge_with_hooks``, what ``hms-proxy merge`` runs: on lakeFS with the anchoring of what the
branch wrote) and timed. Every row is checked after each merge. The cost should follow K (the
snapshots replayed: a manifest and a manifest list each), not H. One merge of a branch with
one append is made first, untimed: what a merge pays once per process (imports, caches). On
lakeFS, what its pre-delete-branch hook costs with N branches is timed after the merges.

    hms-proxy bench iceberg-merge [--stores embedded,lakefs] [--history 10,1000]
                                  [--snapshots 1,100] [--branches 10,100] [--markdown FILE]
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "iceberg-merge", help="the cost of merging K Iceberg snapshots into a table with H "
                              "snapshots of history",
        description="Merge branches that appended K snapshots to an Iceberg table with H "
                    "snapshots of history on main (which appended too), and time each merge.")
    p.add_argument("--history", type=_ints, default=[10, 1000], metavar="H,H",
                   help="snapshots of history on main (default 10,1000)")
    p.add_argument("--snapshots", type=_ints, default=[1, 100], metavar="K,K",
                   help="snapshots appended on each branch (default 1,100)")
    p.add_argument("--stores", default="embedded", metavar="NAME,...",
                   help="embedded, lakefs (a real lakeFS with its defaults, started here: "
                        "python -m hms_proxy.tools.lakefs_local builds it once); default "
                        "embedded")
    p.add_argument("--branches", type=_ints, default=[10, 100], metavar="N,N",
                   help="on lakeFS: branches over which the pre-delete-branch hook is timed "
                        "(default 10,100)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    p.set_defaults(func=cmd_iceberg_merge)


def _append(table, value: int) -> None:
    import pyarrow as pa

    table.append(pa.table({"id": pa.array([value], pa.int64())}))


class _Backend:
    """Where one history runs: the embedded store (``--autocommit``: every write a commit) or a
    repository of a real lakeFS with its defaults (writes staged; committed, as a lakeFS user
    commits, before each merge)."""

    def __init__(self, work: Path, lake=None, repository: str | None = None):
        self.work, self.lake, self.repository = work, lake, repository
        self.spec = f"lakefs://{repository}" if lake is not None else work / "store"

    @property
    def name(self) -> str:
        return "embedded" if self.lake is None else "lakeFS"

    def start(self):
        from hms_proxy.tools.metastores import start_proxy

        if self.lake is None:
            return start_proxy(self.work / "server", "--rest-port", "0", "--autocommit",
                               store=self.spec)
        self.lake.create_repository(self.repository)
        return start_proxy(self.work / "server", "--rest-port", "0", "--log-level", "WARNING",
                           store=self.spec, warehouse=False,
                           env=dict(os.environ, **self.lake.env()))

    def catalog(self, rest: str, ref: str):
        from pyiceberg.catalog.rest import RestCatalog

        keys = {} if self.lake is None else {
            "s3.access-key-id": self.lake.access_key_id,
            "s3.secret-access-key": self.lake.secret_access_key}
        return RestCatalog(ref, uri=rest, warehouse=ref, **keys)

    def open(self):
        from kvmodel.locations import open_catalog_store

        if self.lake is not None:
            os.environ.update(self.lake.env())
        return open_catalog_store(self.spec)

    def commit(self, store, branch: str, message: str) -> None:
        if self.lake is not None:  # the embedded store's server committed every write
            store.commit(branch, message, "bench")


def one_history(work: Path, history: int, ks: list[int], lake=None,
                branches: list[int] = ()) -> tuple[list[dict], list[dict]]:
    """(the merges of one history, the pre-delete-branch scans over ``branches`` branches: on
    lakeFS only)."""
    import pyarrow as pa

    from kvmodel.hooks import merge_with_hooks

    backend = _Backend(work, lake, f"icemerge{history}")
    server = backend.start()
    out, scans = [], []
    try:
        rest = f"http://127.0.0.1:{server.announced_port('rest')}"
        main = backend.catalog(rest, "main")
        main.create_namespace("bench")
        table = main.create_table("bench.t", schema=pa.schema([pa.field("id", pa.int64())]))
        started = time.perf_counter()
        for i in range(history):
            _append(table, i)
        built = time.perf_counter() - started
        store = backend.open()
        try:
            backend.commit(store, "main", f"{history} appends")
            for k in ks:
                store.create_branch(f"b{k}", "main")
            # one merge untimed first: the imports and caches a merge pays once per process
            store.create_branch("warm", "main")
            _append(backend.catalog(rest, "warm").load_table("bench.t"), -2)
            backend.commit(store, "warm", "one append")
            merge_with_hooks(store, backend.spec, "warm", "main", author="bench")
            expected = history + 1
            for k in ks:
                branch = _loaded(backend.catalog(rest, f"b{k}"), "bench.t")
                for i in range(k):
                    _append(branch, 1_000_000 * k + i)
                backend.commit(store, f"b{k}", f"{k} appends")
            _append(_loaded(main, "bench.t"), -1)
            backend.commit(store, "main", "one more append")
            expected += 1
            for k in ks:
                started = time.perf_counter()
                result = merge_with_hooks(store, backend.spec, f"b{k}", "main", author="bench")
                seconds = time.perf_counter() - started
                expected += k
                rows = len(_loaded(main, "bench.t", expected).scan().to_arrow())
                replayed = sum(len(p.replay) for p in result.iceberg)
                out.append({"store": backend.name, "history": history, "snapshots": k,
                            "replayed": replayed, "merge_s": round(seconds, 3), "rows": rows,
                            "rows_expected": expected, "history_built_s": round(built, 1)})
                print(f"{backend.name} H={history} K={k}: merge {seconds:.2f} s, {replayed} "
                      f"snapshots replayed, {rows} rows (expected {expected})", flush=True)
            if lake is not None:
                scans = _delete_scans(store, branches, history, lambda ref: _append(
                    _loaded(backend.catalog(rest, ref), "bench.t"), -3))
        finally:
            store.close()
    finally:
        server.stop()
    return out, scans


def _loaded(catalog, name: str, rows: int | None = None):
    """The table as the server reads it now; with ``rows``: once it has that many (another
    process's merge on lakeFS is seen within the server's staleness bound, 1 s)."""
    deadline = time.monotonic() + 10
    while True:
        table = catalog.load_table(name)
        if rows is None or len(table.scan().to_arrow()) == rows or time.monotonic() > deadline:
            return table
        time.sleep(0.1)


def _delete_scans(store, counts: list[int], history: int, append) -> list[dict]:
    """What lakeFS's pre-delete-branch hook costs (kvmodel.iceberg_anchor.anchor_before_delete,
    run for every branch lakeFS deletes): with N branches, each with an append of its own to
    the table (so N metadata files), the deletion of one that no table names (the usual case:
    its merge anchored them)."""
    from kvmodel.iceberg_anchor import anchor_before_delete

    made, out = 0, []
    for n in sorted(counts):
        while made < n:
            store.create_branch(f"keep{made}", "main")
            append(f"keep{made}")
            made += 1
        store.create_branch("doomed", "main")
        started = time.perf_counter()
        done = anchor_before_delete(store, "doomed")
        seconds = time.perf_counter() - started
        store.delete_branch("doomed")
        branches = len(list(store.list_branches()))
        out.append({"history": history, "branches": branches, "anchored": len(done),
                    "scan_s": round(seconds, 3)})
        print(f"lakeFS pre-delete-branch with {branches} branches: {seconds:.2f} s",
              flush=True)
    return out


def cmd_iceberg_merge(args) -> int:
    results, scans, lake = [], [], None
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = sorted(set(stores) - {"embedded", "lakefs"})
    if unknown:
        print(f"--stores: unknown {', '.join(unknown)} (embedded, lakefs)")
        return 2
    try:
        with tempfile.TemporaryDirectory(prefix="hms-bench-icemerge-") as tmp:
            if "lakefs" in stores:
                from hms_proxy.tools import lakefs_local

                lake = lakefs_local.start_lakefs(Path(tmp) / "lakefs")
            for store in stores:
                for history in args.history:
                    work = Path(tmp) / f"{store}-{history}"
                    work.mkdir()
                    merges, scanned = one_history(
                        work, history, args.snapshots, lake if store == "lakefs" else None,
                        args.branches)
                    results += merges
                    scans += scanned
    finally:
        if lake is not None:
            lake.stop()
    lines = ["| store | history H (snapshots on main) | K snapshots merged | merge | rows right |",
             "|---|---:|---:|---:|---|"]
    for r in results:
        ok = "yes" if r["rows"] == r["rows_expected"] else f"NO ({r['rows']})"
        lines.append(f"| {r['store']} | {r['history']} | {r['snapshots']} | "
                     f"{r['merge_s'] * 1000:,.0f} ms | {ok} |")
    if scans:
        lines += ["", "| lakeFS branches (each holding the table) | H | pre-delete-branch hook |",
                  "|---:|---:|---:|"]
        lines += [f"| {s['branches']} | {s['history']} | {s['scan_s'] * 1000:,.0f} ms |"
                  for s in scans]
    print("\n".join(lines))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(lines) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps({"merges": results, "pre_delete": scans},
                                              indent=2))
    return 0 if all(r["rows"] == r["rows_expected"] for r in results) else 1


__all__ = ["register", "cmd_iceberg_merge"]
