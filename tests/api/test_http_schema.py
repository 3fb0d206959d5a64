"""The HTTP API fuzzed with schemathesis against its own OpenAPI document.

The document is :func:`hms_proxy.api.openapi.document` (what ``/api/openapi.json`` serves);
``hms-proxy api`` runs as a real process over a store with databases, tables, partitions,
branches, a conflicting change and statistics sets (``tests/support/http_store.py``). Every
operation gets its documented examples, then up to :data:`EXAMPLES` generated cases, valid and
invalid (schemathesis's positive and negative modes), checked for: no 5xx
(``not_a_server_error``), a documented status code (``status_code_conformance``), the documented
content type (``content_type_conformance``), a body conforming to the response schema
(``response_schema_conformance``), and invalid requests refused with a 4xx
(``negative_data_rejection``).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# Hypothesis keeps a cache beside the working directory: under the tests' artifacts instead
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(
    Path(__file__).resolve().parents[1] / ".artifacts" / "hypothesis"))
import schemathesis
from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from hms_proxy.api.openapi import document  # noqa: E402
from tests.support import http_store  # noqa: E402
from tests.support.http_api import ApiProcess  # noqa: E402
from tests.support.process import REPO_ROOT  # noqa: E402

pytestmark = pytest.mark.timeout(300)

EXAMPLES = 40  # generated cases per operation (23 operations: ~1,600 requests, about a minute)
ARTIFACTS = REPO_ROOT / "tests" / ".artifacts" / "http"
CALLS: dict[str, int] = {}
PROBES = "(unsupported-method probes)"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, negative_data_rejection]

DOCUMENT = document()
schema = schemathesis.openapi.from_dict(DOCUMENT)


@pytest.fixture(scope="module")
def api_base(tmp_path_factory):
    root = tmp_path_factory.mktemp("http-schema")
    store = http_store.build(root)
    server = ApiProcess(root / "server", store)
    yield server.base
    server.stop()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    lines = [f"{n:5d}  {op}" for op, n in sorted(CALLS.items())]
    probes = CALLS.get(PROBES, 0)
    (ARTIFACTS / "schemathesis.txt").write_text(
        f"{sum(CALLS.values())} requests: {sum(CALLS.values()) - probes} to "
        f"{len(CALLS) - (1 if probes else 0)} documented operations, {probes} "
        "unsupported-method probes\n" + "\n".join(lines) + "\n")


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_openapi(case, api_base):
    documented = case.method.lower() in DOCUMENT["paths"].get(case.path, {})
    label = f"{case.method} {case.path}" if documented else PROBES
    CALLS[label] = CALLS.get(label, 0) + 1
    case.call_and_validate(base_url=api_base, checks=CHECKS, timeout=30)
