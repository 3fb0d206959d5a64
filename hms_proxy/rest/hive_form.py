"""An Iceberg table as the HMS table a Hive-catalog client makes of it (pyiceberg's
``HiveCatalog``, Iceberg's ``HiveTableOperations``): an external table whose ``metadata_location``
parameter points at the current metadata file, with the columns in Hive's type names.

Column types are Hive 2's (``timestamptz`` is ``timestamp``): the served API is HMS 2.3's, whose
clients parse them."""
from __future__ import annotations

import time

from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel.iceberg_hive import hive_columns

TABLE_TYPE = "table_type"
ICEBERG = "ICEBERG"
ICEBERG_VIEW = "ICEBERG-VIEW"  # Iceberg's HiveViewOperations: a VIRTUAL_VIEW of this table_type
METADATA_LOCATION = "metadata_location"
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"
# what the HMS parameters hold besides the metadata's own properties
_OWN = ("EXTERNAL", TABLE_TYPE, METADATA_LOCATION, PREVIOUS_METADATA_LOCATION)


def storage(metadata) -> ttypes.StorageDescriptor:
    return ttypes.StorageDescriptor(
        cols=hive_columns(metadata.schema()),
        location=metadata.location,
        inputFormat="org.apache.hadoop.mapred.FileInputFormat",
        outputFormat="org.apache.hadoop.mapred.FileOutputFormat",
        compressed=False, numBuckets=0,
        serdeInfo=ttypes.SerDeInfo(
            serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", parameters={}),
        bucketCols=[], sortCols=[], parameters={}, storedAsSubDirectories=False)


def parameters(metadata_location: str, metadata_properties: dict,
               previous: str | None = None) -> dict[str, str]:
    params = {"EXTERNAL": "TRUE", TABLE_TYPE: ICEBERG, METADATA_LOCATION: metadata_location}
    if previous:
        params[PREVIOUS_METADATA_LOCATION] = previous
    for key, value in (metadata_properties or {}).items():
        params.setdefault(key, str(value))
    return params


def new_table(db: str, name: str, metadata, metadata_location: str,
              owner: str | None) -> ttypes.Table:
    now = int(time.time())
    return ttypes.Table(
        dbName=db, tableName=name, owner=metadata.properties.get("owner") or owner or "",
        createTime=now, lastAccessTime=now, retention=0, sd=storage(metadata),
        partitionKeys=[], tableType="EXTERNAL_TABLE",
        parameters=parameters(metadata_location, metadata.properties))


def committed(table: ttypes.Table, base, metadata, metadata_location: str) -> ttypes.Table:
    """``table`` (the HMS table now) after a commit from ``base`` to ``metadata``: the HMS
    parameters no Iceberg property names are kept, the properties the commit removed go."""
    params = dict(table.parameters or {})
    for key in set(base.properties) - set(metadata.properties):
        params.pop(key, None)
    params.update(parameters(metadata_location, metadata.properties,
                             previous=params.get(METADATA_LOCATION)))
    table.parameters = params
    table.sd = storage(metadata)
    return table


def is_iceberg(table: ttypes.Table) -> bool:
    return str((table.parameters or {}).get(TABLE_TYPE, "")).upper() == ICEBERG


def is_view(table: ttypes.Table) -> bool:
    return str((table.parameters or {}).get(TABLE_TYPE, "")).upper() == ICEBERG_VIEW


def view_columns(metadata: dict) -> list[ttypes.FieldSchema]:
    from pyiceberg.schema import Schema

    current = next(v for v in metadata["versions"]
                   if v["version-id"] == metadata["current-version-id"])
    schema = next(s for s in metadata["schemas"] if s["schema-id"] == current["schema-id"])
    parsed = Schema.model_validate(schema)
    return hive_columns(parsed)


def new_view(db: str, name: str, metadata: dict, metadata_location: str,
             owner: str | None) -> ttypes.Table:
    now = int(time.time())
    params = {TABLE_TYPE: ICEBERG_VIEW, METADATA_LOCATION: metadata_location}
    for key, value in (metadata.get("properties") or {}).items():
        params.setdefault(key, str(value))
    return ttypes.Table(
        dbName=db, tableName=name, owner=owner or "", createTime=now, lastAccessTime=now,
        retention=0, partitionKeys=[], tableType="VIRTUAL_VIEW", parameters=params,
        sd=ttypes.StorageDescriptor(
            cols=view_columns(metadata), location=None, compressed=False, numBuckets=0,
            serdeInfo=ttypes.SerDeInfo(parameters={}), bucketCols=[], sortCols=[],
            parameters={}, storedAsSubDirectories=False))


def view_committed(table: ttypes.Table, base: dict, metadata: dict,
                   metadata_location: str) -> ttypes.Table:
    params = dict(table.parameters or {})
    for key in set(base.get("properties") or {}) - set(metadata.get("properties") or {}):
        params.pop(key, None)
    previous = params.get(METADATA_LOCATION)
    params.update({TABLE_TYPE: ICEBERG_VIEW, METADATA_LOCATION: metadata_location,
                   PREVIOUS_METADATA_LOCATION: previous})
    for key, value in (metadata.get("properties") or {}).items():
        if key not in (TABLE_TYPE, METADATA_LOCATION, PREVIOUS_METADATA_LOCATION):
            params[key] = str(value)
    table.parameters = {k: v for k, v in params.items() if v is not None}
    if table.sd is not None:
        table.sd.cols = view_columns(metadata)
    return table
