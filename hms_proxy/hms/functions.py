"""Permanent functions (CREATE FUNCTION db.f AS 'class' USING JAR ...)."""
from __future__ import annotations

import copy

from hms_proxy.hms import names
from hms_proxy.hms.family import Family, lower, match_names, now
from hms_proxy.thrift import errors
from hms_proxy.thrift.replies import Raw
from kvmodel import catalog as keys
from kvmodel import codec


class FunctionCalls(Family):
    def create_function(self, ctx, func):
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
                raise errors.NoSuchObject(fn.dbName)
            key = keys.func_key(fn.dbName, fn.functionName)
            if cat.raw(key) is not None:
                raise errors.AlreadyExists(f"Function {fn.functionName} already exists")
            cat.put(key, fn)

    def get_function(self, ctx, dbName, funcName):
        db, name = lower(dbName), lower(funcName)
        data = self.get_raw(ctx, keys.func_key(db, name))
        if data is None:
            raise errors.NoSuchObject(f"Function {db}.{name} does not exist")
        return Raw(data)

    def get_functions(self, ctx, dbName, pattern):
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
        db, name = lower(dbName), lower(funcName)
        if newFunc is None or not names.validate_name(newFunc.functionName or ""):
            raise errors.InvalidObject(f"{getattr(newFunc, 'functionName', None)} is not a valid object name")
        with self.writing(ctx) as cat:
            old = cat.function(db, name)
            if old is None:
                raise errors.MetaError(f"function {name} doesn't exist")
            fn = copy.copy(newFunc)
            fn.dbName, fn.functionName = lower(newFunc.dbName) or db, newFunc.functionName
            fn.resourceUris = list(newFunc.resourceUris or [])
            fn.createTime = old.createTime
            cat.delete(keys.func_key(db, name))
            cat.put(keys.func_key(fn.dbName, fn.functionName), fn)

    def drop_function(self, ctx, dbName, funcName):
        db, name = lower(dbName), lower(funcName)
        with self.writing(ctx) as cat:
            key = keys.func_key(db, name)
            if cat.raw(key) is None:
                raise errors.NoSuchObject(f"Function {name} does not exist")
            cat.delete(key)
