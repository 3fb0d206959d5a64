"""Run a list of Spark SQL statements against one metastore and record what they return.

Usage (one Python subprocess per metastore: a JVM holds only one metastore client
configuration):

    python tests/e2e/spark/runner.py --uri thrift://127.0.0.1:9083 --warehouse DIR \
        --statements statements.json --output results.jsonl

``--serve`` (no other option): a runner kept for several runs (:mod:`tests.support.spark_runs`),
one JVM for all: each line on stdin is a run's options as JSON (``uri``, ``warehouse``,
``statements``, ``output``, ``conf``, ``cwd``); each run gets a new Spark session and context
(the previous one stopped: nothing of a run is seen by the next, the metastore client
included), and ends with a line ``@@runner-done {"exit": 0}`` on stdout.

``--statements -``: a session that takes one JSON item a line on stdin and answers each with
one JSON line on stdout (``{"index": i, "result": R}``, after a first ``{"ready": s}``), for
tests that do other things between statements (:mod:`tests.support.spark`).

The statements file holds a JSON list. Each item is one of

  * ``"SQL TEXT"``
  * ``{"sql": "...", "sort": true, "extract": "REGEX", "section": "name"}``
    ``sort`` sorts the collected rows (for queries whose row order is unspecified);
    ``extract`` replaces the rows by the list of all matches of REGEX in the rows'
    text (used on EXPLAIN output to keep only the stable part of a plan);
  * ``{"python": "write_parquet", "path": "...", "schema": "a INT, b STRING",
    "rows": [[1, "x"], ...]}``: ``spark.createDataFrame(rows, schema).write.parquet(path)``
    (used to drop files into a partition directory before MSCK REPAIR TABLE);
  * ``{"python": "list_dirs", "path": "..."}``: the directories under path (relative),
    each with its number of data files, to check what the metastore did on disk.

``${WAREHOUSE}`` in any statement text or path is replaced by the warehouse dir.

The output file gets one JSON line per statement, written as soon as the statement
finishes (so a crash still leaves the earlier results):
``{"index": i, "section": s, "statement": text, "result": R}`` where R is
``{"rows": [[...], ...]}`` or ``{"error": NAME, "class": PYTHON_CLASS, "message": "..."}``;
NAME is the AnalysisException's error condition (e.g. TABLE_OR_VIEW_ALREADY_EXISTS)
when it has one, otherwise the Python class name.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import decimal
import json
import re
import sys
import time
import traceback


def jsonable(value):
    """A collected Spark value as plain JSON (rows and structs become lists)."""
    from pyspark.sql import Row

    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, Row):
        return [jsonable(v) for v in value]
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, (datetime.date, datetime.datetime, decimal.Decimal)):
        return str(value)
    return repr(value)


def sort_key(row):
    return json.dumps(row, sort_keys=True, default=str)


def error_result(exc: BaseException) -> dict:
    """``{"error", "class", "message"}`` for an exception raised by a statement."""
    name = type(exc).__name__
    condition = None
    for getter in ("getCondition", "getErrorClass"):
        fn = getattr(exc, getter, None)
        if fn is None:
            continue
        try:
            condition = fn()
        except Exception:  # noqa: BLE001 - older/odd exception objects
            condition = None
        if condition:
            break
    message = getattr(exc, "_message", None) or str(exc)
    # PySpark appends the JVM stack trace to some messages; keep the message proper.
    message = message.split("\n\nJVM stacktrace:")[0].strip()
    return {"error": condition or name, "class": name, "message": message}


def build_session(uri: str, warehouse: str, conf: dict | None = None):
    from pyspark.sql import SparkSession

    builder = SparkSession.Builder()  # a new one: the options of an earlier build stay out
    for key, value in (conf or {}).items():  # --conf: e.g. the s3a settings of a lakeFS
        builder = builder.config(key, value)
    spark = (builder
             .master("local[1]")
             .appName("hms-proxy-e2e")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.default.parallelism", "1")
             .config("spark.driver.memory", "1g")
             .config("spark.sql.warehouse.dir", warehouse)
             .config("spark.hadoop.hive.metastore.uris", uri)
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.adaptive.enabled", "false")
             .enableHiveSupport()
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    return spark


def run_sql(spark, item: dict) -> dict:
    df = spark.sql(item["sql"])
    rows = [jsonable(r) for r in df.collect()]
    if item.get("extract"):
        text = "\n".join(" ".join(str(v) for v in (r if isinstance(r, list) else [r])) for r in rows)
        rows = re.findall(item["extract"], text)
    if item.get("sort"):
        rows.sort(key=sort_key)
    return {"rows": rows}


def run_python(spark, item: dict) -> dict:
    action = item["python"]
    if action == "write_parquet":
        df = spark.createDataFrame([tuple(r) for r in item["rows"]], item["schema"])
        df.coalesce(1).write.mode(item.get("mode", "errorifexists")).parquet(item["path"])
        return {"rows": []}
    if action == "list_dirs":
        # Directories under path (relative, sorted) with their number of data files. File
        # names are not listed: Spark puts a random UUID in them.
        import os

        root = item["path"]
        rows = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            data = [f for f in filenames if not f.startswith((".", "_"))]
            rows.append([os.path.relpath(dirpath, root), len(data)])
        return {"rows": sorted(rows)}
    raise ValueError(f"unknown python action {action!r}")


def substitute(value, warehouse: str):
    if isinstance(value, str):
        return value.replace("${WAREHOUSE}", warehouse)
    if isinstance(value, list):
        return [substitute(v, warehouse) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, warehouse) for k, v in value.items()}
    return value


def run_file(spark, statements: str, output: str, warehouse: str, started: float) -> None:
    """The statements of the file ``statements``, one record each into ``output``."""
    with open(statements) as f:
        items = json.load(f)
    with open(output, "w") as out:
        for index, raw in enumerate(items):
            item = {"sql": raw} if isinstance(raw, str) else dict(raw)
            # Recorded before substitution, so both sides record the same statement text.
            text = item.get("sql") or json.dumps({k: v for k, v in item.items() if k != "section"})
            item = substitute(item, warehouse)
            t0 = time.monotonic()
            try:
                result = run_python(spark, item) if "python" in item else run_sql(spark, item)
            except Exception as exc:  # noqa: BLE001 - every failure is an outcome to compare
                result = error_result(exc)
                if not type(exc).__module__.startswith("pyspark"):
                    result["traceback"] = traceback.format_exc()
            record = {"index": index, "section": item.get("section"), "statement": text,
                      "seconds": round(time.monotonic() - t0, 3), "result": result}
            out.write(json.dumps(record, default=str) + "\n")
            out.flush()
    print(f"runner: {len(items)} statements in {time.monotonic() - started:.1f}s",
          file=sys.stderr, flush=True)


def serve() -> int:
    """``--serve``: runs one after the other, each in a new session (see the module doc)."""
    import os

    for line in sys.stdin:
        if not line.strip():
            continue
        run = json.loads(line)
        started = time.monotonic()
        code = 0
        try:
            os.chdir(run.get("cwd") or ".")
            spark = build_session(run["uri"], run["warehouse"], run.get("conf") or {})
            print(f"runner: session ready in {time.monotonic() - started:.1f}s",
                  file=sys.stderr, flush=True)
            try:
                run_file(spark, run["statements"], run["output"], run["warehouse"], started)
            finally:
                spark.stop()
        except Exception:  # noqa: BLE001 - the run fails, as a runner process would exit
            traceback.print_exc()
            code = 1
        print("@@runner-done " + json.dumps({"exit": code}), flush=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help="runs read from stdin, one JVM")
    parser.add_argument("--uri")
    parser.add_argument("--warehouse")
    parser.add_argument("--statements")
    parser.add_argument("--output", default="-", help="results file (not with --statements -)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting (repeatable)")
    args = parser.parse_args(argv)
    if args.serve:
        return serve()
    if not (args.uri and args.warehouse and args.statements):
        parser.error("--uri, --warehouse and --statements are needed (or --serve)")
    conf = dict(item.split("=", 1) for item in args.conf)

    started = time.monotonic()
    if args.statements == "-":  # one JSON item a line on stdin, one record a line on stdout
        spark = build_session(args.uri, args.warehouse, conf)
        print(json.dumps({"ready": round(time.monotonic() - started, 1)}), flush=True)
        for index, line in enumerate(sys.stdin):
            raw = json.loads(line)
            item = substitute({"sql": raw} if isinstance(raw, str) else dict(raw),
                              args.warehouse)
            try:
                result = run_python(spark, item) if "python" in item else run_sql(spark, item)
            except Exception as exc:  # noqa: BLE001 - every failure is an outcome
                result = error_result(exc)
            print(json.dumps({"index": index, "result": result}, default=str), flush=True)
        spark.stop()
        return 0
    spark = build_session(args.uri, args.warehouse, conf)
    print(f"runner: session ready in {time.monotonic() - started:.1f}s", file=sys.stderr, flush=True)
    run_file(spark, args.statements, args.output, args.warehouse, started)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
