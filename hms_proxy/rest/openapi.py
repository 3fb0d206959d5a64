"""The Iceberg REST door's OpenAPI 3 document, written as data: the operations
:mod:`hms_proxy.rest.app` routes, their request bodies and answers, in this project's own words
after the Iceberg REST catalog protocol (its paths, field names and error model). Served at
``GET /openapi.json`` of the door (outside ``/v1``, where every Iceberg path is), and fuzzed with
schemathesis by ``tests/e2e/rest/test_rest_fuzz.py``: no 5xx, and every 4xx an error body.

It describes what this catalog serves, not the whole protocol: no scan planning or credentials
(docs/iceberg-rest.md, "What is served"), and not the OAuth token endpoint (a form, not JSON:
:mod:`hms_proxy.rest.oauth`). Response bodies are described loosely
(a table's metadata is the metadata file as written, whatever its format version holds);
request bodies as the protocol has them, so that generated requests reach the catalog's checks.
"""
from __future__ import annotations

import copy


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(props: dict, required: list | None = None, extra: bool = False) -> dict:
    """An object of ``props``; ``required`` names the required ones (default: none).
    Request bodies take no other members (``extra`` for answers, which may grow)."""
    schema = {"type": "object", "properties": props, "additionalProperties": extra}
    if required:
        schema["required"] = list(required)
    return schema


def _arr(items: dict) -> dict:
    return {"type": "array", "items": items}


def _action(action: str, props: dict | None = None, required: list | None = None,
            key: str = "action") -> dict:
    """One kind of a tagged object: an update by its ``action``, a requirement by its
    ``type``."""
    return _obj({key: {"type": "string", "enum": [action]}, **(props or {})},
                [key, *(required if required is not None else list(props or {}))])


S, I, B = {"type": "string"}, {"type": "integer", "format": "int64"}, {"type": "boolean"}
STR_MAP = {"type": "object", "additionalProperties": S}
ANY_OBJ = {"type": "object"}
PRIMITIVES = ["boolean", "int", "long", "float", "double", "decimal(9,2)", "date", "time",
              "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns", "string", "uuid",
              "fixed[16]", "binary", "unknown", "variant"]

SCHEMAS: dict[str, dict] = {
    # --- errors ------------------------------------------------------------------------------
    "ErrorModel": _obj({"message": S, "type": S, "code": {"type": "integer"},
                        "stack": _arr(S)}, ["message", "type", "code"], extra=True),
    "IcebergErrorResponse": _obj({"error": _ref("ErrorModel")}, ["error"], extra=True),
    # --- names -------------------------------------------------------------------------------
    "Namespace": {**_arr(S), "description": "the levels of a namespace (here: one, a Hive "
                                            "database)"},
    "TableIdentifier": _obj({"namespace": _ref("Namespace"), "name": S},
                            ["namespace", "name"]),
    # --- schemas, specs, orders ---------------------------------------------------------------
    "Type": {"oneOf": [{"type": "string", "enum": PRIMITIVES}, _ref("NestedType")]},
    "NestedType": {
        "description": "a struct, list or map type (its members as in a schema)",
        "oneOf": [
            _obj({"type": {"type": "string", "enum": ["struct"]},
                  "fields": _arr(_ref("StructField"))}, ["type", "fields"]),
            _obj({"type": {"type": "string", "enum": ["list"]}, "element-id": I,
                  "element": _ref("Type"), "element-required": B},
                 ["type", "element-id", "element", "element-required"]),
            _obj({"type": {"type": "string", "enum": ["map"]}, "key-id": I, "key": _ref("Type"),
                  "value-id": I, "value": _ref("Type"), "value-required": B},
                 ["type", "key-id", "key", "value-id", "value", "value-required"]),
        ]},
    "StructField": _obj({"id": I, "name": S, "type": _ref("Type"), "required": B, "doc": S,
                         "initial-default": {}, "write-default": {}},
                        ["id", "name", "type", "required"]),
    "Schema": _obj({"type": {"type": "string", "enum": ["struct"]}, "schema-id": I,
                    "identifier-field-ids": _arr(I), "fields": _arr(_ref("StructField"))},
                   ["type", "fields"]),
    "PartitionField": _obj({"field-id": I, "source-id": I, "name": S, "transform": S},
                           ["source-id", "name", "transform"]),
    "PartitionSpec": _obj({"spec-id": I, "fields": _arr(_ref("PartitionField"))}, ["fields"]),
    "SortField": _obj({"source-id": I, "transform": S,
                       "direction": {"type": "string", "enum": ["asc", "desc"]},
                       "null-order": {"type": "string", "enum": ["nulls-first", "nulls-last"]}},
                      ["source-id", "transform", "direction", "null-order"]),
    "SortOrder": _obj({"order-id": I, "fields": _arr(_ref("SortField"))},
                      ["order-id", "fields"]),
    "Snapshot": _obj({
        "snapshot-id": I, "parent-snapshot-id": I, "sequence-number": I, "timestamp-ms": I,
        "manifest-list": S, "schema-id": I,
        "summary": {"type": "object", "properties": {"operation": {
            "type": "string", "enum": ["append", "replace", "overwrite", "delete"]}},
            "required": ["operation"], "additionalProperties": S}},
        ["snapshot-id", "timestamp-ms", "manifest-list", "summary"]),
    "StatisticsFile": _obj({"snapshot-id": I, "statistics-path": S, "file-size-in-bytes": I,
                            "file-footer-size-in-bytes": I, "blob-metadata": _arr(ANY_OBJ)},
                           ["snapshot-id", "statistics-path", "file-size-in-bytes",
                            "file-footer-size-in-bytes", "blob-metadata"]),
    "SQLViewRepresentation": _obj({"type": {"type": "string", "enum": ["sql"]}, "sql": S,
                                   "dialect": S}, ["type", "sql", "dialect"]),
    "ViewVersion": _obj({
        "version-id": I, "timestamp-ms": I, "schema-id": I, "summary": STR_MAP,
        "representations": _arr(_ref("SQLViewRepresentation")), "default-catalog": S,
        "default-namespace": _ref("Namespace")},
        ["version-id", "timestamp-ms", "schema-id", "summary", "representations",
         "default-namespace"]),
    # --- a table's changes -------------------------------------------------------------------
    "TableUpdate": {"oneOf": [
        _action("assign-uuid", {"uuid": S}),
        _action("upgrade-format-version", {"format-version": {"type": "integer"}}),
        _action("add-schema", {"schema": _ref("Schema"), "last-column-id": I}, ["schema"]),
        _action("set-current-schema", {"schema-id": I}),
        _action("add-spec", {"spec": _ref("PartitionSpec")}),
        _action("set-default-spec", {"spec-id": I}),
        _action("add-sort-order", {"sort-order": _ref("SortOrder")}),
        _action("set-default-sort-order", {"sort-order-id": I}),
        _action("add-snapshot", {"snapshot": _ref("Snapshot")}),
        _action("set-snapshot-ref", {
            "ref-name": S, "type": {"type": "string", "enum": ["branch", "tag"]},
            "snapshot-id": I, "max-ref-age-ms": I, "max-snapshot-age-ms": I,
            "min-snapshots-to-keep": {"type": "integer"}},
            ["ref-name", "type", "snapshot-id"]),
        _action("remove-snapshots", {"snapshot-ids": _arr(I)}),
        _action("remove-snapshot-ref", {"ref-name": S}),
        _action("set-location", {"location": S}),
        _action("set-properties", {"updates": STR_MAP}),
        _action("remove-properties", {"removals": _arr(S)}),
        _action("set-statistics", {"snapshot-id": I, "statistics": _ref("StatisticsFile")},
                ["statistics"]),
        _action("remove-statistics", {"snapshot-id": I}),
        _action("remove-partition-specs", {"spec-ids": _arr({"type": "integer"})}),
        _action("remove-schemas", {"schema-ids": _arr({"type": "integer"})}),
    ]},
    "TableRequirement": {"oneOf": [
        _action("assert-create", key="type"),
        _action("assert-table-uuid", {"uuid": S}, key="type"),
        _action("assert-ref-snapshot-id", {"ref": S, "snapshot-id": {**I, "nullable": True}},
                key="type"),
        _action("assert-last-assigned-field-id", {"last-assigned-field-id": I}, key="type"),
        _action("assert-current-schema-id", {"current-schema-id": I}, key="type"),
        _action("assert-last-assigned-partition-id", {"last-assigned-partition-id": I},
                key="type"),
        _action("assert-default-spec-id", {"default-spec-id": I}, key="type"),
        _action("assert-default-sort-order-id", {"default-sort-order-id": I}, key="type"),
    ]},
    "CommitTableRequest": _obj({"identifier": _ref("TableIdentifier"),
                                "requirements": _arr(_ref("TableRequirement")),
                                "updates": _arr(_ref("TableUpdate"))},
                               ["requirements", "updates"]),
    "CommitTransactionRequest": _obj({"table-changes": _arr(_ref("CommitTableRequest"))},
                                     ["table-changes"]),
    # --- a view's changes --------------------------------------------------------------------
    "ViewUpdate": {"oneOf": [
        _action("assign-uuid", {"uuid": S}),
        _action("upgrade-format-version", {"format-version": {"type": "integer"}}),
        _action("add-schema", {"schema": _ref("Schema"), "last-column-id": I}, ["schema"]),
        _action("set-location", {"location": S}),
        _action("set-properties", {"updates": STR_MAP}),
        _action("remove-properties", {"removals": _arr(S)}),
        _action("add-view-version", {"view-version": _ref("ViewVersion")}),
        _action("set-current-view-version", {"view-version-id": {"type": "integer"}}),
    ]},
    "ViewRequirement": _action("assert-view-uuid", {"uuid": S}, key="type"),
    "CommitViewRequest": _obj({"identifier": _ref("TableIdentifier"),
                               "requirements": _arr(_ref("ViewRequirement")),
                               "updates": _arr(_ref("ViewUpdate"))}, ["updates"]),
    # --- other requests ----------------------------------------------------------------------
    "CreateNamespaceRequest": _obj({"namespace": _ref("Namespace"), "properties": STR_MAP},
                                   ["namespace"]),
    "UpdateNamespacePropertiesRequest": _obj({"removals": _arr(S), "updates": STR_MAP}),
    "CreateTableRequest": _obj({
        "name": S, "location": S, "schema": _ref("Schema"),
        "partition-spec": _ref("PartitionSpec"), "write-order": _ref("SortOrder"),
        "stage-create": B, "properties": STR_MAP}, ["name", "schema"]),
    "RegisterTableRequest": _obj({"name": S, "metadata-location": S, "overwrite": B},
                                 ["name", "metadata-location"]),
    "RenameTableRequest": _obj({"source": _ref("TableIdentifier"),
                                "destination": _ref("TableIdentifier")},
                               ["source", "destination"]),
    "CreateViewRequest": _obj({
        "name": S, "location": S, "schema": _ref("Schema"), "view-version": _ref("ViewVersion"),
        "properties": STR_MAP}, ["name", "schema", "view-version", "properties"]),
    "ReportMetricsRequest": _obj({
        "report-type": {"type": "string", "enum": ["scan-report", "commit-report"]},
        "table-name": S, "snapshot-id": I, "sequence-number": I, "operation": S,
        "schema-id": {"type": "integer"}, "projected-field-ids": _arr({"type": "integer"}),
        "projected-field-names": _arr(S), "filter": {}, "metrics": ANY_OBJ,
        "metadata": STR_MAP}, ["report-type"], extra=True),
    # --- answers -----------------------------------------------------------------------------
    "ConfigResponse": _obj({"defaults": STR_MAP, "overrides": STR_MAP, "endpoints": _arr(S)},
                           ["defaults", "overrides"], extra=True),
    "ListNamespacesResponse": _obj({"namespaces": _arr(_ref("Namespace")),
                                    "next-page-token": S}, ["namespaces"], extra=True),
    "NamespaceResponse": _obj({"namespace": _ref("Namespace"), "properties": STR_MAP},
                              ["namespace"], extra=True),
    "UpdateNamespacePropertiesResponse": _obj({"updated": _arr(S), "removed": _arr(S),
                                               "missing": _arr(S)},
                                              ["updated", "removed"], extra=True),
    "ListTablesResponse": _obj({"identifiers": _arr(_ref("TableIdentifier")),
                                "next-page-token": S}, ["identifiers"], extra=True),
    "LoadTableResult": _obj({"metadata-location": S,
                             "metadata": _obj({"format-version": {"type": "integer"},
                                               "table-uuid": S, "location": S},
                                              ["format-version", "table-uuid"], extra=True),
                             "config": STR_MAP}, ["metadata"], extra=True),
    "CommitTableResponse": _obj({"metadata-location": S, "metadata": ANY_OBJ},
                                ["metadata-location", "metadata"], extra=True),
    "LoadViewResult": _obj({"metadata-location": S,
                            "metadata": _obj({"view-uuid": S, "format-version":
                                              {"type": "integer"}, "location": S},
                                             ["view-uuid", "format-version"], extra=True),
                            "config": STR_MAP}, ["metadata-location", "metadata"], extra=True),
}


# --- operations ---------------------------------------------------------------------------------
def _param(name: str, where: str, description: str, schema: dict | None = None,
           required: bool | None = None, example=None) -> dict:
    param = {"name": name, "in": where, "description": description,
             "required": where == "path" if required is None else required,
             "schema": schema or S}
    if example is not None:
        param["example"] = example
    return param


PREFIX = _param("prefix", "path", "the ref served: a branch, tag or commit (what /v1/config "
                "answers a warehouse with)", example="main")
NAMESPACE = _param("namespace", "path", "the namespace's levels joined by the unit separator "
                   "(%1F); here one level, a Hive database", example="db")
TABLE = _param("table", "path", "a table's name", example="t")
VIEW = _param("view", "path", "a view's name", example="v")
PAGING = [_param("pageToken", "query", "where the next page starts (a token this server "
                 "gave)", required=False),
          _param("pageSize", "query", "at most this many names", {"type": "integer"},
                 required=False)]


def _json(schema: dict) -> dict:
    return {"content": {"application/json": {"schema": schema}}}


ERRORS = {"4XX": {"description": "the Iceberg error model: why the request is refused",
                  **_json(_ref("IcebergErrorResponse"))},
          "5XX": {"description": "the Iceberg error model (a fault of the server)",
                  **_json(_ref("IcebergErrorResponse"))}}
HEAD_ERRORS = {"4XX": {"description": "no such namespace, table or view, or refused (no "
                                      "body)"},
               "5XX": {"description": "a fault of the server (no body)"}}


def _op(op_id: str, summary: str, params: list, ok: dict, body: str | None = None,
        head: bool = False) -> dict:
    op = {"operationId": op_id, "summary": summary, "parameters": params,
          "responses": {**ok, **(HEAD_ERRORS if head else ERRORS)}}
    if body:
        op["requestBody"] = {"required": True, **_json(_ref(body))}
    return op


def _ok(schema: str) -> dict:
    return {"200": {"description": "done", **_json(_ref(schema))}}


NO_CONTENT = {"204": {"description": "done (no body)"}}
NS = "/v1/{prefix}/namespaces/{namespace}"

PATHS = {
    "/v1/config": {"get": _op(
        "getConfig", "the catalog's settings; the prefix of a warehouse (a ref)",
        [_param("warehouse", "query", "a branch, tag or commit (default: the server's ref)",
                required=False, example="main")], _ok("ConfigResponse"))},
    "/v1/{prefix}/namespaces": {
        "get": _op("listNamespaces", "the namespaces (under parent: none, one level)",
                   [PREFIX, _param("parent", "query", "a namespace", required=False), *PAGING],
                   _ok("ListNamespacesResponse")),
        "post": _op("createNamespace", "a new namespace (a Hive database)", [PREFIX],
                    _ok("NamespaceResponse"), "CreateNamespaceRequest")},
    NS: {
        "get": _op("loadNamespaceMetadata", "a namespace's properties", [PREFIX, NAMESPACE],
                   _ok("NamespaceResponse")),
        "head": _op("namespaceExists", "whether a namespace exists", [PREFIX, NAMESPACE],
                    NO_CONTENT, head=True),
        "delete": _op("dropNamespace", "drop an empty namespace", [PREFIX, NAMESPACE],
                      NO_CONTENT)},
    NS + "/properties": {"post": _op(
        "updateProperties", "set and remove a namespace's properties", [PREFIX, NAMESPACE],
        _ok("UpdateNamespacePropertiesResponse"), "UpdateNamespacePropertiesRequest")},
    NS + "/tables": {
        "get": _op("listTables", "the namespace's Iceberg tables", [PREFIX, NAMESPACE, *PAGING],
                   _ok("ListTablesResponse")),
        "post": _op("createTable", "a new table, or a staged one (stage-create)",
                    [PREFIX, NAMESPACE], _ok("LoadTableResult"), "CreateTableRequest")},
    NS + "/register": {"post": _op(
        "registerTable", "a table of an existing metadata file", [PREFIX, NAMESPACE],
        _ok("LoadTableResult"), "RegisterTableRequest")},
    NS + "/tables/{table}": {
        "get": _op("loadTable", "a table's metadata",
                   [PREFIX, NAMESPACE, TABLE,
                    _param("snapshots", "query", "all or refs (every snapshot is answered)",
                           {"type": "string", "enum": ["all", "refs"]}, required=False)],
                   _ok("LoadTableResult")),
        "head": _op("tableExists", "whether a table exists", [PREFIX, NAMESPACE, TABLE],
                    NO_CONTENT, head=True),
        "post": _op("updateTable", "commit requirements and updates to a table (or create a "
                    "staged one: assert-create)", [PREFIX, NAMESPACE, TABLE],
                    _ok("CommitTableResponse"), "CommitTableRequest"),
        "delete": _op("dropTable", "drop a table (and its files with purgeRequested)",
                      [PREFIX, NAMESPACE, TABLE,
                       _param("purgeRequested", "query", "delete the table's files too",
                              B, required=False)], NO_CONTENT)},
    NS + "/tables/{table}/metrics": {"post": _op(
        "reportMetrics", "a scan or commit report (accepted and logged)",
        [PREFIX, NAMESPACE, TABLE], NO_CONTENT, "ReportMetricsRequest")},
    "/v1/{prefix}/tables/rename": {"post": _op(
        "renameTable", "rename a table (to another namespace too)", [PREFIX], NO_CONTENT,
        "RenameTableRequest")},
    "/v1/{prefix}/transactions/commit": {"post": _op(
        "commitTransaction", "commit changes to several tables: all of them or none",
        [PREFIX], NO_CONTENT, "CommitTransactionRequest")},
    NS + "/views": {
        "get": _op("listViews", "the namespace's Iceberg views", [PREFIX, NAMESPACE, *PAGING],
                   _ok("ListTablesResponse")),
        "post": _op("createView", "a new view", [PREFIX, NAMESPACE], _ok("LoadViewResult"),
                    "CreateViewRequest")},
    NS + "/views/{view}": {
        "get": _op("loadView", "a view's metadata", [PREFIX, NAMESPACE, VIEW],
                   _ok("LoadViewResult")),
        "head": _op("viewExists", "whether a view exists", [PREFIX, NAMESPACE, VIEW],
                    NO_CONTENT, head=True),
        "post": _op("replaceView", "commit requirements and updates to a view",
                    [PREFIX, NAMESPACE, VIEW], _ok("LoadViewResult"), "CommitViewRequest"),
        "delete": _op("dropView", "drop a view", [PREFIX, NAMESPACE, VIEW], NO_CONTENT)},
    "/v1/{prefix}/views/rename": {"post": _op(
        "renameView", "rename a view", [PREFIX], NO_CONTENT, "RenameTableRequest")},
}

PATH = "/openapi.json"  # where the door serves it: outside /v1, so no Iceberg path is taken


def document() -> dict:
    """The OpenAPI 3 document of the REST door (a fresh copy: callers may change it)."""
    return copy.deepcopy({
        "openapi": "3.0.3",
        "info": {"title": "hms-proxy Iceberg REST catalog", "version": "1",
                 "description": "The Iceberg REST catalog operations this catalog serves, "
                                "over the same catalog as its Hive Metastore Thrift door. "
                                "Errors are {\"error\": {\"message\", \"type\", \"code\"}}."},
        "paths": PATHS,
        "components": {"schemas": SCHEMAS},
    })
