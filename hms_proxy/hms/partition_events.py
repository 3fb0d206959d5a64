"""Partition marking (markPartitionForEvent, isPartitionMarkedForEvent), as HMS 2.3 answers it.

HMS keeps a PARTITION_EVENTS row per mark: the database and table names *as the caller gave
them*, the partition's values joined by ``,`` in the table's key order (the partition itself
need not exist), the event type and the time. Checks, in HMS's order: the names (a null one
fails normalising it), the table (``UnknownTableException``, also for a missing database), the
number of values and each key's value (``InvalidPartitionException``), the event type (a null
or unknown one is an NPE wrapped in ``MetaException``), then the column widths of the row.
``isPartitionMarkedForEvent`` compares like Derby does: names exactly (case and leading
blanks count) but trailing blanks ignored.

Here a mark is a key in the table's subtree::

    db/<db>/table/<tbl>/pevent/<type>/<given db>/<given table>[/<values>]   (percent-escaped)

holding a :class:`StoredPartitionEvent`, so marks branch and merge with the catalog. Unlike
HMS, whose rows outlive the table, a drop removes them and a rename leaves them behind (in
HMS they stay under the old name: found again after renaming back or re-creating the table).
"""
from __future__ import annotations

from urllib.parse import quote

from thrift.Thrift import TType

from hms_proxy.hms import javafmt
from hms_proxy.hms.family import Family, lower, now
from hms_proxy.thrift import errors
from kvmodel import catalog as keys

SUBTREE = "pevent/"
# PARTITION_EVENTS column widths (package.jdo), checked by DataNucleus before the insert
WIDTHS = (("DB_NAME", 128), ("TBL_NAME", 256), ("PARTITION_NAME", 767))


class StoredPartitionEvent:
    """A PARTITION_EVENTS row."""

    thrift_spec = (None,
                   (1, TType.STRING, "dbName", "UTF8", None),
                   (2, TType.STRING, "tblName", "UTF8", None),
                   (3, TType.STRING, "partName", "UTF8", None),
                   (4, TType.I32, "eventType", None, None),
                   (5, TType.I64, "eventTime", None, None))

    def __init__(self, dbName=None, tblName=None, partName=None, eventType=None,  # noqa: N803
                 eventTime=None):
        self.dbName = dbName
        self.tblName = tblName
        self.partName = partName
        self.eventType = eventType
        self.eventTime = eventTime


def _npe(what: str) -> errors.HMSError:
    return errors.MetaError(f"java.lang.NullPointerException: {what}")


class PartitionEventCalls(Family):
    def _resolve(self, cat, db_name, tbl_name, part_vals, event_type):
        """(table, partition string), checked as ObjectStore does."""
        if db_name is None or tbl_name is None:
            raise _npe('Cannot invoke "String.trim()" because "identifier" is null')
        table = cat.table(lower(db_name), lower(tbl_name))
        if table is None:
            raise errors.UnknownTable(f"Table: {tbl_name} is not found.")
        if part_vals is None:
            raise _npe('Cannot invoke "java.util.Map.size()" because "partName" is null')
        pkeys = [k.name for k in table.partitionKeys or []]
        if len(pkeys) != len(part_vals):
            raise errors.InvalidPartition(
                f"Number of partition columns in table: {len(pkeys)} doesn't match with "
                f"number of supplied partition values: {len(part_vals)}")
        values = []
        for key in pkeys:
            value = part_vals.get(key)
            if value is None:
                raise errors.InvalidPartition(f"No value found for partition column: {key}")
            values.append(value)
        if event_type not in self.t.PartitionEventType._VALUES_TO_NAMES:
            raise _npe('Cannot invoke "org.apache.hadoop.hive.metastore.api.PartitionEventType'
                       '.getValue()" because "evtType" is null')
        return table, ",".join(values)

    @staticmethod
    def _key(table, db_name, tbl_name, part_str, event_type) -> str:
        # Derby's VARCHAR equality ignores trailing blanks; no empty path segment (the
        # values of an unpartitioned table, or only empty values, join to "")
        db, tbl, part = (quote(s.rstrip(" "), safe="") for s in (db_name, tbl_name, part_str))
        return (f"{keys.table_key(table.dbName, table.tableName)}/{SUBTREE}{event_type}/"
                f"{db}/{tbl}" + (f"/{part}" if part else ""))

    def markPartitionForEvent(self, ctx, db_name, tbl_name, part_vals, eventType):
        with self.writing(ctx) as cat:
            table, part_str = self._resolve(cat, db_name, tbl_name, part_vals, eventType)
            for (column, width), value in zip(WIDTHS, (db_name, tbl_name, part_str)):
                if javafmt.string_length(value) > width:
                    raise errors.MetaError(
                        f'Attempt to store value "{value}" in column "{column}" that has '
                        f"maximum length of {width}. Please correct your data!")
            cat.put(self._key(table, db_name, tbl_name, part_str, eventType),
                    StoredPartitionEvent(db_name, tbl_name, part_str, eventType, now() * 1000))

    def isPartitionMarkedForEvent(self, ctx, db_name, tbl_name, part_vals, eventType):
        with self.reading(ctx) as cat:
            table, part_str = self._resolve(cat, db_name, tbl_name, part_vals, eventType)
            return cat.raw(self._key(table, db_name, tbl_name, part_str, eventType)) is not None
