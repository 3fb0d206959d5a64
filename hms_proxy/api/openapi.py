"""The HTTP API's OpenAPI 3 document, written as data (served at ``/api/openapi.json``).

Every answer of every operation is described here, errors included; the schemathesis run of
``tests/api/test_http_schema.py`` checks the server against it (no 5xx, documented
status codes, content types and response bodies), and ``tests/api/test_http_openapi.py``
checks that it names exactly the routes of :data:`hms_proxy.api.app.ROUTES`.
"""
from __future__ import annotations

import copy

from hms_proxy.api.request import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET


# --- schema helpers --------------------------------------------------------------------------
def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(props: dict, required: list | None = None, extra=False) -> dict:
    return {"type": "object", "properties": props,
            "required": list(props) if required is None else required,
            "additionalProperties": extra}


def _null(schema: dict) -> dict:
    if "$ref" in schema:
        return {"allOf": [schema], "nullable": True}
    return {**schema, "nullable": True}


def _arr(items: dict) -> dict:
    return {"type": "array", "items": items}


S, I, N, B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
ANY: dict = {}  # any JSON value, null included
STR_MAP = {"type": "object", "additionalProperties": S}
PAGE = {"total": I, "offset": I, "limit": I, "next_offset": _null(I)}


def _paged(props: dict) -> dict:
    return _obj({**props, **PAGE})


SCHEMAS = {
    "Error": _obj({
        "error": _obj({"type": S, "message": S, "messages": _arr(S)}, ["type", "message"]),
        "merge": _ref("MergeResult")}, ["error"]),
    "Listener": _obj({"port": I, "ref": S, "read_only": B, "uri": S}),
    "Listeners": _obj({"listeners": _arr(_ref("Listener"))}),
    "ClosedListener": _obj({"closed": _ref("Listener")}),
    "HookAnswer": _obj({"event": S, "branch": _null(S), "folded": B, "catalog": S,
                        "ignored": B}, ["event"]),
    "Caller": _obj({"identity": _null(S), "auth": {"type": "string",
                                                   "enum": ["secret", "ugi", "none"]}}),
    "Info": _obj({"service": S, "api": S, "version": S, "default_branch": S, "read_only": B,
                  "access_rules": B, "lakefs_repository": _null(S), "warehouse": _null(S),
                  "caller": _ref("Caller")}),
    "Commit": _obj({"id": S, "short_id": S, "parents": _arr(S), "message": S, "author": S,
                    "created": N, "date": {"type": "string", "format": "date-time"},
                    "metadata": STR_MAP}),
    "Branch": _obj({"name": S, "head": S, "protected": B, "uncommitted": B,
                    "commit": _ref("Commit"), "warehouse": S, "relocated": I},
                   ["name", "head", "protected", "uncommitted", "commit"]),
    "Tag": _obj({"name": S, "commit": S, "commit_info": _ref("Commit")}),
    "Refs": _obj({"default_branch": S, "branches": _arr(_ref("Branch")),
                  "tags": _arr(_ref("Tag"))}),
    "DeletedBranch": _obj({"deleted": S, "head": S}),
    "DeletedTag": _obj({"deleted": S, "commit": S}),
    "CommitLog": _obj({"ref": S, "head": S, "path": _null(S), "offset": I, "limit": I,
                       "next_offset": _null(I), "commits": _arr(_ref("Commit"))}),
    "FieldChange": _obj({"field": S, "before": ANY, "after": ANY}),
    "Change": _obj({"kind": S, "path": _arr(S),
                    "change": {"type": "string", "enum": ["added", "removed", "modified"]},
                    "key": S, "fields": _arr(_ref("FieldChange"))}),
    "Counts": _obj({"added": I, "removed": I, "modified": I}),
    "ResolvedRef": _obj({"ref": S, "commit": S, "branch": _null(S)}),
    "DiffGroup": _obj({"db": S, "table": _null(S), "changes": _arr(_ref("Change")),
                       "children": {"type": "object", "additionalProperties": _ref("Counts")},
                       "partitions": _ref("Counts"),
                       "iceberg": _null({"type": "object", "description":
                                         "an Iceberg table's changes in Iceberg's terms "
                                         "(snapshots, columns, properties; lines: as text)"})}),
    "Diff": _paged({"left": _ref("ResolvedRef"), "right": _ref("ResolvedRef"),
                    "path": _null(S),
                    "totals": {"type": "object", "additionalProperties": _ref("Counts")},
                    "global": _arr(_ref("Change")), "groups": _arr(_ref("DiffGroup"))}),
    "CommitDetail": _obj({"commit": _ref("Commit"), "diff": _null(_ref("Diff"))}),
    "ChildChange": _obj({"name": S, "child_kind": S, "kind": S, "path": _arr(S),
                         "change": {"type": "string", "enum": ["added", "removed", "modified"]},
                         "key": S, "fields": _arr(_ref("FieldChange"))}),
    "DiffChildren": _paged({"left": _ref("ResolvedRef"), "right": _ref("ResolvedRef"),
                            "db": S, "table": S, "kind": S, "filter": _null(S),
                            "changes": _arr(_ref("ChildChange"))}),
    "Conflict": _obj({"type": S, "kind": S, "path": _arr(S), "fields": _arr(S),
                      "source": ANY, "dest": ANY, "key": S}),
    "MergeResult": _obj({
        "source": S, "dest": S, "base": _null(S),
        "strategy": {"type": "string", "enum": ["fail", "source-wins", "dest-wins"]},
        "dry_run": B, "commit": _null(_ref("Commit")), "mergeable": B, "up_to_date": B,
        "resolved_by": _null(S), "conflicts_total": I, "conflicts": _arr(_ref("Conflict")),
        "applied": _obj({"total": I,
                         "by_kind": {"type": "object", "additionalProperties": _ref("Counts")},
                         "changes": _arr(_ref("Change")), "truncated": B}),
        "iceberg": _arr(_ref("IcebergMerge")), "iceberg_commit": _null(_ref("Commit")),
        "anchored": _arr(_ref("Anchored")), "anchor_commit": _null(_ref("Commit"))}),
    "IcebergMerge": _obj({"table": S, "replayed": _arr(I), "operations": _arr(_null(S)),
                          "taken": _arr(S), "properties": _arr(S)}),
    "Anchored": _obj({"ref": S, "table": S, "before": S, "after": S, "manifest_lists": I,
                      "manifests": I}),
    "Column": _obj({"name": S, "type": S, "comment": _null(S)}),
    "Database": _obj({"name": S, "description": _null(S), "location": _null(S),
                      "owner": _null(S), "parameters": STR_MAP}),
    "Databases": _obj({"ref": S, "commit": S, "databases": _arr(_ref("Database"))}),
    "TableSummary": _obj({"name": S, "type": _null(S), "owner": _null(S),
                          "location": _null(S), "columns": I,
                          "partition_keys": _arr(_ref("Column")), "created": _null(I)}),
    "DatabaseDetail": _obj({"ref": S, "commit": S, "database": _ref("Database"),
                            "tables": _arr(_ref("TableSummary"))}),
    "Table": _obj({
        "ref": S, "commit": S, "db": S, "name": S, "type": _null(S), "owner": _null(S),
        "location": _null(S), "input_format": _null(S), "output_format": _null(S),
        "serde": _obj({"name": _null(S), "library": _null(S), "parameters": STR_MAP}),
        "columns": _arr(_ref("Column")), "partition_keys": _arr(_ref("Column")),
        "parameters": STR_MAP, "partition_count": I, "created": _null(I),
        "view_text": _null(S),
        "statistics": _obj({"partition_sets": I, "table_level": B})}),
    "Partition": _obj({"name": S, "values": _arr(S), "location": _null(S),
                       "created": _null(I), "parameters": STR_MAP}),
    "Partitions": _paged({"ref": S, "commit": S, "db": S, "table": S, "filter": _null(S),
                          "partitions": _arr(_ref("Partition"))}),
    "StatsColumn": _obj({"name": S, "type": S, "discrete": B, "numeric": B,
                         "unit": _null(S)}),
    "StatsOverview": _obj({"table": S, "ref": S, "commit": _null(S), "partition": _null(S),
                           "partitioned": B, "columns": _arr(_ref("StatsColumn")),
                           "partition_sets": I, "table_level": B, "available": B,
                           "source": _null(S), "stale": _null(B)}),
    "StatsPartitions": _paged({"table": S, "ref": S, "commit": _null(S),
                               "partition": _null(S), "partitions": _arr(S)}),
    "SummaryRow": {
        "type": "object",
        "description": "A row of statistics.parquet: one column's statistics (null where "
                       "not defined for its type); user-defined statistics as udf_<name>.",
        "properties": {
            "column": S, "type": S, "count": _null(I), "null_count": _null(I),
            "distinct_count": _null(I), "distinct_exact": _null(B), "min": _null(S),
            "max": _null(S), "min_value": _null(N), "max_value": _null(N), "mean": _null(N),
            "stddev": _null(N), "sum": _null(N), "avg_length": _null(N),
            "max_length": _null(I), "true_count": _null(I), "false_count": _null(I),
            "percentiles_exact": _null(B),
            **{f"p{p:02d}": _null(N) for p in (1, 5, 25, 50, 75, 95, 99)}},
        "required": ["column", "type"],
        "additionalProperties": _null(N)},
    "StatsSummary": _obj({"table": S, "ref": S, "commit": _null(S), "partition": _null(S),
                          "source": S, "stale": B, "rows": _arr(_ref("SummaryRow"))}),
    "TopValues": _obj({"table": S, "ref": S, "commit": _null(S), "partition": _null(S),
                       "column": S, "n": I, "duplicates_only": B,
                       "values": _arr(_obj({"value": _null(S), "frequency": I}))}),
    "Histogram": _obj({"table": S, "ref": S, "commit": _null(S), "partition": _null(S),
                       "column": S, "type": S, "unit": _null(S),
                       "range": _obj({"lo": _null(N), "hi": _null(N)}),
                       "bins": _arr(_obj({"lower": _null(N), "upper": _null(N),
                                          "count": I}))}),
}


# --- parameters and operations ---------------------------------------------------------------
def _q(name: str, description: str, *, required=False, schema=None, example=None) -> dict:
    p = {"name": name, "in": "query", "required": required, "description": description,
         "schema": schema or ({"type": "string", "minLength": 1} if required else S)}
    if example is not None:
        p["example"] = example
    return p


def _p(name: str, description: str, example: str) -> dict:
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": {"type": "string", "minLength": 1}, "example": example}


REF = _q("ref", "branch, tag, commit id (6+ hex digits) or ancestry expression (main~2); "
                "default: the server's ref", example="main")
OFFSET = _q("offset", "items to skip", schema={"type": "integer", "minimum": 0,
                                               "maximum": MAX_OFFSET, "default": 0})
LIMIT = _q("limit", "items per page", schema={"type": "integer", "minimum": 1,
                                              "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT})
PATH_FILTER = _q("path", "only this database or table (DB or DB.TABLE)", example="shop.orders")
DB = _p("db", "database name", "shop")
TABLE = _p("table", "table name", "orders")
PARTITION = _q("partition", "one partition (k=v/k2=v2 or k=v,k2=v2); default: the table level",
               example="ds=1")

_ERRORS = {
    400: "a parameter or the body is malformed",
    401: "bad credentials, or an anonymous caller the access rules refuse",
    403: "refused by the access rules or a read-only listener (the message names the rule)",
    404: "no such ref, commit, database, table, partition, column or statistics",
    405: "method not allowed on this path",
    409: "the refs' state forbids it (exists, protected, uncommitted changes, conflicts, a "
         "hook's veto)",
    413: "request body too large",
    415: "request body not JSON",
}


def _op(op_id: str, tag: str, summary: str, ok: tuple[int, str], *, params=(), body=None,
        errors=(400, 401, 403, 404), description: str = "") -> dict:
    status, schema = ok
    out = {"operationId": op_id, "tags": [tag], "summary": summary,
           "parameters": list(params),
           "responses": {str(status): {"description": "OK" if status == 200 else "Created",
                                       "content": {"application/json": {
                                           "schema": _ref(schema)}}}}}
    if description:
        out["description"] = description
    codes = set(errors) | {400, 401}
    if body is not None:
        out["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": body}}}
        codes |= {413, 415}
    for code in sorted(codes):
        out["responses"][str(code)] = {
            "description": _ERRORS[code],
            "content": {"application/json": {"schema": _ref("Error")}}}
    return out


def _body(props: dict, required: list, example: dict) -> dict:
    return {**_obj(props, required), "example": example}


NAME = {"type": "string", "minLength": 1, "maxLength": 256}
ROOT = "/api/v1"
_T = ROOT + "/databases/{db}/tables/{table}"

PATHS = {
    ROOT + "/info": {"get": _op("getInfo", "server", "The server and who the caller is",
                                (200, "Info"), errors=())},
    ROOT + "/refs": {"get": _op("listRefs", "refs", "Branches and tags the caller may read",
                                (200, "Refs"), errors=())},
    ROOT + "/branches": {"post": _op(
        "createBranch", "refs", "Create a branch", (201, "Branch"),
        body=_body({"name": NAME, "from": {"type": "string", "minLength": 1},
                    "own_files": B}, ["name"], {"name": "feature-x", "from": "main"}),
        errors=(400, 403, 404, 409),
        description="A write on the new branch (by its name in the access rules) and a read "
                    "of `from` (default: the server's ref). `own_files` (`hms-proxy serve` "
                    "over a local warehouse): the branch's files become its own, as the "
                    "pytest plugin gives each test: its databases, tables and partitions "
                    "under the server's warehouse are pointed at `warehouse` "
                    "(`<warehouse>.branches/<name>`, uncommitted changes of the branch) and "
                    "their files hard-linked there; `relocated` counts them; deleting the "
                    "branch deletes them.")},
    ROOT + "/branches/{name}": {
        "get": _op("getBranch", "refs", "One branch", (200, "Branch"),
                   params=[_p("name", "branch name", "main")]),
        "delete": _op("deleteBranch", "refs", "Delete a branch and its uncommitted changes",
                      (200, "DeletedBranch"), params=[_p("name", "branch name", "scratch")],
                      errors=(400, 403, 404, 409))},
    ROOT + "/branches/{name}/protection": {"put": _op(
        "protectBranch", "refs", "Protect a branch, or remove its protection",
        (200, "Branch"), params=[_p("name", "branch name", "dev")],
        body=_body({"protected": B}, ["protected"], {"protected": True}),
        errors=(400, 403, 404, 409))},
    ROOT + "/tags": {"post": _op(
        "createTag", "refs", "Tag a ref's commit", (201, "Tag"),
        body=_body({"name": NAME, "ref": {"type": "string", "minLength": 1}}, ["name", "ref"],
                   {"name": "v1", "ref": "main"}),
        errors=(400, 403, 404, 409))},
    ROOT + "/tags/{name}": {
        "get": _op("getTag", "refs", "One tag", (200, "Tag"),
                   params=[_p("name", "tag name", "v1")]),
        "delete": _op("deleteTag", "refs", "Delete a tag", (200, "DeletedTag"),
                      params=[_p("name", "tag name", "old")], errors=(400, 403, 404, 409))},
    ROOT + "/commits": {"get": _op(
        "listCommits", "commits", "Commits reachable from a ref, newest first, paged",
        (200, "CommitLog"), params=[REF, PATH_FILTER, OFFSET, LIMIT]),
        "post": _op(
            "createCommit", "commits", "Commit a branch's uncommitted changes",
            (201, "Commit"),
            body=_body({"branch": NAME, "message": {"type": "string"}}, ["branch", "message"],
                       {"branch": "dev", "message": "orders: new column"}),
            errors=(400, 403, 404, 409),
            description="As `hms-proxy commit`: the pre-commit hooks run (a veto is 409 "
                        "HookVeto); nothing to commit is 409 NothingToCommit.")},
    ROOT + "/commits/{id}": {"get": _op(
        "getCommit", "commits", "One commit and its changes against its first parent "
                                "(a page of the diff)",
        (200, "CommitDetail"), params=[_p("id", "commit id, prefix or any ref", "main"),
                                       OFFSET, LIMIT])},
    ROOT + "/diff": {"get": _op(
        "diff", "diff", "The contextual diff between two refs, grouped by database and table",
        (200, "Diff"),
        params=[_q("left", "the ref compared from", required=True, example="main"),
                _q("right", "the ref compared to (a branch includes its uncommitted changes)",
                   required=True, example="dev"), PATH_FILTER, OFFSET, LIMIT],
        description="Groups (a database's own changes, or a table's with what lies under it "
                    "rolled up into counts per kind) are paged.")},
    ROOT + "/diff/children": {"get": _op(
        "diffChildren", "diff", "The changes under one table (partitions...), paged",
        (200, "DiffChildren"),
        params=[_q("left", "the ref compared from", required=True, example="main"),
                _q("right", "the ref compared to", required=True, example="dev"),
                _q("db", "database", required=True, example="shop"),
                _q("table", "table", required=True, example="orders"),
                _q("kind", "what to list (default partition)",
                   schema={"type": "string", "enum": ["partition", "statistics",
                                                      "table_column_stats",
                                                      "partition_column_stats",
                                                      "table_item", "all"]}),
                _q("filter", "only names holding this (case-insensitive)", example="ds="),
                OFFSET, LIMIT])},
    ROOT + "/merge": {"post": _op(
        "merge", "merge", "Merge a ref into a branch, or preview it (dry run)",
        (200, "MergeResult"),
        body=_body({"source": {"type": "string", "minLength": 1},
                    "dest": {"type": "string", "minLength": 1},
                    "strategy": {"type": "string", "enum": ["fail", "source-wins", "dest-wins"],
                                 "default": "fail"},
                    "dry_run": {"type": "boolean", "default": False},
                    "message": S}, ["source", "dest"],
                   {"source": "dev", "dest": "main", "dry_run": True}),
        errors=(400, 403, 404, 409),
        description="Conflicts are data: a dry run lists them (200, `mergeable` false with "
                    "strategy fail); a merge they stop answers 409 with them under `merge`. "
                    "A merge is a write on `dest`; pre-merge hooks run as for "
                    "`hms-proxy merge`.")},
    ROOT + "/lakefs/hooks": {"post": _op(
        "lakefsHook", "lakefs", "lakeFS's webhook: fold before a commit, check a merge",
        (200, "HookAnswer"),
        body={**_obj({"event_type": S, "repository_id": S, "branch_id": S, "source_ref": S,
                      "commit_id": S, "merge_source": S}, ["event_type"], extra=True),
              "example": {"event_type": "prepare-commit", "repository_id": "lake",
                          "branch_id": "main"}},
        errors=(400, 409),
        description="Called by lakeFS for the action `hms-proxy lakefs-hooks install` writes "
                    "(`_lakefs_actions/hms-proxy.yaml`): on `prepare-commit` the branch's "
                    "write log is folded into per-key objects before lakeFS commits it; on "
                    "`pre-merge` the catalog's 3-way merge is checked against the merge "
                    "commit lakeFS computed, and a conflict, or a table both sides changed "
                    "that lakeFS's merge would keep whole from one side, is refused (409, "
                    "the tables and fields in `messages`): lakeFS then aborts the merge. "
                    "Other events are answered 200 and ignored.")},
    ROOT + "/listeners": {
        "get": _op("listListeners", "listeners",
                   "Thrift listeners opened through the API, each bound to a ref",
                   (200, "Listeners"), errors=(404,)),
        "post": _op(
            "openListener", "listeners", "Open a Thrift listener bound to a ref",
            (201, "Listener"),
            body=_body({"ref": NAME}, ["ref"], {"ref": "test-42"}),
            errors=(400, 403, 404, 409),
            description="A port of the server's host serving `ref` as `serve --bind PORT=REF` "
                        "does (the server's limits and security; read-only when the server is "
                        "read-only): a Spark or Trino configuration pointed at `uri` works on that "
                        "ref unchanged. Only `hms-proxy serve --http-port` of one process has "
                        "them (404 otherwise); at most 512 at once (409).")},
    ROOT + "/listeners/{port}": {"put": _op(
        "moveListener", "listeners", "Serve another ref on a listener opened through the API",
        (200, "Listener"), params=[_p("port", "its port", "40123")],
        body=_body({"ref": NAME}, ["ref"], {"ref": "test-43"}),
        errors=(400, 403, 404),
        description="From the next call on, also on the connections already open (a "
                    "SparkSession keeps its connection): what the pytest plugin does between "
                    "tests so that one Spark serves each test's branch."),
        "delete": _op(
        "closeListener", "listeners", "Close a listener opened through the API",
        (200, "ClosedListener"), params=[_p("port", "its port", "40123")],
        errors=(400, 403, 404),
        description="Stops accepting at once; calls in flight finish.")},
    ROOT + "/databases": {"get": _op("listDatabases", "catalog", "Databases at a ref",
                                     (200, "Databases"), params=[REF])},
    ROOT + "/databases/{db}": {"get": _op("getDatabase", "catalog",
                                          "A database and its tables at a ref",
                                          (200, "DatabaseDetail"), params=[DB, REF])},
    _T: {"get": _op("getTable", "catalog", "A table at a ref: schema, properties, location, "
                                           "partition keys and count",
                    (200, "Table"), params=[DB, TABLE, REF])},
    _T + "/partitions": {"get": _op(
        "listPartitions", "catalog", "A table's partitions at a ref, in name order, paged",
        (200, "Partitions"),
        params=[DB, TABLE, REF, _q("filter", "only names holding this (case-insensitive)",
                                   example="ds=1"), OFFSET, LIMIT])},
    _T + "/stats": {"get": _op("getStatistics", "statistics",
                               "Which computed statistics a table has at a ref",
                               (200, "StatsOverview"), params=[DB, TABLE, REF])},
    _T + "/stats/partitions": {"get": _op(
        "listStatisticsPartitions", "statistics", "Partitions that have a statistics set",
        (200, "StatsPartitions"), params=[DB, TABLE, REF, OFFSET, LIMIT])},
    _T + "/stats/summary": {"get": _op(
        "getStatisticsSummary", "statistics", "Summary rows of chosen columns",
        (200, "StatsSummary"),
        params=[DB, TABLE, REF, _q("columns", "comma-separated columns (default: all)",
                                   example="price,name"), PARTITION])},
    _T + "/stats/top": {"get": _op(
        "getTopValues", "statistics", "The N most frequent values of a discrete column",
        (200, "TopValues"),
        params=[DB, TABLE, REF, _q("column", "a discrete column", required=True,
                                   example="name"),
                _q("n", "how many (default 10)", schema={"type": "integer", "minimum": 0,
                                                         "maximum": 1000, "default": 10}),
                PARTITION])},
    _T + "/stats/histogram": {"get": _op(
        "getHistogram", "statistics",
        "Histogram bins of a numeric, date or timestamp column over an optional range",
        (200, "Histogram"),
        params=[DB, TABLE, REF, _q("column", "a numeric, date or timestamp column",
                                   required=True, example="price"),
                _q("lo", "lower bound (a number; an ISO date or time for dates and "
                         "timestamps)", example="0"),
                _q("hi", "upper bound", example="100"), PARTITION])},
}

DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "hms-proxy HTTP API", "version": "1",
             "description": "Refs, commits, the contextual diff, merges, catalog browsing at "
                            "any ref and the column statistics query API of a versioned Hive "
                            "Metastore. Errors are `{\"error\": {\"type\", \"message\"}}`. "
                            "Identity: HTTP Basic (checked against --auth-secrets), Kerberos "
                            "SPNEGO (Negotiate, with serve --http-kerberos-principal) or the "
                            "X-HMS-User header (a claimed user, trusted mode; not believed "
                            "with SPNEGO)."},
    "servers": [{"url": "/"}],
    "tags": [{"name": t} for t in ("server", "refs", "commits", "diff", "merge", "lakefs",
                                   "listeners", "catalog", "statistics")],
    "paths": PATHS,
    "components": {
        "schemas": SCHEMAS,
        "securitySchemes": {
            "basic": {"type": "http", "scheme": "basic"},
            "negotiate": {"type": "http", "scheme": "negotiate"},
            "user": {"type": "apiKey", "in": "header", "name": "X-HMS-User"}}},
    "security": [{}, {"basic": []}, {"negotiate": []}, {"user": []}],
}


def document() -> dict:
    """A copy of the document (callers may change it)."""
    return copy.deepcopy(DOCUMENT)
