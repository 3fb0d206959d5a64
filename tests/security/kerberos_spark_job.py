"""A Spark SQL session against a Kerberized metastore, as an unmodified Spark configures it.

    python tests/security/kerberos_spark_job.py --uri thrift://localhost:PORT \
        --principal hive/localhost@REALM --krb5-conf krb5.conf --warehouse DIR \
        --output out.json [--conf KEY=VALUE ...]

The Kerberos login is the user's ticket cache (``KRB5CCNAME``, made by ``kinit``) and Hadoop's
security settings come from ``HADOOP_CONF_DIR``'s core-site.xml
(``hadoop.security.authentication=kerberos``), as on a gateway host; the metastore settings are
``hive.metastore.sasl.enabled`` and ``hive.metastore.kerberos.principal``. Writes what the
statements returned (or the first error) to ``--output``. Run in a process of its own: a JVM
holds one metastore client configuration and one Kerberos login.
"""
from __future__ import annotations

import argparse
import json
import sys

STATEMENTS = [
    "CREATE DATABASE krb_db",
    "CREATE TABLE krb_db.events (id INT, name STRING) PARTITIONED BY (ds STRING) STORED AS PARQUET",
    "INSERT INTO krb_db.events PARTITION (ds='2024-01-01') VALUES (1, 'a'), (2, 'b')",
    "INSERT INTO krb_db.events PARTITION (ds='2024-01-02') VALUES (3, 'c')",
    "ALTER TABLE krb_db.events ADD PARTITION (ds='2024-01-03')",
    "SELECT ds, count(*) AS n, sum(id) AS s FROM krb_db.events GROUP BY ds ORDER BY ds",
    "SHOW PARTITIONS krb_db.events",
    "SHOW TABLES IN krb_db",
    "ALTER TABLE krb_db.events SET TBLPROPERTIES ('team'='data')",
    "SHOW TBLPROPERTIES krb_db.events ('team')",
    "ALTER TABLE krb_db.events DROP PARTITION (ds='2024-01-03')",
    "SHOW PARTITIONS krb_db.events",
    "CREATE TABLE krb_db.copy AS SELECT * FROM krb_db.events WHERE ds = '2024-01-01'",
    "SELECT id, name FROM krb_db.copy ORDER BY id",
    "DROP TABLE krb_db.copy",
    "SHOW TABLES IN krb_db",
    "DESCRIBE DATABASE krb_db",
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uri", required=True)
    parser.add_argument("--principal", required=True)
    parser.add_argument("--krb5-conf", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--conf", action="append", default=[])
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[1]").appName("hms-proxy-kerberos")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.sql.warehouse.dir", args.warehouse)
               .config("spark.driver.extraJavaOptions",
                       f"-Djava.security.krb5.conf={args.krb5_conf} "
                       "-Dsun.security.krb5.disableReferrals=true")
               .config("spark.hadoop.hive.metastore.uris", args.uri)
               .config("spark.hadoop.hive.metastore.sasl.enabled", "true")
               .config("spark.hadoop.hive.metastore.kerberos.principal", args.principal))
    for item in args.conf:
        key, _, value = item.partition("=")
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    out = {"results": []}
    try:
        for statement in STATEMENTS:
            rows = spark.sql(statement).collect()
            out["results"].append([statement, [[str(v) for v in r] for r in rows]])
        out["user"] = spark.sparkContext.sparkUser()
    except Exception as exc:  # noqa: BLE001 - reported to the test
        out["error"] = f"{type(exc).__name__}: {str(exc)[:3000]}"
    with open(args.output, "w") as f:
        json.dump(out, f)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
