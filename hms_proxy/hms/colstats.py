"""Column statistics written by clients (ANALYZE ... FOR COLUMNS, Trino, Spark's Hive client).

One key per column: table level under ``colstats/``, partition level under
``partstats/<partition>/``. The value is a ColumnStatistics struct (its descriptor and one
object) whose data is what HMS answers for the column: built from HMS's flat row model by the
column type first recorded (see :mod:`hms_proxy.hms.aggregate`).
"""
from __future__ import annotations

from hms_proxy.hms import aggregate, names
from hms_proxy.hms.family import Family, lower, now
from hms_proxy.hms.names import part_name as make_name
from hms_proxy.hms.tables import mark_columns_accurate
from hms_proxy.thrift import errors
from kvmodel import catalog as keys
from kvmodel import codec
from kvmodel.store.contract import prefix_end
from stats import serving


def _missing_table(db, tbl):
    return errors.NoSuchObject(f"Specified database/table does not exist : {db}.{tbl}")


class ColumnStatsCalls(Family):
    # computed statistics' pointers follow a renamed table
    CASCADES = {"table_renamed": serving.rename_pointers}

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
        with self.writing(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:
                raise _missing_table(db, tbl)
            columns = {c.name for c in (table.sd.cols or [])}
            part_keys = {k.name for k in table.partitionKeys or []}
            if table_level:
                prefix, part_name = keys.table_key(db, tbl) + "/colstats/", None
            else:
                part_name = self._partition_name(cat, table, desc.partName)
                if part_name is None:
                    raise errors.NoSuchObject("Partition for which stats is gathered doesn't exist.")
                prefix = keys.part_colstats_prefix(db, tbl, part_name)
            stamp = now()  # HMS stamps the update's time, whatever the client sent
            written = []
            for obj in stats.statsObj or []:
                col = lower(obj.colName)
                if col not in columns:
                    if not table_level and col in part_keys:
                        raise errors.InternalError(f"statistics of partition key {col}")
                    raise errors.MetaError(
                        f"Column {col} doesn't exist in table {tbl} in database {db}")
                self._write_one(cat, prefix + col, db, tbl, part_name, col, obj, stamp)
                written.append(col)
            self._mark_accurate(cat, table, part_name, written)
        return True

    def _write_one(self, cat, key, db, tbl, part_name, col, obj, stamp):
        """Merge into the column's row as HMS does: new fields win, the first type stays."""
        flat = aggregate.to_flat(obj.statsData) if obj.statsData else dict.fromkeys(aggregate.FIELDS)
        col_type = obj.colType
        old = cat.raw(key)
        if old is not None:
            previous = codec.decode(self.t.ColumnStatistics, old).statsObj[0]
            flat = aggregate.merge_flat(aggregate.to_flat(previous.statsData), flat)
            col_type = previous.colType
        desc = self.t.ColumnStatisticsDesc(isTblLevel=part_name is None, dbName=db, tableName=tbl,
                                           partName=part_name, lastAnalyzed=stamp)
        stored = self.t.ColumnStatisticsObj(colName=col, colType=col_type,
                                            statsData=aggregate.from_flat(col_type, flat, self.t))
        cat.put(key, self.t.ColumnStatistics(statsDesc=desc, statsObj=[stored]))

    def _partition_name(self, cat, table, part_name):
        """The canonical name of an existing partition, or None."""
        name = self._canonical_name(table, part_name)
        if name is None or cat.raw(keys.part_key(table.dbName, table.tableName, name)) is None:
            return None
        return name

    @staticmethod
    def _canonical_name(table, part_name):
        """The canonical name of a partition name of the table (None: not one of its)."""
        spec = names.part_name_to_spec(part_name or "")
        try:
            return make_name(table, [spec[k.name] for k in table.partitionKeys or []])
        except (KeyError, errors.HMSError):
            return None

    def _mark_accurate(self, cat, table, part_name, colnames):
        """HMS records which columns have statistics in COLUMN_STATS_ACCURATE."""
        if not colnames:
            return
        if part_name is None:
            entity, key = table, keys.table_key(table.dbName, table.tableName)
        else:
            key = keys.part_key(table.dbName, table.tableName, part_name)
            entity = codec.decode(self.t.Partition, cat.raw(key))
        entity.parameters = dict(entity.parameters or {})
        mark_columns_accurate(entity.parameters, colnames)
        cat.put(key, entity)

    # --- reads --------------------------------------------------------------------------
    def get_table_column_statistics(self, ctx, db_name, tbl_name, col_name):
        """HMS answers nothing at all (the client sees MISSING_RESULT) when there are none."""
        db, tbl, col = lower(db_name), lower(tbl_name), lower(col_name)
        with self.reading(ctx) as cat:
            if cat.raw(keys.table_key(db, tbl)) is None:
                raise _missing_table(db, tbl)
            data = cat.raw(keys.table_colstats_key(db, tbl, col))
            if data is None:  # none written by a client: a computed statistics set's
                return serving.column_statistics(self.env, self.t, cat, cat.table(db, tbl),
                                                 None, [col])
        return codec.decode(self.t.ColumnStatistics, data)

    def get_partition_column_statistics(self, ctx, db_name, tbl_name, part_name, col_name):
        db, tbl, col = lower(db_name), lower(tbl_name), lower(col_name)
        with self.reading(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:
                raise _missing_table(db, tbl)
            name = self._partition_name(cat, table, part_name)
            data = None if name is None else cat.raw(keys.part_colstats_prefix(db, tbl, name) + col)
            if data is None and name is not None:  # a computed statistics set's
                return serving.column_statistics(self.env, self.t, cat, table, name, [col])
        return None if data is None else codec.decode(self.t.ColumnStatistics, data)

    def get_table_statistics_req(self, ctx, request):
        db, tbl = lower(request.dbName), lower(request.tblName)
        wanted = [lower(c) for c in request.colNames or []]
        with self.reading(ctx) as cat:
            if cat.raw(keys.table_key(db, tbl)) is None:
                raise _missing_table(db, tbl)
            found = cat.view.get_many([keys.table_colstats_key(db, tbl, c) for c in wanted])
            objs = {c: codec.decode(self.t.ColumnStatistics, d).statsObj[0]
                    for c, d in zip(wanted, found) if d}
            missing = [c for c in wanted if c not in objs]
            if missing:  # columns no client wrote: a computed statistics set's
                objs.update(serving.served_objects(self.env, self.t, cat, cat.table(db, tbl),
                                                   None, missing)[0])
        return self.t.TableStatsResult(tableStats=[objs[c] for c in wanted if c in objs])

    def _partition_stats(self, cat, table, part_names, colnames):
        """[(position, canonical name, {column: ColumnStatisticsObj})] for the requested
        partitions that exist."""
        out = []
        for pos, pname in enumerate(part_names):
            name = self._partition_name(cat, table, pname)
            if name is None:
                continue
            prefix = keys.part_colstats_prefix(table.dbName, table.tableName, name)
            found = cat.view.get_many([prefix + c for c in colnames])
            objs = {c: codec.decode(self.t.ColumnStatistics, d).statsObj[0]
                    for c, d in zip(colnames, found) if d}
            missing = [c for c in colnames if c not in objs]
            if missing:  # columns no client wrote: a computed statistics set's
                objs.update(serving.served_objects(self.env, self.t, cat, table, name,
                                                   missing)[0])
                objs = {c: objs[c] for c in colnames if c in objs}
            out.append((pos, name, objs))
        return out

    def get_partitions_statistics_req(self, ctx, request):
        db, tbl = lower(request.dbName), lower(request.tblName)
        cols = [lower(c) for c in request.colNames or []]
        with self.reading(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:
                raise _missing_table(db, tbl)
            found = self._partition_stats(cat, table, request.partNames or [], cols)
        return self.t.PartitionsStatsResult(
            partStats={name: list(objs.values()) for _, name, objs in found if objs})

    def _partition_flats(self, cat, table, part_names, colnames):
        """[(position, canonical name, {column: (type, flat row)})]: :meth:`_partition_stats`
        as the flat rows HMS aggregates, read in batches (a request names every partition of
        a table): the partitions in one multi-get, client-written statistics only when the
        table has any, computed sets' rows flat from the cache."""
        db, tbl = table.dbName, table.tableName
        named = []
        for pos, pname in enumerate(part_names):
            name = self._canonical_name(table, pname)
            if name is not None:
                named.append((pos, name))
        present = cat.view.get_many([keys.part_key(db, tbl, name) for _, name in named])
        named = [item for item, value in zip(named, present) if value is not None]
        root = keys.part_colstats_root(db, tbl)
        written = cat.view.first(root, prefix_end(root))
        computed = serving.served_flats_many(self.env, self.t, cat, table,
                                             [name for _, name in named], colnames)
        out = []
        for (pos, name), flats in zip(named, computed):
            if written is not None:  # some client wrote partition statistics: theirs win
                prefix = keys.part_colstats_prefix(db, tbl, name)
                for c, d in zip(colnames, cat.view.get_many([prefix + c for c in colnames])):
                    if d:
                        obj = codec.decode(self.t.ColumnStatistics, d).statsObj[0]
                        flats[c] = (obj.colType, aggregate.to_flat(obj.statsData))
            out.append((pos, name, {c: flats[c] for c in colnames if c in flats}))
        return out

    def get_aggr_stats_for(self, ctx, request):
        db, tbl = lower(request.dbName), lower(request.tblName)
        cols = [lower(c) for c in request.colNames or []]
        part_names = list(request.partNames or [])
        if not cols or not part_names:
            return self.t.AggrStats(colStats=[], partsFound=0)
        with self.reading(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:
                raise _missing_table(db, tbl)
            found = self._partition_flats(cat, table, part_names, cols)
        # HMS numbers the requested partitions by their position in the request.
        positions = {name: i for i, name in enumerate(dict.fromkeys(part_names))}
        aggregated = []
        for col in cols:
            rows = [(positions.get(pname, pos), flats[col][1])
                    for pos, pname, flats in found if col in flats]
            if rows:
                col_type = next(flats[col][0] for _, _, flats in found if col in flats)
                aggregated.append(aggregate.aggregate(col, col_type, rows, len(part_names), self.t))
        parts_found = sum(1 for _, _, flats in found if len(flats) == len(cols))
        return self.t.AggrStats(colStats=aggregated, partsFound=parts_found)

    # --- delete -------------------------------------------------------------------------
    def delete_table_column_statistics(self, ctx, db_name, tbl_name, col_name, engine=None):
        db, tbl = lower(db_name), lower(tbl_name)
        with self.writing(ctx) as cat:
            if cat.raw(keys.table_key(db, tbl)) is None:
                raise errors.NoSuchObject(
                    f"Table {tbl}  for which stats deletion is requested doesn't exist")
            if col_name is None:
                cat.delete_prefix(keys.table_key(db, tbl) + "/colstats/")
                return True
            key = keys.table_colstats_key(db, tbl, lower(col_name))
            if cat.raw(key) is None:
                raise errors.NoSuchObject(
                    f"Column stats doesn't exist for db={db} table={tbl} col={lower(col_name)}")
            cat.delete(key)
        return True

    def delete_partition_column_statistics(self, ctx, db_name, tbl_name, part_name, col_name,
                                           engine=None):
        db, tbl = lower(db_name), lower(tbl_name)
        with self.writing(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:
                raise errors.NoSuchObject(
                    f"Table {tbl}  for which stats deletion is requested doesn't exist")
            name = self._partition_name(cat, table, part_name)
            if name is None:
                raise errors.NoSuchObject(
                    f"Partition {part_name} for which stats deletion is requested doesn't exist")
            prefix = keys.part_colstats_prefix(db, tbl, name)
            if col_name is None:
                cat.delete_prefix(prefix)
                return True
            key = prefix + lower(col_name)
            if cat.raw(key) is None:
                raise errors.NoSuchObject(
                    f"Column stats doesn't exist for db={db} table={tbl} partition={part_name} "
                    f"col={lower(col_name)}")
            cat.delete(key)
        return True
