"""``stats compute`` for the table formats Spark's Hive path does not read: Iceberg and Delta.

A table registered in the metastore is

* **Iceberg** when its parameters say ``table_type=ICEBERG`` (pyiceberg's and Spark Iceberg's
  HiveCatalog): it is loaded with ``pyiceberg.catalog.hive.HiveCatalog`` pointed at the same
  server (``db@ref`` names, so any ref), its current snapshot planned, the data files grouped
  by Iceberg partition (spec and partition tuple; an unpartitioned spec is the partition
  ``_``) and each group read into Arrow by pyiceberg (deletes applied). A partition's name is
  pyiceberg's ``field=value/...`` path of it (e.g. ``ts_day=2024-01-01/cat=a``);
* **Delta** when ``spark.sql.sources.provider=delta`` (table or storage-descriptor serde
  parameters, as Spark registers it): read with the ``deltalake`` package (an optional
  dependency: without it the command says ``install deltalake``) from the serde's ``path`` or
  the table location, ``DeltaTable(location).to_pyarrow_dataset()``, a partition per value
  tuple of its partition columns (Hive's ``k=v/...`` name), ``_`` when unpartitioned.

Each partition's rows get a statistics set computed with pyarrow (:mod:`stats.arrow_compute`,
no Spark), written under ``<table location>/_stats/<partition>/<set id>/`` (a local directory, or
objects of lakeFS or S3: :func:`stats.files.write_set_files`),
and the pointers are recorded exactly as the Spark job records its own
(:func:`stats.compute.record_pointers`). Columns are the metastore's (``sd.cols``) when they
name the data's columns, else the data's own (Hive types from the Arrow types). The pointers'
data fingerprint is the snapshot (Iceberg) or version (Delta) with the files' count and size.
``--partitions`` does not apply to these tables (their partitions are not the metastore's).
A partitioned one's whole-table set is then reduced from its partitions' sets
(:func:`stats.reduce.write_table_set`, ``_stats/_table_/<id>/``, unless ``table_level`` is
false) and pointed to as the table's own (``.../stats/_``: the metastore sees an unpartitioned
table), recorded with the partitions' pointers.
"""
from __future__ import annotations

from hms_proxy import extras
from hms_proxy.hms.importer import ImportFailed, open_client
from hms_proxy.hms.names import make_part_name
from hms_proxy.hms.warehouse import local_path
from stats import layout
from stats.compute.model import ComputeError, ComputeResult, Options
from stats.compute.pointers import TableLevel, check_branch, record_pointers, table_dirty

ICEBERG = "iceberg"
DELTA = "delta"


def format_of_table(table) -> str | None:
    """ICEBERG, DELTA or None (a Hive table) for a Thrift ``Table``."""
    params = {k.lower(): (v or "") for k, v in (table.parameters or {}).items()}
    serde = {}
    if table.sd is not None and table.sd.serdeInfo is not None:
        serde = {k.lower(): (v or "") for k, v in (table.sd.serdeInfo.parameters or {}).items()}
    if params.get("table_type", "").upper() == "ICEBERG":
        return ICEBERG
    provider = params.get("spark.sql.sources.provider") or serde.get(
        "spark.sql.sources.provider", "")
    if provider.lower() == "delta":
        return DELTA
    return None


def format_of(uri: str, db: str, tbl: str, ref: str = "main") -> str | None:
    """The format of ``db.tbl`` at ``ref`` on the metastore at ``uri`` (None: a Hive table,
    or no such table: the Spark path reports that)."""

    try:
        with open_client(uri) as client:
            table = client.get_table(f"{db.lower()}@{ref}", tbl.lower())
    except ImportFailed:
        return None
    except Exception:  # noqa: BLE001 - NoSuchObjectException, MetaException: Spark's path says
        return None
    return format_of_table(table)


# --- Hive types of Arrow data --------------------------------------------------------------
def hive_type(t) -> str:
    """The Hive type of an Arrow type (what Spark/pyiceberg register for it)."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        return hive_type(t.value_type)
    simple = [(pa.types.is_boolean, "boolean"), (pa.types.is_int8, "tinyint"),
              (pa.types.is_int16, "smallint"), (pa.types.is_int32, "int"),
              (pa.types.is_int64, "bigint"), (pa.types.is_uint8, "smallint"),
              (pa.types.is_uint16, "int"), (pa.types.is_uint32, "bigint"),
              (pa.types.is_uint64, "bigint"), (pa.types.is_float32, "float"),
              (pa.types.is_float64, "double"), (pa.types.is_date, "date"),
              (pa.types.is_timestamp, "timestamp"), (pa.types.is_string, "string"),
              (pa.types.is_large_string, "string"), (pa.types.is_binary, "binary"),
              (pa.types.is_large_binary, "binary"), (pa.types.is_fixed_size_binary, "binary")]
    for test, name in simple:
        if test(t):
            return name
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_map(t):
        return f"map<{hive_type(t.key_type)},{hive_type(t.item_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return f"array<{hive_type(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{hive_type(f.type)}" for f in t) + ">"
    return "string"


def _columns(table, schema) -> list[tuple[str, str]]:
    """The metastore's columns when they are the data's, else the data's."""
    cols = [(c.name, c.type) for c in (table.sd.cols or [])] if table.sd is not None else []
    names = {n.lower() for n in schema.names}
    if cols and all(name.lower() in names for name, _ in cols):
        by_lower = {n.lower(): n for n in schema.names}
        return [(by_lower[name.lower()], htype) for name, htype in cols]
    return [(f.name, hive_type(f.type)) for f in schema]


# --- the formats -------------------------------------------------------------------------------
def _iceberg_partitions(uri: str, db: str, tbl: str, ref: str, metadata_location: str = "",
                        repository: str | None = None):
    """(arrow schema, [(partition name, read() -> pyarrow.Table, data fingerprint)], the NDV
    sketches to feed those rows to (:class:`stats.compute.puffin.NdvCollector`))."""
    from pyiceberg.catalog.hive import HiveCatalog
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow

    from stats import files
    from stats.compute.puffin import NdvCollector  # numpy, pyarrow: the stats extra

    gateway = files.lakefs_gateway(metadata_location)
    properties = {} if gateway is None else {  # read through lakeFS's S3 gateway
        "s3.endpoint": gateway["endpoint"], "s3.region": "us-east-1",
        "s3.access-key-id": gateway["access_key_id"],
        "s3.secret-access-key": gateway["secret_access_key"]}
    catalog = HiveCatalog("hms-proxy", uri=uri, **properties)
    itable = catalog.load_table((f"{db}@{ref}", tbl))
    snapshot = itable.current_snapshot()
    schema = itable.schema()
    groups: dict = {}
    if snapshot is not None:
        specs = itable.specs()
        for task in itable.scan().plan_files():
            spec = specs[task.file.spec_id]
            if spec.is_unpartitioned():
                name = layout.UNPARTITIONED
            else:
                name = spec.partition_to_path(task.file.partition, schema) or layout.UNPARTITIONED
            groups.setdefault(name, []).append(task)
    if not groups and itable.spec().is_unpartitioned():
        groups[layout.UNPARTITIONED] = []
    snap = snapshot.snapshot_id if snapshot is not None else None
    arrow_schema = schema_to_pyarrow(schema, include_field_ids=False)

    def reader(tasks):
        def read():
            if not tasks:
                return arrow_schema.empty_table()
            return ArrowScan(itable.metadata, itable.io, schema, AlwaysTrue()).to_table(tasks)
        return read

    out = []
    for name in sorted(groups):
        tasks = groups[name]
        size = sum(t.file.file_size_in_bytes for t in tasks)
        out.append((name, reader(tasks), f"{itable.metadata_location}|snapshot={snap}|"
                                         f"files={len(tasks)}|bytes={size}"))
    return arrow_schema, out, NdvCollector(itable, ref, repository)


def _delta_location(table) -> str:
    serde = {}
    if table.sd is not None and table.sd.serdeInfo is not None:
        serde = table.sd.serdeInfo.parameters or {}
    return serde.get("path") or (table.sd.location if table.sd is not None else "") or ""


def _delta_partitions(location: str):
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as pds
    from deltalake import DeltaTable  # missing: the CLI says "pip install 'hms-proxy[delta]'"

    from stats import files

    gateway = files.lakefs_gateway(location)
    options = None if gateway is None else {  # read through lakeFS's S3 gateway
        "AWS_ENDPOINT_URL": gateway["endpoint"], "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": gateway["access_key_id"],
        "AWS_SECRET_ACCESS_KEY": gateway["secret_access_key"],
        "AWS_ALLOW_HTTP": "true", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false"}
    dt = DeltaTable(location, storage_options=options)
    dataset = dt.to_pyarrow_dataset()
    schema = dataset.schema
    keys = list(dt.metadata().partition_columns or [])
    adds = dt.get_add_actions(flatten=True)
    adds = pa.table(adds) if not isinstance(adds, pa.Table) else adds
    version = dt.version()

    if not keys:
        size = int(pc.sum(adds.column("size_bytes")).as_py() or 0) if adds.num_rows else 0
        return schema, [(layout.UNPARTITIONED, dataset.to_table,
                         f"{location}|version={version}|files={adds.num_rows}|bytes={size}")], None
    out = []
    for values in sorted(dt.partitions(), key=lambda d: [str(d.get(k)) for k in keys]):
        expr = None
        for k in keys:
            v = values.get(k)
            term = pds.field(k).is_null() if v is None else \
                pds.field(k) == pa.scalar(v).cast(schema.field(k).type)
            expr = term if expr is None else expr & term
        name = make_part_name(keys, [values.get(k) for k in keys])
        mask = None
        for k in keys:
            col = adds.column(f"partition.{k}") if f"partition.{k}" in adds.column_names else None
            if col is None:
                continue
            v = values.get(k)
            term = pc.is_null(col) if v is None else pc.equal(
                col.cast(pa.string()) if not pa.types.is_string(col.type) else col, str(v))
            mask = term if mask is None else pc.and_(mask, term)
        part_adds = adds.filter(mask) if mask is not None else adds
        size = int(pc.sum(part_adds.column("size_bytes")).as_py() or 0)
        out.append((name, (lambda e=expr: dataset.to_table(filter=e)),
                    f"{location}|version={version}|files={part_adds.num_rows}|bytes={size}"))
    return schema, out, None


def _whole_table(location, result, partitioned, commit, fingerprint, bins, redis_url,
                 distributions=False):
    """The whole table's set of a partitioned Iceberg/Delta table, reduced from its partitions'
    sets (:func:`stats.reduce.write_table_set`, under ``_stats/_table_/``), pointed to as the
    table's own (``.../stats/_``): in the metastore the table is unpartitioned, so that is the
    set the statistics calls and the query API read for it."""
    from stats import reduce  # pyarrow, numpy: the stats extra
    from stats.sets import PartitionSet

    sets = [PartitionSet(local_path(result.sets[p]) or result.sets[p], p)
            for p in partitioned]
    path = reduce.write_table_set(location, sets, bins=bins, redis_url=redis_url,
                                  distributions=distributions)
    rows = sum(result.rows[p] for p in partitioned)
    pointer = (layout.pointer_key(result.table.split(".", 1)[0], result.table.split(".", 1)[1],
                                  None),
               layout.make_pointer(path, commit, fingerprint, rows,
                                   f"{location}|partitions={len(partitioned)}"))
    return TableLevel(pointer, path, list(partitioned), [], [], rows)


def compute_table(uri: str, store, db: str, tbl: str, *, ref: str = "main",
                  partition_filter: str | None = None, options=None,
                  store_path: str | None = None, progress=None, author: str = "",
                  table_level: bool = True, redis_url: str | None = None,
                  distributions: bool = False, **_):
    """``stats compute`` of an Iceberg or Delta table (see the module docstring); returns a
    :class:`stats.compute.ComputeResult`. Other keyword arguments of
    :func:`stats.compute.compute` are accepted and ignored."""
    import pyarrow  # noqa: F401 - a clear ImportError before anything is read

    from stats import arrow_compute, layout

    options = options or Options()
    db, tbl = db.lower(), tbl.lower()
    branch, commit = check_branch(store, ref)
    try:
        with open_client(uri) as client:
            table = client.get_table(f"{db}@{ref}", tbl)
    except ImportFailed as exc:
        raise ComputeError(str(exc).replace("upstream metastore", "metastore")) from None
    except Exception as exc:  # noqa: BLE001 - NoSuchObjectException, MetaException
        raise ComputeError(f"table {db}.{tbl} does not exist at ref {ref}: "
                           f"{getattr(exc, 'message', exc)}", 1) from None
    fmt = format_of_table(table)
    if fmt is None:
        raise ComputeError(f"{db}.{tbl} is neither an Iceberg nor a Delta table")
    if partition_filter:
        raise ComputeError(f"{db}.{tbl} is a{'n Iceberg' if fmt == ICEBERG else ' Delta'} "
                           "table: --partitions does not apply (its partitions are not the "
                           "metastore's)", 2)
    def unreadable(exc):
        text = (str(exc) or type(exc).__name__).strip().splitlines()[0]
        return ComputeError(f"cannot read {fmt} table {db}.{tbl}: {text}")

    if fmt == ICEBERG:
        location = (table.sd.location if table.sd is not None else None) or \
            (table.parameters or {}).get("location", "")
        metadata = (table.parameters or {}).get("metadata_location", "")
        repository = getattr(store, "repository", None)  # lakeFS: files on the ref's paths
        reader = lambda: _iceberg_partitions(uri, db, tbl, ref, metadata,  # noqa: E731
                                             repository)
    else:
        location = _delta_location(table)
        reader = lambda: _delta_partitions(location)  # noqa: E731
    if not location:
        raise ComputeError(f"{db}.{tbl} has no location")
    extras.require("pyiceberg" if fmt == ICEBERG else "deltalake")  # else one line, the extra
    try:
        schema, parts, ndv = reader()
    except ComputeError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyiceberg's, deltalake's, pyarrow's errors
        raise unreadable(exc) from exc
    if not parts:
        raise ComputeError(f"{db}.{tbl} has no data to compute statistics of", 1)
    columns = _columns(table, schema)
    fingerprint = layout.schema_fingerprint(columns)
    display = f"{db}.{tbl}"
    result = ComputeResult(display, ref, commit, {}, {})
    pointers = []
    if progress:
        progress(0, len(parts))
    for done, (name, read, data) in enumerate(parts, 1):
        try:
            rows = read()
        except Exception as exc:  # noqa: BLE001 - as above
            raise unreadable(exc) from exc
        if ndv is not None:
            ndv.add(rows)
        tables = arrow_compute.compute_set(rows, columns, bins=options.bins,
                                           exact_quantiles=options.exact_quantiles)
        path = arrow_compute.write_set(tables, location, name)
        result.sets[name], result.rows[name] = path, rows.num_rows
        pointers.append((layout.pointer_key(db, tbl, name),
                         layout.make_pointer(path, commit, fingerprint, rows.num_rows, data)))
        if progress:
            progress(done, len(parts))
    n = len(pointers)
    partitioned = [p for p in result.sets if p != layout.UNPARTITIONED]
    if partitioned and table_level:
        result.table_level = _whole_table(location, result, partitioned, commit, fingerprint,
                                          options.bins, redis_url, distributions)
        pointers.append(result.table_level.pointer)
    message = f"stats compute {display} ({n} partition{'' if n == 1 else 's'}, {fmt})"
    own = False
    if ndv is not None:  # the Puffin NDV file, set on the table through the metastore
        clean = not table_dirty(store, branch, db, tbl)
        try:
            result.statistics_file = ndv.commit()
        except Exception as exc:  # noqa: BLE001 - pyiceberg's CommitFailedException, IO errors
            raise ComputeError(f"cannot set the statistics file of {display}: "
                               f"{(str(exc) or type(exc).__name__).splitlines()[0]}") from exc
        own = clean and result.statistics_file is not None
    result.recorded = record_pointers(store, store_path, branch, db, tbl, pointers, message,
                                      author, own_change=own)
    return result


__all__ = ["ICEBERG", "DELTA", "format_of", "format_of_table", "compute_table", "hive_type"]
