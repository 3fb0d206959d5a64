"""User types (create_type, get_type, drop_type, get_type_all) and the file metadata calls,
which HMS 2.3 answers "not supported" over its SQL store."""

from __future__ import annotations

from tests.hms.conformance.builders import cols
from tests.hms.conformance.harness import scenario
from tests.support.client import ttypes as T

P = "cftype_"


@scenario
def types_create_get_drop(c, rec):
    point = T.Type(name=P + "point", fields=cols("x int", "y int"))
    point.fields[0].comment = "the x"
    rec.call("create_type", point)
    rec.call("get_type", P + "point")
    rec.call("get_type", P + "point  ", label="get_type trailing spaces")
    rec.call("get_type", "  " + P + "point", label="get_type leading spaces")
    rec.call("get_type", P.upper() + "POINT", label="get_type other case", msg=True)
    rec.call("create_type", T.Type(name=P + "point", type1="x"), label="create_type duplicate",
             msg=True)
    rec.call("create_type", T.Type(name=P + "Mixed", type1="map", type2="string"),
             label="create_type without fields")
    rec.call("get_type", P + "Mixed")
    rec.call("get_type", P + "mixed", label="get_type lower case of a mixed-case name", msg=True)
    rec.call("create_type", T.Type(name=P + "MIXED", fields=[]), label="create_type other case")
    rec.call("get_type", P + "MIXED")
    rec.call("create_type", T.Type(name=P + "bad name"), label="create_type invalid name", msg=True)
    rec.call("create_type", T.Type(name=P + "a.b"), label="create_type dotted name", msg=True)
    rec.call("create_type", T.Type(name=""), label="create_type empty name", msg=True)
    rec.call("create_type", T.Type(name=None), label="create_type null name", msg=True)
    rec.call("create_type", None, label="create_type null type", msg=True)
    rec.call("get_type", P + "missing", label="get_type missing", msg=True)
    rec.call("get_type", "", label="get_type empty", msg=True)
    rec.call("get_type", None, label="get_type null", msg=True)
    rec.call("get_type_all", P + "point", label="get_type_all", msg=True)
    rec.call("get_type_all", None, label="get_type_all null", msg=True)
    rec.call("drop_type", P + "missing", label="drop_type missing", msg=True)
    rec.call("drop_type", P + "point")
    rec.call("get_type", P + "point", label="get_type after drop", msg=True)
    rec.call("drop_type", P + "point", label="drop_type again", msg=True)
    rec.call("drop_type", "  " + P + "Mixed ", label="drop_type with spaces", msg=True)
    rec.call("get_type", P + "Mixed", label="get_type after drop with spaces", msg=True)
    rec.call("drop_type", P + "MIXED")
    rec.call("drop_type", None, label="drop_type null", msg=True)


def ended(rec):
    """After a PROTOCOL_ERROR for a missing required field the connection is over (HMS leaves
    the message half read); the next call fails and the recorder reconnects."""
    rec.call("getVersion", label="next call on that connection")


@scenario
def file_metadata_not_supported(c, rec):
    rec.call("get_file_metadata", T.GetFileMetadataRequest(fileIds=[1, 2, 3]))
    rec.call("get_file_metadata", T.GetFileMetadataRequest(fileIds=[]),
             label="get_file_metadata no ids")
    rec.call("get_file_metadata", T.GetFileMetadataRequest(), label="get_file_metadata unset ids",
             msg=True)
    ended(rec)
    rec.call("get_file_metadata", None, label="get_file_metadata null request")
    rec.call("get_file_metadata_by_expr",
             T.GetFileMetadataByExprRequest(fileIds=[1], expr=b"\x01\x02", doGetFooters=True,
                                            type=T.FileMetadataExprType.ORC_SARG))
    rec.call("get_file_metadata_by_expr", T.GetFileMetadataByExprRequest(fileIds=[1, 2], expr=b""),
             label="get_file_metadata_by_expr minimal")
    rec.call("get_file_metadata_by_expr", T.GetFileMetadataByExprRequest(fileIds=[1]),
             label="get_file_metadata_by_expr unset expr", msg=True)
    ended(rec)
    rec.call("get_file_metadata_by_expr", None, label="get_file_metadata_by_expr null")
    rec.call("put_file_metadata", T.PutFileMetadataRequest(fileIds=[1], metadata=[b"footer"],
                                                           type=T.FileMetadataExprType.ORC_SARG))
    rec.call("put_file_metadata", T.PutFileMetadataRequest(fileIds=[1, 2], metadata=[b"x"]),
             label="put_file_metadata mismatched lengths")
    rec.call("put_file_metadata", T.PutFileMetadataRequest(fileIds=[1]),
             label="put_file_metadata unset metadata", msg=True)
    ended(rec)
    rec.call("put_file_metadata", None, label="put_file_metadata null")
    rec.call("get_file_metadata", T.GetFileMetadataRequest(fileIds=[1]), label="after put")
    rec.call("clear_file_metadata", T.ClearFileMetadataRequest(fileIds=[1]), msg=True)
    rec.call("clear_file_metadata", T.ClearFileMetadataRequest(fileIds=[]),
             label="clear_file_metadata no ids", msg=True)
    rec.call("clear_file_metadata", T.ClearFileMetadataRequest(), label="clear_file_metadata unset",
             msg=True)
    ended(rec)
    rec.call("clear_file_metadata", None, label="clear_file_metadata null")
    rec.call("cache_file_metadata", T.CacheFileMetadataRequest(dbName="default", tblName="t"))
    rec.call("cache_file_metadata", T.CacheFileMetadataRequest(
        dbName="cftype_nodb", tblName="missing", partName="ds=1", isAllParts=False),
        label="cache_file_metadata missing table")
    rec.call("cache_file_metadata", T.CacheFileMetadataRequest(dbName="default"),
             label="cache_file_metadata unset table", msg=True)
    ended(rec)
    rec.call("cache_file_metadata", None, label="cache_file_metadata null")
