"""The OpenAPI document names exactly the API's routes, every schema it refers to exists, and
the request pieces of the HTTP API (identity, body checks) behave as documented."""
from __future__ import annotations

import base64
import json
import re

import pytest

from hms_proxy.api.app import PREFIX, ROUTES, App
from hms_proxy.api.auth import Caller, Policy
from hms_proxy.api.errors import ApiError
from hms_proxy.api.openapi import document
from hms_proxy.api.request import Request
from hms_proxy.security import access


def test_document_and_routes_agree():
    doc = document()
    documented = {(method.upper(), path) for path, ops in doc["paths"].items() for method in ops}
    routed = {(r.method, PREFIX + r.template) for r in ROUTES}
    assert documented == routed


def test_every_reference_resolves_and_every_operation_documents_its_errors():
    doc = document()
    text = json.dumps(doc)
    for name in re.findall(r'"#/components/schemas/(\w+)"', text):
        assert name in doc["components"]["schemas"], name
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            codes = set(op["responses"])
            assert {"400", "401"} <= codes, (method, path)
            ok = [c for c in codes if c.startswith("2")]
            assert len(ok) == 1 and op["operationId"], (method, path)
            params = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert params == set(re.findall(r"\{(\w+)\}", path)), (method, path)


def test_schemathesis_loads_the_document():
    import schemathesis
    schema = schemathesis.openapi.from_dict(document())
    operations = [op for op in schema.get_all_operations()]
    assert len(operations) == len(ROUTES)


def _identify(policy, headers):
    return policy.identify(headers, "127.0.0.1:1")


def _basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_identity_from_basic_auth_and_the_user_header():
    secrets = access.Secrets({"alice": "pw"})
    policy = Policy(secrets=secrets)
    assert _identify(policy, {}).identity is None
    alice = _identify(policy, {"Authorization": _basic("alice", "pw")})
    assert (alice.identity, alice.auth) == ("alice", "secret")
    bob = _identify(policy, {"X-HMS-User": "bob"})
    assert (bob.identity, bob.auth) == ("bob", "ugi")
    for headers in ({"Authorization": _basic("alice", "no")}, {"X-HMS-User": "alice"},
                    {"Authorization": "Bearer x"}, {"Authorization": "Basic !!!"},
                    {"Authorization": "Basic " + base64.b64encode(b"nocolon").decode()}):
        with pytest.raises(ApiError) as err:
            _identify(policy, headers)
        assert err.value.status == 401 and "WWW-Authenticate" in err.value.headers
    untrusting = Policy(access.Rules.parse({"trust_set_ugi": False, "rules": [
        {"branches": "*", "read": ["*"]}]}))
    assert _identify(untrusting, {"X-HMS-User": "bob"}).identity is None


def test_refusals_name_the_rule():
    rules = access.Rules.parse({"rules": [{"branches": "main", "read": ["*"],
                                           "write": ["alice"]}]})
    policy = Policy(rules)
    bob = Caller("bob", "ugi", "bob")
    with pytest.raises(ApiError) as err:
        policy.check(bob, "main", access.WRITE, "merge")
    assert err.value.status == 403
    assert err.value.message == ("access denied: user 'bob' may not write branch 'main' "
                                 "(rule 1: main write=[alice])")
    with pytest.raises(ApiError) as err:
        policy.check(Caller(), "dev", access.READ, "diff")
    assert err.value.status == 401
    assert err.value.message == "access denied: no rule of access rules covers branch 'dev'"
    policy.check(Caller("alice", "secret"), "main", access.WRITE, "merge")


def test_body_checks():
    def req(body):
        return Request("POST", "/api/v1/merge", {}, {}, body)

    spec = {"source": (str, True), "dry_run": (bool, False), "message": (str, False, True)}
    assert req({"source": "a", "message": ""}).fields(spec) == {"source": "a", "message": ""}
    for body in ([], {"source": ""}, {"source": 1}, {"source": "a", "dry_run": "yes"},
                 {"source": "a", "other": 1}, {}):
        with pytest.raises(ApiError) as err:
            req(body).fields(spec)
        assert err.value.status == 400


def test_a_bug_is_a_500_without_a_trace(monkeypatch, tmp_path):
    import hms_proxy.api.app as app_module
    from kvmodel.store.local import LocalStore

    store = LocalStore(tmp_path / "s")
    try:
        route = app_module.ROUTES[0]
        broken = app_module.Route(route.method, route.template, lambda app, req: 1 / 0,
                                  route.pattern)
        monkeypatch.setattr(app_module, "ROUTES", [broken, *app_module.ROUTES[1:]])
        status, body, _ = App(store).handle(Request("GET", PREFIX + route.template, {}, {}, None))
        assert status == 500 and body["error"]["type"] == "InternalError"
        assert "ZeroDivisionError" in body["error"]["message"] and "Traceback" not in str(body)
    finally:
        store.close()
