"""Permanent functions (CREATE FUNCTION db.f AS 'class' USING JAR ...).

Each client generation gets its metastore's answer to a null argument, compared case by case
with the stock HMS 2.3.10, 3.1.3 and 4.0.1 (tests/hms/function_cases.py): HMS 4.x checks the
names and the function first (``Function name cannot be null.``); 2.3 and 3.1 fail on a Java
NullPointerException, which 2.3's Thrift answers as an internal error and 3.1's, for most of
them, by dropping the connection. HMS 4.x also lower-cases a new function's name, where older
ones keep it as given (it can then be listed but not fetched).
"""
from __future__ import annotations

import copy

from hms_proxy.hms import names
from hms_proxy.hms.family import Family, lower, match_names, now
from hms_proxy.thrift import dialect, errors
from hms_proxy.thrift.processor import CloseConnection
from hms_proxy.thrift.routing import DEFAULT_CATALOG
from hms_proxy.thrift.replies import Raw
from kvmodel import catalog as keys
from kvmodel import codec


def _check_function(func) -> None:
    """HMS 4.x's checks of a function it is sent (its validateFunctionInfo), in its order."""
    if func is None:
        raise errors.MetaError("Function cannot be null.")
    for value, what in ((func.functionName, "Function name"),
                        (func.dbName, "Database name in Function"),
                        (func.ownerType, "Function owner type"),
                        (func.functionType, "Function type")):
        if value is None:
            raise errors.MetaError(f"{what} cannot be null.")
    if not names.validate_name(func.functionName):
        raise errors.InvalidObject(f"{func.functionName} is not a valid object name")
    if func.className is None:
        raise errors.InvalidObject("Function class name cannot be null")


def _null_failure(what: str, drops_on_31: bool = True) -> Exception:
    """The failure of HMS 2.3 and 3.1 on a null they do not check: an internal error, or for a
    3.1 client (``drops_on_31``) the connection dropped."""
    if drops_on_31 and dialect.since(dialect.HIVE31):
        return CloseConnection(what)
    return errors.InternalError(what)


def _check_nulls_before_4(func, *more) -> None:
    """HMS 2.3/3.1 on a function (or other arguments) with a null where it needs a value."""
    if func is None or None in (func.functionName, func.ownerType, func.functionType) or \
            None in more:
        raise _null_failure("a null in the function")


def _wrapped(exc: errors.HMSError) -> errors.MetaError:
    """An exception HMS 4.x's alter_function does not declare, as the MetaException it sends
    (the Java exception's toString)."""
    return errors.MetaError(f"{exc.thrift_name}(message:{exc.message})")


class FunctionCalls(Family):
    def create_function(self, ctx, func):
        hive4 = dialect.hive4()
        if hive4:
            _check_function(func)
            func = copy.copy(func)
            func.functionName = lower(func.functionName)  # HMS 4 keeps the name lower-cased
        else:
            _check_nulls_before_4(func)
            if func.dbName is None:
                if dialect.since(dialect.HIVE31):  # its lookup of the database fails first
                    raise errors.NoSuchObject(
                        'null: Cannot invoke "String.trim()" because "identifier" is null')
                raise errors.InternalError("null database")
        if func is None or not names.validate_name(func.functionName or ""):
            raise errors.InvalidObject(f"{getattr(func, 'functionName', None)} is not a valid object name")
        if not func.className:
            raise errors.InvalidObject("Function class name cannot be null")
        fn = copy.copy(func)
        # HMS stores the name as given but lower-cases every lookup: a function created with
        # upper-case letters can be listed but not fetched or dropped (Spark lower-cases).
        fn.functionName, fn.dbName = func.functionName, lower(func.dbName)
        fn.resourceUris = list(func.resourceUris or [])
        fn.createTime = now()
        with self.writing(ctx) as cat:
            if cat.raw(keys.db_key(fn.dbName)) is None:
                raise errors.NoSuchObject(f"database {keys.full_name(fn.dbName)}" if hive4
                                          else fn.dbName)
            key = keys.func_key(fn.dbName, fn.functionName)
            if cat.raw(key) is not None:
                raise errors.AlreadyExists(f"Function {fn.functionName} already exists")
            cat.put(key, fn)

    def get_function(self, ctx, dbName, funcName):
        if dbName is None or funcName is None:
            raise errors.MetaError("Database and function name cannot be null."
                                   if dialect.hive4() else names.NPE_IDENTIFIER)
        db, name = lower(dbName), lower(funcName)
        data = self.get_raw(ctx, keys.func_key(db, name))
        if data is None:
            raise errors.NoSuchObject(f"Function {db}.{name} does not exist")
        return Raw(data)

    def get_functions(self, ctx, dbName, pattern):
        if dbName is None:
            raise errors.MetaError(names.NPE_IDENTIFIER)
        with self.reading(ctx) as cat:
            fns = [name for name, _ in cat.functions(lower(dbName))]
        return match_names(pattern, fns)

    def get_all_functions(self, ctx):
        out = []
        with self.reading(ctx) as cat:
            for db in cat.database_names():
                out.extend(codec.decode(self.t.Function, data) for _, data in cat.functions(db))
        return self.t.GetAllFunctionsResponse(functions=out)

    def alter_function(self, ctx, dbName, funcName, newFunc):
        """As HMS: the function takes the new one's database, name, class, owner and type; its
        resources and creation time stay. A name already taken is refused (the stock's
        database refuses the update), and so is a database that does not exist."""
        hive4 = dialect.hive4()
        if hive4:
            if dbName is None or funcName is None:
                raise errors.MetaError("Database and function name cannot be null.")
            try:
                _check_function(newFunc)
            except (errors.InvalidObject, errors.NoSuchObject) as exc:
                raise _wrapped(exc) from None
        else:
            if dbName is None:
                raise _null_failure("null database", drops_on_31=False)
            _check_nulls_before_4(newFunc, funcName, newFunc and newFunc.dbName)
            if not names.validate_name(newFunc.functionName) or newFunc.className is None:
                raise errors.InternalError(f"{newFunc.functionName} is not a valid function")
        db, name = lower(dbName), lower(funcName)
        if newFunc is None or not names.validate_name(newFunc.functionName or ""):
            raise errors.InvalidObject(f"{getattr(newFunc, 'functionName', None)} is not a valid object name")
        with self.writing(ctx) as cat:
            old = cat.function(db, name)
            if old is None:
                raise errors.MetaError(f"function {name} doesn't exist")
            fn = copy.copy(old)
            fn.dbName = lower(newFunc.dbName) or db
            fn.functionName = lower(newFunc.functionName) if hive4 else newFunc.functionName
            fn.className, fn.functionType = newFunc.className, newFunc.functionType
            fn.ownerName, fn.ownerType = newFunc.ownerName, newFunc.ownerType
            if fn.dbName != db and cat.raw(keys.db_key(fn.dbName)) is None:
                missing = errors.InvalidObject(f"Database {fn.dbName} doesn't exist.")
                if hive4:
                    raise _wrapped(missing)
                raise errors.InternalError(missing.message)
            target = keys.func_key(fn.dbName, fn.functionName)
            if target != keys.func_key(db, name) and cat.raw(target) is not None:
                raise errors.MetaError(
                    'Update of object "org.apache.hadoop.hive.metastore.model.MFunction" using '
                    'statement "UPDATE FUNCS SET FUNC_NAME=? WHERE FUNC_ID=?" failed : The '
                    "statement was aborted because it would have caused a duplicate key value "
                    "in a unique or primary key constraint or unique index identified by "
                    "'UNIQUEFUNCTION' defined on 'FUNCS'.")
            cat.delete(keys.func_key(db, name))
            cat.put(target, fn)

    def drop_function(self, ctx, dbName, funcName):
        if dbName is None or funcName is None:
            if not dialect.hive4():
                raise _null_failure("a null name")
            raise errors.MetaError("Database name cannot be null." if dbName is None
                                   else "Function name cannot be null.")
        db, name = lower(dbName), lower(funcName)
        with self.writing(ctx) as cat:
            key = keys.func_key(db, name)
            if cat.raw(key) is None:
                raise errors.NoSuchObject(f"Function {name} does not exist")
            cat.delete(key)
