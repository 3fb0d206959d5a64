"""The pytest plugin (``hms_proxy.pytest_plugin``), as a user's test suite meets it: a small
project that uses only the plugin's fixtures and PySpark, run by pytest's own ``pytester`` in a
subprocess (serially, with ``-n 2``, and against a running server given by ``--hms-uri``).

The project seeds two tables through Spark, then ten tests each change the catalog and the
data of their branch in another way and check that they see the seed plus their own change and
nothing of the others'; a failing test keeps its branch under ``--hms-keep`` and the report
names it.
"""
from __future__ import annotations

import os
import re
import sys

import pytest

from tests.support.process import REPO_ROOT
from tests.support.proxy import start_proxy

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CONFTEST = '''
import pytest


@pytest.fixture(scope="session")
def hms_seed(hms_spark_session):
    spark = hms_spark_session  # on the seed's branch while seeding
    spark.sql("CREATE DATABASE shop")
    spark.sql("CREATE TABLE shop.orders (id INT, amount DOUBLE) PARTITIONED BY (ds STRING) "
              "STORED AS PARQUET")
    spark.sql("INSERT INTO shop.orders PARTITION (ds='d1') VALUES (1, 10.0), (2, 20.0)")
    spark.sql("CREATE TABLE shop.customers (id INT, name STRING) USING parquet")
    spark.sql("INSERT INTO shop.customers VALUES (1, 'ann'), (2, 'bob')")


def rows(spark, sql):
    return sorted(tuple(r) for r in spark.sql(sql).collect())


@pytest.fixture
def spark(hms_spark):
    """The seed, as this test starts: checked before the test changes anything."""
    assert rows(hms_spark, "SELECT id, amount, ds FROM shop.orders") == [(1, 10.0, "d1"),
                                                                        (2, 20.0, "d1")]
    assert rows(hms_spark, "SELECT * FROM shop.customers") == [(1, "ann"), (2, "bob")]
    tables = sorted(r[1] for r in hms_spark.sql("SHOW TABLES IN shop").collect())
    assert tables == ["customers", "orders"]
    assert [r[0] for r in hms_spark.sql("SHOW DATABASES").collect()] == ["default", "shop"]
    return hms_spark
'''

TESTS = '''
from conftest import rows


def test_01_insert_a_partition(spark):
    spark.sql("INSERT INTO shop.orders PARTITION (ds='d2') VALUES (3, 30.0)")
    assert rows(spark, "SELECT id, ds FROM shop.orders") == [(1, "d1"), (2, "d1"), (3, "d2")]


def test_02_add_a_column(spark):
    spark.sql("ALTER TABLE shop.customers ADD COLUMNS (email STRING)")
    spark.sql("INSERT INTO shop.customers VALUES (3, 'cy', 'cy@x')")
    assert rows(spark, "SELECT id, email FROM shop.customers") == [
        (1, None), (2, None), (3, "cy@x")]


def test_03_drop_a_table(spark):
    spark.sql("DROP TABLE shop.customers")
    assert [r[1] for r in spark.sql("SHOW TABLES IN shop").collect()] == ["orders"]


def test_04_ctas(spark):
    spark.sql("CREATE TABLE shop.totals USING parquet AS "
              "SELECT ds, sum(amount) AS s FROM shop.orders GROUP BY ds")
    assert rows(spark, "SELECT * FROM shop.totals") == [("d1", 30.0)]


def test_05_overwrite_a_partition(spark):
    spark.sql("INSERT OVERWRITE TABLE shop.orders PARTITION (ds='d1') VALUES (9, 90.0)")
    assert rows(spark, "SELECT id, amount FROM shop.orders") == [(9, 90.0)]


def test_06_drop_a_partition(spark):
    spark.sql("ALTER TABLE shop.orders DROP PARTITION (ds='d1')")
    assert rows(spark, "SELECT * FROM shop.orders") == []


def test_07_rename_a_table(spark):
    spark.sql("ALTER TABLE shop.customers RENAME TO shop.clients")
    assert rows(spark, "SELECT name FROM shop.clients") == [("ann",), ("bob",)]


def test_08_truncate(spark):
    spark.sql("TRUNCATE TABLE shop.customers")
    assert rows(spark, "SELECT * FROM shop.customers") == []


def test_09_a_new_database(spark, hms_branch):
    spark.sql(f"CREATE DATABASE staging LOCATION '{hms_branch.warehouse}/staging.db'")
    spark.sql("CREATE TABLE staging.raw (line STRING) STORED AS PARQUET")
    spark.sql("INSERT INTO staging.raw VALUES ('x')")
    assert rows(spark, "SELECT * FROM staging.raw") == [("x",)]


def test_10_the_branch_has_a_port_of_its_own(spark, hms_branch):
    """An unmodified client pointed at the branch's own URI sees the branch; its
    shop@branch form reaches it through any port."""
    from hmsclient import hmsclient

    spark.sql("INSERT INTO shop.orders PARTITION (ds='d3') VALUES (4, 40.0)")
    host, port = hms_branch.uri.split("://")[1].rsplit(":", 1)
    with hmsclient.HMSClient(host=host, port=int(port)) as client:
        assert client.get_partition_names("shop", "orders", -1) == ["ds=d1", "ds=d3"]
        assert sorted(client.get_all_tables("shop")) == ["customers", "orders"]
        assert client.get_partition_names(hms_branch.db("shop"), "orders", -1) == [
            "ds=d1", "ds=d3"]
'''

FAILING = '''
def test_fails_after_a_change(spark):
    spark.sql("INSERT INTO shop.orders PARTITION (ds='bad') VALUES (66, 6.0)")
    assert False, "a failing test"
'''


@pytest.fixture
def project(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_shop=TESTS)
    pytester.makeini("[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n")
    return pytester


def _run(pytester, *args):
    env_path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    pytester._monkeypatch.setenv("PYTHONPATH", env_path)
    pytester._monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    return pytester.runpytest_subprocess(*args, timeout=600)


def test_ten_tests_on_their_own_branches_serially(project):
    result = _run(project, "-v")
    result.assert_outcomes(passed=10)


def test_the_same_tests_on_two_workers(project):
    """``-n 2``: each worker its own server; a failing test's branch is dropped (no
    ``--hms-keep``) and its report says so."""
    project.makepyfile(test_failing=FAILING)
    result = _run(project, "-n", "2", "-v")
    result.assert_outcomes(passed=10, failed=1)
    out = result.stdout.str()
    assert set(re.findall(r"\[(gw\d)\]", out)) == {"gw0", "gw1"}
    assert re.search(r"branch pytest-\S+-fails-after-a-change \(dropped; --hms-keep keeps it\)",
                     out), out


def test_against_a_running_server_a_failing_test_keeps_its_branch(project, tmp_path):
    """``--hms-uri`` and ``--hms-api`` (the server of a docker-compose stack, say): its main is
    left as it was, the seed and the tests live on branches dropped at the end, but for the
    failing test's under ``--hms-keep``, which the report names with the diff to run."""
    from tests.support.client import connect
    from tests.support.http_api import Client

    project.makepyfile(test_failing=FAILING)
    server = start_proxy(tmp_path, "--http-port", "0")
    try:
        api = Client(f"http://127.0.0.1:{server.announced_port('http')}")
        result = _run(project, "--hms-uri", server.uri, "--hms-api", api.base, "--hms-keep")
        result.assert_outcomes(passed=10, failed=1)
        out = result.stdout.str()
        kept = re.search(r"branch (pytest-\S+) kept \(--hms-keep\): what the test did: "
                         r"hms-proxy diff (\w+) (\S+)", out)
        assert kept, out
        name, start = kept.group(1), kept.group(2)
        assert kept.group(3) == name and name.endswith("fails-after-a-change")
        assert "hms-proxy: branches kept" in out
        refs = api.get("/refs").body
        assert [b["name"] for b in refs["branches"]] == ["main", name]
        assert refs["tags"] == []
        with connect(server) as client:
            assert client.get_all_databases() == ["default"]
            assert client.get_partition_names(f"shop@{name}", "orders", -1) == [
                "ds=bad", "ds=d1"]
        diff = api.get("/diff", left=start, right=name).body
        assert diff["totals"]["partition"]["added"] == 1, diff
    finally:
        server.stop()


def test_on_lakefs_the_branches_carry_the_data(project):
    """``--hms-store lakefs://REPO``: the server over a real lakeFS repository, Spark writing
    through its S3 gateway; each test's branch is a lakeFS branch holding its own files, and
    the repository is left with main alone."""
    pytest.importorskip("lakefs_sdk")
    from kvmodel.store.lakefs import LakeFSStore
    from tests.support.lakefs import new_repository, real_lakefs

    real = real_lakefs()
    repo = new_repository("plugin")
    for key, value in real.env().items():
        project._monkeypatch.setenv(key, value)
    result = _run(project, "--hms-store", f"lakefs://{repo}", "-v")
    result.assert_outcomes(passed=10)
    store = LakeFSStore(repo, real.config())
    try:
        assert [b.name for b in store.list_branches()] == ["main"]
        assert store.list_tags() == []
    finally:
        store.close()
