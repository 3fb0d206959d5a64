"""``hms-proxy import``: a stock HMS filled by Spark SQL, copied into a branch as one commit.

The imported branch, served by our server, answers what the upstream answers; a re-run
commits nothing when nothing changed upstream, and exactly the difference when something did.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hms_proxy.hms.importer import open_client
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from hms_proxy.tools.metastores import free_port, start_proxy
from kvmodel.store import open_store
from tests.support import upstream as U
from tests.support.process import REPO_ROOT

pytestmark = pytest.mark.timeout(600)


def hms_proxy(*args, check=None):
    """Run ``hms-proxy ARGS``; returns the CompletedProcess (stdout/stderr as text)."""
    proc = subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)
    if check is not None:
        assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def import_(store, uri, *extra, check=0):
    return hms_proxy("import", "--from", uri, "--store", str(store), *extra, check=check)


def log(store, ref="main"):
    s = open_store(str(store))
    try:
        return list(s.log(ref))
    finally:
        s.close()


def commit_diff(store, ref="main"):
    """{key: kind} of what the head commit of ``ref`` changed against its parent."""
    s = open_store(str(store))
    try:
        head = s.get_commit(s.resolve(ref).commit)
        return {e.key: e.kind for e in s.diff(head.parents[0], head.id)}
    finally:
        s.close()


def answer(client, name, *args):
    """A call's answer, or its exception's class and message (both sides may refuse)."""
    try:
        return getattr(client, name)(*args)
    except Exception as exc:  # noqa: BLE001
        return (type(exc).__name__, getattr(exc, "message", None) or str(exc))


def sort_stats(result):
    """get_partitions_statistics_req's lists, by column (their order is not specified)."""
    if isinstance(result, T.PartitionsStatsResult):
        return {k: sorted(v, key=lambda o: o.colName) for k, v in result.partStats.items()}
    return result


def compare_served(up, me, dbs):
    """Every read the import promises to reproduce, on both sides; returns the differences."""
    diffs = []

    def same(name, *args, fix=lambda r: r):
        a, b = fix(answer(up, name, *args)), fix(answer(me, name, *args))
        if a != b:
            diffs.append((name, args, a, b))
        return a

    for db in dbs:
        same("get_database", db)
        same("get_functions", db, "*")
        for fn in up.get_functions(db, "*"):
            same("get_function", db, fn)
        for tbl in same("get_all_tables", db):
            table = same("get_table", db, tbl)
            cols = [c.name for c in table.sd.cols]
            same("get_table_objects_by_name", db, [tbl])
            same("get_table_statistics_req", T.TableStatsRequest(db, tbl, cols))
            for col in cols:
                same("get_table_column_statistics", db, tbl, col)
            if not table.partitionKeys:
                continue
            names = same("get_partition_names", db, tbl, -1)
            same("get_partitions", db, tbl, -1)
            same("get_partitions_by_names", db, tbl, names)
            same("get_partitions_statistics_req", T.PartitionsStatsRequest(db, tbl, cols, names),
                 fix=sort_stats)
            for name in names:
                same("get_partition_by_name", db, tbl, name)
                for col in cols:
                    same("get_partition_column_statistics", db, tbl, name, col)
    return diffs


@pytest.fixture(scope="module")
def imported(spark_filled_hms, tmp_path_factory):
    """The Spark-filled upstream imported whole into a fresh store (the CLI's output kept)."""
    store = tmp_path_factory.mktemp("import") / "store"
    first = import_(store, spark_filled_hms.uri, "--author", "importer", "-m", "first import")
    return store, first


@pytest.mark.oracle
@pytest.mark.spark
def test_import_serves_what_the_upstream_answers(spark_filled_hms, imported, tmp_path):
    store, first = imported
    assert first.stdout.startswith("[main ")
    assert "first import" in first.stdout
    assert "import:" in first.stderr  # progress, plain lines when stderr is not a terminal
    commits = log(store)
    assert commits[0].message == "first import" and commits[0].author == "importer"
    assert commits[0].metadata["import.source"] == spark_filled_hms.uri
    assert {U.DB, U.OTHER_DB} <= set(commits[0].metadata["import.databases"].split(","))
    changed = commit_diff(store)
    assert set(changed.values()) == {"added"}
    assert f"db/{U.DB}/fn/{U.FUNCTION}" in changed
    assert f"db/{U.DB}/table/{U.PARTITIONED}/part/region=a%3Db/ds=2024%2F01%2F02" in changed
    assert f"db/{U.DB}/table/{U.UNPARTITIONED}/colstats/v" in changed
    assert f"db/{U.DB}/table/{U.PARTITIONED}/partstats/region=eu west/ds=2024-01-01/name" \
        in changed

    # served from a tag: the server adds nothing to it (a branch would get no 'default' write
    # either, the import brought it, but a tag leaves no doubt)
    s = open_store(str(store))
    s.create_tag("imported", "main")
    s.close()
    proxy = start_proxy(tmp_path, "--ref", "imported", store=store, cwd=REPO_ROOT)
    try:
        with open_client(spark_filled_hms.uri) as up, open_client(proxy.uri) as me:
            assert sorted(me.get_all_databases()) == sorted(up.get_all_databases())
            assert compare_served(up, me, [U.DB, U.OTHER_DB]) == []
            assert me.get_all_functions() == up.get_all_functions()
    finally:
        proxy.stop()


@pytest.mark.oracle
@pytest.mark.spark
def test_a_rerun_with_nothing_changed_commits_nothing(spark_filled_hms, imported):
    store, _ = imported
    before = log(store)
    again = import_(store, spark_filled_hms.uri, check=0)
    assert again.stdout.startswith("nothing changed")
    assert log(store) == before


def _sd(location=None):
    return T.StorageDescriptor(
        cols=[T.FieldSchema("a", "int", None), T.FieldSchema("b", "string", "the b")],
        location=location, inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=T.SerDeInfo(None, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                              {"serialization.format": "1"}))


def _table(db, name, partitioned):
    return T.Table(tableName=name, dbName=db, owner="me", sd=_sd(),
                   partitionKeys=[T.FieldSchema("ds", "string", None)] if partitioned else [],
                   parameters={}, tableType="MANAGED_TABLE")


@pytest.fixture
def delta_db(spark_filled_hms):
    """A database of our own in the shared upstream (dropped afterwards)."""
    db = "imp_delta"
    with open_client(spark_filled_hms.uri) as up:
        up.create_database(T.Database(db, "changes", None, {"k": "v"}))
        up.create_table(_table(db, "facts", True))
        up.add_partitions([T.Partition(values=[d], dbName=db, tableName="facts", sd=_sd())
                           for d in ("2024-01-01", "2024-01-02", "2024-01-03")])
        up.create_table(_table(db, "dims", False))
        up.create_table(_table(db, "doomed", True))
        up.add_partition(T.Partition(values=["x"], dbName=db, tableName="doomed", sd=_sd()))
    yield db
    with open_client(spark_filled_hms.uri) as up:
        if db in up.get_all_databases():
            up.drop_database(db, True, True)


@pytest.mark.oracle
@pytest.mark.spark
def test_a_rerun_commits_exactly_what_changed_upstream(spark_filled_hms, delta_db, tmp_path):
    store = tmp_path / "store"
    uri = spark_filled_hms.uri
    import_(store, uri, "--databases", delta_db)
    with open_client(uri) as up:
        up.add_partition(T.Partition(values=["2024-01-04"], dbName=delta_db, tableName="facts",
                                     sd=_sd()))
        up.drop_partition(delta_db, "facts", ["2024-01-01"], False)
        dims = up.get_table(delta_db, "dims")
        dims.parameters["comment"] = "dimensions"
        up.alter_table(delta_db, "dims", dims)
        up.drop_table(delta_db, "doomed", False)
        up.update_partition_column_statistics(T.ColumnStatistics(
            T.ColumnStatisticsDesc(False, delta_db, "facts", "ds=2024-01-02", 1_700_000_123),
            [T.ColumnStatisticsObj("a", "int", T.ColumnStatisticsData(
                longStats=T.LongColumnStatsData(1, 9, 0, 3)))]))
    out = import_(store, uri, "--databases", delta_db)
    assert out.stdout.startswith("[main ")
    base = f"db/{delta_db}/table"
    changed = commit_diff(store)
    assert changed == {
        f"{base}/facts/part/ds=2024-01-04": "added",
        f"{base}/facts/part/ds=2024-01-01": "removed",
        # HMS records the statistics in the partition's COLUMN_STATS_ACCURATE
        f"{base}/facts/part/ds=2024-01-02": "changed",
        f"{base}/facts/partstats/ds=2024-01-02/a": "added",
        f"{base}/dims": "changed",
        f"{base}/doomed": "removed",
        f"{base}/doomed/part/ds=x": "removed",
    }
    assert len(log(store)) == 3  # created, first import, this one
    # the same, as `hms-proxy diff` tells it
    shown = hms_proxy("diff", "main~1", "main", "--store", str(store), "--json", check=0)
    report = json.loads(shown.stdout)
    kinds = {(c["kind"], "/".join(c["path"]), c["change"]) for c in report["changes"]}
    assert ("table", f"{delta_db}/doomed", "removed") in kinds
    assert ("table", f"{delta_db}/dims", "modified") in kinds
    # and the served statistics are the upstream's, lastAnalyzed included
    s = open_store(str(store))
    try:
        from kvmodel import codec

        stored = codec.decode(T.ColumnStatistics, s.get("main", f"{base}/facts/partstats/"
                                                                f"ds=2024-01-02/a"))
    finally:
        s.close()
    with open_client(uri) as up:
        assert stored == up.get_partition_column_statistics(delta_db, "facts", "ds=2024-01-02", "a")
    assert import_(store, uri, "--databases", delta_db).stdout.startswith("nothing changed")

    # a database gone upstream goes at the next unrestricted import that would have brought it
    with open_client(uri) as up:
        up.drop_database(delta_db, True, True)
    import_(store, uri)
    changed = commit_diff(store)
    assert changed[f"db/{delta_db}"] == "removed"
    assert all(v == "removed" for k, v in changed.items() if k.startswith(f"db/{delta_db}"))


@pytest.mark.oracle
@pytest.mark.spark
def test_the_databases_filter(spark_filled_hms, tmp_path):
    store = tmp_path / "store"
    import_(store, spark_filled_hms.uri, "--databases", U.OTHER_DB.upper(), "--json")
    s = open_store(str(store))
    try:
        with s.read("main") as view:
            dbs = {k.split("/")[1] for k, _ in view.scan("db/")}
    finally:
        s.close()
    assert dbs == {U.OTHER_DB}
    before = log(store)
    missing = import_(store, spark_filled_hms.uri, "--databases", f"{U.OTHER_DB},nope", check=2)
    assert "no database nope" in missing.stderr
    assert log(store) == before


def test_an_unreachable_upstream_leaves_the_branch_untouched(tmp_path):
    store = tmp_path / "store"
    s = open_store(str(store))
    s.close()
    before = log(store)
    out = import_(store, f"thrift://127.0.0.1:{free_port()}", check=2)
    assert out.stderr.startswith("hms-proxy: error: cannot reach the upstream metastore")
    assert log(store) == before
    bad = import_(store, "http://example.com:80", check=2)
    assert "thrift://HOST:PORT" in bad.stderr
    # a store the failed command would have created is not left behind
    import_(tmp_path / "new", f"thrift://127.0.0.1:{free_port()}", check=2)
    assert not (tmp_path / "new").exists()


@pytest.mark.oracle
@pytest.mark.spark
def test_a_branch_with_uncommitted_changes_is_refused(spark_filled_hms, tmp_path):
    store = tmp_path / "store"
    s = open_store(str(store))
    with s.write("main") as txn:
        txn.put("db/zz_local", b"x")
    s.close()
    out = import_(store, spark_filled_hms.uri, "--databases", U.OTHER_DB, check=2)
    assert "uncommitted changes" in out.stderr


def test_our_own_server_is_an_upstream_too(tmp_path):
    """No Java needed: hms-proxy serving one store is imported into another, and serves the
    same answers from it (partitions by the hundred, statistics, a function)."""
    source = start_proxy(tmp_path / "src", cwd=REPO_ROOT)
    try:
        with open_client(source.uri) as up:
            up.create_database(T.Database("ours", "ours", None, {"a": "b"}))
            up.create_table(_table("ours", "facts", True))
            up.add_partitions([T.Partition(values=[f"2024-01-{d:02d} {h}"], dbName="ours",
                                           tableName="facts", sd=_sd())
                               for d in range(1, 31) for h in range(10)])
            up.create_table(_table("ours", "dims", False))
            up.update_table_column_statistics(T.ColumnStatistics(
                T.ColumnStatisticsDesc(True, "ours", "dims", None, 1_700_000_000),
                [T.ColumnStatisticsObj("b", "string", T.ColumnStatisticsData(
                    stringStats=T.StringColumnStatsData(5, 2.5, 1, 4)))]))
            up.update_partition_column_statistics(T.ColumnStatistics(
                T.ColumnStatisticsDesc(False, "ours", "facts", "ds=2024-01-01 0", 1_700_000_001),
                [T.ColumnStatisticsObj("a", "int", T.ColumnStatisticsData(
                    longStats=T.LongColumnStatsData(1, 2, 0, 2)))]))
            up.create_function(T.Function("f", "ours", "x.F", "me", T.PrincipalType.USER, 0, 1,
                                          []))
        store = tmp_path / "store"
        out = import_(store, source.uri, "--databases", "ours", "--connections", "3")
        assert "partitions +300" in out.stdout
        s = open_store(str(store))
        s.create_tag("imported", "main")
        s.close()
        copy = start_proxy(tmp_path / "copy", "--ref", "imported", store=store, cwd=REPO_ROOT)
        try:
            with open_client(source.uri) as up, open_client(copy.uri) as me:
                assert compare_served(up, me, ["ours"]) == []
        finally:
            copy.stop()
        assert import_(store, source.uri, "--databases", "ours").stdout.startswith(
            "nothing changed")
    finally:
        source.stop()
