"""``hms-proxy stats``: compute and reduce (:mod:`hms_proxy.cli.stats_compute`), show and
expire computed statistics (docs/statistics.md); the work itself is in :mod:`stats`."""
from __future__ import annotations

import json
import os
import sys

from hms_proxy.cli import stats_compute
from kvmodel.locations import open_catalog_store
from kvmodel.store import lakefs_repository
from kvmodel.store.errors import StoreError
from stats import layout
from stats.expire import DEFAULT_MIN_AGE, DEFAULT_STORE, expire, expire_lakefs
from stats.query import QueryError, TableStats, as_number, open_table, result_rows

# what `stats show` prints
_MAIN = ("column", "type", "count", "null_count", "distinct_count", "min", "max", "mean",
         "stddev", "p50")
_HEADERS = {"null_count": "nulls", "distinct_count": "distinct", "avg_length": "avg_len",
            "max_length": "max_len", "true_count": "true", "false_count": "false"}
_OPTIONAL = ("sum", "avg_length", "max_length", "true_count", "false_count", "p05", "p25",
             "p75", "p95")  # p01 and p99: --json
MAX_PLOTTED = 12  # columns drawn by --plot


def register(subparsers) -> None:
    """Add the ``stats`` group and its actions to ``hms-proxy``'s sub-parsers."""
    group = subparsers.add_parser(
        "stats", help="computed column statistics: compute, reduce, show, expire",
        description="Partition statistics kept as versioned parquet sets beside the data "
                    "(docs/statistics.md).")
    actions = group.add_subparsers(dest="stats_command", required=True, metavar="ACTION")
    stats_compute.register(actions)
    stats_compute.register_reduce(actions)
    register_expire(actions)
    register_show(actions)


# --- stats expire ------------------------------------------------------------------------------
def register_expire(subparsers) -> None:
    """Add ``expire`` to the ``stats`` sub-command group."""
    p = subparsers.add_parser(
        "expire", help="delete statistics sets no commit refers to",
        description="Delete the statistics set directories under every table location's "
                    "_stats/ that no commit reachable from a branch or tag, and no staged "
                    "change, points to (local file: locations). On a lakefs:// store: the set "
                    "objects of the repository that no branch's pointers name, deleted on "
                    "each unprotected branch (commits keep theirs) and committed there when "
                    "the branch had no uncommitted change. Prints each set it deletes "
                    "(or, with --dry-run, would delete).")
    p.add_argument("--store", default=os.environ.get("HMS_STORE", DEFAULT_STORE),
                   help="store path (default ./metastore, env HMS_STORE)")
    p.add_argument("--dry-run", action="store_true", help="list what would be deleted only")
    p.add_argument("--min-age", type=float, default=DEFAULT_MIN_AGE, metavar="SECONDS",
                   help="keep unreferenced sets modified less than SECONDS ago: a compute job "
                        f"may not have recorded their pointers yet (default {DEFAULT_MIN_AGE})")
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")
    p.set_defaults(func=cmd_expire)


def cmd_expire(args) -> int:

    if not os.path.exists(args.store) and "://" not in str(args.store):
        print(f"hms-proxy: error: no store at {args.store}", file=sys.stderr)
        return 2
    try:
        store = open_catalog_store(args.store)
    except (StoreError, OSError, ValueError) as exc:
        print(f"hms-proxy: error: {exc}", file=sys.stderr)
        return 2
    on_lakefs = lakefs_repository(str(args.store)) is not None
    try:
        result = (expire_lakefs if on_lakefs else expire)(
            store, dry_run=args.dry_run, min_age=args.min_age, out=None if args.json else print)
    except StoreError as exc:
        print(f"hms-proxy: error: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    if args.json:
        report = {"dry_run": args.dry_run, "deleted": result.deleted, "kept": result.kept,
                  "young": result.young, "skipped": result.skipped}
        if on_lakefs:
            report.update(protected=result.protected, commits=result.commits,
                          uncommitted=result.uncommitted)
        print(json.dumps(report, indent=2))
        return 0
    for root in result.skipped:
        print(f"skipped {root} (" + ("not in the repository)" if on_lakefs else
                                     "not a local location)"))
    for branch in result.protected:
        print(f"skipped branch {branch} (protected: expire on a branch and merge it)")
    for branch, commit in result.commits.items():
        print(f"committed the deletions on {branch}: {commit[:12]}")
    for branch in result.uncommitted:
        print(f"left the deletions on {branch} uncommitted, beside its uncommitted changes")
    verb = "to delete" if args.dry_run else "deleted"
    print(f"{len(result.deleted)} set(s) {verb}, {len(result.kept)} referenced kept"
          + (f", {len(result.young)} newer than {args.min_age:g}s kept" if result.young else ""))
    return 0


# --- stats show --------------------------------------------------------------------------------
def register_show(subparsers) -> None:
    """Add ``show`` to the ``stats`` sub-command group."""
    p = subparsers.add_parser(
        "show", help="show a table's or partition's computed statistics",
        description="Show computed statistics of a table (table level) or one partition at a "
                    "ref: the summary rows of the chosen columns, the top frequencies of "
                    "discrete columns (--top), a histogram range (--histogram, --range), as "
                    "text, JSON (--json) or a PNG plot (--plot). Reads only what it shows. "
                    "Exit status: 0 done, 1 no such table, ref, partition, column or "
                    "statistics, 2 another error.")
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--ref", default="main", help="branch, tag or commit (default main)")
    p.add_argument("--store", default=os.environ.get("HMS_STORE", "./metastore"),
                   help="store path (default ./metastore, env HMS_STORE)")
    p.add_argument("--partition", default=None, metavar="SPEC",
                   help="one partition (k=v/k2=v2 or k=v,k2=v2); default: the table level")
    p.add_argument("--columns", default=None, metavar="A,B",
                   help="only these columns (default: all)")
    p.add_argument("--top", type=int, default=None, metavar="N",
                   help="the N most frequent values of each chosen discrete column")
    p.add_argument("--histogram", default=None, metavar="COL",
                   help="the histogram bins of a numeric/date/timestamp column")
    p.add_argument("--range", default=None, metavar="LO:HI",
                   help="with --histogram: only bins overlapping [LO, HI] (either side may be "
                        "empty; ISO dates/times for date and timestamp columns)")
    p.add_argument("--holding", default=None, metavar="COL=VALUE",
                   help="the partitions holding VALUE in discrete column COL, with their rows "
                        "(needs a table-level set written with --distributions)")
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="draw the chosen columns' histograms and top frequencies, with the "
                        "summary as a table, into a PNG (needs matplotlib)")
    p.set_defaults(func=cmd_show)


def cmd_show(args) -> int:

    try:
        return _show(args, sys.stdout)
    except BrokenPipeError:  # | head
        sys.stderr.close()
        return 0
    except QueryError as exc:
        print(f"hms-proxy: error: {exc}", file=sys.stderr)
        return exc.status
    except (StoreError, OSError, ValueError) as exc:
        print(f"hms-proxy: error: {str(exc).strip().splitlines()[0] if str(exc) else exc!r}",
              file=sys.stderr)
        return 2


def parse_range(text: str | None, hive_type: str):
    """(lo, hi) of ``--range LO:HI``; either may be empty (None). ISO times hold colons too:
    the split is at the colon where both sides are bounds."""
    if text is None:
        return None, None
    splits = [i for i, ch in enumerate(text) if ch == ":"]
    if not splits:
        raise QueryError(f"--range takes LO:HI, got {text!r}")
    for i in splits:
        lo, hi = text[:i].strip() or None, text[i + 1:].strip() or None
        try:
            for bound in (lo, hi):
                if bound is not None:
                    as_number(bound, hive_type)
        except QueryError:
            continue
        return lo, hi
    raise QueryError("--range takes LO:HI (numbers" + (
        ", ISO dates/times" if layout.base_type(hive_type) in ("date", "timestamp") else "")
        + f"), got {text!r}")




def _show(args, out) -> int:
    if args.range is not None and args.histogram is None:
        raise QueryError("--range needs --histogram COL")
    if args.top is not None and args.top < 0:
        raise QueryError("--top must be a non-negative count")
    ts = open_table(args.store, args.table, ref=args.ref)
    if args.holding is not None:
        column, sep, value = args.holding.partition("=")
        if not sep or not column.strip():
            raise QueryError(f"--holding takes COL=VALUE, got {args.holding!r}")
        found = ts.holding(column.strip(), value)
        if args.json:
            print(json.dumps({"table": ts.qualified, "ref": ts.ref, "commit": ts.commit,
                              "column": column.strip(), "value": value,
                              "partitions": found}, indent=2), file=out)
        else:
            print(_grid(["partition", "rows"], [[p, str(n)] for p, n in sorted(found.items())]),
                  file=out)
        return 0
    partition = args.partition
    if partition is not None:
        partition = ts.partition_name(partition)
    columns = None
    if args.columns:
        columns = ts._column_list([c for c in args.columns.split(",") if c.strip()])
    summary = ts.summary(columns, partition)
    chosen = summary.column("column").to_pylist()
    types = dict(ts.columns)
    tops = {}
    if args.top is not None or args.plot:
        n = args.top if args.top is not None else 10
        for c in chosen:
            if layout.is_discrete(types.get(c, "")):
                tops[c] = ts.top(c, n, partition)
    hist = None
    if args.histogram:
        name = ts._column_list([args.histogram])[0]
        lo, hi = parse_range(args.range, types[name])
        hist = (name, lo, hi, ts.histogram(name, lo, hi, partition))
    doc = {"table": ts.qualified, "ref": ts.ref, "commit": ts.commit,
           "partition": partition, "source": ts.source(partition),
           "stale": ts.is_stale(partition), "summary": result_rows(summary)}
    if args.top is not None:
        doc["top"] = {c: {"values": result_rows(t), "duplicates_only":
                          (t.schema.metadata or {}).get(b"duplicates_only") == b"true"}
                      for c, t in tops.items()}
    if hist is not None:
        name, lo, hi, bins = hist
        doc["histogram"] = {"column": name, "range": [lo, hi],
                            "bins": result_rows(bins)}
    if args.plot:
        plot(args.plot, ts, summary, tops, hist, partition)
        doc["plot"] = args.plot
    if args.json:
        print(json.dumps(doc, indent=2, default=str), file=out)
        return 0
    where = partition or "table level"
    print(f"{ts.qualified} @ {ts.ref} ({(ts.commit or '')[:12]}), {where}: {doc['source']}"
          + ("  [STALE]" if doc["stale"] else ""), file=out)
    print(format_summary(summary), file=out)
    if args.top is not None:
        for c, t in tops.items():
            note = " (only values occurring more than once; every other value occurs once)" \
                if (t.schema.metadata or {}).get(b"duplicates_only") == b"true" else ""
            print(f"\ntop {args.top} of {c}{note}:", file=out)
            print(_grid(["value", "frequency"], [[_fmt(v) for v in r.values()]
                                                 for r in result_rows(t)]), file=out)
    if hist is not None:
        name, lo, hi, bins = hist
        print(f"\nhistogram of {name}" + (f" over [{lo or ''}, {hi or ''}]" if args.range else "")
              + f": {bins.num_rows} bin(s)", file=out)
        print(_grid(["lower", "upper", "count"], [[_fmt(v) for v in r.values()]
                                                  for r in result_rows(bins)]), file=out)
    if args.plot:
        print(f"\nplot written to {args.plot}", file=out)
    return 0


def _fmt(value, width: int = 24) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:.6g}"
    else:
        text = str(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def _grid(headers, rows) -> str:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for r in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    return "\n".join(lines)


def format_summary(table) -> str:
    """The summary rows as a text table: the main statistics, then those (lengths, booleans,
    other percentiles but p01/p99, ``udf_*``) some chosen column has; ``~`` marks an
    estimated distinct count. Dates and timestamps' numbers are days / microseconds."""
    rows = table.to_pylist()
    names = list(_MAIN) + [c for c in _OPTIONAL + tuple(n for n in table.column_names
                                                        if n.startswith("udf_"))
                           if any(r.get(c) is not None for r in rows)]
    body = []
    for r in rows:
        line = []
        for c in names:
            v = r.get(c)
            if c == "distinct_count" and v is not None and r.get("distinct_exact") is False:
                line.append("~" + _fmt(v))
            else:
                line.append(_fmt(v))
        body.append(line)
    return _grid([_HEADERS.get(c, c) for c in names], body)


def plot(path: str, ts: TableStats, summary, tops: dict, hist, partition) -> None:
    """A PNG: per chosen column (at most :data:`MAX_PLOTTED`), its histogram (numeric) or top
    frequencies (discrete); then the summary as a text table."""
    import matplotlib  # missing: the CLI says "pip install 'hms-proxy[plot]'"

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    types = dict(ts.columns)
    panels = []
    for c in summary.column("column").to_pylist():
        if hist is not None and hist[0] == c:
            panels.append(("hist", c, hist[3]))
        elif layout.is_numeric(types.get(c, "")):
            try:
                panels.append(("hist", c, ts.histogram(c, partition=partition)))
            except QueryError:
                pass
        if c in tops:
            panels.append(("top", c, tops[c]))
    if hist is not None and hist[0] not in summary.column("column").to_pylist():
        panels.insert(0, ("hist", hist[0], hist[3]))
    panels = panels[:MAX_PLOTTED]
    ncols = 2 if len(panels) > 1 else 1
    nrows = (len(panels) + ncols - 1) // ncols
    text = format_summary(summary)
    text_h = 0.22 * (len(text.splitlines()) + 2)
    fig = plt.figure(figsize=(7 * ncols, 3.2 * nrows + text_h + 0.6))
    grid = fig.add_gridspec(nrows + 1, ncols,
                            height_ratios=[3.2] * nrows + [max(text_h, 0.5)])
    for i, (kind, c, t) in enumerate(panels):
        ax = fig.add_subplot(grid[i // ncols, i % ncols])
        if kind == "hist":
            lower = t.column("lower").to_pylist()
            upper = t.column("upper").to_pylist()
            counts = t.column("count").to_pylist()
            widths = [max(u - lo_, 0.0) for lo_, u in zip(lower, upper)]
            ax.bar(lower, counts, width=[w if w > 0 else 1.0 for w in widths], align="edge")
            ax.set_title(f"{c} ({types.get(c, '')}): histogram")
            ax.set_ylabel("rows")
        else:
            values = [_fmt(v, 20) for v in t.column("value").to_pylist()][::-1]
            freqs = t.column("frequency").to_pylist()[::-1]
            ax.barh(range(len(values)), freqs)
            ax.set_yticks(range(len(values)), values)
            ax.set_title(f"{c} ({types.get(c, '')}): top {len(values)}")
            ax.set_xlabel("rows")
    ax = fig.add_subplot(grid[nrows, :])
    ax.axis("off")
    ax.text(0, 1, f"{ts.qualified} @ {ts.ref}, {partition or 'table level'}\n\n{text}",
            family="monospace", fontsize=8, va="top", ha="left", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=80)
    plt.close(fig)
