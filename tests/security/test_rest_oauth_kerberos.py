"""The Iceberg REST door's token endpoint (hms_proxy/rest/oauth.py) for a client authenticated
by Kerberos: ``POST /v1/oauth/tokens`` with ``Authorization: Negotiate`` (SPNEGO, a real MIT
KDC on loopback) answers a token of the principal's short name, which then names the caller as
SPNEGO itself would; a Negotiate token not accepted gets the OAuth2 ``invalid_client``."""
from __future__ import annotations

import base64
import json

import pytest
import requests

from hms_proxy.tools import kdc as kdc_tool
from hms_proxy.tools.metastores import start_proxy
from tests.support.kerberos import as_user, client_modules_missing, ready_as, started_realm

pytestmark = pytest.mark.skipif(bool(kdc_tool.missing() or client_modules_missing()),
                                reason=kdc_tool.missing() or client_modules_missing() or "")

RULES = {"rules": [{"branches": "main", "read": ["alice", "bob"], "write": ["alice"]}]}
FORM = {"grant_type": "client_credentials", "scope": "catalog"}


@pytest.fixture(scope="module")
def realm(tmp_path_factory):
    with started_realm(tmp_path_factory.mktemp("krb")) as realm:
        realm.http_keytab = realm.kdc.keytab("HTTP/localhost")
        yield realm


@pytest.fixture(scope="module")
def server(realm, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("oauth-krb")
    (workdir / "rules.json").write_text(json.dumps(RULES))
    proc = start_proxy(workdir, *realm.server_args(
        "--rest-port", "0", "--autocommit",
        "--http-kerberos-principal", f"HTTP/localhost@{realm.name}",
        "--http-kerberos-keytab", str(realm.http_keytab),
        "--access-rules", str(workdir / "rules.json"),
        "--audit-log", str(workdir / "audit.log")), env=realm.server_env(), ask=ready_as(realm))
    proc.audit = workdir / "audit.log"
    proc.rest = f"http://localhost:{proc.announced_port('rest')}"
    yield proc
    proc.stop()


def _negotiate(realm, user: str) -> str:
    import gssapi

    with as_user(realm, user):
        name = gssapi.Name(f"HTTP/localhost@{realm.name}", gssapi.NameType.kerberos_principal)
        context = gssapi.SecurityContext(name=name, usage="initiate",
                                         mech=gssapi.OID.from_int_seq("1.3.6.1.5.5.2"))
        return "Negotiate " + base64.b64encode(context.step()).decode()


def test_a_kerberos_client_gets_a_token_of_its_short_name(realm, server):
    answer = requests.post(f"{server.rest}/v1/oauth/tokens", data=FORM, timeout=30,
                           headers={"Authorization": _negotiate(realm, "alice")})
    assert answer.status_code == 200, answer.text
    token = answer.json()["access_token"]
    from pyiceberg.catalog.rest import RestCatalog
    catalog = RestCatalog("rest", uri=server.rest, warehouse="main", token=token)
    catalog.create_namespace("krb_oauth")
    assert ("krb_oauth",) in catalog.list_namespaces()
    entries = [json.loads(line) for line in server.audit.read_text().splitlines()]
    issued = [e for e in entries if e["method"] == "oauth_token"]
    assert issued[-1]["identity"] == "alice" and issued[-1]["auth"] == "kerberos"
    created = [e for e in entries if e["method"] == "create_database" and e["outcome"] == "ok"]
    assert created[-1]["identity"] == "alice" and created[-1]["auth"] == "token"


def test_a_negotiate_token_not_accepted_is_invalid_client(realm, server):
    answer = requests.post(f"{server.rest}/v1/oauth/tokens", data=FORM, timeout=30,
                           headers={"Authorization": "Negotiate " +
                                    base64.b64encode(b"garbage").decode()})
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_client"
    assert "Kerberos authentication failed" in answer.json()["error_description"]
    assert answer.headers["www-authenticate"].startswith("Negotiate")
    # no secrets configured: a client_id and secret are not taken either
    answer = requests.post(f"{server.rest}/v1/oauth/tokens", timeout=30,
                           data={**FORM, "client_id": "alice", "client_secret": "x"})
    assert answer.status_code == 401 and answer.json()["error"] == "invalid_client"
