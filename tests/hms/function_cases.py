"""Permanent functions as a Hive 3.1 or 4.x client manages them (create, get, drop, alter,
list; names in any case; null and bad arguments), sent the same to the stock HMS 3.1.3 or
4.0.1 and to us. Each case runs in a database of its own holding two functions, on a
connection of its own; what is compared: the answer or the error (class and message), then
the functions of the database (name, class, owner, types, resources). Used by
tests/hms/test_catalog_names.py (3.1.3) and tests/hms/test_stock_hms4.py (4.0.1)."""
from __future__ import annotations

from hms_proxy.thrift.gen.hive_metastore import ttypes as T

CLASS = "org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper"
F1, F2 = "test_function_to_find_1", "test_function_to_find_2"


def fn(db, name, cls=CLASS, owner="ann", owner_type=T.PrincipalType.USER,
       kind=T.FunctionType.JAVA, uris=()):
    return T.Function(functionName=name, dbName=db, className=cls, ownerName=owner,
                      ownerType=owner_type, createTime=0, functionType=kind,
                      resourceUris=[T.ResourceUri(T.ResourceType.JAR, u) for u in uris])


def _view(f) -> tuple:
    return (f.dbName, f.functionName, f.className, f.ownerName, f.ownerType, f.functionType,
            [(u.resourceType, u.uri) for u in f.resourceUris or []], bool(f.createTime))


def _answer(call):
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - the error is the answer compared
        message = getattr(exc, "message", None) or str(exc)
        if "UNIQUEFUNCTION" in message:  # the stock's database's words: its kind only
            message = "a duplicate key of the functions' unique index"
        return ("error", type(exc).__name__, message)
    if isinstance(value, T.Function):
        return ("ok", _view(value))
    return ("ok", sorted(value) if isinstance(value, list) else value)


def _with(db, **changes):
    f = fn(db, "test_function_2")
    for key, value in changes.items():
        setattr(f, key, value)
    return f


def cases() -> list:
    """(label, call(client, db)) in order; ``db`` is the case's own database."""
    return [
        ("create", lambda c, db: c.create_function(fn(db, "test_function", uris=["hdfs:///j.jar"],
                                                      owner_type=T.PrincipalType.ROLE))),
        ("create null", lambda c, db: c.create_function(None)),
        ("create null name", lambda c, db: c.create_function(_with(db, functionName=None))),
        ("create null database", lambda c, db: c.create_function(_with(db, dbName=None))),
        ("create null owner type", lambda c, db: c.create_function(_with(db, ownerType=None))),
        ("create null function type", lambda c, db: c.create_function(
            _with(db, functionType=None))),
        ("create null class", lambda c, db: c.create_function(_with(db, className=None))),
        ("create empty name", lambda c, db: c.create_function(_with(db, functionName=""))),
        ("create invalid name", lambda c, db: c.create_function(_with(db, functionName="f;"))),
        ("create no such database", lambda c, db: c.create_function(_with("fn_nodb"))),
        ("create existing", lambda c, db: c.create_function(fn(db, F1))),
        ("create upper-case name", lambda c, db: c.create_function(
            fn(db, "Test_Upper_Case_Func_Name"))),
        ("get upper case", lambda c, db: c.get_function(db.upper(), F1.upper())),
        ("get mixed case", lambda c, db: c.get_function(db, "tEsT_FuncTION_tO_FinD_1")),
        ("get null database", lambda c, db: c.get_function(None, F1)),
        ("get null name", lambda c, db: c.get_function(db, None)),
        ("get missing", lambda c, db: c.get_function(db, "no_such_function")),
        ("get no such database", lambda c, db: c.get_function("fn_nodb", F1)),
        ("drop upper case", lambda c, db: c.drop_function(db.upper(), F1.upper())),
        ("drop null database", lambda c, db: c.drop_function(None, F1)),
        ("drop null name", lambda c, db: c.drop_function(db, None)),
        ("drop missing", lambda c, db: c.drop_function(db, "no_such_function")),
        ("drop no such database", lambda c, db: c.drop_function("fn_nodb", F1)),
        ("list pattern", lambda c, db: c.get_functions(db, "*_to_find_*")),
        ("list either pattern", lambda c, db: c.get_functions(db, "*_1|*_2")),
        ("list mixed-case pattern", lambda c, db: c.get_functions(db.upper(), "*_tO_FiND*")),
        ("list null pattern", lambda c, db: c.get_functions(db, None)),
        ("list empty pattern", lambda c, db: c.get_functions(db, "")),
        ("list no such database", lambda c, db: c.get_functions("fn_nodb", "*")),
        ("list null database", lambda c, db: c.get_functions(None, "*")),
        ("alter: rename and change", lambda c, db: c.alter_function(db, F1, _with(
            db, ownerName="Owner2", ownerType=T.PrincipalType.GROUP, className=CLASS + "2"))),
        ("alter: class only", lambda c, db: c.alter_function(db, F2, fn(db, F2, cls="New"))),
        ("alter upper case", lambda c, db: c.alter_function(db.upper(), F2.upper(),
                                                            _with(db))),
        ("alter no such database", lambda c, db: c.alter_function("fn_nodb", F2, _with(db))),
        ("alter missing", lambda c, db: c.alter_function(db, "no_such_function", _with(db))),
        ("alter null database", lambda c, db: c.alter_function(None, F2, _with(db))),
        ("alter null name", lambda c, db: c.alter_function(db, None, _with(db))),
        ("alter null function", lambda c, db: c.alter_function(db, F2, None)),
        ("alter invalid new name", lambda c, db: c.alter_function(
            db, F2, _with(db, functionName="test_function_2;"))),
        ("alter empty new name", lambda c, db: c.alter_function(
            db, F2, _with(db, functionName=""))),
        ("alter null new class", lambda c, db: c.alter_function(
            db, F2, _with(db, className=None))),
        ("alter null new name", lambda c, db: c.alter_function(
            db, F2, _with(db, functionName=None))),
        ("alter null new database", lambda c, db: c.alter_function(
            db, F2, _with(db, dbName=None))),
        ("alter null new owner type", lambda c, db: c.alter_function(
            db, F2, _with(db, ownerType=None))),
        ("alter null new function type", lambda c, db: c.alter_function(
            db, F2, _with(db, functionType=None))),
        ("alter into a missing database", lambda c, db: c.alter_function(
            db, F2, _with("fn_nodb"))),
        ("alter onto an existing name", lambda c, db: c.alter_function(db, F1, fn(db, F2))),
    ]


def run(connection) -> list:
    """(label, answer, the database's functions after it) of every case, each on a
    connection of its own (``connection()`` yields a client speaking 3.1 or 4.x)."""
    out = []
    for i, (label, call) in enumerate(cases()):
        db = f"fn_{i}"
        with connection() as c:
            c.create_database(T.Database(db, "", None, {}))
            for name in (F1, F2):
                c.create_function(fn(db, name, uris=["hdfs:///tmp/jar1.jar"]))
            answer = _answer(lambda: call(c, db))
        with connection() as c:
            names = c.get_functions(db, "*")
            state = []
            for name in sorted(names):
                try:
                    state.append(_view(c.get_function(db, name)))
                except Exception as exc:  # noqa: BLE001 - listed, not fetchable
                    state.append((name, type(exc).__name__))
        out.append((label, answer, state))
    return out


def differences(stock: list, ours: list) -> list[str]:
    return [f"{label}: stock {a!r} {sa!r} / ours {b!r} {sb!r}"
            for (label, a, sa), (_, b, sb) in zip(stock, ours) if (a, sa) != (b, sb)]
