"""A Spark SQL session against a metastore over TLS, as an unmodified Spark configures it.

    python tests/security/tls_spark_job.py --uri thrift://127.0.0.1:PORT \
        --truststore truststore.jks --password changeit --warehouse DIR --output out.json

Runs CREATE DATABASE / CREATE TABLE / INSERT / SELECT with ``hive.metastore.use.SSL=true``
and the truststore, and writes what the SELECT returned (or the error) to ``--output``. Run
in a subprocess of its own: a JVM holds one metastore client configuration. The Hadoop user
and groups come from the environment (``HADOOP_USER_NAME``, ``HADOOP_CONF_DIR``).
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uri", required=True)
    parser.add_argument("--truststore", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("hms-proxy-tls")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "1")
             .config("spark.sql.warehouse.dir", args.warehouse)
             .config("spark.hadoop.hive.metastore.uris", args.uri)
             .config("spark.hadoop.hive.metastore.use.SSL", "true")
             .config("spark.hadoop.hive.metastore.truststore.path", args.truststore)
             .config("spark.hadoop.hive.metastore.truststore.password", args.password)
             .enableHiveSupport().getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    out = {}
    try:
        spark.sql("CREATE DATABASE tls_db")
        spark.sql("CREATE TABLE tls_db.events (id INT, name STRING) PARTITIONED BY (ds STRING) "
                  "STORED AS PARQUET")
        spark.sql("INSERT INTO tls_db.events PARTITION (ds='2024-01-01') "
                  "VALUES (1, 'a'), (2, 'b')")
        spark.sql("INSERT INTO tls_db.events PARTITION (ds='2024-01-02') VALUES (3, 'c')")
        rows = spark.sql("SELECT ds, count(*) AS n, sum(id) AS s FROM tls_db.events "
                         "GROUP BY ds ORDER BY ds").collect()
        out["rows"] = [[r["ds"], r["n"], r["s"]] for r in rows]
        out["partitions"] = [r[0] for r in spark.sql("SHOW PARTITIONS tls_db.events").collect()]
        out["user"] = spark.sparkContext.sparkUser()
    except Exception as exc:  # noqa: BLE001 - reported to the test
        out["error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
    with open(args.output, "w") as f:
        json.dump(out, f)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
