"""``serve --rest-max-json-depth / --rest-max-schema-fields / --rest-max-updates``: a server
with lowered limits refuses (400, naming the limit) what one with the defaults accepts; and a
``remove-snapshots`` of ~800,000 repeated ids in a 16 MiB body is answered at once (its cost
linear, tests/rest/test_remove_snapshots.py)."""
from __future__ import annotations

import json
import time

import pytest
import requests

from hms_proxy.app.config import ConfigError
from hms_proxy.cli import build_parser, serve_config
from tests.e2e.rest.conftest import start_rest_server
from tests.e2e.rest.test_rest_limits import nested, post, schema_of, set_properties
from tests.e2e.rest.test_rest_protocol import create, error_of, load, url

pytestmark = pytest.mark.timeout(300)
LOWERED = ("--rest-max-json-depth", "8", "--rest-max-schema-fields", "3",
           "--rest-max-updates", "2")


@pytest.fixture(scope="module")
def lowered(tmp_path_factory):
    srv = start_rest_server(tmp_path_factory.mktemp("rest-lowered"), "--autocommit", *LOWERED)
    yield srv
    srv.proc.stop()


def test_lowered_limits_refuse_what_the_defaults_accept(server, lowered):
    deep = nested(9)  # a namespace of nine levels of lists: malformed, but parsed
    wide = {"name": "wide", "schema": schema_of(4)}
    for srv in (server, lowered):
        create(srv, "lim", "t")
    answers = {}
    for name, srv in (("default", server), ("lowered", lowered)):
        uuid = load(srv, "lim", "t")["metadata"]["table-uuid"]
        answers[name] = (post(srv, "namespaces", deep),
                         post(srv, "namespaces/lim/tables", wide),
                         post(srv, "namespaces/lim/tables/t", set_properties(3, uuid)))
    depth, fields, updates = answers["default"]
    # the defaults: past the parse (the namespace is the request's fault), created, committed
    assert "nested deeper" not in error_of(depth, 400, "BadRequestException")
    assert fields.status_code == 200, fields.text
    assert updates.status_code == 200, updates.text
    depth, fields, updates = answers["lowered"]
    assert "nested deeper than 8 levels" in error_of(depth, 400, "BadRequestException")
    assert "schema fields (4) exceed this catalog's limit of 3" in \
        error_of(fields, 400, "BadRequestException")
    assert "updates (3) exceed this catalog's limit of 2" in \
        error_of(updates, 400, "BadRequestException")
    # within them the lowered server serves as usual
    uuid = load(lowered, "lim", "t")["metadata"]["table-uuid"]
    answer = post(lowered, "namespaces/lim/tables/t", set_properties(2, uuid))
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("flag", ["--rest-max-json-depth", "--rest-max-schema-fields",
                                  "--rest-max-updates"])
def test_a_limit_below_one_is_refused(flag):
    args = build_parser().parse_args(["serve", "--rest-port", "0", flag, "0"])
    with pytest.raises(ConfigError, match=f"{flag} must be at least 1"):
        serve_config(args).check()


def test_remove_snapshots_with_repeated_ids_is_linear(server):
    create(server, "expire", "t")
    table = load(server, "expire", "t")
    uuid = table["metadata"]["table-uuid"]
    first = 10 ** 18  # ids of 19 digits, as clients make them
    snapshots = [{"action": "add-snapshot", "snapshot": {
        "snapshot-id": first + i, "parent-snapshot-id": first + i - 1 if i > 1 else None,
        "sequence-number": i,
        "timestamp-ms": 1_700_000_000_000 + i, "manifest-list": f"/tmp/expire/{i}.avro",
        "summary": {"operation": "append"}, "schema-id": 0}} for i in range(1, 1001)]
    answer = post(server, "namespaces/expire/tables/t", {
        "requirements": [{"type": "assert-table-uuid", "uuid": uuid}], "updates": snapshots})
    assert answer.status_code == 200, answer.text
    # the newest snapshots' ids (the last pyiceberg's scan finds), 750,000 times: ~16 MB
    ids = [first + i for i in range(991, 1001)] * 75_000
    body = json.dumps({"requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
                       "updates": [{"action": "remove-snapshots", "snapshot-ids": ids}]})
    assert len(body) < 16 << 20
    started = time.perf_counter()
    answer = post(server, "namespaces/expire/tables/t", body.encode())
    elapsed = time.perf_counter() - started
    assert answer.status_code == 200, answer.text
    kept = {s["snapshot-id"] for s in answer.json()["metadata"]["snapshots"]}
    print(f"remove-snapshots of {len(ids)} ids ({len(body)} B) on 1,000 snapshots: "
          f"{elapsed:.2f} s")
    assert kept == {first + i for i in range(1, 991)}
    # pyiceberg's own: ~a minute (ids x snapshots); linear, it is the parse of the body
    assert elapsed < 60, elapsed
    assert requests.get(url(server, "namespaces/expire/tables/t"), timeout=30).ok
