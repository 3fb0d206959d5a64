"""The catalog on ordered keys: HMS entities to keys and canonical bytes, on one ref.

Key scheme (names are lower-case HMS identifiers, ``[a-z0-9_]``, all of which sort after ``/``,
so an entity's subtree is one contiguous key range)::

    cat/<cat>                                      Catalog (not ``hive``: that one is implicit)
    cat/<cat>/db/<db>/...                          a database of catalog <cat>, laid out as below
    db/<db>                                        Database (of the ``hive`` catalog)
    db/<db>/fn/<name>                              Function
    db/<db>/table/<tbl>                            Table
    db/<db>/table/<tbl>/part/<k1=v1>/<k2=v2>       Partition (values escaped as Hive escapes)
    db/<db>/table/<tbl>/colstats/<col>             table column statistics
    db/<db>/table/<tbl>/partstats/<part>/<col>     partition column statistics
    role/<name>                                    Role
    grant/role/<role>/<type>/<principal>           a role granted to a principal

Inside the server a database of another catalog than ``hive`` is named ``<cat>.<db>`` (no
database name has a dot), and every key function below takes that name where it takes a
database's: ``db_key("sales.shop") == "cat/sales/db/shop"``.

Listing the tables of a database seeks past each table's subtree, so it costs per table, not per
partition. Values are canonical Thrift binary (:mod:`kvmodel.codec`).
"""
from __future__ import annotations

from collections.abc import Iterator

from kvmodel import codec
from kvmodel.store.cache import LRUCache
from kvmodel.store.contract import ReadView, WriteTxn, prefix_end

SUBTREE_END = chr(ord("/") + 1)  # the first character after '/': skips a whole subtree


CATALOG_PREFIX = "cat/"
CATALOG_DOT = "."


def catalog_key(name: str) -> str:
    return f"{CATALOG_PREFIX}{name}"


def in_catalog(catalog: str | None, db: str) -> str:
    """The server's name of database ``db`` of ``catalog`` (None or ``hive``: ``db`` itself)."""
    return db if catalog in (None, "hive") else f"{catalog}{CATALOG_DOT}{db}"


def split_db(db: str) -> tuple[str | None, str]:
    """``sales.shop`` -> (``sales``, ``shop``); a database of the ``hive`` catalog -> (None, db)."""
    cat, dot, name = db.partition(CATALOG_DOT)
    if dot and cat and name and _plain(cat):
        return cat, name
    return None, db


def full_name(db: str) -> str:
    """A database with its catalog, as the stock HMS 3.1/4.x names it in messages: ``hive.shop``,
    ``sales.shop``."""
    return db if split_db(db)[0] is not None else f"hive{CATALOG_DOT}{db}"


def _plain(name: str) -> bool:
    return all(c.isalnum() or c == "_" for c in name)


def databases_prefix(catalog: str | None = None) -> str:
    """The prefix under which the databases of ``catalog`` (None: ``hive``) are."""
    return "db/" if catalog in (None, "hive") else f"{CATALOG_PREFIX}{catalog}/db/"


def db_key(db: str) -> str:
    if CATALOG_DOT in db:
        cat, name = split_db(db)
        if cat is not None:
            return f"{CATALOG_PREFIX}{cat}/db/{name}"
    return f"db/{db}"


def table_key(db: str, tbl: str) -> str:
    return f"{db_key(db)}/table/{tbl}"


def part_prefix(db: str, tbl: str) -> str:
    return f"{db_key(db)}/table/{tbl}/part/"


def part_key(db: str, tbl: str, part_name: str) -> str:
    return f"{db_key(db)}/table/{tbl}/part/{part_name}"


def func_key(db: str, name: str) -> str:
    return f"{db_key(db)}/fn/{name}"


def table_colstats_key(db: str, tbl: str, col: str) -> str:
    return f"{db_key(db)}/table/{tbl}/colstats/{col}"


def part_colstats_prefix(db: str, tbl: str, part_name: str) -> str:
    return f"{db_key(db)}/table/{tbl}/partstats/{part_name}/"


def part_colstats_root(db: str, tbl: str) -> str:
    """The prefix of every partition's client-written column statistics of a table."""
    return f"{db_key(db)}/table/{tbl}/partstats/"


def path_prefix(path: str) -> str:
    """``db.table`` -> ``db/<db>/table/<table>``, ``db`` -> ``db/<db>`` (HMS names are
    lower-case); another catalog's as Hive 3.x/4.x name them, ``@cat#db[.table]``
    (``cat/<cat>/db/<db>...``); ValueError for anything else."""
    text = path.strip().lower()
    catalog = None
    if text.startswith("@"):
        catalog, sep, text = text[1:].partition("#")
        if not sep or not catalog or not _plain(catalog):
            raise ValueError(f"takes DB, DB.TABLE or @CATALOG#DB[.TABLE], not {path!r}")
    db, sep, table = text.partition(".")
    if not db or (sep and not table) or "/" in text or "." in table:
        raise ValueError(f"takes DB, DB.TABLE or @CATALOG#DB[.TABLE], not {path!r}")
    base = db_key(in_catalog(catalog, db))
    return f"{base}/table/{table}" if sep else base


def under(key: str, prefix: str) -> bool:
    """Whether ``key`` is the object at ``prefix`` or in its subtree."""
    return key == prefix or key.startswith(prefix + "/")


def role_key(name: str) -> str:
    return f"role/{name}"


ROLE_GRANT_PREFIX = "grant/role/"  # grant/role/<role>/<principal type>/<principal>


def _escape_part(name: str) -> str:
    return name.replace("%", "%25").replace("/", "%2F")


def unescape_role_grant(text: str) -> str:
    return text.replace("%2F", "/").replace("%25", "%")


def role_grant_prefix(role: str) -> str:
    """All grants of one role."""
    return f"{ROLE_GRANT_PREFIX}{_escape_part(role)}/"


def role_grant_key(role: str, principal_type: str, principal: str) -> str:
    return f"{role_grant_prefix(role)}{principal_type}/{_escape_part(principal)}"


def split_role_grant_key(key: str) -> tuple[str, str, str]:
    """(role, principal type, principal) of a role grant's key."""
    role, type_name, principal = key[len(ROLE_GRANT_PREFIX):].split("/", 2)
    return unescape_role_grant(role), type_name, unescape_role_grant(principal)


class CatalogReader:
    """Typed reads of HMS entities from one consistent view.

    With a ``cache``, listings derived from the view (database and table names, a table's
    partitions) are kept under the view's token, so repeated listings of an unchanged branch
    cost one lookup; any write to the branch changes the token.
    """

    def __init__(self, view: ReadView, ttypes, cache: LRUCache | None = None):
        self.view = view
        self.t = ttypes
        self.cache = cache if getattr(view, "token", None) is not None else None

    def _cached(self, key: tuple, compute, weigh):
        if self.cache is None:
            return compute()
        full_key = (self.view.token,) + key
        value = self.cache.get(full_key)
        if value is None:
            value = compute()
            self.cache.put(full_key, value, weigh(value))
        return value

    # --- raw bytes (sent to clients as they are) ---------------------------------------
    def raw(self, key: str) -> bytes | None:
        return self.view.get(key)

    def _get(self, cls, key: str):
        data = self.view.get(key)
        return None if data is None else codec.decode(cls, data)

    # --- databases ----------------------------------------------------------------------
    def database(self, db: str):
        return self._get(self.t.Database, db_key(db))

    def database_names(self, catalog: str | None = None) -> list[str]:
        """The databases of ``catalog`` (None: ``hive``), by their names in it."""
        prefix = databases_prefix(catalog)
        return list(self._cached(("dbs", prefix), lambda: tuple(self._child_names(prefix)),
                                 _weigh_names))

    # --- catalogs (besides hive) ----------------------------------------------------------
    def catalog(self, name: str):
        return self._get(self.t.Catalog, catalog_key(name))

    def catalog_names(self) -> list[str]:
        return [name for name in self._child_names(CATALOG_PREFIX)]

    def _child_names(self, prefix: str) -> list[str]:
        """Names of the entities directly under ``prefix`` (``prefix + name``), skipping each
        one's subtree with a seek."""
        names: list[str] = []
        end = prefix_end(prefix)
        start = prefix
        while True:
            hit = self.view.first(start, end)
            if hit is None:
                return names
            rest = hit[0][len(prefix):]
            name = rest.split("/", 1)[0]
            names.append(name)
            start = prefix + name + SUBTREE_END

    # --- tables -------------------------------------------------------------------------
    def table(self, db: str, tbl: str):
        return self._get(self.t.Table, table_key(db, tbl))

    def table_names(self, db: str) -> list[str]:
        return list(self._cached(("tables", db),
                                 lambda: tuple(self._child_names(f"{db_key(db)}/table/")),
                                 _weigh_names))

    def tables(self, db: str) -> Iterator[tuple[str, bytes]]:
        """(name, raw Table bytes) for every table of ``db``, seeking past partitions."""
        prefix = f"{db_key(db)}/table/"
        for name in self.table_names(db):
            data = self.view.get(prefix + name)
            if data is not None:
                yield name, data

    # --- partitions ---------------------------------------------------------------------
    def partition(self, db: str, tbl: str, part_name: str):
        return self._get(self.t.Partition, part_key(db, tbl, part_name))

    def partitions_raw(self, db: str, tbl: str) -> Iterator[tuple[str, bytes]]:
        """(partition name, raw Partition bytes), in partition-name order."""
        prefix = part_prefix(db, tbl)
        n = len(prefix)
        for key, value in self.view.scan_prefix(prefix):
            yield key[n:], value

    def derived(self, key: tuple, compute):
        """Anything computed from this view's partitions, cached like them (weighed at a
        few hundred bytes an item)."""
        return self._cached(("derived",) + key, compute, lambda v: 64 + 300 * len(v))

    def partition_list(self, db: str, tbl: str) -> tuple[tuple[str, bytes], ...]:
        """All partitions of a table as (name, raw bytes), in name order (cached)."""
        return self._cached(("parts", db, tbl), lambda: tuple(self.partitions_raw(db, tbl)),
                            _weigh_pairs)

    def partition_names(self, db: str, tbl: str) -> list[str]:
        return [name for name, _ in self.partitions_raw(db, tbl)]

    def has_partitions(self, db: str, tbl: str) -> bool:
        prefix = part_prefix(db, tbl)
        return self.view.first(prefix, prefix_end(prefix)) is not None

    # --- functions ----------------------------------------------------------------------
    def function(self, db: str, name: str):
        return self._get(self.t.Function, func_key(db, name))

    def functions(self, db: str) -> Iterator[tuple[str, bytes]]:
        prefix = f"{db_key(db)}/fn/"
        n = len(prefix)
        for key, value in self.view.scan_prefix(prefix):
            yield key[n:], value

    # --- column statistics ------------------------------------------------------------
    def table_colstats(self, db: str, tbl: str) -> Iterator[tuple[str, bytes]]:
        prefix = f"{db_key(db)}/table/{tbl}/colstats/"
        n = len(prefix)
        for key, value in self.view.scan_prefix(prefix):
            yield key[n:], value

    def part_colstats(self, db: str, tbl: str, part_name: str) -> Iterator[tuple[str, bytes]]:
        prefix = part_colstats_prefix(db, tbl, part_name)
        n = len(prefix)
        for key, value in self.view.scan_prefix(prefix):
            yield key[n:], value

    # --- roles --------------------------------------------------------------------------
    def role(self, name: str):
        return self._get(self.t.Role, role_key(name))

    def roles(self) -> Iterator[tuple[str, bytes]]:
        for key, value in self.view.scan_prefix("role/"):
            yield key[len("role/"):], value


class CatalogWriter(CatalogReader):
    """Typed writes of HMS entities inside one write transaction (never cached: the
    transaction's own writes are not in its token)."""

    view: WriteTxn

    def __init__(self, view: WriteTxn, ttypes):
        super().__init__(view, ttypes, cache=None)

    def put(self, key: str, entity) -> bytes:
        data = codec.encode(entity)
        self.view.put(key, data)
        return data

    def delete(self, key: str) -> None:
        self.view.delete(key)

    def delete_prefix(self, prefix: str) -> int:
        return self.view.delete_prefix(prefix)

    def delete_table_subtree(self, db: str, tbl: str) -> None:
        """The table, its partitions and all their statistics."""
        self.view.delete(table_key(db, tbl))
        self.view.delete_prefix(table_key(db, tbl) + "/")

    def delete_database_subtree(self, db: str) -> None:
        self.view.delete(db_key(db))
        self.view.delete_prefix(db_key(db) + "/")


def _weigh_names(names) -> int:
    return 64 + sum(60 + len(n) for n in names)


def _weigh_pairs(pairs) -> int:
    return 64 + sum(120 + len(n) + len(d) for n, d in pairs)
