"""Column statistics written by clients (ANALYZE ... FOR COLUMNS, Trino, Spark's Hive client).

Stored one key per column, table level under ``colstats/`` and partition level under
``partstats/<partition>/``, as ColumnStatistics structs (descriptor + one object).
"""
from __future__ import annotations

import json

from hms_proxy import errors, names
from hms_proxy.family import Family, lower
from hms_proxy.tables import COLUMN_STATS_ACCURATE
from kvmodel import catalog as keys
from kvmodel import codec


def _one(stats, obj, t):
    return t.ColumnStatistics(statsDesc=stats.statsDesc, statsObj=[obj])


class ColumnStatsCalls(Family):
    # --- update -------------------------------------------------------------------------
    def update_table_column_statistics(self, ctx, stats_obj):
        return self._update(ctx, stats_obj, table_level=True)

    def update_partition_column_statistics(self, ctx, stats_obj):
        return self._update(ctx, stats_obj, table_level=False)

    def set_aggr_stats_for(self, ctx, request):
        for stats in request.colStats or []:
            self._update(ctx, stats, table_level=bool(stats.statsDesc.isTblLevel))
        return True

    def _update(self, ctx, stats, table_level):
        if stats is None or stats.statsDesc is None:
            raise errors.InvalidObject("Column statistics descriptor is missing")
        desc = stats.statsDesc
        db, tbl = lower(desc.dbName), lower(desc.tableName)
        desc.dbName, desc.tableName = db, tbl
        with self.writing(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:
                raise errors.NoSuchObject(
                    f"Table {db}.{tbl} for which stats is gathered doesn't exist.")
            columns = {c.name: c for c in (table.sd.cols or [])}
            if table_level:
                prefix = f"db/{db}/table/{tbl}/colstats/"
                part_name = None
            else:
                part_name = self._existing_partition(cat, table, desc.partName)
                desc.partName = part_name
                prefix = keys.part_colstats_prefix(db, tbl, part_name)
            colnames = []
            for obj in stats.statsObj or []:
                col = lower(obj.colName)
                if col not in columns and not (not table_level and col in
                                               {k.name for k in table.partitionKeys or []}):
                    raise errors.NoSuchObject(
                        f"Column {col} for which stats gathering is requested doesn't exist.")
                obj.colName = col
                colnames.append(col)
                cat.put(prefix + col, _one(stats, obj, self.t))
            self._mark_accurate(cat, table, part_name, colnames)
        return True

    def _existing_partition(self, cat, table, part_name):
        from hms_proxy.partitions import part_name as make_name

        spec = names.part_name_to_spec(part_name or "")
        try:
            name = make_name(table, [spec[k.name] for k in table.partitionKeys or []])
        except KeyError:
            raise errors.InvalidObject(f"Invalid partition name {part_name}") from None
        if cat.raw(keys.part_key(table.dbName, table.tableName, name)) is None:
            raise errors.NoSuchObject(
                f"Partition for which stats is gathered doesn't exist: {part_name}")
        return name

    def _mark_accurate(self, cat, table, part_name, colnames):
        """HMS records which columns have statistics in COLUMN_STATS_ACCURATE."""
        if part_name is None:
            entity, key = table, keys.table_key(table.dbName, table.tableName)
        else:
            key = keys.part_key(table.dbName, table.tableName, part_name)
            entity = codec.decode(self.t.Partition, cat.raw(key))
        params = entity.parameters = dict(entity.parameters or {})
        try:
            state = json.loads(params.get(COLUMN_STATS_ACCURATE) or "{}")
        except ValueError:
            state = {}
        cols = state.setdefault("COLUMN_STATS", {})
        for c in colnames:
            cols[c] = "true"
        params[COLUMN_STATS_ACCURATE] = json.dumps(state, separators=(",", ":"))
        cat.put(key, entity)

    # --- reads --------------------------------------------------------------------------
    def get_table_column_statistics(self, ctx, db_name, tbl_name, col_name):
        db, tbl, col = lower(db_name), lower(tbl_name), lower(col_name)
        with self.reading(ctx) as cat:
            self.require_table(cat, db, tbl)
            data = cat.raw(keys.table_colstats_key(db, tbl, col))
        if data is None:
            raise errors.NoSuchObject(f"Specified database/table/column does not exist: {db}.{tbl}.{col}")
        return codec.decode(self.t.ColumnStatistics, data)

    def get_partition_column_statistics(self, ctx, db_name, tbl_name, part_name, col_name):
        db, tbl, col = lower(db_name), lower(tbl_name), lower(col_name)
        with self.reading(ctx) as cat:
            table = self.require_table(cat, db, tbl)
            name = self._existing_partition(cat, table, part_name)
            data = cat.raw(keys.part_colstats_prefix(db, tbl, name) + col)
        if data is None:
            raise errors.NoSuchObject(f"Specified database/table/partition/column does not exist: {db}.{tbl}.{part_name}.{col}")
        return codec.decode(self.t.ColumnStatistics, data)

    def get_table_statistics_req(self, ctx, request):
        db, tbl = lower(request.dbName), lower(request.tblName)
        wanted = [lower(c) for c in request.colNames or []]
        with self.reading(ctx) as cat:
            self.require_table(cat, db, tbl)
            found = cat.view.get_many([keys.table_colstats_key(db, tbl, c) for c in wanted])
        objs = [codec.decode(self.t.ColumnStatistics, d).statsObj[0] for d in found if d]
        return self.t.TableStatsResult(tableStats=objs)

    def _partition_stats(self, cat, table, part_names, colnames):
        """{partition name: [ColumnStatisticsObj]} for the partitions and columns asked."""
        out = {}
        for pname in part_names:
            try:
                name = self._existing_partition(cat, table, pname)
            except errors.HMSError:
                continue
            prefix = keys.part_colstats_prefix(table.dbName, table.tableName, name)
            found = cat.view.get_many([prefix + c for c in colnames])
            objs = [codec.decode(self.t.ColumnStatistics, d).statsObj[0] for d in found if d]
            if objs:
                out[pname] = objs
        return out

    def get_partitions_statistics_req(self, ctx, request):
        db, tbl = lower(request.dbName), lower(request.tblName)
        cols = [lower(c) for c in request.colNames or []]
        with self.reading(ctx) as cat:
            table = self.require_table(cat, db, tbl)
            found = self._partition_stats(cat, table, request.partNames or [], cols)
        return self.t.PartitionsStatsResult(partStats=found)

    def get_aggr_stats_for(self, ctx, request):
        from hms_proxy.aggregate import aggregate_column

        db, tbl = lower(request.dbName), lower(request.tblName)
        cols = [lower(c) for c in request.colNames or []]
        part_names = request.partNames or []
        with self.reading(ctx) as cat:
            table = self.require_table(cat, db, tbl)
            found = self._partition_stats(cat, table, part_names, cols)
        if not cols or not part_names:
            return self.t.AggrStats(colStats=[], partsFound=0)
        by_col: dict[str, list] = {}
        for objs in found.values():
            for obj in objs:
                by_col.setdefault(obj.colName, []).append(obj)
        aggregated = [aggregate_column(by_col[c], len(part_names), self.t)
                      for c in cols if c in by_col]
        parts_found = min((len(by_col[c]) for c in cols if c in by_col), default=0)
        return self.t.AggrStats(colStats=aggregated, partsFound=parts_found)

    # --- delete -------------------------------------------------------------------------
    def delete_table_column_statistics(self, ctx, db_name, tbl_name, col_name):
        db, tbl = lower(db_name), lower(tbl_name)
        with self.writing(ctx) as cat:
            self.require_table(cat, db, tbl)
            if col_name is None:
                cat.delete_prefix(f"db/{db}/table/{tbl}/colstats/")
                return True
            key = keys.table_colstats_key(db, tbl, lower(col_name))
            if cat.raw(key) is None:
                raise errors.NoSuchObject(f"Column stats doesn't exist for db={db} table={tbl} col={lower(col_name)}")
            cat.delete(key)
        return True

    def delete_partition_column_statistics(self, ctx, db_name, tbl_name, part_name, col_name):
        db, tbl = lower(db_name), lower(tbl_name)
        with self.writing(ctx) as cat:
            table = self.require_table(cat, db, tbl)
            name = self._existing_partition(cat, table, part_name)
            prefix = keys.part_colstats_prefix(db, tbl, name)
            if col_name is None:
                cat.delete_prefix(prefix)
                return True
            key = prefix + lower(col_name)
            if cat.raw(key) is None:
                raise errors.NoSuchObject(f"Column stats doesn't exist for db={db} table={tbl} partition={part_name} col={lower(col_name)}")
            cat.delete(key)
        return True
