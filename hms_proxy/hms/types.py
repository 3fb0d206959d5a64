"""User types (create_type, get_type, drop_type, get_type_all), as HMS 2.3 answers them.

Stored with the catalog under ``type/<name>`` (a Type struct), so they branch and merge with
it. As in HMS 2.3's ObjectStore: names must match Java's ``[\\w_]+``, are kept as given and
compared case-sensitively, a lookup trims the name it is given, ``fields`` comes back as a
list (empty when none were given), dropping a type that does not exist succeeds, and
``get_type_all`` is not implemented (MetaException "Not yet implemented").
"""
from __future__ import annotations

from hms_proxy.hms import names
from hms_proxy.hms.family import Family
from hms_proxy.thrift import errors
from kvmodel import codec

PREFIX = "type/"
NULL_NAME = ('java.lang.NullPointerException: Cannot invoke "String.trim()" because "typeName" '
             "is null")


def type_key(name: str) -> str:
    return PREFIX + name


class TypeCalls(Family):
    def _stored(self, cat, name):
        data = cat.raw(type_key(name.strip()))
        return None if data is None else codec.decode(self.t.Type, data)

    def create_type(self, ctx, type):
        if type is None:
            raise errors.InternalError("type is null")  # HMS: type.toString() on null
        if type.name is None:  # MetaStoreUtils.validateName's Matcher on null
            raise errors.MetaError('java.lang.NullPointerException: Cannot invoke "java.lang.'
                                   'CharSequence.length()" because "this.text" is null')
        if not names.validate_name(type.name):
            raise errors.InvalidObject("Invalid type name")
        stored = self.t.Type(
            name=type.name, type1=type.type1, type2=type.type2,
            fields=[self.t.FieldSchema(name=f.name, type=f.type, comment=f.comment)
                    for f in type.fields or []])
        with self.writing(ctx) as cat:
            if self._stored(cat, type.name) is not None:
                raise errors.AlreadyExists(f"Type {type.name} already exists")
            cat.put(type_key(type.name), stored)
        return True

    def get_type(self, ctx, name):
        if name is None:
            raise errors.MetaError(NULL_NAME)
        with self.reading(ctx) as cat:
            found = self._stored(cat, name)
        if found is None:
            raise errors.NoSuchObject(f'Type "{name}" not found.')
        return found

    def drop_type(self, ctx, type):
        if type is None:
            raise errors.MetaError(NULL_NAME)
        with self.writing(ctx) as cat:
            if self._stored(cat, type) is not None:
                cat.delete(type_key(type.strip()))
        return True

    def get_type_all(self, ctx, name):
        raise errors.MetaError("Not yet implemented")
