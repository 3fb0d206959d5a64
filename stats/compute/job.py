"""The job: a table's selected partitions computed by the chosen engine, written and recorded."""
from __future__ import annotations

import time
from typing import Callable

from hms_proxy.hms.importer import ImportFailed, open_client
from stats.compute import engine, formats
from stats.compute.model import (
    ENGINES,
    ComputeError,
    ComputeResult,
    Options,
    TableInfo,
    describe_table,
    layout,
    log,
    registered_statistics,
)
from stats.compute.pointers import build_table_level, check_branch, record_pointers
from stats.compute.spark import PartitionResult, compute_partition, data_fingerprint, write_set


# --- the job -----------------------------------------------------------------------------------
def compute(spark, uri: str, store, db: str, tbl: str, *, ref: str = "main",
            partition_filter: str | None = None, options: Options | None = None,
            store_path: str | None = None, progress: Callable[[int, int], None] | None = None,
            author: str = "", table_level: bool = True,
            redis_url: str | None = None, distributions: bool = False) -> ComputeResult:
    """Compute and record the statistics of a table's selected partitions (see the module
    docstring). ``spark``: a session whose metastore is ``uri``; ``store``: the store that
    server serves (where the pointers go)."""

    options = options or Options()
    db, tbl = db.lower(), tbl.lower()
    if formats.format_of(uri, db, tbl, ref) is not None:  # Iceberg, Delta: read with pyarrow
        return formats.compute_table(uri, store, db, tbl, ref=ref, partition_filter=partition_filter,
                                     options=options, store_path=store_path, progress=progress,
                                     author=author, table_level=table_level, redis_url=redis_url,
                                     distributions=distributions)
    branch, commit = check_branch(store, ref)
    try:
        with open_client(uri) as client:
            info = describe_table(client, db, tbl, ref, partition_filter)
    except ImportFailed as exc:
        raise ComputeError(str(exc).replace("upstream metastore", "metastore")) from None
    if not info.partitions:
        raise ComputeError(f"no partition of {info.display} at ref {ref} matches "
                           f"{partition_filter!r}", 1)
    fingerprint = layout.schema_fingerprint(info.columns)
    result = ComputeResult(info.display, ref, commit, {}, {})
    pointers = []
    total = len(info.partitions)
    if progress:
        progress(0, total)
    started = time.monotonic()
    for done, pres in enumerate(_partition_results(spark, info, options), 1):
        part = pres.partition
        path = write_set(spark, info, pres)
        result.sets[part.name], result.rows[part.name] = path, pres.rows
        pointers.append((layout.pointer_key(db, tbl, part.name),
                         layout.make_pointer(path, commit, fingerprint, pres.rows,
                                             data_fingerprint(spark, part.location))))
        if progress:
            progress(done, total)
    log.debug("%s: %d sets computed and written in %.2fs (%s engine)", info.display, total,
              time.monotonic() - started, options.engine)
    n = len(pointers)
    message = f"stats compute {info.display} ({n} partition{'' if n == 1 else 's'})"
    if table_level and info.partition_keys:
        result.table_level = build_table_level(
            store, ref, db, tbl, dict((k.rsplit("/stats/", 1)[1], v) for k, v in pointers),
            bins=options.bins, redis_url=redis_url, commit=commit,
            distributions=distributions)
        if result.table_level.pointer is not None:
            pointers.append(result.table_level.pointer)
    result.recorded = record_pointers(store, store_path, branch, db, tbl, pointers, message,
                                      author)
    return result


def _partition_results(spark, info: TableInfo, options: Options):
    """Each selected partition's :class:`PartitionResult`, computed by the chosen engine."""
    stats = registered_statistics()
    if options.engine == "sql":
        for part in info.partitions:
            yield compute_partition(spark, info, part, options, stats)
        return
    if options.engine != "arrow":
        raise ComputeError(f"unknown engine {options.engine!r} (one of {', '.join(ENGINES)})")

    for index, rows, tables in engine.compute_sets(spark, info, options, stats):
        yield PartitionResult(info.partitions[index], rows, tables)
