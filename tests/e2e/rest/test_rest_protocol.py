"""The REST protocol itself, with a plain HTTP client: multi-table transactions (all or
nothing), what malformed and hostile requests get (the spec's error bodies, the server still
up, nothing changed), and the access rules and audit log applied to REST callers."""
from __future__ import annotations

import json

import pytest
import requests

from tests.e2e.rest.conftest import race_appends, start_rest_server

pytestmark = pytest.mark.timeout(300)
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": False}]}


def url(server, path: str, ref: str = "main") -> str:
    return f"{server.rest_uri}/v1/{ref}/{path}"


def create(server, ns: str, *tables: str, ref: str = "main", headers=None):
    answer = requests.post(url(server, "namespaces", ref), json={"namespace": [ns]},
                           headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    for name in tables:
        answer = requests.post(url(server, f"namespaces/{ns}/tables", ref),
                               json={"name": name, "schema": SCHEMA}, headers=headers,
                               timeout=30)
        assert answer.status_code == 200, answer.text


def load(server, ns: str, table: str, ref: str = "main") -> dict:
    answer = requests.get(url(server, f"namespaces/{ns}/tables/{table}", ref), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def error_of(answer, status: int, type_: str) -> str:
    assert answer.status_code == status, (answer.status_code, answer.text)
    error = answer.json()["error"]
    assert error["type"] == type_ and error["code"] == status, error
    return error["message"]


def change(ns, table, uuid, **props):
    return {"identifier": {"namespace": [ns], "name": table},
            "requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
            "updates": [{"action": "set-properties", "updates": props}]}


def test_transaction_commits_all_tables_or_none(server):
    create(server, "txn", "a", "b")
    a, b = load(server, "txn", "a"), load(server, "txn", "b")
    ua, ub = a["metadata"]["table-uuid"], b["metadata"]["table-uuid"]
    bad = change("txn", "b", "00000000-0000-0000-0000-000000000000", k="2")
    answer = requests.post(url(server, "transactions/commit"),
                           json={"table-changes": [change("txn", "a", ua, k="1"), bad]},
                           timeout=30)
    assert "UUID" in error_of(answer, 409, "CommitFailedException").upper()
    assert load(server, "txn", "a")["metadata-location"] == a["metadata-location"]
    assert load(server, "txn", "b")["metadata-location"] == b["metadata-location"]
    answer = requests.post(url(server, "transactions/commit"), json={"table-changes": [
        change("txn", "a", ua, k="1"), change("txn", "b", ub, k="2")]}, timeout=30)
    assert answer.status_code == 204, answer.text
    assert load(server, "txn", "a")["metadata"]["properties"]["k"] == "1"
    assert load(server, "txn", "b")["metadata"]["properties"]["k"] == "2"
    # the same tables through Thrift: the committed metadata file is the HMS parameter
    table = server.hive().load_table("txn.b")
    assert table.metadata_location == load(server, "txn", "b")["metadata-location"]


def test_bad_input_gets_the_specs_errors_and_changes_nothing(server):
    create(server, "bad", "t")
    before = load(server, "bad", "t")
    table = url(server, "namespaces/bad/tables/t")
    post = lambda path, **kw: requests.post(url(server, path), timeout=30, **kw)  # noqa: E731
    error_of(requests.post(table, data=b"{not json", timeout=30), 400, "BadRequestException")
    error_of(requests.post(table, data=b"[1, 2]", timeout=30), 400, "BadRequestException")
    error_of(requests.post(table, json={"updates": [{"action": "no-such-update"}]}, timeout=30),
             400, "BadRequestException")
    error_of(requests.post(table, json={"updates": [
        {"action": "set-current-schema", "schema-id": 42}]}, timeout=30),
        400, "IllegalArgumentException")  # the builder's refusal, as Iceberg's server types it
    error_of(requests.post(table, json={"updates": [
        {"action": "upgrade-format-version", "format-version": 4}]}, timeout=30),
        400, "IllegalArgumentException")
    error_of(post("namespaces/bad/tables", json={"name": "v4", "schema": SCHEMA,
                                                 "properties": {"format-version": "4"}}),
             400, "BadRequestException")
    error_of(requests.post(table, data=b"x" * (17 << 20), timeout=60), 413,
             "BadRequestException")
    error_of(post("namespaces", json={"namespace": ["bad@main"]}), 400, "BadRequestException")
    error_of(post("namespaces", json={"namespace": ["a", "b"]}), 400, "BadRequestException")
    error_of(post("namespaces", json={"namespace": "bad"}), 400, "BadRequestException")
    error_of(post("namespaces/bad/tables", json={"name": "x"}), 400, "BadRequestException")
    error_of(post("namespaces/bad/tables", json={"name": "x-y", "schema": SCHEMA}), 400,
             "BadRequestException")
    error_of(post("namespaces/nope/tables", json={"name": "x", "schema": SCHEMA}), 404,
             "NoSuchNamespaceException")
    error_of(post("namespaces/bad/tables", json={"name": "t", "schema": SCHEMA}), 409,
             "AlreadyExistsException")
    error_of(post("namespaces/bad/register", json={"name": "r", "metadata-location":
                                                   "/nonexistent/v1.metadata.json"}),
             400, "BadRequestException")
    error_of(post("namespaces/bad/properties", json={"removals": ["k"], "updates": {"k": "v"}}),
             422, "UnprocessableEntityException")
    error_of(post("tables/rename", json={"source": {"namespace": ["bad"], "name": "none"},
                                         "destination": {"namespace": ["bad"], "name": "z"}}),
             404, "NoSuchTableException")
    error_of(post("transactions/commit", json={"table-changes": []}), 400,
             "BadRequestException")
    error_of(requests.get(url(server, "namespaces/bad/tables/none"), timeout=30), 404,
             "NoSuchTableException")
    error_of(requests.get(url(server, "no/such/endpoint"), timeout=30), 404,
             "NotFoundException")
    error_of(requests.put(table, timeout=30), 405, "MethodNotAllowedException")
    assert requests.head(url(server, "namespaces/bad/tables/none"), timeout=30)\
        .status_code == 404
    # a Hive table that is not an Iceberg table is no REST table
    server.hive()  # the Thrift port answers
    from hms_proxy.thrift.gen.hive_metastore import ttypes
    from tests.support.client import connect
    with connect(server.proc) as client:
        client.create_table(ttypes.Table(
            dbName="bad", tableName="plain", tableType="MANAGED_TABLE", parameters={},
            partitionKeys=[], sd=ttypes.StorageDescriptor(
                cols=[ttypes.FieldSchema("a", "int")], serdeInfo=ttypes.SerDeInfo(
                    serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"))))
    error_of(requests.get(url(server, "namespaces/bad/tables/plain"), timeout=30), 404,
             "NoSuchIcebergTableException")
    assert requests.get(url(server, "namespaces/bad/tables"), timeout=30).json() == {
        "identifiers": [{"namespace": ["bad"], "name": "t"}]}
    after = load(server, "bad", "t")
    assert after["metadata-location"] == before["metadata-location"]
    assert requests.get(f"{server.rest_uri}/v1/config", timeout=30).status_code == 200


def test_pagination(server):
    create(server, "pages", "t1", "t2", "t3")
    base = url(server, "namespaces/pages/tables")
    first = requests.get(base, params={"pageSize": 2}, timeout=30).json()
    assert [i["name"] for i in first["identifiers"]] == ["t1", "t2"]
    rest = requests.get(base, params={"pageSize": 2, "pageToken": first["next-page-token"]},
                        timeout=30).json()
    assert [i["name"] for i in rest["identifiers"]] == ["t3"] and "next-page-token" not in rest
    error_of(requests.get(base, params={"pageSize": 0}, timeout=30), 400, "BadRequestException")


def test_config_names_the_ref(server):
    config = requests.get(f"{server.rest_uri}/v1/config", params={"warehouse": "main"},
                          timeout=30).json()
    assert config["overrides"]["prefix"] == "main"
    assert "POST /v1/{prefix}/transactions/commit" in config["endpoints"]
    error_of(requests.get(f"{server.rest_uri}/v1/config", params={"warehouse": "nope"},
                          timeout=30), 400, "BadRequestException")


def test_access_rules_and_audit_apply_to_rest_callers(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [
        {"branches": "main", "read": ["*"], "write": ["alice"]}]}))
    secrets = tmp_path / "secrets.json"
    secrets.write_text(json.dumps({"alice": "s3cret"}))
    audit = tmp_path / "audit.jsonl"
    srv = start_rest_server(tmp_path / "srv", "--access-rules", str(rules), "--auth-secrets",
                            str(secrets), "--audit-log", str(audit))
    try:
        ns = {"namespace": ["acl"]}
        nobody = requests.post(url(srv, "namespaces"), json=ns, timeout=30)
        assert "access denied" in error_of(nobody, 403, "ForbiddenException")
        bob = requests.post(url(srv, "namespaces"), json=ns, headers={"X-HMS-User": "bob"},
                            timeout=30)
        error_of(bob, 403, "ForbiddenException")
        wrong = requests.post(url(srv, "namespaces"), json=ns,
                              headers={"Authorization": "Bearer alice:wrong"}, timeout=30)
        error_of(wrong, 401, "NotAuthorizedException")
        claimed = requests.post(url(srv, "namespaces"), json=ns,
                                headers={"X-HMS-User": "alice"}, timeout=30)
        error_of(claimed, 401, "NotAuthorizedException")  # alice has a secret: she shows it
        create(srv, "acl", "t", headers={"Authorization": "Bearer alice:s3cret"})
        assert load(srv, "acl", "t")  # anyone reads main
        lines = [json.loads(line) for line in audit.read_text().splitlines()]
        ok = [e for e in lines if e["outcome"] == "ok" and e["method"] == "create_table"]
        assert ok and ok[-1]["identity"] == "alice" and ok[-1]["auth"] == "secret"
        assert any(e["outcome"] == "denied" and e.get("user") == "bob" for e in lines)
    finally:
        srv.proc.stop()


def test_several_processes_serve_one_rest_port_and_lose_no_commit(tmp_path):
    """``serve --processes 2``: both workers answer the REST port (SO_REUSEPORT) and take the
    table locks in the supervisor's Redis, so writers whose connections land on different
    workers never lose a snapshot."""

    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog

    from hms_proxy.tools.ports import free_port
    from tests.support.proxy import start_proxy
    from tests.support.wait import wait_until

    port = free_port()
    proc = start_proxy(tmp_path / "mp", "--processes", "2", "--rest-port", str(port))
    uri = f"http://127.0.0.1:{port}"
    try:
        def answers():
            try:
                return requests.get(f"{uri}/v1/config", timeout=5).status_code == 200
            except requests.ConnectionError:
                return False
        wait_until(answers, what="the REST port of the workers")
        catalog = RestCatalog("mp", uri=uri, warehouse="main")
        catalog.create_namespace("mp")
        schema = pa.schema([("id", pa.int64())])
        catalog.create_table("mp.t", schema=schema)
        expected = race_appends(
            "mp.t", [(lambda: RestCatalog("mp", uri=uri, warehouse="main"), base)
                     for base in (0, 10, 20, 30)], 4,
            lambda i: pa.table({"id": [i]}, schema=schema))
        table = catalog.load_table("mp.t")
        assert sorted(table.scan().to_arrow().column("id").to_pylist()) == expected
        assert len(table.snapshots()) == 16
    finally:
        proc.stop()
