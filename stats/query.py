"""Query computed statistics: a Python API and ``hms-proxy stats show``.

::

    from stats.query import open_table

    t = open_table("./metastore", "sales.orders", ref="main")   # or an open store
    t.partitions()                        # partition names that have a statistics set
    t.summary(["price", "qty"])           # pyarrow Table of statistics.parquet rows, table level
    t.summary(partition="ds=2024-01-01")  # every column of one partition
    t.top("country", 10)                  # (value, frequency), decreasing frequency
    t.histogram("price", 0, 100)          # (lower, upper, count) of the bins overlapping [0, 100]
    t.is_stale()                          # set computed for another schema, or marked stale

``open_table`` reads, in one snapshot of ``ref``, the table, its partition names and its
statistics pointers (one prefix scan of ``db/<db>/table/<tbl>/stats/``); every lookup after that
reads parquet files only. ``partition`` None is the table level: the ``_`` set of an
unpartitioned table; for a partitioned table its ``_table_`` set (:func:`stats.reduce.write_table_set`)
when its pointer exists, else a reduction on the fly over the partitions' sets
(:func:`stats.reduce.reduce_statistics` / :func:`~stats.reduce.reduce_histograms`; distinct counts
then come from the merged sketches, estimated, and top values from summing the partitions'
frequencies). A partition is named as Hive does (``ds=2024-01-01/country=fr``, values escaped)
or ``k=v,k2=v2`` with raw values. Column names are case-insensitive. Errors (no such table,
ref, partition, column, no statistics, a column without frequencies or histogram) raise
:class:`QueryError`.

**What each lookup reads** (every access is logged in ``TableStats.reads`` as :class:`Read`:
file, row groups, columns, rows decoded; ``tests/stats/test_query.py`` checks the row groups,
columns and bytes). Times measured on this machine (2 shared CPUs) for a 1,000-column table,
``open_table`` excluded (0.5 ms):

* ``summary(columns)`` of one set: the footer, then only the row groups holding the requested
  columns' rows. The file is in table order (:mod:`stats.layout`), so while the set is fresh
  (its schema fingerprint is the table's) a column's row is found from its position in the
  table and the row groups' row counts, without reading anything; otherwise the ``column``
  column alone is read first to find them. Rows are then filtered to the requested columns.
  With pyarrow's default layout (one row group up to 1M rows) this reads the whole file:
  10 columns of 1,000 in 1.0 ms; a filter pushdown on ``column`` (``read_table(filters=...)``)
  takes 1.6 ms, and smaller row groups make the file larger and the lookup slower (100 rows
  per group: 208 KB, 1.9 ms; 25: 342 KB, 2.1 ms), since names in table order give row-group
  statistics nothing to prune on. :func:`stats.layout.write_statistics` therefore keeps
  row groups of :data:`stats.layout.STATISTICS_ROW_GROUP` (1,024) rows: one group up to 1,024
  columns, and for wider tables only the groups of the requested columns are read.
  ``summary`` of 10 columns of 1,000 through the API: 1.3 ms.
* ``top(column, n)`` of one set: the footer, the ``column`` chunk statistics of the column's
  row group (a group per discrete column in table order, per layout: while the set is fresh
  the column's rank among the discrete columns names it; else every group's statistics are
  looked at), then ``value`` and ``frequency`` of that
  group only, streamed in batches of ``n`` rows and stopped after the first (unbuffered
  column-chunk reads are replaced by a 16 KB read buffer, so only the leading pages are
  fetched). How little that is depends on the writer: a top 10 of a 100,000-value column
  (0.9 MB) reads 1.29 MB with pyarrow's defaults and unbuffered reads, 0.85 MB buffered (the
  dictionary page holds every value and comes first), 245 KB without a dictionary for
  ``value`` (1 MB pages), 98 KB with 8 KB pages too (:func:`stats.layout.frequencies_writer`;
  64 KB of it is the footer read-ahead). 2.3 ms with 1,000 row groups (one per column).
* ``histogram(column, lo, hi)`` of one set: the footer, then the one struct column (its
  ``lower``, ``upper``, ``count`` leaves) of the row groups whose ``lower``/``upper`` statistics
  overlap [lo, hi]; bins outside the range are dropped after decoding (pyarrow has no
  row selection within a row group). 12-16 ms for 1,000 numeric columns, nearly all of it
  parsing the footer of 3,000 leaves (10 ms for the footer alone, whatever the reader: the
  layout's column per numeric column; pyarrow's ParquetFile would add 20 ms mapping nested
  paths in Python, so the low-level reader is used).
* Table level reduced on the fly: every partition set's requested rows of
  ``statistics.parquet`` as above, the sketches of those columns (``sketches.parquet``:
  its ``column`` column, then the row groups holding them; pyarrow's default layout is one
  group, so the whole ``hll`` column, 4 KB per table column: smaller groups would help wide
  tables), for percentiles and ``histogram`` the columns' histograms, for ``top``
  each set's row group of the column (whole: the sum needs every value).
"""
from __future__ import annotations

import datetime
import json
import math
import os
from dataclasses import dataclass, field

from hms_proxy.hms import names
from hms_proxy.hms.warehouse import local_path
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel.catalog import CatalogReader
from kvmodel.locations import open_catalog_store
from kvmodel.store.errors import InvalidRef, RefNotFound
from stats import files, layout, serving

FREQUENCY_FIELDS = ("value", "frequency")
READ_BUFFER = 16 << 10  # bytes per read when streaming a row group's pages


class QueryError(Exception):
    """A lookup that cannot be answered: no such table, ref, partition, column or statistics."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


@dataclass
class Read:
    """One parquet access of a lookup."""
    file: str
    row_groups: list[int] | None  # None: the whole file
    columns: list[str] | None  # None: every column
    rows: int  # rows decoded


# --- opening -----------------------------------------------------------------------------------
def open_table(store_or_path, name: str, ref: str = "main") -> "TableStats":
    """The statistics of table ``name`` (``db.table``) at ``ref`` of a store (an open
    :class:`kvmodel.store.contract.VersionedStore` or the path of one)."""

    db, sep, tbl = (name or "").partition(".")
    if not sep or not db or not tbl or "." in tbl:
        raise QueryError(f"expected DB.TABLE, got {name!r}")
    db, tbl = db.lower(), tbl.lower()
    store, opened = store_or_path, False
    if isinstance(store_or_path, (str, os.PathLike)):
        path = os.fspath(store_or_path)
        if "://" not in path and not os.path.exists(os.path.join(path, "store.db")):
            raise QueryError(f"no store at {path}", 2)
        store, opened = open_catalog_store(path), True
    try:
        try:
            commit = store.resolve(ref).commit
            with store.read(ref) as view:
                reader = CatalogReader(view, ttypes)
                table = reader.table(db, tbl)
                if table is None:
                    raise QueryError(f"no table {db}.{tbl} at {ref}")
                parts = reader.partition_names(db, tbl) if table.partitionKeys else []
                root = layout.pointer_key(db, tbl, "x")[:-1]
                pointers = {}
                for key, value in view.scan_prefix(root):
                    try:
                        pointer = layout.read_pointer(value)
                    except ValueError:
                        continue
                    if isinstance(pointer, dict) and pointer.get("set"):
                        pointer["set"] = files.at_ref(pointer["set"], view)
                        pointers[key[len(root):]] = pointer
        except (RefNotFound, InvalidRef) as exc:
            raise QueryError(f"no ref {ref!r} ({exc})") from None
    finally:
        if opened:
            store.close()
    return TableStats(db, tbl, ref, commit, table, parts, pointers)


# --- helpers -----------------------------------------------------------------------------------
def _source(path: str):
    """What :class:`pyarrow.parquet.ParquetFile` opens for one file of a set (tests wrap it
    to count bytes)."""
    return files.open_input(path)


def _parquet(path: str, **kw):
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(_source(path), **kw)
    except FileNotFoundError:
        raise QueryError(f"statistics file {path} is missing (expired?)") from None
    except OSError as exc:
        raise QueryError(f"statistics file {path} is not readable: {exc}") from None


def _group_starts(meta) -> list[int]:
    starts, at = [], 0
    for i in range(meta.num_row_groups):
        starts.append(at)
        at += meta.row_group(i).num_rows
    starts.append(at)
    return starts


def _group_of(starts: list[int], row: int) -> int:
    import bisect

    return bisect.bisect_right(starts, row) - 1


def as_number(text: str, hive_type: str) -> float:
    """A histogram bound: a number, or for date/timestamp columns an ISO date or time (days /
    microseconds since the epoch, the histograms' unit)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        pass
    kind = layout.base_type(hive_type)
    try:
        if kind == "date":
            day = datetime.datetime.fromisoformat(str(text)).date()
            return float((day - datetime.date(1970, 1, 1)).days)
        if kind == "timestamp":
            moment = datetime.datetime.fromisoformat(str(text))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=datetime.timezone.utc)
            return moment.timestamp() * 1_000_000
    except ValueError:
        pass
    raise QueryError(f"{text!r} is not a number" + (
        " nor an ISO date/time" if kind in ("date", "timestamp") else ""))


# --- the table's statistics --------------------------------------------------------------------
@dataclass
class TableStats:
    """A table's statistics pointers at one commit; lookups read the sets' parquet files."""
    db: str
    name: str
    ref: str
    commit: str | None
    table: object  # the Thrift Table
    partition_names: list[str]
    pointers: dict  # partition name (``_``, ``_table_``, ``k=v/...``) -> pointer dict
    reads: list[Read] = field(default_factory=list)

    def __post_init__(self):
        self._columns = [(c.name.lower(), c.type) for c in serving._columns(self.table)]
        self._types = dict(self._columns)
        self._position = {n: i for i, (n, _) in enumerate(self._columns)}
        self._fingerprint = layout.schema_fingerprint(self._columns)

    # --- naming ---------------------------------------------------------------------------------
    @property
    def qualified(self) -> str:
        return f"{self.db}.{self.name}"

    @property
    def partitioned(self) -> bool:
        return bool(self.table.partitionKeys)

    @property
    def columns(self) -> list[tuple[str, str]]:
        """(name, type) of the table's columns, in order."""
        return list(self._columns)

    def partitions(self) -> list[str]:
        """The partitions that have a statistics set, in the catalog's order (an unpartitioned
        table: ``["_"]`` when it has one)."""
        if not self.partitioned:
            return [layout.UNPARTITIONED] if layout.UNPARTITIONED in self.pointers else []
        return [p for p in self.partition_names if p in self.pointers]

    def partition_name(self, spec: str) -> str:
        """The catalog name of a partition given as ``k=v/k2=v2`` (Hive's name) or
        ``k=v,k2=v2`` (raw values); QueryError when the table has no such partition."""
        spec = (spec or "").strip()
        if not self.partitioned:
            if spec in (layout.UNPARTITIONED, ""):
                return layout.UNPARTITIONED
            raise QueryError(f"{self.qualified} is not partitioned (no partition {spec!r})")
        if spec in self.partition_names:
            return spec

        keys = [k.name.lower() for k in self.table.partitionKeys]
        if "," in spec or "/" not in spec:
            pairs = {}
            for item in spec.split(","):
                k, sep, v = item.partition("=")
                if sep:
                    pairs[k.strip().lower()] = v.strip()
        else:
            pairs = {k.lower(): v for k, v in names.part_name_to_spec(spec).items()}
        if set(pairs) == set(keys):
            name = names.make_part_name(keys, [pairs[k] for k in keys])
            if name in self.partition_names:
                return name
        raise QueryError(f"no partition {spec!r} in {self.qualified} at {self.ref} "
                         f"(keys: {', '.join(keys)})")

    def _column_list(self, columns) -> list[str]:
        known = self._types
        if columns is None:
            return list(known)
        if isinstance(columns, str):
            columns = [columns]
        out = []
        for c in columns:
            name = str(c).strip().lower()
            if name not in known:
                raise QueryError(f"no column {c!r} in {self.qualified}")
            if name not in out:
                out.append(name)
        return out

    def column_type(self, column: str) -> str:
        return self._types[self._column_list([column])[0]]

    # --- which set(s) --------------------------------------------------------------------------
    def pointer(self, partition: str | None = None) -> dict | None:
        """The pointer answering ``partition`` (None: the table level's own set, if any)."""
        if partition is None:
            key = layout.TABLE_LEVEL if self.partitioned else layout.UNPARTITIONED
            return self.pointers.get(key)
        return self.pointers.get(self.partition_name(partition))

    def _sets(self, partition: str | None) -> tuple[str | None, list[str]]:
        """(the one set answering, or None and the partition sets to reduce)."""
        if partition is not None:
            name = self.partition_name(partition)
            pointer = self.pointers.get(name)
            if pointer is None:
                raise QueryError(f"partition {name} of {self.qualified} has no statistics at "
                                 f"{self.ref} (hms-proxy stats compute)")
            return pointer["set"], []
        pointer = self.pointer(None)
        if pointer is not None:
            return pointer["set"], []
        sets = [self.pointers[p]["set"] for p in self.partitions()] if self.partitioned else []
        if not sets:
            raise QueryError(f"{self.qualified} has no statistics at {self.ref} "
                             "(hms-proxy stats compute)")
        return None, sets

    def holding(self, column: str, value: str) -> dict[str, int]:
        """``{partition: rows}`` of the partitions whose ``column`` holds ``value`` (Hive's
        text form), from the table-level set when it was written with per-partition
        distributions (``stats compute/reduce --distributions``)."""
        from stats import frequencies

        name = self._column_list([column])[0]
        if not layout.is_discrete(dict(self.columns)[name]):
            raise QueryError(f"{name} is not a discrete column: it has no frequencies")
        pointer = self.pointer(None)  # (an Iceberg/Delta table's whole-table set is its own)
        if pointer is None:
            raise QueryError(f"{self.qualified} has no table-level statistics set at {self.ref} "
                             "(hms-proxy stats reduce --distributions)")
        try:
            return frequencies.partitions_holding(pointer["set"], name, value)
        except ValueError as exc:
            raise QueryError(f"{exc} (hms-proxy stats reduce --distributions)") from None

    def source(self, partition: str | None = None) -> str:
        """Where ``partition``'s (None: the table level's) statistics come from."""
        one, sets = self._sets(partition)
        if one is not None:
            return one
        return f"reduced from {len(sets)} of {len(self.partition_names)} partitions' sets"

    def is_stale(self, partition: str | None = None) -> bool:
        """Whether the statistics answering ``partition`` may not describe the table as it is:
        a pointer a merge marked stale, or computed for other columns (schema fingerprint);
        at the table level reduced on the fly, also partitions without a set."""
        one, sets = self._sets(partition)
        if one is not None:
            return self.stale(self.pointer(partition))
        return (len(sets) < len(self.partition_names)
                or any(self.stale(self.pointers[p]) for p in self.partitions()))

    def stale(self, pointer: dict | None) -> bool:
        """:func:`stats.serving.is_stale`, with the table's fingerprint computed once."""
        return not pointer or bool(pointer.get("stale")) or \
            pointer.get("schema") != self._fingerprint

    def _fresh(self, set_path: str) -> bool:
        return any(p.get("set") == set_path and not self.stale(p)
                   for p in self.pointers.values())

    # --- summary -------------------------------------------------------------------------------
    def summary(self, columns=None, partition: str | None = None):
        """statistics.parquet rows (pyarrow Table, :data:`stats.layout.STATISTICS_SCHEMA` plus
        any ``udf_*`` columns) of ``columns`` (None: all, table order; else in that order)."""
        import pyarrow as pa

        wanted = self._column_list(columns)
        one, sets = self._sets(partition)
        if one is not None:
            return self._statistics(one, None if columns is None else wanted)
        from stats import reduce
        from stats.sets import PartitionSet

        parts = [PartitionSet(_localish(s), None, _stats=self._statistics(s, wanted))
                 for s in sets]
        for p, s in zip(parts, sets):
            p._sketches = self._sketches(s, wanted)
        try:
            out = reduce.reduce_statistics(parts, columns=set(wanted))
        except (ValueError, KeyError) as exc:
            raise QueryError(f"cannot reduce the partition sets of {self.qualified}: {exc}") \
                from None
        order = {n: i for i, n in enumerate(out.column("column").to_pylist())}
        return out.take(pa.array([order[c] for c in wanted if c in order], pa.int64()))

    def _statistics(self, set_path: str, wanted: list[str] | None):
        import pyarrow as pa
        import pyarrow.compute as pc

        file = set_path.rstrip("/") + "/" + layout.STATISTICS
        pf = _parquet(file)
        meta = pf.metadata
        if wanted is None:
            table = pf.read(use_threads=False)
            self.reads.append(Read(file, None, None, table.num_rows))
            return table
        starts = _group_starts(meta)
        groups = None
        if self._fresh(set_path):
            position = self._position
            groups = sorted({_group_of(starts, position[c]) for c in wanted
                             if position[c] < starts[-1]})
        table = None
        if groups is not None:
            table = pf.read_row_groups(groups, use_threads=False)
            self.reads.append(Read(file, groups, None, table.num_rows))
            names = set(pc.utf8_lower(table["column"]).to_pylist())
            if not set(wanted) <= names:
                table = None  # not where the table's order puts them: look them up
        if table is None:
            names = pf.read(columns=["column"], use_threads=False)["column"]
            self.reads.append(Read(file, None, ["column"], len(names)))
            lowered = [(n or "").lower() for n in names.to_pylist()]
            rows = [i for i, n in enumerate(lowered) if n in set(wanted)]
            groups = sorted({_group_of(starts, r) for r in rows})
            if not groups:
                table = pf.schema_arrow.empty_table()
            else:
                table = pf.read_row_groups(groups, use_threads=False)
                self.reads.append(Read(file, groups, None, table.num_rows))
        lowered = [(n or "").lower() for n in table["column"].to_pylist()]
        index = {}
        for i, n in enumerate(lowered):
            index.setdefault(n, i)
        missing = [c for c in wanted if c not in index]
        if missing:
            raise QueryError(f"the statistics set {set_path} has no row for column(s) "
                             f"{', '.join(missing)} (computed for another schema: recompute)")
        return table.take(pa.array([index[c] for c in wanted], pa.int64()))

    def _sketches(self, set_path: str, wanted: list[str]) -> dict:
        """{column: hll} of the wanted columns: the ``column`` column first, then only the row
        groups holding their rows (a set without sketches: {})."""
        import pyarrow as pa
        import pyarrow.compute as pc

        file = set_path.rstrip("/") + "/" + layout.SKETCHES
        try:
            pf = _parquet(file)
        except QueryError:
            return {}
        names = pf.read(columns=["column"], use_threads=False)["column"]
        self.reads.append(Read(file, None, ["column"], len(names)))
        starts = _group_starts(pf.metadata)
        lowered = pc.utf8_lower(names).to_pylist()
        groups = sorted({_group_of(starts, i) for i, n in enumerate(lowered) if n in wanted})
        if not groups:
            return {}
        table = pf.read_row_groups(groups, use_threads=False)
        self.reads.append(Read(file, groups, None, table.num_rows))
        table = table.filter(pc.is_in(pc.utf8_lower(table["column"]), pa.array(wanted)))
        return {r["column"]: r["hll"] for r in table.to_pylist()}

    # --- frequencies ---------------------------------------------------------------------------
    def top(self, column: str, n: int = 10, partition: str | None = None):
        """The ``n`` most frequent values of a discrete column: a pyarrow Table (value,
        frequency) by decreasing frequency, then value. Schema metadata ``duplicates_only`` is
        ``true`` when the set lists only values occurring more than once (a table-level set's
        Bloom-filter scenario: every other value occurs once)."""
        import pyarrow as pa

        name = self._column_list([column])[0]
        ctype = self.column_type(name)
        if not layout.is_discrete(ctype):
            raise QueryError(f"column {name} ({ctype}) has no frequencies: only discrete columns "
                             f"({', '.join(layout.DISCRETE_TYPES)}) do")
        if n is None or int(n) < 0:
            raise QueryError(f"--top must be a non-negative count, not {n!r}")
        n = int(n)
        one, sets = self._sets(partition)
        if one is not None:
            return self._top(one, name, n)
        import pyarrow.compute as pc

        pieces = [self._frequencies(s, name) for s in sets]
        t = pa.concat_tables(pieces) if pieces else _freq_schema().empty_table()
        t = t.group_by("value").aggregate([("frequency", "sum")]) \
            .rename_columns(["value", "frequency"])
        t = t.sort_by([("frequency", "descending"), ("value", "ascending")]).slice(0, n)
        return pa.table({"value": t["value"], "frequency": pc.cast(t["frequency"], pa.int64())},
                        schema=_freq_schema())

    def _column_groups(self, pf, file: str, name: str, set_path: str) -> tuple[list[int], bool]:
        """Row groups of ``name`` in frequencies.parquet, and whether they hold it alone. A row
        group per discrete column in table order (per layout): while the set is fresh the
        column's rank among the discrete columns names its group, checked against the group's
        ``column`` statistics; otherwise, or when the check fails, every group's statistics
        are looked at."""
        meta = pf.metadata

        def only(i):
            st = meta.row_group(i).column(0).statistics
            return st is not None and st.has_min_max and \
                str(st.min).lower() == name == str(st.max).lower()

        if self._fresh(set_path):
            rank = [c for c, t in self._columns if layout.is_discrete(t)].index(name)
            for i in (rank, *range(rank - 1, -1, -1)):  # a column without values has no group
                if i < meta.num_row_groups and only(i):
                    return [i], True
        groups, pure = [], True
        for i in range(meta.num_row_groups):
            st = meta.row_group(i).column(0).statistics
            if st is not None and st.has_min_max:
                if str(st.min).lower() == name and str(st.max).lower() == name:
                    groups.append(i)
                elif str(st.min).lower() <= name <= str(st.max).lower():
                    groups.append(i)
                    pure = False
            else:
                groups.append(i)
                pure = False
        return groups, pure

    def _top(self, set_path: str, name: str, n: int):
        import pyarrow as pa
        import pyarrow.compute as pc

        file = set_path.rstrip("/") + "/" + layout.FREQUENCIES
        pf = _parquet(file, buffer_size=READ_BUFFER, pre_buffer=False)
        groups, pure = self._column_groups(pf, file, name, set_path)
        meta = pf.schema_arrow.metadata or {}
        dup = json.loads(meta.get(b"duplicates_only", b"[]") or b"[]")
        schema = _freq_schema().with_metadata(
            {"duplicates_only": "true" if name in dup else "false"})
        batches, got, decoded = [], 0, 0
        if groups and n > 0:
            cols = list(FREQUENCY_FIELDS) if pure else ["column", *FREQUENCY_FIELDS]
            for batch in pf.iter_batches(batch_size=n, row_groups=groups, columns=cols,
                                         use_threads=False):
                decoded += batch.num_rows
                if not pure:
                    batch = batch.filter(pc.equal(pc.utf8_lower(batch.column("column")), name))
                    batch = pa.record_batch([batch.column("value"), batch.column("frequency")],
                                            names=list(FREQUENCY_FIELDS))
                batches.append(batch)
                got += batch.num_rows
                if got >= n:
                    break
            self.reads.append(Read(file, groups, cols, decoded))
        if not batches:
            return schema.empty_table()
        t = pa.Table.from_batches(batches).slice(0, n)
        return pa.table([t["value"], t["frequency"]], schema=schema)

    def _frequencies(self, set_path: str, name: str):
        """Every (value, frequency) of a column in one set (its row groups only)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        file = set_path.rstrip("/") + "/" + layout.FREQUENCIES
        pf = _parquet(file)
        groups, pure = self._column_groups(pf, file, name, set_path)
        if not groups:
            return _freq_schema().empty_table()
        cols = list(FREQUENCY_FIELDS) if pure else ["column", *FREQUENCY_FIELDS]
        t = pf.read_row_groups(groups, columns=cols, use_threads=False)
        self.reads.append(Read(file, groups, cols, t.num_rows))
        if not pure:
            t = t.filter(pc.equal(pc.utf8_lower(t["column"]), name))
        return pa.table([t["value"], t["frequency"]], schema=_freq_schema())

    # --- histograms ----------------------------------------------------------------------------
    def histogram(self, column: str, lo=None, hi=None, partition: str | None = None):
        """The bins of a numeric/date/timestamp column overlapping [lo, hi] (None: unbounded):
        a pyarrow Table (lower, upper, count) by increasing lower bound. Dates are in days and
        timestamps in microseconds since the epoch (``lo``/``hi`` may be ISO strings)."""
        import pyarrow as pa

        name = self._column_list([column])[0]
        ctype = self.column_type(name)
        if not layout.is_numeric(ctype):
            raise QueryError(f"column {name} ({ctype}) has no histogram: only numeric, date and "
                             "timestamp columns do")
        lo = None if lo is None else as_number(lo, ctype)
        hi = None if hi is None else as_number(hi, ctype)
        if lo is not None and hi is not None and lo > hi:
            raise QueryError(f"empty range {lo:g}:{hi:g} (LO > HI)")
        one, sets = self._sets(partition)
        if one is not None:
            return self._histogram(one, name, lo, hi)
        from stats import reduce
        from stats.sets import PartitionSet

        parts = [PartitionSet(_localish(s), None, _stats=self._statistics(s, [name]))
                 for s in sets]
        for p in parts:
            p.load_histograms([name])
            self.reads.append(Read(p.file(layout.HISTOGRAMS), None, [name],
                                   0 if p._hists.get(name) is None else len(p._hists[name])))
        bins = max((len(h[0]) for h in (p.histogram(name) for p in parts) if h is not None),
                   default=0)
        hists = reduce.reduce_histograms(parts, max(bins, 1), columns={name}) if bins else {}
        if name not in hists:
            return _bin_schema().empty_table()
        edges, counts = hists[name]
        t = pa.table({"lower": edges[:-1], "upper": edges[1:], "count": counts},
                     schema=_bin_schema())
        return _in_range(t, lo, hi)

    def _histogram(self, set_path: str, name: str, lo, hi):
        """The bins of one set overlapping [lo, hi]: pyarrow's low-level reader, so that only
        the footer is parsed (ParquetFile maps every nested column of a wide file in Python),
        then the column's three leaves of the row groups whose statistics overlap."""
        import pyarrow as pa
        from pyarrow._parquet import ParquetReader

        file = set_path.rstrip("/") + "/" + layout.HISTOGRAMS
        reader = ParquetReader()
        try:
            reader.open(_source(file), use_memory_map=False)
        except FileNotFoundError:
            raise QueryError(f"statistics file {file} is missing (expired?)") from None
        except OSError as exc:
            raise QueryError(f"statistics file {file} is not readable: {exc}") from None
        meta = reader.metadata
        real = name
        try:
            leaves = {f: reader.column_name_idx(f"{real}.{f}") for f in ("lower", "upper", "count")}
        except KeyError:
            by_lower = {f.name.lower(): f.name for f in reader.schema_arrow}
            if name not in by_lower:
                raise QueryError(f"the statistics set {set_path} has no histogram of {name}") \
                    from None
            real = by_lower[name]
            leaves = {f: reader.column_name_idx(f"{real}.{f}") for f in ("lower", "upper", "count")}
        groups = []
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            low, up = rg.column(leaves["lower"]).statistics, rg.column(leaves["upper"]).statistics
            if hi is not None and low is not None and low.has_min_max and low.min > hi:
                continue
            if lo is not None and up is not None and up.has_min_max and up.max < lo:
                continue
            groups.append(i)
        if not groups:
            return _bin_schema().empty_table()
        t = reader.read_row_groups(groups, column_indices=sorted(leaves.values()),
                                   use_threads=False)
        col = t.column(0)
        self.reads.append(Read(file, groups, [real], len(col)))
        col = col.combine_chunks()
        col = col.filter(col.is_valid())
        t = pa.table({"lower": col.field("lower"), "upper": col.field("upper"),
                      "count": col.field("count")}, schema=_bin_schema())
        return _in_range(t, lo, hi)


def _localish(set_path: str) -> str:

    return local_path(set_path) or set_path


def _freq_schema():
    import pyarrow as pa

    return pa.schema([("value", pa.string()), ("frequency", pa.int64())])


def _bin_schema():
    import pyarrow as pa

    return pa.schema([("lower", pa.float64()), ("upper", pa.float64()), ("count", pa.int64())])


def _in_range(t, lo, hi):
    import pyarrow.compute as pc

    if lo is not None:
        t = t.filter(pc.greater_equal(t["upper"], lo))
    if hi is not None:
        t = t.filter(pc.less_equal(t["lower"], hi))
    return t










def clean_value(value):
    """A statistics value as JSON holds it (non-finite floats: null; dates: ISO; bytes: hex)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return value


def result_rows(table) -> list[dict]:
    return [{k: clean_value(v) for k, v in row.items()} for row in table.to_pylist()]


__all__ = ["open_table", "TableStats", "QueryError", "Read", "result_rows", "as_number"]
