"""A partition's statistics set (the four files of :mod:`stats.layout`), opened lazily: what
the table-level reduction (:mod:`stats.reduce`), the frequency consolidation
(:mod:`stats.frequencies`) and the lookups (:mod:`stats.query`) read."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hms_proxy.hms.warehouse import local_path
from stats import files, layout


def _read(path: str, columns=None) -> pa.Table:
    return pq.ParquetFile(files.open_input(path)).read(columns=columns, use_threads=False)


@dataclass
class PartitionSet:
    """One statistics set directory, read lazily (only the files and columns asked for)."""
    path: str
    partition: str | None = None
    _stats: pa.Table | None = field(default=None, repr=False)
    _sketches: dict | None = field(default=None, repr=False)
    _freq_groups: dict | None = field(default=None, repr=False)
    _rows: dict | None = field(default=None, repr=False)
    _hists: dict = field(default_factory=dict, repr=False)
    _top_only: frozenset | None = field(default=None, repr=False)

    @classmethod
    def of(cls, item) -> "PartitionSet":
        if isinstance(item, PartitionSet):
            return item
        path = (local_path(os.fspath(item)) or os.fspath(item))
        return cls(path, os.path.basename(os.path.dirname(path.rstrip("/"))))

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    @property
    def statistics(self) -> pa.Table:
        if self._stats is None:
            self._stats = _read(self.file(layout.STATISTICS))
        return self._stats

    def rows(self) -> dict[str, dict]:
        if self._rows is None:
            self._rows = {r["column"]: r for r in self.statistics.to_pylist()}
        return self._rows

    @property
    def sketches(self) -> dict[str, bytes]:
        if self._sketches is None:
            path = self.file(layout.SKETCHES)
            self._sketches = ({} if not files.exists(path) else
                              {r["column"]: r["hll"] for r in _read(path).to_pylist()})
        return self._sketches

    def load_histograms(self, columns) -> None:
        """Read these columns' histograms in one go (only those columns of the file)."""
        wanted = [c for c in columns if c not in self._hists]
        if not wanted:
            return
        path = self.file(layout.HISTOGRAMS)
        if not files.exists(path):
            self._hists.update(dict.fromkeys(wanted))
            return
        pf = pq.ParquetFile(files.open_input(path))
        present = [c for c in wanted if c in pf.schema_arrow.names]
        table = pf.read(columns=present, use_threads=False) if present else None
        for c in wanted:
            self._hists[c] = table.column(c) if c in present else None

    def histogram(self, column: str):
        """(lower, upper, count) numpy arrays of a column's bins (padding dropped), or None."""
        self.load_histograms([column])
        col = self._hists[column]
        if col is None:
            return None
        col = col.combine_chunks()
        col = col.filter(col.is_valid())
        if len(col) == 0:
            return None
        return (np.asarray(col.field("lower"), dtype=np.float64),
                np.asarray(col.field("upper"), dtype=np.float64),
                np.asarray(col.field("count").fill_null(0), dtype=np.int64))

    def _groups(self) -> dict[str, list[int]]:
        """Row groups of frequencies.parquet by column (a row group per column, per layout)."""
        if self._freq_groups is None:
            groups: dict[str, list[int]] = {}
            path = self.file(layout.FREQUENCIES)
            if files.exists(path):
                pf = pq.ParquetFile(files.open_input(path))
                for i in range(pf.metadata.num_row_groups):
                    st = pf.metadata.row_group(i).column(0).statistics
                    if st is not None and st.has_min_max and st.min == st.max:
                        groups.setdefault(st.min, []).append(i)
                    else:  # no usable statistics: read the column names of the group
                        names = pf.read_row_group(i, columns=["column"]).column(0)
                        for name in pc.unique(names).to_pylist():
                            groups.setdefault(name, []).append(i)
            self._freq_groups = groups
        return self._freq_groups

    def distinct_values(self, column: str) -> int:
        """Rows of a column in frequencies.parquet (its exact distinct count)."""
        groups = self._groups().get(column, [])
        if not groups:
            return 0
        meta = pq.ParquetFile(files.open_input(self.file(layout.FREQUENCIES))).metadata
        if all(self._pure(meta, i) for i in groups):
            return sum(meta.row_group(i).num_rows for i in groups)
        return len(self.frequencies(column))

    def top_only(self, column: str) -> bool:
        """Whether ``column`` lists only its most frequent values, having had more distinct
        values than :data:`layout.FREQUENCY_LIMIT` when the set was computed (the columns
        frequencies.parquet's schema metadata names; fewer rows than its distinct count in
        another column: a damaged set, which the table level refuses)."""
        if self._top_only is None:
            path = self.file(layout.FREQUENCIES)
            meta = {} if not files.exists(path) else \
                (pq.read_schema(files.open_input(path)).metadata or {})
            self._top_only = frozenset(json.loads(meta.get(layout.TOP_ONLY.encode(), b"[]")))
        return column in self._top_only

    @staticmethod
    def _pure(meta, i) -> bool:
        st = meta.row_group(i).column(0).statistics
        return st is not None and st.has_min_max and st.min == st.max

    def frequencies(self, column: str) -> pa.Table:
        """(value, frequency) of one column, in the file's order."""
        groups = self._groups().get(column, [])
        schema = pa.schema([("value", pa.string()), ("frequency", pa.int64())])
        if not groups:
            return schema.empty_table()
        pf = pq.ParquetFile(files.open_input(self.file(layout.FREQUENCIES)))
        t = pf.read_row_groups(groups, columns=["column", "value", "frequency"])
        t = t.filter(pc.equal(t["column"], column))
        return pa.table({"value": t["value"], "frequency": t["frequency"]}, schema=schema)


def open_sets(sets) -> list[PartitionSet]:
    return [PartitionSet.of(s) for s in sets]
