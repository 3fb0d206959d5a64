"""``hms-proxy bench iceberg-merge``: what merging an Iceberg table costs when both branches
committed to it (kvmodel.iceberg_merge: the source's snapshots replayed on the destination's).

For each history H: a table on main with H appends (pyiceberg through our REST door, embedded
store, ``--autocommit``); branches made from main; K appends on a branch for each K; one more
append on main; then each branch is merged into main (``merge_with_hooks``, what ``hms-proxy
merge`` runs) and timed. Every row is checked after each merge. The cost should follow K (the
snapshots replayed: a manifest and a manifest list each), not H. One merge of a branch with
one append is made first, untimed: what a merge pays once per process (imports, caches).

    hms-proxy bench iceberg-merge [--history 10,1000] [--snapshots 1,100] [--markdown FILE]
"""
from __future__ import annotations

import json
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
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    p.add_argument("--markdown", metavar="FILE", help="write the table as Markdown")
    p.set_defaults(func=cmd_iceberg_merge)


def _append(table, value: int) -> None:
    import pyarrow as pa

    table.append(pa.table({"id": pa.array([value], pa.int64())}))


def one_history(work: Path, history: int, ks: list[int]) -> list[dict]:
    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog

    from hms_proxy.tools.metastores import start_proxy
    from kvmodel.hooks import merge_with_hooks
    from kvmodel.store import open_store

    store_path = work / "store"
    server = start_proxy(work / "server", "--rest-port", "0", "--autocommit", store=store_path)
    out = []
    try:
        rest = f"http://127.0.0.1:{server.announced_port('rest')}"
        main = RestCatalog("main", uri=rest, warehouse="main")
        main.create_namespace("bench")
        table = main.create_table("bench.t", schema=pa.schema([pa.field("id", pa.int64())]))
        started = time.perf_counter()
        for i in range(history):
            _append(table, i)
        built = time.perf_counter() - started
        store = open_store(store_path)
        try:
            for k in ks:
                store.create_branch(f"b{k}", "main")
            # one merge untimed first: the imports and caches a merge pays once per process
            store.create_branch("warm", "main")
            _append(RestCatalog("warm", uri=rest, warehouse="warm").load_table("bench.t"), -2)
            merge_with_hooks(store, store_path, "warm", "main", author="bench")
            expected = history + 1
            for k in ks:
                branch = RestCatalog(f"b{k}", uri=rest, warehouse=f"b{k}").load_table("bench.t")
                for i in range(k):
                    _append(branch, 1_000_000 * k + i)
            _append(main.load_table("bench.t"), -1)
            expected += 1
            for k in ks:
                started = time.perf_counter()
                result = merge_with_hooks(store, store_path, f"b{k}", "main", author="bench")
                seconds = time.perf_counter() - started
                expected += k
                rows = len(main.load_table("bench.t").scan().to_arrow())
                replayed = sum(len(p.replay) for p in result.iceberg)
                out.append({"history": history, "snapshots": k, "replayed": replayed,
                            "merge_s": round(seconds, 3), "rows": rows,
                            "rows_expected": expected, "history_built_s": round(built, 1)})
                print(f"H={history} K={k}: merge {seconds:.2f} s, {replayed} snapshots "
                      f"replayed, {rows} rows (expected {expected})", flush=True)
        finally:
            store.close()
    finally:
        server.stop()
    return out


def cmd_iceberg_merge(args) -> int:
    results = []
    for history in args.history:
        with tempfile.TemporaryDirectory(prefix="hms-bench-icemerge-") as tmp:
            results += one_history(Path(tmp), history, args.snapshots)
    lines = ["| history H (snapshots on main) | K snapshots merged | merge | rows right |",
             "|---:|---:|---:|---|"]
    for r in results:
        ok = "yes" if r["rows"] == r["rows_expected"] else f"NO ({r['rows']})"
        lines.append(f"| {r['history']} | {r['snapshots']} | {r['merge_s'] * 1000:.0f} ms "
                     f"| {ok} |")
    print("\n".join(lines))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(lines) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if all(r["rows"] == r["rows_expected"] for r in results) else 1


__all__ = ["register", "cmd_iceberg_merge"]
