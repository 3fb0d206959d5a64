"""``make demo``: the whole stack on this machine, no Docker: a real lakeFS (built from its Go
module), hms-proxy over it, Spark writing through lakeFS's S3 gateway on a branch, the diff,
the merge, and the result read back on main; then the stack stays up until Ctrl-C.

    python -m hms_proxy.tools.demo [--port 9083] [--lakefs-port 8000] [--no-wait]

Needs the ``lakefs`` and ``stats`` extras (lakefs-sdk, PySpark), Java 17, Go and Maven (for
hadoop-aws, fetched once from Maven Central).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from hms_proxy import extras
from hms_proxy.ops.shutdown import StopRequest
from hms_proxy.tools import lakefs_local, metastores, spark_s3

REPO = "demo"
SPARK_JOB = r"""
import json, sys
from pyspark.sql import SparkSession
uri, conf, statements = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
b = SparkSession.builder.master("local[1]").appName("hms-proxy-demo")
for k, v in {"spark.ui.enabled": "false", "spark.hadoop.hive.metastore.uris": uri,
             "spark.sql.shuffle.partitions": "1", "spark.ui.showConsoleProgress": "false",
        **conf}.items():
    b = b.config(k, v)
spark = b.enableHiveSupport().getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
for sql in statements:
    rows = spark.sql(sql).collect()
    print("spark> " + sql)
    for r in rows:
        print("       " + " | ".join(str(v) for v in r))
spark.stop()
"""


def _say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _spark(uri: str, conf: dict, statements: list[str]) -> None:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, "-c", SPARK_JOB, uri, json.dumps(conf),
                           json.dumps(statements)], env=env, capture_output=True, text=True)
    print(done.stdout, end="")
    if done.returncode != 0:
        raise RuntimeError("the Spark job failed:\n" + done.stderr[-3000:])


def _cli(env: dict, *args: str) -> None:
    print("$ hms-proxy " + " ".join(args), flush=True)
    done = subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args, "--store",
                           f"lakefs://{REPO}"], env=env, capture_output=True, text=True)
    print(done.stdout, end="")
    if done.returncode not in (0,):
        raise RuntimeError(f"hms-proxy {' '.join(args)} failed: {done.stderr.strip()}")


def run(args) -> int:
    extras.require("lakefs_sdk", "pyspark", "pyarrow")
    work = Path(tempfile.mkdtemp(prefix="hms-proxy-demo-"))
    stop = StopRequest().install()
    lakefs = server = None
    servers: list = []
    try:
        _say("lakeFS: built from its Go module once (minutes the first time), then started")
        lakefs_port = args.lakefs_port if _port_free(args.lakefs_port) else None
        lakefs = lakefs_local.start_lakefs(work / "lakefs", port=lakefs_port,
                                           **lakefs_local.RECOMMENDED)
        lakefs.create_repository(REPO)
        print(f"lakeFS {lakefs_local.DEFAULT_VERSION} at {lakefs.endpoint} (S3 gateway on the "
              f"same port), repository {REPO!r}")
        env = dict(os.environ, **lakefs.env())
        conf = spark_s3.spark_conf(lakefs.endpoint, lakefs.access_key_id,
                                   lakefs.secret_access_key)
        # new databases go under the repository's warehouse (stored ref-free by hms-proxy, so
        # the same database is under dev's warehouse when seen on dev)
        conf["spark.sql.warehouse.dir"] = f"s3a://{REPO}/main/warehouse"

        _say("hms-proxy over lakefs://demo, serving main")
        port = args.port if _port_free(args.port) else metastores.free_port()
        # with the lakeFS action: lakectl's and the UI's commits and merges keep the catalog
        server = metastores.start_proxy(work / "hms-main", "--http-port", "0",
                                        "--lakefs-hooks", "self", port=port,
                                        store=f"lakefs://{REPO}", warehouse=False, env=env,
                                        cwd=work)
        main_uri = server.uri
        print(f"main: {main_uri}  (console and API: "
              f"http://127.0.0.1:{server.announced_port('http')}/)")

        _say("Spark on main: a partitioned table, day 1 (its files through the S3 gateway)")
        _spark(main_uri, conf, [
            "CREATE DATABASE shop",
            "CREATE TABLE shop.orders (id INT, amount DOUBLE) PARTITIONED BY (ds STRING) "
            "STORED AS PARQUET",
            "INSERT INTO shop.orders PARTITION (ds='2024-01-01') VALUES (1, 10.0), (2, 20.0)"])
        _cli(env, "commit", "main", "-m", "orders, day 1")

        _say("a branch, and a second hms-proxy serving it")
        _cli(env, "branch", "create", "dev", "--from", "main")
        dev_port = port + 1 if _port_free(port + 1) else metastores.free_port()
        dev_server = metastores.start_proxy(work / "hms-dev", "--ref", "dev", port=dev_port,
                                            store=f"lakefs://{REPO}", warehouse=False, env=env,
                                            cwd=work)
        servers.append(dev_server)
        dev_uri = dev_server.uri
        print(f"dev: {dev_uri}")

        _say("Spark on dev: day 2; main does not see it")
        _spark(dev_uri, conf, [
            "INSERT INTO shop.orders PARTITION (ds='2024-01-02') VALUES (3, 30.0)",
            "SHOW PARTITIONS shop.orders"])
        _spark(main_uri, conf, ["SHOW PARTITIONS shop.orders",
                                "SELECT count(*) FROM shop.orders"])
        _cli(env, "commit", "dev", "-m", "orders, day 2")

        _say("the diff: the catalog (hms-proxy) and the data (lakeFS)")
        _cli(env, "diff", "main", "dev")
        import lakefs_sdk

        with lakefs_sdk.ApiClient(lakefs_sdk.Configuration(
                host=lakefs.api_url, username=lakefs.access_key_id,
                password=lakefs.secret_access_key)) as client:
            diff = lakefs_sdk.RefsApi(client).diff_refs(REPO, "main", "dev", amount=100)
            for d in diff.results:
                if not d.path.startswith("_hms"):
                    print(f"lakeFS {d.type:8} {d.path}")

        _say("one merge publishes both")
        _cli(env, "merge", "dev", "main")
        _spark(main_uri, conf, ["SELECT ds, id, amount FROM shop.orders ORDER BY id"])

        _say("the stack is up")
        print(f"lakeFS         {lakefs.endpoint}  (key {lakefs.access_key_id}, secret "
              f"{lakefs.secret_access_key})")
        print(f"hms-proxy      {main_uri} (main), {dev_uri} (dev)")
        print(f"store          lakefs://{REPO}; export {' '.join(f'{k}={v}' for k, v in lakefs.env().items() if k.startswith('LAKEFS_'))}")
        print("Spark          spark.hadoop.hive.metastore.uris=" + main_uri +
              ", s3a settings: hms_proxy.tools.spark_s3.s3a_conf")
        if args.no_wait:
            return 0
        print("Ctrl-C stops everything.", flush=True)
        while not stop.wait(1.0):
            if not all(p.alive() for p in [server, *servers]) or lakefs.proc.poll() is not None:
                print("a process of the stack exited", file=sys.stderr)
                return 1
        return 0
    except RuntimeError as exc:
        print(f"hms-proxy demo: {exc}", file=sys.stderr)
        return 2
    finally:
        for proc in [server, *servers]:
            if proc is not None:
                proc.stop()
        if lakefs is not None:
            lakefs.stop()
        shutil.rmtree(work, ignore_errors=True)
        stop.finish()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hms_proxy.tools.demo",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("HMS_PORT", "9083")),
                        help="main's Thrift port (dev's is the next one; default 9083)")
    parser.add_argument("--lakefs-port", type=int, default=8000)
    parser.add_argument("--no-wait", action="store_true", help="stop after the walk-through")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except ModuleNotFoundError as exc:
        print(extras.install_hint(exc.name, "demo") or str(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
