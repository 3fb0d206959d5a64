"""Unique, not-null, default and check constraints (Hive 3.x/4.x: ``add_*_constraint``,
``get_*_constraints``, ``get_all_table_constraints``, and the lists of
``create_table_with_constraints`` and ``create_table_req``), as the stock HMS 4.0.1 answers them.

Stored in the subtree of their table, so a drop removes them and a rename carries them::

    db/<db>/table/<tbl>/cstr/uk    UniqueConstraintsResponse   the table's unique constraint rows
    db/<db>/table/<tbl>/cstr/nn    NotNullConstraintsResponse  not-null rows
    db/<db>/table/<tbl>/cstr/dc    DefaultConstraintsResponse  default rows
    db/<db>/table/<tbl>/cstr/cc    CheckConstraintsResponse    check rows

in the order they were added, with the table's own spelling of its column. What the stock
4.0.1 does, and so this module:

* catalog, database, table and constraint names are lower-cased; a constraint name is unique
  within its table, over every kind (another table may reuse it), checked against what was
  stored before the call (the rows of one call may share one, as a unique constraint's
  columns do); a name given as null is
  generated (``<kind>_<hash>_<millis>_<n>``) for a first row (or a row of a unique constraint
  with key_seq 1) and reused by the unique constraint's later rows;
* the column of a unique or not-null constraint is one of the table's columns or partition
  keys; a default or check constraint's column is not checked (an unknown one, or none, is
  kept as none);
* one call is all or nothing; its errors (a missing table or column, a name in use) are
  ``InvalidObjectException``, which ``add_*_constraint`` does not declare: an internal error
  to the client, as from the stock; ``create_table_with_constraints`` declares it;
* listing a missing table or database answers no rows.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from hms_proxy.hms import javafmt
from hms_proxy.hms.family import Family, lower
from hms_proxy.thrift import errors
from hms_proxy.thrift.gen.hive_metastore import ttypes
from kvmodel import catalog as keys
from kvmodel import codec


@dataclass(frozen=True)
class Kind:
    short: str  # the generated name's suffix and the key's last part
    row: type
    response: type
    rows_field: str  # the response's list
    name_field: str
    column_checked: bool  # (a default or check constraint's column is not)


UNIQUE = Kind("uk", ttypes.SQLUniqueConstraint, ttypes.UniqueConstraintsResponse,
              "uniqueConstraints", "uk_name", True)
NOT_NULL = Kind("nn", ttypes.SQLNotNullConstraint, ttypes.NotNullConstraintsResponse,
                "notNullConstraints", "nn_name", True)
DEFAULT = Kind("dc", ttypes.SQLDefaultConstraint, ttypes.DefaultConstraintsResponse,
               "defaultConstraints", "dc_name", False)
CHECK = Kind("cc", ttypes.SQLCheckConstraint, ttypes.CheckConstraintsResponse,
             "checkConstraints", "dc_name", False)
KINDS = (UNIQUE, NOT_NULL, DEFAULT, CHECK)
SUBKEYS = tuple(f"cstr/{k.short}" for k in KINDS)


def kind_key(kind: Kind, db: str, tbl: str) -> str:
    return f"{keys.table_key(db, tbl)}/cstr/{kind.short}"


def read_rows(cat, kind: Kind, db: str, tbl: str) -> list:
    data = cat.raw(kind_key(kind, db, tbl))
    return list(getattr(codec.decode(kind.response, data), kind.rows_field) or []) if data else []


def write_rows(cat, kind: Kind, db: str, tbl: str, rows: list) -> None:
    if rows:
        cat.put(kind_key(kind, db, tbl), kind.response(**{kind.rows_field: rows}))
    else:
        cat.delete(kind_key(kind, db, tbl))


def answered(rows: list) -> list:
    """Rows as a client gets them: with their catalog (the hive catalog's here; another's is
    set with the database name, routing.unqualify_result)."""
    out = []
    for row in rows:
        row = codec.clone(row)
        if keys.split_db(row.table_db)[0] is None:
            row.catName = "hive"
        out.append(row)
    return out


def _table_names(cat, db: str, tbl: str) -> set[str]:
    """Every constraint name of the table, of any kind (its keys' too), lower-cased."""
    used = set()
    for sub, response, rows, name in (("pk", ttypes.PrimaryKeysResponse, "primaryKeys", "pk_name"),
                                      ("fk", ttypes.ForeignKeysResponse, "foreignKeys", "fk_name")):
        data = cat.raw(f"{keys.table_key(db, tbl)}/cstr/{sub}")  # constraints.pk_key, fk_key
        for row in (getattr(codec.decode(response, data), rows) or []) if data else []:
            used.add((getattr(row, name) or "").lower())
    for kind in KINDS:
        used |= {(getattr(r, kind.name_field) or "").lower() for r in read_rows(cat, kind, db, tbl)}
    return used


def _generate(params: list, used: set[str]) -> str:
    """ObjectStore.generateConstraintName: a name the table does not have yet."""
    hashcode = javafmt.string_hash("[" + ", ".join(str(p) for p in params) + "]", signed=True)
    for counter in range(10):
        name = f"{params[-1]}_{hashcode}_{int(time.time() * 1000)}_{counter}"
        if name not in used:
            return name
    raise errors.MetaError("Error while trying to generate the constraint name for "
                           + "[" + ", ".join(str(p) for p in params) + "]")


def _column(table, name):
    """The table's spelling of column ``name`` (a column, or else a partition key), or None."""
    if name is None:
        return None
    for col in list((table.sd.cols if table.sd else None) or []) + list(table.partitionKeys or []):
        if (col.name or "").lower() == name.lower():
            return col.name
    return None


def add(cat, kind: Kind, rows: list) -> None:
    """Validate and store ``rows`` of ``kind`` in the open write ``cat``; raises
    InvalidObject (the caller's transaction is then abandoned: nothing is stored)."""
    tables: dict = {}
    pending: dict = {}  # (db, tbl) -> the table's rows so far
    used: dict = {}  # (db, tbl) -> its names
    name = None
    for given in rows:
        db, tbl = lower(given.table_db), lower(given.table_name)
        if (db, tbl) not in tables:
            tables[(db, tbl)] = cat.table(db, tbl) if db and tbl else None
        table = tables[(db, tbl)]
        if table is None:
            raise errors.InvalidObject(f"Parent table not found: {tbl}")
        if (db, tbl) not in pending:
            pending[(db, tbl)] = read_rows(cat, kind, db, tbl)
            used[(db, tbl)] = _table_names(cat, db, tbl)  # (a name is checked against these)
        column = _column(table, given.column_name)
        if column is None and kind.column_checked:
            raise errors.InvalidObject(f"Parent column not found: {given.column_name}")
        given_name = getattr(given, kind.name_field)
        if given_name is None:
            if kind is not UNIQUE or given.key_seq == 1 or name is None:
                name = _generate([db, tbl, given.column_name, kind.short], used[(db, tbl)])
        else:
            name = lower(given_name)
            if name in used[(db, tbl)]:
                raise errors.InvalidObject(
                    f"Constraint name already exists: {keys.split_db(db)[1]}.{tbl}.{name}")
        row = codec.clone(given)
        row.catName, row.table_db, row.table_name, row.column_name = None, db, tbl, column
        setattr(row, kind.name_field, name)
        for flag in ("enable_cstr", "validate_cstr", "rely_cstr"):
            setattr(row, flag, bool(getattr(row, flag)))
        pending[(db, tbl)].append(row)
        if given_name is None:  # a generated name is not generated twice
            used[(db, tbl)].add(name)
    for (db, tbl), stored in pending.items():
        write_rows(cat, kind, db, tbl, stored)


def add_all(cat, unique, not_null, default, check) -> None:
    """The newer lists of create_table_with_constraints / create_table_req, in its order."""
    for kind, rows in ((UNIQUE, unique), (NOT_NULL, not_null), (DEFAULT, default),
                       (CHECK, check)):
        if rows:
            add(cat, kind, rows)


def drop(cat, db: str, tbl: str, name: str) -> bool:
    """Remove the rows named ``name`` (compared lower-cased) of the table; whether any was."""
    found = False
    for kind in KINDS:
        rows = read_rows(cat, kind, db, tbl)
        kept = [r for r in rows if (getattr(r, kind.name_field) or "").lower() != name.lower()]
        if len(kept) != len(rows):
            write_rows(cat, kind, db, tbl, kept)
            found = True
    return found


def _renamer(kind: Kind):
    def renamed(value: bytes, new):
        resp = codec.decode(kind.response, value)
        for row in getattr(resp, kind.rows_field) or []:
            row.table_db, row.table_name = new.dbName, new.tableName
        return resp
    return renamed


class ColumnConstraintCalls(Family):
    RENAME_REWRITES = {f"cstr/{k.short}": _renamer(k) for k in KINDS}

    def _add(self, ctx, kind: Kind, req, field: str):
        if req is None:
            raise errors.InternalError("request is null")
        rows = getattr(req, field)
        if rows is None:
            raise errors.protocol_error(type(req).__name__, field, f"{field}:null")
        try:
            with self.writing(ctx) as cat:
                add(cat, kind, rows)
        except errors.InvalidObject as exc:  # undeclared by these calls: an internal error
            raise errors.InternalError(exc.message) from None

    def add_unique_constraint(self, ctx, req):
        self._add(ctx, UNIQUE, req, "uniqueConstraintCols")

    def add_not_null_constraint(self, ctx, req):
        self._add(ctx, NOT_NULL, req, "notNullConstraintCols")

    def add_default_constraint(self, ctx, req):
        self._add(ctx, DEFAULT, req, "defaultConstraintCols")

    def add_check_constraint(self, ctx, req):
        self._add(ctx, CHECK, req, "checkConstraintCols")

    def _rows(self, ctx, kind: Kind, db, tbl) -> list:
        if not db or not tbl:
            return []
        with self.reading(ctx) as cat:
            return answered(read_rows(cat, kind, lower(db), lower(tbl)))

    def _request(self, kind: Kind, request):
        if request is None:
            raise errors.InternalError("request is null")
        return request.db_name, request.tbl_name

    def get_unique_constraints(self, ctx, request):
        return self.t.UniqueConstraintsResponse(
            uniqueConstraints=self._rows(ctx, UNIQUE, *self._request(UNIQUE, request)))

    def get_not_null_constraints(self, ctx, request):
        return self.t.NotNullConstraintsResponse(
            notNullConstraints=self._rows(ctx, NOT_NULL, *self._request(NOT_NULL, request)))

    def get_default_constraints(self, ctx, request):
        return self.t.DefaultConstraintsResponse(
            defaultConstraints=self._rows(ctx, DEFAULT, *self._request(DEFAULT, request)))

    def get_check_constraints(self, ctx, request):
        return self.t.CheckConstraintsResponse(
            checkConstraints=self._rows(ctx, CHECK, *self._request(CHECK, request)))
