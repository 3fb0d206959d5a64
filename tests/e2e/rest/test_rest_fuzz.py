"""The REST door fuzzed with schemathesis against its own OpenAPI document
(:func:`hms_proxy.rest.openapi.document`, what ``GET /openapi.json`` serves).

A real ``serve --rest-port --autocommit`` with a namespace ``db`` holding a table ``t`` and a
view ``v`` (the document's examples), which generated paths name (the path parameters narrowed
to them, so that requests reach the catalog rather than a 404), and a table ``kept.keep`` they
cannot name. Every operation gets its examples, then up to :data:`EXAMPLES` generated cases,
valid and invalid (schemathesis's positive and negative modes), with a fixed seed
(``derandomize``), checked for: no 5xx, a documented status code, and every 4xx answered with
the Iceberg error model (``{"error": {"message", "type", "code"}}``, its code the status).
Then the server must still be up and answer a loadTable of ``kept.keep`` as before.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import requests

os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(
    Path(__file__).resolve().parents[2] / ".artifacts" / "hypothesis"))
schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import status_code_conformance  # noqa: E402

from hms_proxy.rest.openapi import PATH, document  # noqa: E402
from tests.e2e.rest.conftest import start_rest_server  # noqa: E402
from tests.e2e.rest.test_rest_protocol import SCHEMA, create, load, url  # noqa: E402

pytestmark = pytest.mark.timeout(300)

EXAMPLES = 40
NAMES = {"prefix": "main", "namespace": "db", "table": "t", "view": "v"}
VIEW = {"name": "v", "schema": SCHEMA, "properties": {}, "view-version": {
    "version-id": 1, "timestamp-ms": 1, "schema-id": 0, "summary": {},
    "default-namespace": ["db"],
    "representations": [{"type": "sql", "sql": "select 1 as id", "dialect": "spark"}]}}


def fuzzed_document() -> dict:
    """The door's document with its path parameters narrowed to the objects the server has."""
    doc = document()
    for item in doc["paths"].values():
        for op in item.values():
            for param in op.get("parameters", []):
                if param["in"] == "path" and param["name"] in NAMES:
                    param["schema"] = {"type": "string", "enum": [NAMES[param["name"]]]}
    return doc


def error_model(ctx, response, case):
    """Every 4xx (HEAD aside: no body) is the Iceberg error model, its code the status."""
    status = response.status_code
    if status < 400 or status >= 500 or case.method.upper() == "HEAD":
        return None
    assert response.headers.get("content-type", [""])[0].startswith("application/json"), \
        f"{status} answered as {response.headers.get('content-type')}"
    error = response.json()["error"]
    assert isinstance(error["message"], str) and isinstance(error["type"], str), error
    assert error["code"] == status, (status, error)
    return None


CHECKS = [not_a_server_error, status_code_conformance, error_model]
schema = schemathesis.openapi.from_dict(fuzzed_document())


@pytest.fixture(scope="module")
def door(tmp_path_factory):
    server = start_rest_server(tmp_path_factory.mktemp("rest-fuzz"), "--autocommit")
    try:
        create(server, "db", "t")
        answer = requests.post(url(server, "namespaces/db/views"), json=VIEW, timeout=30)
        assert answer.status_code == 200, answer.text
        create(server, "kept", "keep")
        yield server, load(server, "kept", "keep")
    finally:
        server.proc.stop()


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
def test_rest_door_survives_fuzzing(case, door):
    server, _ = door
    case.call_and_validate(base_url=server.rest_uri, checks=CHECKS, timeout=60)


def test_door_serves_after_fuzzing(door):
    server, before = door
    assert server.proc.popen.poll() is None, "the server died"
    after = load(server, "kept", "keep")
    assert after["metadata-location"] == before["metadata-location"]
    assert after["metadata"]["table-uuid"] == before["metadata"]["table-uuid"]
    served = requests.get(server.rest_uri + PATH, timeout=30)
    assert served.status_code == 200
    assert set(served.json()["paths"]) == set(document()["paths"])
