"""An Iceberg schema as Hive columns: what a Hive-catalog client (pyiceberg's ``HiveCatalog``,
Iceberg's ``HiveTableOperations``) puts in an Iceberg table's HMS entry.

Column types are Hive 2's (``timestamptz`` is ``timestamp``): the served API is HMS 2.3's, whose
clients parse them."""
from __future__ import annotations

from hms_proxy.thrift.gen.hive_metastore import ttypes

_PRIMITIVES = {
    "boolean": "boolean", "int": "int", "long": "bigint", "float": "float",
    "double": "double", "date": "date", "time": "string", "timestamp": "timestamp",
    "timestamptz": "timestamp", "timestamp_ns": "timestamp", "timestamptz_ns": "timestamp",
    "string": "string", "uuid": "string", "binary": "binary", "unknown": "void",
}


def hive_type(iceberg_type) -> str:
    """The Hive type name of a pyiceberg type."""
    from pyiceberg import types as t

    if isinstance(iceberg_type, t.StructType):
        return "struct<" + ",".join(f"{f.name}:{hive_type(f.field_type)}"
                                    for f in iceberg_type.fields) + ">"
    if isinstance(iceberg_type, t.ListType):
        return f"array<{hive_type(iceberg_type.element_type)}>"
    if isinstance(iceberg_type, t.MapType):
        return f"map<{hive_type(iceberg_type.key_type)},{hive_type(iceberg_type.value_type)}>"
    if isinstance(iceberg_type, t.DecimalType):
        return f"decimal({iceberg_type.precision},{iceberg_type.scale})"
    if isinstance(iceberg_type, t.FixedType):
        return "binary"
    text = str(iceberg_type)
    return _PRIMITIVES.get(text, "string")


def hive_columns(schema) -> list:
    """The HMS columns of a pyiceberg Schema."""
    return [ttypes.FieldSchema(f.name, hive_type(f.field_type), f.doc) for f in schema.fields]


__all__ = ["hive_columns", "hive_type"]
