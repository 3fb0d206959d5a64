"""Computed statistics in the parameters of the tables and partitions the server answers with.

Spark's Hive catalog reads statistics only from parameters (:mod:`stats.spark_props`), so a
table's or partition's current statistics set (:mod:`stats.serving`) is also given there, in the
answers to the calls that return tables and partitions (``get_table``, ``get_partitions``...):

* **served, not stored.** The keys are added to the answer; the stored object is unchanged.
  A client that writes back what it read (Spark's ``ALTER TABLE``, which copies the statistics
  keys of the table it read; Trino; pyiceberg) does not freeze them into the object: on
  ``alter_table`` / ``alter_partition(s)``, an incoming key the stored object does not hold
  and whose value is the one served is dropped (:func:`strip_served`).
* **the object's own win.** Keys written by a client (Spark's ``ANALYZE``) are answered as
  stored: ``spark.sql.statistics.totalSize`` / ``numRows`` when the object holds
  ``totalSize``, a column's statistics when it holds that column's ``version``, Hive's
  ``numRows`` when it holds one.
* **what is served** is what the HMS statistics calls serve: nothing from a set a merge marked
  stale, no column dropped or retyped since the set was computed.
* ``serve --no-stats-properties`` turns it off.

The cost falls on tables that have sets: for the others a call pays one cached lookup (whether
the table has any pointer).
"""
from __future__ import annotations

import copy
import logging
import struct

from thrift.Thrift import TType

from hms_proxy.hms.names import part_name
from hms_proxy.thrift.gen.hive_metastore import ttypes
from hms_proxy.thrift.replies import Raw, RawStream
from kvmodel import codec
from kvmodel.catalog import CatalogReader
from kvmodel.store.contract import prefix_end
from stats import layout, serving, spark_props

log = logging.getLogger("hms_proxy.hms.served_props")

_TARGETS = (ttypes.Table, ttypes.Partition)
_NOTHING = ("nothing",)


def _holders() -> frozenset:
    """The generated structs that are, or hold (in a field, list, set or map), a Table or a
    Partition."""
    structs = [c for c in vars(ttypes).values()
               if isinstance(c, type) and getattr(c, "thrift_spec", None) is not None]
    found = set(_TARGETS)
    grew = True
    while grew:
        grew = False
        for cls in structs:
            if cls not in found and any(f is not None and _spec_in(f[1], f[3], found)
                                        for f in cls.thrift_spec):
                found.add(cls)
                grew = True
    return frozenset(found)


def _spec_in(ttype, targ, found) -> bool:
    if ttype == TType.STRUCT:
        return targ[0] in found
    if ttype in (TType.LIST, TType.SET):
        return _spec_in(targ[0], targ[1], found)
    if ttype == TType.MAP:
        return _spec_in(targ[0], targ[1], found) or _spec_in(targ[2], targ[3], found)
    return False


_HOLDERS = _holders()


def _reaches(cls) -> bool:
    return cls in _HOLDERS


def _spec_reaches(ttype, targ) -> bool:
    return _spec_in(ttype, targ, _HOLDERS)


def serves(name: str, result_spec) -> bool:
    """Whether the answers of read method ``name`` carry tables or partitions."""
    if not name.startswith("get_"):
        return False
    success = next((f for f in result_spec if f is not None and f[0] == 0), None)
    return success is not None and _spec_reaches(success[1], success[3])


# --- the names at the front of stored bytes -----------------------------------------------------
_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")


def _peek(data: bytes, wanted: int):
    """The string and list<string> fields numbered 1..``wanted`` at the front of a struct's
    binary bytes ({id: value}); stops at the first other field."""
    out = {}
    pos = 0
    try:
        while len(out) < wanted:
            ftype = data[pos]
            if ftype == TType.STOP:
                break
            (fid,) = _I16.unpack_from(data, pos + 1)
            pos += 3
            if ftype == TType.STRING:
                (n,) = _I32.unpack_from(data, pos)
                out[fid] = data[pos + 4:pos + 4 + n].decode("utf-8")
                pos += 4 + n
            elif ftype == TType.LIST and data[pos] == TType.STRING:
                (count,) = _I32.unpack_from(data, pos + 1)
                pos += 5
                items = []
                for _ in range(count):
                    (n,) = _I32.unpack_from(data, pos)
                    items.append(data[pos + 4:pos + 4 + n].decode("utf-8"))
                    pos += 4 + n
                out[fid] = items
            else:
                break
    except (IndexError, struct.error, UnicodeDecodeError):
        pass
    return out


def _names(obj) -> tuple[str | None, str | None]:
    """(db, table) of a Table or Partition, stored bytes or struct."""
    if isinstance(obj, Raw):
        return _raw_names(obj.data)
    if isinstance(obj, ttypes.Table):
        return obj.dbName, obj.tableName
    return getattr(obj, "dbName", None), getattr(obj, "tableName", None)


def _raw_names(data: bytes) -> tuple[str | None, str | None]:
    fields = _peek(data, 3)
    if isinstance(fields.get(1), list):  # a Partition: values, dbName, tableName
        return fields.get(2), fields.get(3)
    return fields.get(2), fields.get(1)  # a Table: tableName, dbName


# --- answers ---------------------------------------------------------------------------------
class ServedProperties:
    """Adds the served keys to a read call's answer (see the module's text)."""

    def __init__(self, env):
        self.env = env

    def answer(self, ctx, value, result_spec, ref: str):
        success = next((f for f in result_spec if f is not None and f[0] == 0), None)
        if success is None or value is None:
            return value
        call = _Call(self.env, ref or self.env.ref)
        try:
            return call.walk(value, success[1], success[3])
        finally:
            call.close()


class _Call:
    """One answer's walk, with one read view opened on first need."""

    def __init__(self, env, ref):
        self.env, self.ref = env, ref
        self._view = None
        self._reader = None
        self._token = env.store.token(ref)
        self._tables: dict = {}

    def close(self):
        if self._view is not None:
            self._view.__exit__(None, None, None)
            self._view = None

    def reader(self) -> CatalogReader:
        if self._reader is None:
            self._view = self.env.store.read(self.ref)
            view = self._view.__enter__()
            self._reader = CatalogReader(view, ttypes, self.env.cache)
            self._token = view.token
        return self._reader

    def _cached(self, key, compute, weight=256):
        cache = self.env.cache
        if self._token is not None:
            hit = cache.get((self._token,) + key)
            if hit is not None:
                return None if hit is _NOTHING else hit
        value = compute()
        if self._token is not None:
            cache.put((self._token,) + key, _NOTHING if value is None else value, weight)
        return value

    def has_sets(self, db, tbl) -> bool:
        if not db or not tbl:
            return False
        db, tbl = db.lower(), tbl.lower()
        root = layout.pointer_key(db, tbl, None)[:-len(layout.UNPARTITIONED)]
        found = self._cached(("has-stats-sets", db, tbl),
                             lambda: bool(self.reader().view.first(root, prefix_end(root))))
        return bool(found)

    def table(self, db, tbl):
        key = (db.lower(), tbl.lower())
        if key not in self._tables:
            self._tables[key] = self.reader().table(*key)
        return self._tables[key]

    # --- the walk ----------------------------------------------------------------------------
    def walk(self, value, ttype, targ):
        if ttype == TType.STRUCT:
            cls = targ[0]
            if cls in _TARGETS:
                return self.patch(cls, value)
            if not _reaches(cls) or isinstance(value, Raw):
                return value
            for f in cls.thrift_spec:
                if f is None or not _spec_reaches(f[1], f[3]):
                    continue
                child = getattr(value, f[2], None)
                if child is not None:
                    setattr(value, f[2], self.walk(child, f[1], f[3]))
            return value
        if ttype == TType.LIST and targ[0] == TType.STRUCT and targ[1][0] in _TARGETS:
            return self.patch_list(targ[1][0], value)
        if ttype == TType.LIST and isinstance(value, list):
            return [self.walk(v, targ[0], targ[1]) for v in value]
        return value

    def patch_list(self, cls, items):
        if isinstance(items, RawStream):
            db, tbl = getattr(items, "table", (None, None))
            if not self.has_sets(db, tbl):
                return items
            items = items.materialise()  # each item may change size: read them all
        if not items:
            return items
        db, tbl = _names(items[0])
        if not self.has_sets(db, tbl):
            return items
        return [self.patch(cls, item) for item in items]

    def patch(self, cls, obj):
        db, tbl = _names(obj)
        if not self.has_sets(db, tbl):
            return obj
        raw = obj.data if isinstance(obj, Raw) else None
        if raw is not None and self._token is not None:
            hit = self.env.cache.get((self._token, "served-props", raw))
            if hit is not None:
                return obj if hit is _NOTHING else Raw(hit)
        # a decoded answer may be shared with a cache: the served keys go on a copy
        struct_ = codec.decode(cls, raw) if raw is not None else copy.copy(obj)
        changed = self.add(struct_)
        if raw is None:
            return struct_ if changed else obj
        data = codec.encode(struct_) if changed else None
        if self._token is not None:
            self.env.cache.put((self._token, "served-props", raw),
                               _NOTHING if data is None else data,
                               64 + len(raw) + (len(data) if data else 0))
        return obj if data is None else Raw(data)

    def add(self, obj) -> bool:
        """Add the served keys ``obj`` (a decoded Table or Partition) lacks; whether any was."""
        table = obj if isinstance(obj, ttypes.Table) else self.table(obj.dbName, obj.tableName)
        if table is None:
            return False
        served = served_for(self.env, self.reader(), table, obj)
        if not served:
            return False
        params = obj.parameters if obj.parameters is not None else {}
        extra = missing_keys(params, served)
        if not extra:
            return False
        obj.parameters = {**params, **extra}
        return True


def served_for(env, reader, table, obj) -> dict[str, str]:
    """What is served for ``obj`` (``table`` itself, or one of its partitions)."""
    partition = None
    if obj is not table and isinstance(obj, ttypes.Partition):
        try:
            partition = part_name(table, obj.values or [])
        except Exception:  # values that do not fit the table's keys: nothing to serve
            return {}
    params = obj.parameters or {}
    size = params.get("totalSize")
    try:
        size = int(size) if size not in (None, "") else None
    except ValueError:
        size = None
    try:
        return serving.spark_properties(env, reader, table, partition, size=size)
    except Exception as exc:  # never fail a read for its statistics
        log.warning("served statistics of %s.%s (%s): %s", table.dbName, table.tableName,
                    partition or "table", exc)
        return {}


def missing_keys(params: dict, served: dict) -> dict[str, str]:
    """The served keys an object's own ``params`` do not override (see the module's text)."""
    own = spark_props.own_columns(params)
    has_size = spark_props.TOTAL_SIZE in params
    out = {}
    for key, value in served.items():
        if key in params:
            continue
        if key in (spark_props.TOTAL_SIZE, spark_props.NUM_ROWS):
            if has_size:
                continue
        elif key.startswith(spark_props.COL_PREFIX):
            column = key[len(spark_props.COL_PREFIX):].rsplit(".", 1)[0].lower()
            if column in own:
                continue
        out[key] = value
    if out and not has_size and spark_props.TOTAL_SIZE not in out \
            and any(k.startswith(spark_props.PREFIX) for k in out):
        # Spark needs totalSize beside any statistics key
        out = {k: v for k, v in out.items() if not k.startswith(spark_props.PREFIX)}
    return out


def _group(key: str) -> str:
    """Keys that are written together: a column's statistics, the size and row count."""
    if key.startswith(spark_props.COL_PREFIX):
        return key[len(spark_props.COL_PREFIX):].rsplit(".", 1)[0].lower()
    return "" if key.startswith(spark_props.PREFIX) else key


def strip_served(env, reader, table, stored, incoming) -> None:
    """Drop from ``incoming.parameters`` the keys that echo what was served for ``stored``
    (the object as stored: ``table`` itself or one of its partitions) and that ``stored`` does
    not hold: a client writing back what it read does not freeze served statistics. A group
    of keys (one column's statistics; size and row count) is dropped whole or kept whole: kept
    when any of its keys differs from what was served (Spark's ANALYZE wrote new ones)."""
    params = incoming.parameters
    if not params or not any(k == "numRows" or k.startswith(spark_props.PREFIX) for k in params):
        return
    served = missing_keys(stored.parameters or {}, served_for(env, reader, table, stored))
    if not served:
        return
    own = stored.parameters or {}
    groups: dict[str, list[str]] = {}
    for key in params:
        if (key == "numRows" or key.startswith(spark_props.PREFIX)) and key not in own:
            groups.setdefault(_group(key), []).append(key)
    for keys in groups.values():
        if all(served.get(key) == params[key] for key in keys):
            for key in keys:
                del params[key]
