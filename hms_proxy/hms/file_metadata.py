"""File metadata calls (get_file_metadata, get_file_metadata_by_expr, put_file_metadata,
clear_file_metadata, cache_file_metadata), as HMS 2.3 answers them over its SQL store.

HMS 2.3 keeps file metadata (ORC footers) only in its HBase store; over ObjectStore, which
is what a stock metastore runs, ``isFileMetadataSupported()`` is false: the reads answer
"not supported" with no metadata, ``put_file_metadata`` does nothing,
``cache_file_metadata`` answers ``isSupported=false``, and ``clear_file_metadata`` fails with
the UnsupportedOperationException of ``ObjectStore.putFileMetadata`` (an internal error). Nothing
is stored. Like HMS's Thrift layer, a request missing a required field is refused with
TApplicationException PROTOCOL_ERROR (and the connection ends, see hms_proxy/thrift/processor.py); a
null request is answered like any other, HMS not reading it before it finds file metadata
unsupported.
"""
from __future__ import annotations

from thrift.Thrift import TApplicationException, TType

from hms_proxy.hms import javafmt
from hms_proxy.hms.family import Family
from hms_proxy.thrift import errors

# (required fields, optional fields) of the request structs, as the HMS 2.3 IDL declares them
_FIELDS = {
    "GetFileMetadataRequest": (("fileIds",), ()),
    "GetFileMetadataByExprRequest": (("fileIds", "expr"), ("doGetFooters", "type")),
    "PutFileMetadataRequest": (("fileIds", "metadata"), ("type",)),
    "ClearFileMetadataRequest": (("fileIds",), ()),
    "CacheFileMetadataRequest": (("dbName", "tblName"), ("partName", "isAllParts")),
}


def _java_string(req, optional) -> str:
    """The request as its Java toString prints it (unset optional fields left out)."""
    parts = []
    for field in req.thrift_spec:
        if field is None:
            continue
        _, ftype, fname, fargs, _ = field
        value = getattr(req, fname, None)
        if value is None and fname in optional:
            continue
        if value is None:
            text = "null"
        elif ftype == TType.LIST and fargs and fargs[0] == TType.STRING and value \
                and isinstance(value[0], bytes):
            text = "[" + ", ".join(javafmt.to_string(v, TType.STRING) for v in value) + "]"
        else:
            text = javafmt.to_string(value, ftype, fargs)
        parts.append(f"{fname}:{text}")
    return f"{type(req).__name__}({', '.join(parts)})"


def _check(req, method: str) -> None:
    if req is None:  # not read by HMS before it finds file metadata unsupported
        return
    required, optional = _FIELDS[type(req).__name__]
    for name in required:
        if getattr(req, name, None) is None:
            raise TApplicationException(
                TApplicationException.PROTOCOL_ERROR,
                f"Required field '{name}' is unset! Struct:{_java_string(req, optional)}")


class FileMetadataCalls(Family):
    def get_file_metadata_by_expr(self, ctx, req):
        _check(req, "get_file_metadata_by_expr")
        return self.t.GetFileMetadataByExprResult(metadata={}, isSupported=False)

    def get_file_metadata(self, ctx, req):
        _check(req, "get_file_metadata")
        return self.t.GetFileMetadataResult(metadata={}, isSupported=False)

    def put_file_metadata(self, ctx, req):
        _check(req, "put_file_metadata")
        return self.t.PutFileMetadataResult()

    def clear_file_metadata(self, ctx, req):
        _check(req, "clear_file_metadata")
        raise errors.InternalError("ObjectStore.putFileMetadata: UnsupportedOperationException")

    def cache_file_metadata(self, ctx, req):
        _check(req, "cache_file_metadata")
        return self.t.CacheFileMetadataResult(isSupported=False)
