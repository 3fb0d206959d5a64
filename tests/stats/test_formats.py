"""Statistics of Iceberg and Delta tables (stats/compute/formats.py) computed with pyarrow
(stats/arrow_compute.py), no Spark: tables written by pyiceberg (HiveCatalog against our
server) and by deltalake (registered in our metastore as Spark registers a Delta table), then
``stats.compute.compute`` (the Python entry point, dispatching on the table's format) and the
sets checked against pyarrow/numpy over the same rows, and the pointers."""
from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest

from stats import arrow_compute, layout  # noqa: E402

pytestmark = pytest.mark.timeout(300)

DB = "fmt_stats"
CATS = ["a", "b", "c"]


def rows(seed: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    epoch = datetime.date(2024, 1, 1)
    return pa.table({
        "id": pa.array(np.arange(seed * 10_000, seed * 10_000 + n), pa.int64()),
        "cat": pa.array([CATS[i % 3] for i in rng.integers(0, 3, n)], pa.string()),
        "x": pa.array([None if i % 17 == 0 else float(v)
                       for i, v in enumerate(rng.normal(5.0, 2.0, n))], pa.float64()),
        "flag": pa.array(list(rng.random(n) < 0.4), pa.bool_()),
        "d": pa.array([epoch + datetime.timedelta(days=int(v)) for v in rng.integers(0, 60, n)],
                      pa.date32()),
    })


HIVE = [("id", "bigint"), ("cat", "string"), ("x", "double"), ("flag", "boolean"),
        ("d", "date")]


def read_set(path: str) -> dict:
    local = path[len("file:"):] if path.startswith("file:") else path
    while local.startswith("//"):
        local = local[1:]
    return {name: pq.read_table(f"{local}/{name}") for name in layout.FILES}


def check_set(path: str, data: pa.Table, columns=HIVE, bins=layout.DEFAULT_BINS):
    """A set's statistics and frequencies against pyarrow/numpy over ``data``."""
    files = read_set(path)
    stats = {r["column"]: r for r in files[layout.STATISTICS].to_pylist()}
    assert list(stats) == [n for n, _ in columns]
    for name, htype in columns:
        col, row = data.column(name), stats[name]
        valid = col.drop_null()
        assert row["type"] == htype
        assert (row["count"], row["null_count"]) == (len(col), col.null_count), name
        assert row["distinct_count"] == pc.count_distinct(valid).as_py() and row["distinct_exact"]
        assert row["min"] == arrow_compute.text(pc.min(valid).as_py(), htype)
        assert row["max"] == arrow_compute.text(pc.max(valid).as_py(), htype)
        if layout.is_numeric(htype):
            nums = arrow_compute.numbers(col)
            assert (row["min_value"], row["max_value"]) == (nums.min(), nums.max())
            assert row["mean"] == pytest.approx(nums.mean(), rel=1e-12)
            assert row["stddev"] == pytest.approx(nums.std(), rel=1e-10)
            assert row["p50"] == pytest.approx(np.percentile(nums, 50), abs=(nums.max() - nums.min()) / 50)
            hist = [h for h in files[layout.HISTOGRAMS].column(name).to_pylist() if h]
            assert sum(h["count"] for h in hist) == nums.size
            assert len(hist) in (1, bins)
        if layout.is_discrete(htype):
            freq = files[layout.FREQUENCIES].filter(
                pc.equal(files[layout.FREQUENCIES].column("column"), name))
            truth = {}
            for v in valid.to_pylist():
                key = arrow_compute.text(v, htype)
                truth[key] = truth.get(key, 0) + 1
            assert dict(zip(freq.column("value").to_pylist(),
                            freq.column("frequency").to_pylist())) == truth
            counts = freq.column("frequency").to_pylist()
            assert counts == sorted(counts, reverse=True)
    assert files[layout.SKETCHES].column("column").to_pylist() == [n for n, _ in columns]
    return stats


# --- arrow_compute -------------------------------------------------------------------------
def test_compute_set_types_and_edge_cases(tmp_path):
    ts = datetime.datetime(2024, 3, 1, 12, 30, 0, 250000)
    table = pa.table({
        "t": pa.array([ts, ts.replace(microsecond=0), None], pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-2.25"), None],
                        pa.decimal128(10, 2)),
        "f": pa.array([1.0, float("nan"), 3.0], pa.float64()),
        "same": pa.array([7, 7, 7], pa.int32()),
        "empty": pa.array([None, None, None], pa.float64()),
        "tags": pa.array([["x"], [], None], pa.list_(pa.string())),
        "s": pa.array(["bb", "a", "bb"], pa.string()),
    })
    cols = [("t", "timestamp"), ("dec", "decimal(10,2)"), ("f", "double"), ("same", "int"),
            ("empty", "double"), ("tags", "array<string>"), ("s", "string"),
            ("missing", "string")]
    out = arrow_compute.compute_set(table, cols, bins=4, exact_quantiles=True)
    assert out[layout.STATISTICS].schema == layout.STATISTICS_SCHEMA
    st = {r["column"]: r for r in out[layout.STATISTICS].to_pylist()}
    assert (st["t"]["min"], st["t"]["max"]) == ("2024-03-01 12:30:00", "2024-03-01 12:30:00.25")
    assert st["t"]["sum"] is None and st["t"]["min_value"] == ts.replace(
        microsecond=0, tzinfo=datetime.timezone.utc).timestamp() * 1e6
    assert (st["dec"]["min"], st["dec"]["max"], st["dec"]["sum"]) == ("-2.25", "1.50", -0.75)
    # NaN: a value (distinct) but no number
    assert st["f"]["distinct_count"] == 3 and st["f"]["mean"] == 2.0 and st["f"]["p50"] == 2.0
    assert st["same"]["min_value"] == st["same"]["max_value"] == 7.0
    assert st["empty"]["distinct_count"] == 0 and st["empty"]["mean"] is None
    assert st["tags"]["null_count"] == 1 and st["tags"]["distinct_count"] is None
    assert (st["s"]["avg_length"], st["s"]["max_length"]) == (5 / 3, 2)
    assert st["missing"]["null_count"] == 3
    hists = out[layout.HISTOGRAMS]
    assert hists.column_names == ["t", "dec", "f", "same", "empty"]
    assert [h for h in hists.column("same").to_pylist() if h] == [
        {"lower": 7.0, "upper": 7.0, "count": 3}]
    assert hists.column("empty").null_count == 4 and hists.num_rows == 4
    freq = out[layout.FREQUENCIES]
    assert [t.column("column")[0].as_py() for t in freq] == ["same", "s"]
    assert freq[1].to_pylist() == [{"column": "s", "value": "bb", "frequency": 2},
                                   {"column": "s", "value": "a", "frequency": 1}]
    assert out[layout.SKETCHES].column("column").to_pylist() == [
        "t", "dec", "f", "same", "empty", "s", "missing"]  # complex columns: no sketch
    # percentiles: always exact (the column is sorted anyway)
    big = pa.table({"v": pa.array(np.arange(10_000, dtype=np.float64))})
    approx = arrow_compute.compute_set(big, [("v", "double")])[layout.STATISTICS].to_pylist()[0]
    assert approx["percentiles_exact"] is True and approx["p50"] == 4999.5
    # written per layout: a row group per discrete column
    path = arrow_compute.write_set(out, f"file://{tmp_path}/tbl", "_")
    assert path.startswith(f"file://{tmp_path}/tbl/_stats/_/")
    assert pq.ParquetFile(f"{path[len('file://'):]}/{layout.FREQUENCIES}").num_row_groups == 2


def test_complex_columns_get_no_sketch_and_sets_write_sketches_for_the_rest():
    table = pa.table({"m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int32())),
                      "i": pa.array([1], pa.int32())})
    out = arrow_compute.compute_set(table, [("m", "map<string,int>"), ("i", "int")])
    assert out[layout.SKETCHES].column("column").to_pylist() == ["i"]


# --- a metastore -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def env(tmp_path_factory):
    import pyiceberg.catalog.hive  # noqa: F401

    from kvmodel.store import open_store
    from tests.support.proxy import start_proxy

    work = tmp_path_factory.mktemp("stats-formats")
    store_path = work / "store"
    warehouse = work / "warehouse"
    warehouse.mkdir()
    server = start_proxy(work / "server", store=store_path)
    store = open_store(str(store_path))
    try:
        yield {"uri": server.uri, "store": store, "store_path": str(store_path),
               "warehouse": warehouse}
    finally:
        store.close()
        server.stop()


def _compute(env, tbl, **kw):
    from stats import compute

    return compute.compute(None, env["uri"], env["store"], DB, tbl,
                           store_path=env["store_path"], **kw)


def _check_pointers(env, tbl, result, commit_before):
    fingerprint = layout.schema_fingerprint(HIVE)
    commit = result.recorded
    assert commit is not None and commit.parents == (commit_before,)
    whole = [] if list(result.sets) == ["_"] else ["_"]  # a partitioned one's whole table
    # an Iceberg table's statistics file is set on the table in the same commit
    table = [f"db/{DB}/table/{tbl}"] if result.statistics_file else []
    assert [e.key for e in env["store"].diff(commit_before, commit.id)] == sorted(
        [*table, *(layout.pointer_key(DB, tbl, p) for p in [*result.sets, *whole])])
    if whole:
        pointer = layout.read_pointer(env["store"].get("main", layout.pointer_key(DB, tbl, None)))
        assert pointer["set"] == result.table_level.set and "/_stats/_table_/" in pointer["set"]
        assert pointer["rows"] == sum(result.rows.values()) and pointer["schema"] == fingerprint
    else:
        assert result.table_level is None
    for part, path in result.sets.items():
        pointer = layout.read_pointer(env["store"].get("main", layout.pointer_key(DB, tbl, part)))
        assert pointer["set"] == path and pointer["commit"] == commit_before
        assert pointer["schema"] == fingerprint and pointer["rows"] == result.rows[part]


@pytest.fixture(scope="module")
def iceberg(env):
    from pyiceberg.catalog.hive import HiveCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import BooleanType, DateType, DoubleType, LongType, NestedField, StringType

    cat = HiveCatalog("hms", uri=env["uri"], warehouse=f"file://{env['warehouse']}")
    cat.create_namespace(DB, {"location": f"file://{env['warehouse']}/{DB}.db"})
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "cat", StringType(), required=False),
                    NestedField(3, "x", DoubleType(), required=False),
                    NestedField(4, "flag", BooleanType(), required=False),
                    NestedField(5, "d", DateType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000,
                                        transform=IdentityTransform(), name="cat"))
    parted = cat.create_table(f"{DB}.ice_parted", schema=schema, partition_spec=spec)
    flat = cat.create_table(f"{DB}.ice_flat", schema=schema)
    data = [rows(1, 3000), rows(2, 2000)]
    for t in data:
        parted.append(t)
        flat.append(t)
    return pa.concat_tables(data)


def test_iceberg_partitioned_table(env, iceberg):
    from stats.compute import formats

    assert formats.format_of(env["uri"], DB, "ice_parted") == formats.ICEBERG
    before = env["store"].commit("main", "iceberg tables", author="test").id
    result = _compute(env, "ice_parted", options=None)
    assert sorted(result.sets) == [f"cat={c}" for c in CATS]
    for c in CATS:
        part = iceberg.filter(pc.equal(iceberg.column("cat"), c))
        assert result.rows[f"cat={c}"] == part.num_rows
        assert f"/_stats/cat={c}/" in result.sets[f"cat={c}"]
        check_set(result.sets[f"cat={c}"], part)
    _check_pointers(env, "ice_parted", result, before)
    assert result.recorded.message == f"stats compute {DB}.ice_parted (3 partitions, iceberg)"
    pointer = layout.read_pointer(env["store"].get("main", layout.pointer_key(
        DB, "ice_parted", "cat=a")))
    assert "|snapshot=" in pointer["data"] and "|files=2|" in pointer["data"]
    # the whole table's set, reduced from the partitions': what the query API reads
    from stats import query

    ts = query.open_table(env["store"], f"{DB}.ice_parted")
    summary = {r["column"]: r for r in ts.summary().to_pylist()}
    assert summary["id"]["count"] == iceberg.num_rows
    assert summary["x"]["null_count"] == iceberg.column("x").null_count
    assert summary["cat"]["distinct_count"] == 3
    assert summary["x"]["mean"] == pytest.approx(arrow_compute.numbers(iceberg.column("x")).mean())


def test_iceberg_statistics_file_holds_theta_sketches_readers_read(env, iceberg):
    """The Puffin file stats compute sets on an Iceberg table: a theta blob per column (field
    id, current snapshot, ndv), sketches the DataSketches library reads back, the table's
    statistics for its current snapshot seen through the metastore, replaced on a rerun."""
    import datasketches
    from pyiceberg.catalog.hive import HiveCatalog
    from pyiceberg.table.puffin import PuffinFile

    result = _compute(env, "ice_parted")
    catalog = HiveCatalog("hms", uri=env["uri"])
    table = catalog.load_table(f"{DB}.ice_parted")
    snapshot = table.current_snapshot()
    [statistics] = table.metadata.statistics
    assert statistics.statistics_path == result.statistics_file
    assert statistics.snapshot_id == snapshot.snapshot_id
    with table.io.new_input(statistics.statistics_path).open() as f:
        data = f.read()
    assert len(data) == statistics.file_size_in_bytes
    puffin = PuffinFile(data)
    fields = {f.name: f.field_id for f in table.schema().fields}
    assert [b.fields for b in puffin.footer.blobs] == [[fields[n]] for n, _ in HIVE]
    for blob, described, (name, _) in zip(puffin.footer.blobs, statistics.blob_metadata, HIVE):
        exact = pc.count_distinct(iceberg.column(name).drop_null()).as_py()
        assert blob.type == described.type == "apache-datasketches-theta-v1"
        assert blob.snapshot_id == snapshot.snapshot_id
        assert blob.sequence_number == snapshot.sequence_number
        sketch = datasketches.compact_theta_sketch.deserialize(puffin.get_blob_payload(blob))
        # the estimate of the sketch (4096 nominal entries: exact below, id's 5000 estimated)
        assert described.properties == blob.properties == \
            {"ndv": str(int(sketch.get_estimate()))}, name
        assert sketch.get_estimate() == exact if exact <= 4096 else \
            sketch.get_estimate() == pytest.approx(exact, rel=0.05), name
    # the sketch hashes as the library does (Iceberg's form of a long and of a string: the
    # library's own update of an int and of a str)
    ids = datasketches.update_theta_sketch()
    for v in iceberg.column("id").to_pylist():
        ids.update(v)
    cats = datasketches.update_theta_sketch()
    for v in CATS:
        cats.update(v)
    payload = {b.fields[0]: puffin.get_blob_payload(b) for b in puffin.footer.blobs}
    assert payload[fields["cat"]] == cats.compact().serialize()
    ours = datasketches.compact_theta_sketch.deserialize(payload[fields["id"]])
    union = datasketches.theta_union()
    union.update(ours)
    union.update(ids)  # the same values hashed by the library: nothing new (else about 10000)
    assert union.get_result().get_estimate() == pytest.approx(ours.get_estimate(), rel=0.02)
    # a rerun replaces the file of the snapshot
    again = _compute(env, "ice_parted")
    table = catalog.load_table(f"{DB}.ice_parted")
    assert [s.statistics_path for s in table.metadata.statistics] == [again.statistics_file]
    assert again.recorded is not None and again.statistics_file != result.statistics_file


def test_iceberg_unpartitioned_exact_quantiles(env, iceberg):
    from stats import compute

    before = env["store"].resolve("main").commit
    result = _compute(env, "ice_flat", options=compute.Options(exact_quantiles=True, bins=20))
    assert list(result.sets) == ["_"] and result.rows["_"] == iceberg.num_rows
    stats = check_set(result.sets["_"], iceberg, bins=20)
    nums = arrow_compute.numbers(iceberg.column("x"))
    assert stats["x"]["percentiles_exact"] is True
    assert stats["x"]["p95"] == pytest.approx(np.percentile(nums, 95), rel=1e-12)
    _check_pointers(env, "ice_flat", result, before)
    with pytest.raises(compute.ComputeError, match="--partitions does not apply"):
        _compute(env, "ice_flat", partition_filter="cat = 'a'")


# --- Delta ---------------------------------------------------------------------------------------
def _register_delta(env, name: str, location: str):
    from hms_proxy.hms.importer import open_client
    from hms_proxy.thrift.gen.hive_metastore import ttypes

    sd = ttypes.StorageDescriptor(
        cols=[ttypes.FieldSchema("col", "array<string>", "from deserializer")],
        location=location,
        inputFormat="org.apache.hadoop.mapred.SequenceFileInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat",
        serdeInfo=ttypes.SerDeInfo(
            serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
            parameters={"path": location, "serialization.format": "1"}),
        parameters={}, bucketCols=[], sortCols=[], numBuckets=-1, compressed=False)
    table = ttypes.Table(tableName=name, dbName=DB, owner="test", sd=sd, partitionKeys=[],
                         tableType="EXTERNAL_TABLE",
                         parameters={"EXTERNAL": "TRUE", "spark.sql.sources.provider": "delta"})
    with open_client(env["uri"]) as client:
        client.create_table(table)


def test_delta_tables(env, iceberg):
    import deltalake

    from stats import compute
    from stats.compute import formats

    data = [rows(3, 2500), rows(4, 1500)]
    parted_loc = f"{env['warehouse']}/{DB}.db/delta_parted"
    flat_loc = f"{env['warehouse']}/{DB}.db/delta_flat"
    for t in data:
        deltalake.write_deltalake(parted_loc, t, partition_by=["cat"], mode="append")
        deltalake.write_deltalake(flat_loc, t, mode="append")
    _register_delta(env, "delta_parted", f"file://{parted_loc}")
    _register_delta(env, "delta_flat", flat_loc)
    assert formats.format_of(env["uri"], DB, "delta_parted") == formats.DELTA
    before = env["store"].commit("main", "delta tables", author="test").id
    union = pa.concat_tables(data)
    result = _compute(env, "delta_parted")
    assert sorted(result.sets) == [f"cat={c}" for c in CATS]
    for c in CATS:
        part = union.filter(pc.equal(union.column("cat"), c))
        assert result.rows[f"cat={c}"] == part.num_rows
        # the metastore's columns are Spark's placeholder: the data's columns are used
        check_set(result.sets[f"cat={c}"], part)
    _check_pointers(env, "delta_parted", result, before)
    pointer = layout.read_pointer(env["store"].get("main", layout.pointer_key(
        DB, "delta_parted", "cat=b")))
    assert "|version=1|files=2|" in pointer["data"]
    before = result.recorded.id
    flat = _compute(env, "delta_flat", options=compute.Options(bins=10))
    assert list(flat.sets) == ["_"] and flat.rows["_"] == union.num_rows
    check_set(flat.sets["_"], union, bins=10)
    _check_pointers(env, "delta_flat", flat, before)


def test_delta_without_deltalake_names_its_extra(env, iceberg, monkeypatch):
    """Without deltalake the computation stops before reading anything, and the command line
    turns the missing module into "pip install 'hms-proxy[delta]'" (tests/cli/
    test_optional_extras.py runs that line end to end)."""
    import importlib.util

    from hms_proxy import extras

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "deltalake" else real(name, *a))
    location = f"{env['warehouse']}/{DB}.db/delta_unread"  # registered, never read
    _register_delta(env, "delta_unread", location)
    with pytest.raises(ModuleNotFoundError) as info:
        _compute(env, "delta_unread")
    assert info.value.name == "deltalake"
    assert extras.install_hint(info.value.name, "stats").endswith(
        "pip install 'hms-proxy[delta]'")
def test_cli_computes_an_iceberg_table_without_spark(env, iceberg, capsys, monkeypatch):
    from hms_proxy import cli
    from stats import compute

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark started for an Iceberg table")

    monkeypatch.setattr(compute, "build_session", no_spark)
    # a clean branch: the statistics file and the pointers are one commit
    before = env["store"].commit("main", "the tables so far", author="test",
                                 allow_empty=True).id
    status = cli.main(["stats", "compute", f"{DB}.ice_parted", "--store", env["store_path"],
                       "--metastore", env["uri"], "--no-progress", "--bins", "10"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"stats compute {DB}.ice_parted (3 partitions, {iceberg.num_rows} rows)" in out
    assert "Iceberg statistics file (NDV sketches of the current snapshot): " in out
    assert env["store"].resolve("main").commit != before and not list(env["store"].staged("main"))
    pointer = layout.read_pointer(env["store"].get("main", layout.pointer_key(
        DB, "ice_parted", "cat=c")))
    assert pointer["commit"] == before
    part = iceberg.filter(pc.equal(iceberg.column("cat"), "c"))
    check_set(pointer["set"], part, bins=10)


def test_unreadable_delta_table_is_a_compute_error(env, iceberg, tmp_path):
    import deltalake  # noqa: F401

    from stats import compute

    _register_delta(env, "delta_gone", f"file://{tmp_path}/nothing-here")
    with pytest.raises(compute.ComputeError, match="cannot read delta table"):
        _compute(env, "delta_gone")
