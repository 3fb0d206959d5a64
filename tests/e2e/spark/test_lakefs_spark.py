"""Spark over lakeFS, with every commit, branch, merge, revert and tag made by lakeFS's API (what
lakectl and the lakeFS UI do), never by hms-proxy's command line.

A real lakeFS with its own default settings; hms-proxy serves the repository with the lakeFS
action installed (``--lakefs-hooks``); one Spark session (PySpark, hadoop-aws through lakeFS's
S3 gateway, its warehouse in the repository) writes and reads tables created by Spark itself,
partitioned and not, on main and on a branch (``shop@dev``). Every step is checked through
Spark and through lakeFS's own listings of the data.
"""
from __future__ import annotations

import os

import pytest
from lakefs_sdk.exceptions import ApiException

from tests.support.client import wait_served
from tests.support.process import REPO_ROOT
from tests.support.proxy import start_proxy
from tests.support.spark import Spark

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1500)]


@pytest.fixture
def stack(tmp_path):
    from hms_proxy.tools import spark_s3
    from tests.support.lakefs import LakeFSApi, new_repository, real_lakefs

    real = real_lakefs()
    repo = new_repository("spark")
    env = dict(os.environ, **real.env(), PYTHONPATH=str(REPO_ROOT))
    server = start_proxy(tmp_path / "hms", "--http-port", "0", "--lakefs-hooks", "self",
                         store=f"lakefs://{repo}", warehouse=False, env=env)
    client = real.sdk()
    spark = None
    try:
        spark = Spark(server.uri, f"s3a://{repo}/main/warehouse", tmp_path / "spark",
                      conf=spark_s3.spark_conf(real.endpoint, real.access_key_id,
                                               real.secret_access_key))
        yield {"server": server, "repo": repo, "spark": spark, "lakefs": LakeFSApi(client, repo)}
    finally:
        if spark is not None:
            spark.close()
        server.stop()
        client.close()


def test_spark_tables_on_lakefs_driven_by_lakefs_alone(stack):
    spark, lake, server = stack["spark"], stack["lakefs"], stack["server"]
    wh = "warehouse/shop.db"

    # Spark creates tables before any file exists: unpartitioned, partitioned, USING parquet,
    # CTAS; the metastore makes their directories as the stock HMS does, so Spark finds them
    spark.sql("CREATE DATABASE shop")
    spark.sql("CREATE TABLE shop.plain (id INT, why STRING) STORED AS PARQUET")
    spark.sql("INSERT INTO shop.plain VALUES (1, 'x')")
    assert spark.sql("SELECT * FROM shop.plain") == [[1, "x"]]
    spark.sql("CREATE TABLE shop.parts (id INT) PARTITIONED BY (ds STRING) STORED AS PARQUET")
    spark.sql("INSERT INTO shop.parts PARTITION (ds='a') VALUES (1)")
    spark.sql("ALTER TABLE shop.parts ADD PARTITION (ds='b')")
    assert spark.sql("SELECT ds, count(*) FROM shop.parts GROUP BY ds") == [["a", 1]]
    spark.sql("CREATE TABLE shop.used (id INT, v STRING) USING parquet")
    spark.sql("INSERT INTO shop.used VALUES (5, 'u')")
    spark.sql("CREATE TABLE shop.ctas USING parquet AS SELECT 3 AS id")
    assert spark.sql("SELECT * FROM shop.used") == [[5, "u"]]
    assert spark.sql("SELECT * FROM shop.ctas") == [[3]]
    assert lake.data_files("main", f"{wh}/plain")

    # lakeFS commits main and makes a branch of it
    lake.commit("main", "tables made by Spark")
    lake.branch("dev", "main")

    # on dev: rows, a column and a table; main sees none of it
    spark.sql("INSERT INTO `shop@dev`.plain VALUES (2, 'y')")
    spark.sql("ALTER TABLE `shop@dev`.plain ADD COLUMNS (extra STRING)")
    spark.sql("CREATE TABLE `shop@dev`.fresh (id INT) STORED AS PARQUET")
    spark.sql("INSERT INTO `shop@dev`.fresh VALUES (7)")
    # a data source table (USING parquet) keeps its location in a serde parameter too
    spark.sql("INSERT INTO `shop@dev`.used VALUES (6, 'd')")
    assert sorted(spark.sql("SELECT * FROM `shop@dev`.used")) == [[5, "u"], [6, "d"]]
    assert sorted(spark.sql("SELECT id, why FROM `shop@dev`.plain")) == [[1, "x"], [2, "y"]]
    spark.sql("REFRESH TABLE shop.plain")
    assert spark.sql("SELECT * FROM shop.plain") == [[1, "x"]]
    assert [r[0] for r in spark.sql("DESCRIBE shop.plain")][:2] == ["id", "why"]
    assert "extra" not in [r[0] for r in spark.sql("DESCRIBE shop.plain")]
    assert "fresh" not in [r[1] for r in spark.sql("SHOW TABLES IN shop")]
    assert lake.data_files("dev", f"{wh}/fresh") and not lake.data_files("main", f"{wh}/fresh")
    assert len(lake.data_files("dev", f"{wh}/plain")) == 2
    assert len(lake.data_files("main", f"{wh}/plain")) == 1
    assert len(lake.data_files("dev", f"{wh}/used")) == 2
    assert len(lake.data_files("main", f"{wh}/used")) == 1
    spark.sql("REFRESH TABLE shop.used")
    assert spark.sql("SELECT * FROM shop.used") == [[5, "u"]]

    # lakeFS commits dev and merges it into main: main reads dev's table, column and rows
    lake.commit("dev", "dev's rows, column and table")
    merged = lake.merge("dev", "main")
    wait_served(server, lambda c: "fresh" in c.get_all_tables("shop"),
                what="the server sees lakeFS's merge")
    spark.sql("REFRESH TABLE shop.plain")
    assert sorted(spark.sql("SELECT * FROM shop.plain")) == [[1, "x", None], [2, "y", None]]
    assert "extra" in [r[0] for r in spark.sql("DESCRIBE shop.plain")]
    assert spark.sql("SELECT * FROM shop.fresh") == [[7]]
    assert len(lake.data_files("main", f"{wh}/plain")) == 2

    # a tag lakeFS makes reads as the merge did, through db@tag
    lake.tag("v1", merged)
    assert sorted(spark.sql("SELECT id FROM `shop@v1`.plain")) == [[1], [2]]

    # lakeFS reverts the merge: the table, the column and the rows go back together
    lake.revert("main", merged, parent=1)
    wait_served(server, lambda c: "fresh" not in c.get_all_tables("shop"),
                what="the server sees lakeFS's revert")
    spark.sql("REFRESH TABLE shop.plain")
    assert spark.sql("SELECT * FROM shop.plain") == [[1, "x"]]
    assert "extra" not in [r[0] for r in spark.sql("DESCRIBE shop.plain")]
    assert not lake.data_files("main", f"{wh}/fresh")
    assert len(lake.data_files("main", f"{wh}/plain")) == 1
    assert sorted(spark.sql("SELECT id FROM `shop@v1`.plain")) == [[1], [2]]  # the tag stays

    # one table changed on two branches: lakeFS's merge is refused, main keeps its own
    lake.branch("other", "main")
    spark.sql("ALTER TABLE shop.plain SET TBLPROPERTIES ('owner_team' = 'finance')")
    spark.sql("ALTER TABLE `shop@other`.plain SET TBLPROPERTIES ('owner_team' = 'growth')")
    lake.commit("main", "finance owns plain")
    lake.commit("other", "growth owns plain")
    with pytest.raises(ApiException) as refused:
        lake.merge("other", "main")
    assert refused.value.status in (409, 412), refused.value  # a conflict, or the hook's no
    spark.sql("REFRESH TABLE shop.plain")
    props = dict((r[0], r[1]) for r in spark.sql("SHOW TBLPROPERTIES shop.plain"))
    assert props["owner_team"] == "finance"
