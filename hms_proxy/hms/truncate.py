"""TRUNCATE TABLE as the stock HMS 3.1/4.x serves it to Hive's own client (``truncate_table``,
and Hive 4's ``truncate_table_req``). Spark and Trino delete a table's files themselves; Hive
asks the metastore.

What the stock does (its ``truncateTableInternal``), and so we do:

* the directories emptied: an unpartitioned table's own, or those of its partitions (the ones
  ``partNames`` names, names that match none being passed over, or all of them); each is
  deleted and made again, empty. A partitioned table's own directory is left alone;
* then the statistics of what was emptied are those of an empty table: each of ``numFiles``,
  ``numRows``, ``totalSize``, ``rawDataSize`` present reads ``0``, the basic statistics are
  marked accurate and the columns' marks go (``COLUMN_STATS_ACCURATE`` is
  ``{"BASIC_STATS":"true"}``), written as an alter with ``STATS_GENERATED=TASK`` so that the
  files of a partition are counted again (none), and those of an unpartitioned table too for a
  Hive 3.1 client (a Hive 4 one's table keeps the zeros, and no count where it had none, as
  the stock 4.0.1 leaves it). A partitioned table's own parameters are left.

The statistics of every emptied table or partition change in one write of the store (one log
entry on lakeFS, one commit with ``serve --autocommit``). The files go first, as the stock
deletes them before it alters: a truncate that fails on its alter has still emptied the
directories, as the stock's would have. Hive 4's ``environmentContext`` property
``truncateSkipDataDeletion=true`` keeps the files (Hive asks it for tables whose data it
manages otherwise, Iceberg's); the statistics change all the same.
"""
from __future__ import annotations

import json

from hms_proxy.hms import names, warehouse
from hms_proxy.hms.family import Family, lower
from hms_proxy.hms.partitions import PartitionCalls
from hms_proxy.hms.tables import TableCalls
from hms_proxy.thrift import dialect, errors
from kvmodel import catalog as keys
from kvmodel import codec
from kvmodel.store.errors import ReadOnlyRef

# the statistics HMS sets to 0 on a truncate (StatsSetupConst.SUPPORTED_STATS)
_ZEROED = ("numFiles", "numRows", "totalSize", "rawDataSize")
_SKIP_DATA = "truncateSkipDataDeletion"


def emptied_parameters(params: dict | None) -> dict:
    """A table's or partition's parameters after a truncate, before its files are counted
    again: the statistics it had read 0, the basic ones are accurate, the columns' are not."""
    out = dict(params or {})
    for stat in _ZEROED:
        if stat in out:
            out[stat] = "0"
    out["COLUMN_STATS_ACCURATE"] = json.dumps({"BASIC_STATS": "true"}, separators=(",", ":"))
    return out


class TruncateCalls(Family):
    def __init__(self, env):
        super().__init__(env)
        self.tables = TableCalls(env)
        self.partitions = PartitionCalls(env)

    def truncate_table(self, ctx, dbName, tableName, partNames):
        self._truncate(ctx, dbName, tableName, partNames, None)

    def truncate_table_req(self, ctx, req):
        if req is None:
            raise errors.MetaError("TruncateTableRequest is null")
        self._truncate(ctx, req.dbName, req.tableName, req.partNames, req.environmentContext)
        return self.t.TruncateTableResponse()

    def _truncate(self, ctx, db_name, tbl_name, part_names, env_context) -> None:
        if db_name is None or tbl_name is None:
            raise errors.MetaError(  # the stock parses the names first
                names.NPE_IDENTIFIER)
        db, tbl = lower(db_name), lower(tbl_name)
        ref = self.ref_of(ctx)
        # refused before a file goes: a protected branch, a tag or a commit, a read-only caller
        self._check_writable(ctx, ref)
        if self.env.store.get_branch(ref) is None:
            raise ReadOnlyRef(f"{ref!r} is not a branch; only branches can be written")
        with self.reading(ctx) as cat:
            table = cat.table(db, tbl)
            if table is None:  # the stock's NoSuchObjectException, which it does not declare
                raise errors.InternalError(f"{db}.{tbl} table not found")
            parts = self._emptied_partitions(cat, table, part_names)
        skip = str(((getattr(env_context, "properties", None) or {}).get(_SKIP_DATA)
                    or "")).lower() == "true"
        locations = [p.sd.location for p in parts if p.sd is not None] \
            if table.partitionKeys else [table.sd.location if table.sd else None]
        if not skip:
            for location in locations:
                if location:
                    warehouse.delete(location)
                    warehouse.mkdirs(location)
        task = self.t.EnvironmentContext(properties={"STATS_GENERATED": "TASK"})
        with self.one_write(ctx, ref):
            if not table.partitionKeys:
                table.parameters = emptied_parameters(table.parameters)
                if dialect.hive4():  # Hive 4 writes the zeros as they are, counting nothing
                    task = self.t.EnvironmentContext(
                        properties={**task.properties, "DO_NOT_UPDATE_STATS": "true"})
                self.tables.alter_table_with_environment_context(ctx, db, tbl, table, task)
            elif parts:
                for part in parts:
                    part.parameters = emptied_parameters(part.parameters)
                self.partitions.alter_partitions_with_environment_context(
                    ctx, db, tbl, parts, task)

    def _emptied_partitions(self, cat, table, part_names) -> list:
        """The partitions a truncate empties: those named (a name that matches none is passed
        over, as the stock's getPartitionsByNames passes it), or all of the table's."""
        db, tbl = table.dbName, table.tableName
        if not table.partitionKeys:
            return []
        if part_names is None:
            return [codec.decode(self.t.Partition, raw) for _, raw in cat.partition_list(db, tbl)]
        wanted = []
        for name in part_names:
            spec = names.part_name_to_spec(name or "")
            try:
                values = [spec[k.name] for k in table.partitionKeys]
            except KeyError:
                continue
            try:
                wanted.append(keys.part_key(db, tbl, names.part_name(table, values)))
            except errors.HMSError:
                continue
        found = cat.view.get_many(sorted(set(wanted)))
        return [codec.decode(self.t.Partition, raw) for raw in found if raw is not None]
