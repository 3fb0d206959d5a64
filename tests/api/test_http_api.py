"""The HTTP API against real server processes: ``serve --http-port`` beside Thrift (every
endpoint, paging, errors), the access rules with two users (Basic auth against the secrets
file, the X-HMS-User header), the audit log, ``hms-proxy api`` alone (read-only) and its
start-up errors. The store is ``tests/support/http_store.py``'s (no Spark)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hms_proxy.api.openapi import document
from tests.support import http_store
from tests.support.client import connect
from tests.support.http_api import ApiProcess, Client, ServeWithHttp
from tests.support.process import REPO_ROOT

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("http-api")
    store = http_store.build(root)
    srv = ServeWithHttp(root / "server", store)
    yield srv
    srv.stop()


@pytest.fixture
def api(server) -> Client:
    return Client(server.base)


def no_trace(answer):
    assert "Traceback" not in json.dumps(answer.body), answer.body
    return answer


# --- the server, the document, the console ----------------------------------------------------
def test_thrift_and_http_are_served_by_one_process(server, api):
    with connect(server.proc) as client:
        assert "shop" in client.get_all_databases()
    info = api.get("/info")
    assert info.status == 200
    assert info.body["service"] == "hms-proxy" and info.body["default_branch"] == "main"
    assert info.body["caller"] == {"identity": None, "auth": "none"}
    assert api.call("GET", "/api/v1/info", headers={"X-HMS-User": "erin"}).body["caller"] == {
        "identity": "erin", "auth": "ugi"}


def test_openapi_document_and_console_files(api):
    doc = api.call("GET", "/api/openapi.json")
    assert doc.status == 200 and doc.body == document()
    assert doc.body["openapi"].startswith("3.")
    root = api.call("GET", "/")
    assert root.status == 200 and b"<main" in root.body  # urllib followed the redirect
    page = api.call("GET", "/console/")
    assert page.headers["Content-Type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assert b"/console/js/main.js" in page.body and b"http" not in page.body.split(b"<body")[0] \
        .replace(b"http-equiv", b"")
    js = api.call("GET", "/console/js/main.js")
    assert js.status == 200 and js.headers["Content-Type"].startswith("text/javascript")
    for path in ("/console/nope.js", "/console/../api/openapi.json", "/etc/passwd",
                 "/console/%2e%2e/server.py"):
        missing = api.call("GET", path)
        assert missing.status == 404 and missing.body["error"]["type"] == "NotFound", path


def test_unknown_endpoints_and_methods(api):
    assert no_trace(api.get("/nope")).status == 404
    wrong = api.call("PATCH", "/api/v1/refs")
    assert wrong.status == 405 and wrong.headers["Allow"] == "GET"
    assert api.call("DELETE", "/api/v1/merge").status == 405


# --- refs --------------------------------------------------------------------------------------
def test_refs_list(api):
    refs = api.get("/refs").body
    branches = {b["name"]: b for b in refs["branches"]}
    assert {"main", "dev", "prod", "dirty"} <= set(branches)
    assert branches["prod"]["protected"] and branches["dirty"]["uncommitted"]
    assert branches["dev"]["commit"]["message"].startswith("dev: discount column")
    assert [t["name"] for t in refs["tags"]] == ["v1"]


def test_branch_lifecycle(api):
    created = api.post("/branches", {"name": "feature-1", "from": "v1"})
    assert created.status == 201 and created.body["name"] == "feature-1"
    assert created.body["head"] == api.get("/tags/v1").body["commit"]
    assert api.post("/branches", {"name": "feature-1"}).status == 409
    assert api.post("/branches", {"name": "v1"}).status == 409  # a tag's name
    bad = api.post("/branches", {"name": "no/slash"})
    assert bad.status == 400 and bad.error["type"] == "InvalidRef"
    assert api.post("/branches", {"name": "x", "from": "nowhere"}).status == 404
    assert api.post("/branches", {"name": "x", "color": "red"}).status == 400
    assert api.post("/branches", {"name": 3}).status == 400
    protect = api.put("/branches/feature-1/protection", {"protected": True})
    assert protect.status == 200 and protect.body["protected"] is True
    refused = api.delete("/branches/feature-1")
    assert refused.status == 409 and refused.error["type"] == "ProtectedRef"
    assert api.put("/branches/feature-1/protection", {"protected": False}).body["protected"] is False
    deleted = api.delete("/branches/feature-1")
    assert deleted.status == 200 and deleted.body["deleted"] == "feature-1"
    assert api.get("/branches/feature-1").status == 404
    assert api.put("/branches/nope/protection", {"protected": True}).status == 404
    assert api.put("/branches/main/protection", {"protected": "yes"}).status == 400


def test_tag_lifecycle(api):
    created = api.post("/tags", {"name": "t-dev", "ref": "dev"})
    assert created.status == 201
    assert created.body["commit_info"]["message"].startswith("dev: discount")
    assert api.post("/tags", {"name": "t-dev", "ref": "dev"}).status == 409
    assert api.post("/tags", {"name": "main", "ref": "dev"}).status == 409
    assert api.post("/tags", {"name": "t2"}).status == 400
    assert api.get("/tags/t-dev").body["name"] == "t-dev"
    assert api.delete("/tags/t-dev").status == 200
    assert api.delete("/tags/t-dev").status == 404


# --- commits -----------------------------------------------------------------------------------
def test_log_is_paged(api):
    whole = api.get("/commits", ref="dev").body
    messages = [c["message"] for c in whole["commits"]]
    assert messages[0].startswith("dev: discount") and messages[-1] == "Repository created"
    assert whole["next_offset"] is None
    first = api.get("/commits", ref="dev", limit=1).body
    assert len(first["commits"]) == 1 and first["next_offset"] == 1
    second = api.get("/commits", ref="dev", limit=1, offset=first["next_offset"]).body
    assert second["commits"][0]["id"] == whole["commits"][1]["id"]
    touching = api.get("/commits", ref="dev", path="shop.events").body["commits"]
    assert [c["message"] for c in touching] == [messages[0]]
    assert api.get("/commits", ref="dev", limit=0).status == 400
    assert api.get("/commits", ref="dev", limit="x").status == 400
    assert api.get("/commits", ref="dev", path="a.b.c").status == 400
    assert api.get("/commits", ref="nope").status == 404
    assert api.get("/commits", ref="main~1").body["commits"][0]["message"].startswith("seed")


def test_show_commit(api):
    head = api.get("/branches/dev").body["head"]
    shown = api.get(f"/commits/{head[:10]}").body
    assert shown["commit"]["id"] == head
    group = next(g for g in shown["diff"]["groups"] if g["table"] == "orders")
    assert group["partitions"] == {"added": 3, "removed": 1, "modified": 0}
    root = api.get("/commits", ref="main").body["commits"][-1]["id"]
    assert api.get(f"/commits/{root}").body["diff"] is None
    assert api.get("/commits/abcdef123456").status == 404


# --- diff --------------------------------------------------------------------------------------
def test_diff_grouped_with_rollups(api):
    diff = no_trace(api.get("/diff", left="main", right="dev")).body
    assert diff["left"]["ref"] == "main" and diff["right"]["branch"] == "dev"
    groups = {(g["db"], g["table"]): g for g in diff["groups"]}
    orders = groups[("shop", "orders")]
    fields = {f["field"]: f for f in orders["changes"][0]["fields"]}
    assert fields["columns.added"]["after"] == {"discount": "double"}
    assert fields["parameters.owner_team"] == {"field": "parameters.owner_team",
                                               "before": "finance", "after": "growth"}
    assert orders["children"] == {"partition": {"added": 3, "removed": 1, "modified": 0}}
    assert groups[("shop", "events")]["changes"][0]["change"] == "added"
    assert diff["totals"]["partition"] == {"added": 3, "removed": 1, "modified": 0}
    paged = api.get("/diff", left="main", right="dev", limit=1).body
    assert paged["total"] == 2 and len(paged["groups"]) == 1 and paged["next_offset"] == 1
    only = api.get("/diff", left="main", right="dev", path="shop.orders").body
    assert [g["table"] for g in only["groups"]] == ["orders"]
    same = api.get("/diff", left="main", right="main").body
    assert same["total"] == 0 and same["groups"] == []


def test_diff_children_paged_and_filtered(api):
    page = api.get("/diff/children", left="main", right="dev", db="shop", table="orders",
                   limit=2).body
    assert page["total"] == 4 and [c["name"] for c in page["changes"]] == ["ds=3", "ds=4"]
    assert page["changes"][0]["change"] == "removed" and page["next_offset"] == 2
    rest = api.get("/diff/children", left="main", right="dev", db="shop", table="orders",
                   offset=2, limit=2).body
    assert [c["name"] for c in rest["changes"]] == ["ds=5", "ds=6"]
    assert rest["next_offset"] is None
    filtered = api.get("/diff/children", left="main", right="dev", db="shop", table="orders",
                       filter="DS=5").body
    assert [c["name"] for c in filtered["changes"]] == ["ds=5"]
    assert api.get("/diff/children", left="main", right="dev", db="shop", table="orders",
                   kind="bogus").status == 400
    assert api.get("/diff/children", left="main", right="dev", db="shop").status == 400


def test_diff_errors(api):
    missing = no_trace(api.get("/diff", left="main"))
    assert missing.status == 400 and "right" in missing.error["message"]
    unknown = api.get("/diff", left="main", right="nope")
    assert unknown.status == 404 and unknown.error["type"] == "RefNotFound"
    assert api.get("/diff", left="main", right="dev..x").status == 400
    assert api.call("GET", "/api/v1/diff?left=main&left=dev&right=dev").status == 400


# --- merge -------------------------------------------------------------------------------------
def test_merge_dry_run_reports_conflicts_as_data(api):
    preview = api.post("/merge", {"source": "dev", "dest": "main", "dry_run": True})
    assert preview.status == 200
    body = preview.body
    assert body["mergeable"] is False and body["conflicts_total"] == 1
    conflict = body["conflicts"][0]
    assert conflict == {"type": "VALUE_DIFFERS", "kind": "table", "path": ["shop", "orders"],
                        "fields": ["parameters.owner_team"], "source": "growth",
                        "dest": "finance", "key": "db/shop/table/orders"}
    resolved = api.post("/merge", {"source": "dev", "dest": "main", "dry_run": True,
                                   "strategy": "source-wins"}).body
    assert resolved["mergeable"] is True and resolved["resolved_by"] == "source-wins"
    assert resolved["applied"]["by_kind"]["partition"] == {"added": 3, "removed": 1,
                                                           "modified": 0}


def test_merge_errors(api):
    stopped = no_trace(api.post("/merge", {"source": "dev", "dest": "main"}))
    assert stopped.status == 409 and stopped.error["type"] == "MergeConflict"
    assert stopped.body["merge"]["conflicts"][0]["fields"] == ["parameters.owner_team"]
    assert api.post("/merge", {"source": "dev", "dest": "v1"}).status == 409
    dirty = api.post("/merge", {"source": "dev", "dest": "dirty"})
    assert dirty.status == 409 and dirty.error["type"] == "DirtyBranch"
    veto = api.post("/merge", {"source": "narrow", "dest": "prod"})
    assert veto.status == 409 and veto.error["type"] == "HookVeto"
    assert veto.error["messages"] == ["table shop.orders: column 'flag' cannot be dropped on "
                                      "protected branch prod"]
    assert api.post("/merge", {"source": "narrow", "dest": "prod", "dry_run": True}).status == 409
    assert api.post("/merge", {"source": "dev", "dest": "main", "strategy": "x"}).status == 400
    assert api.post("/merge", {"source": "dev"}).status == 400
    assert api.post("/merge", {"source": "nope", "dest": "main"}).status == 404
    text = api.call("POST", "/api/v1/merge", headers={"Content-Type": "text/plain"},
                    body=None)
    assert text.status == 400  # no body at all
    raw = Client(api.base)
    import urllib.request

    req = urllib.request.Request(api.base + "/api/v1/merge", data=b"{nope", method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=10)
    except urllib.error.HTTPError as exc:
        assert exc.code == 400 and b"not valid JSON" in exc.read()
    req = urllib.request.Request(api.base + "/api/v1/merge", data=b"source=dev", method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        urllib.request.urlopen(req, timeout=10)
    except urllib.error.HTTPError as exc:
        assert exc.code == 415
    assert raw.get("/info").status == 200  # the server is fine after all of it


def test_merge_for_real(api):
    api.post("/branches", {"name": "hotfix", "from": "main"})
    merged = api.post("/merge", {"source": "dev", "dest": "hotfix", "strategy": "source-wins",
                                 "message": "dev into hotfix"})
    assert merged.status == 200, merged.body
    commit = merged.body["commit"]
    assert commit["message"] == "dev into hotfix" and len(commit["parents"]) == 2
    assert commit["metadata"] == {"via": "http", "auth": "none"}
    table = api.get("/databases/shop/tables/orders", ref="hotfix").body
    assert "discount" in [c["name"] for c in table["columns"]]
    assert table["parameters"]["owner_team"] == "growth"
    again = api.post("/merge", {"source": "dev", "dest": "hotfix"}).body
    assert again["up_to_date"] is True and again["commit"] is None


# --- catalog -----------------------------------------------------------------------------------
def test_catalog_at_refs(api):
    dbs = api.get("/databases").body
    assert [d["name"] for d in dbs["databases"]] == ["default", "shop"]
    assert dbs["databases"][1]["description"] == "the shop"
    shop = api.get("/databases/shop", ref="dev").body
    assert [t["name"] for t in shop["tables"]] == ["events", "flat", "orders"]
    assert api.get("/databases/shop", ref="v1").body["tables"][-1]["name"] == "orders"
    table = api.get("/databases/shop/tables/orders", ref="dev").body
    assert [c["name"] for c in table["columns"]][-1] == "discount"
    assert table["partition_keys"] == [{"name": "ds", "type": "string", "comment": None}]
    assert table["partition_count"] == 5 and table["location"].endswith("/orders")
    assert table["statistics"] == {"partition_sets": 2, "table_level": False}
    main = api.get("/databases/shop/tables/orders").body
    assert main["partition_count"] == 3 and main["parameters"] == {"owner_team": "finance"}
    assert api.get("/databases/shop/tables/nope").status == 404
    assert api.get("/databases/nope").status == 404
    assert api.get("/databases/shop/tables/orders", ref="nope").status == 404
    assert api.get("/databases/SHOP/tables/Orders").status == 200  # names are lower-cased


def test_partitions_paged_and_filtered(api):
    page = api.get("/databases/shop/tables/orders/partitions", ref="dev", limit=2).body
    assert page["total"] == 5 and [p["name"] for p in page["partitions"]] == ["ds=1", "ds=2"]
    assert page["partitions"][0]["values"] == ["1"] and page["next_offset"] == 2
    last = api.get("/databases/shop/tables/orders/partitions", ref="dev", offset=4).body
    assert [p["name"] for p in last["partitions"]] == ["ds=6"] and last["next_offset"] is None
    only = api.get("/databases/shop/tables/orders/partitions", ref="dev", filter="=5").body
    assert only["total"] == 1 and only["partitions"][0]["name"] == "ds=5"
    assert api.get("/databases/shop/tables/orders/partitions", offset=-1).status == 400


# --- statistics --------------------------------------------------------------------------------
STATS = "/databases/shop/tables/orders/stats"


def test_statistics_overview_and_summary(api):
    overview = api.get(STATS).body
    assert overview["available"] and overview["partition_sets"] == 2
    assert {c["name"]: c["numeric"] for c in overview["columns"]}["price"] is True
    assert api.get(STATS + "/partitions").body["partitions"] == ["ds=1", "ds=2"]
    summary = api.get(STATS + "/summary", columns="price,name").body
    assert [r["column"] for r in summary["rows"]] == ["price", "name"]
    assert summary["rows"][0]["count"] == 8 and summary["rows"][0]["max"] == "30.0"
    one = api.get(STATS + "/summary", partition="ds=2", columns="price").body
    assert one["partition"] == "ds=2" and one["rows"][0]["count"] == 3
    flat = api.get("/databases/shop/tables/flat/stats/summary").body
    assert len(flat["rows"]) == 5 and flat["stale"] is False


def test_statistics_top_and_histogram(api):
    top = api.get(STATS + "/top", column="name", n=2).body
    assert top["values"] == [{"value": "a", "frequency": 3}, {"value": "b", "frequency": 3}]
    part = api.get(STATS + "/top", column="name", partition="ds=2").body
    assert part["values"][0] == {"value": "b", "frequency": 2}
    hist = api.get(STATS + "/histogram", column="price", partition="ds=1").body
    assert sum(b["count"] for b in hist["bins"]) == 5 and hist["unit"] is None
    ranged = api.get(STATS + "/histogram", column="price", partition="ds=1", lo="5",
                     hi="100").body
    assert ranged["range"] == {"lo": 5.0, "hi": 100.0}
    assert all(b["upper"] >= 5 for b in ranged["bins"]) and len(ranged["bins"]) < 4
    day = api.get(STATS + "/histogram", column="day", partition="ds=2", lo="2020-02-11").body
    assert day["unit"].startswith("days") and day["range"]["lo"] == 18303.0


def test_statistics_errors(api):
    for query, status in [({"column": "nope"}, 404), ({"column": "name"}, 404),
                          ({"column": "price", "lo": "abc"}, 400),
                          ({"column": "price", "lo": "9", "hi": "1"}, 400),
                          ({}, 400), ({"column": "price", "partition": "ds=9"}, 404)]:
        answer = no_trace(api.get(STATS + "/histogram", **query))
        assert answer.status == status, (query, answer.body)
    assert api.get(STATS + "/top", column="price").status == 404  # not discrete
    assert api.get(STATS + "/top", column="name", n=5000).status == 400
    assert api.get(STATS + "/summary", columns="nope").status == 404
    events = api.get("/databases/shop/tables/events/stats", ref="dev").body
    assert events["available"] is False
    assert api.get("/databases/shop/tables/events/stats/summary", ref="dev").status == 404


# --- access rules, two users -------------------------------------------------------------------
RULES = {"rules": [
    {"branches": "main", "read": ["*"], "write": ["alice"]},
    {"branches": ["dev", "dev-*", "hotfix"], "read": ["*"], "write": ["*"]},
    {"branches": "release-*", "read": ["*"], "protected": True},
    {"branches": "secret", "read": ["alice"], "write": ["alice"]},
    {"branches": ["v1", "prod", "dirty", "scratch"], "read": ["*"]},
]}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    root = tmp_path_factory.mktemp("http-access")
    store = http_store.build(root)
    from kvmodel.store import open_store

    s = open_store(store)
    s.create_branch("secret", "main")
    s.create_branch("release-1", "main")
    s.close()
    (root / "rules.json").write_text(json.dumps(RULES))
    (root / "secrets.json").write_text(json.dumps({"alice": "al1ce-pw"}))
    audit = root / "audit.jsonl"
    srv = ServeWithHttp(root / "server", store, "--access-rules", str(root / "rules.json"),
                        "--auth-secrets", str(root / "secrets.json"), "--audit-log", str(audit))
    srv.audit = audit
    yield srv
    srv.stop()


def test_rules_refuse_and_name_the_rule(guarded):
    bob = Client(guarded.base, user="bob")
    refused = bob.post("/merge", {"source": "dev", "dest": "main", "strategy": "source-wins"})
    assert refused.status == 403 and refused.error["type"] == "AccessDenied"
    assert refused.error["message"] == ("access denied: user 'bob' may not write branch 'main' "
                                        "(rule 1: main write=[alice])")
    secret = bob.get("/databases", ref="secret")
    assert secret.status == 403
    assert secret.error["message"] == ("access denied: user 'bob' may not read branch 'secret' "
                                       "(rule 4: secret read=[alice] write=[alice])")
    release = bob.post("/branches", {"name": "release-2", "from": "main"})
    assert release.status == 403 and "is writable only by merge (rule 3: release-* " \
        "protected)" in release.error["message"]
    nobody = Client(guarded.base).get("/diff", left="main", right="secret")
    assert nobody.status == 401 and nobody.headers["WWW-Authenticate"].startswith("Basic")
    assert "anonymous caller" in nobody.error["message"]
    uncovered = bob.get("/commits", ref="zz-unknown")
    assert uncovered.status == 403 and "no rule of" in uncovered.error["message"]
    # a dry run only reads: allowed to anyone who may read both sides
    assert bob.post("/merge", {"source": "dev", "dest": "main", "dry_run": True}).status == 200
    # the listing shows only what the caller may read
    names = {b["name"] for b in bob.get("/refs").body["branches"]}
    assert "secret" not in names and {"main", "dev"} <= names


def test_secrets_and_the_second_user(guarded):
    claimed = Client(guarded.base, user="alice").get("/info")
    assert claimed.status == 401 and "presented no secret" in claimed.error["message"]
    wrong = Client(guarded.base, basic=("alice", "nope")).get("/info")
    assert wrong.status == 401 and "presented a wrong secret" in wrong.error["message"]
    alice = Client(guarded.base, basic=("alice", "al1ce-pw"))
    assert alice.get("/info").body["caller"] == {"identity": "alice", "auth": "secret"}
    assert alice.get("/databases", ref="secret").status == 200
    assert "secret" in {b["name"] for b in alice.get("/refs").body["branches"]}
    merged = alice.post("/merge", {"source": "dev", "dest": "main", "strategy": "source-wins"})
    assert merged.status == 200 and merged.body["commit"]["author"] == "alice"
    assert merged.body["commit"]["metadata"]["auth"] == "secret"
    # an unlisted user over Basic is a claimed identity, like set_ugi without a secret
    carol = Client(guarded.base, basic=("carol", "whatever")).get("/info").body["caller"]
    assert carol == {"identity": "carol", "auth": "ugi"}
    entries = [json.loads(line) for line in guarded.audit.read_text().splitlines()]
    ok = [e for e in entries if e["outcome"] == "ok"]
    assert any(e["method"] == "merge" and e["identity"] == "alice" and e["auth"] == "secret"
               and e["ref"] == "main" for e in ok)
    denied = [e for e in entries if e["outcome"] == "denied"]
    assert any(e["identity"] == "bob" and e["method"] == "merge" and
               "may not write branch 'main'" in e["error"] for e in denied)
    assert any(e["user"] == "alice" and "presented a wrong secret" in e["error"]
               for e in denied)


# --- hms-proxy api alone -----------------------------------------------------------------------
def test_api_command_read_only(tmp_path):
    store = http_store.build(tmp_path)
    srv = ApiProcess(tmp_path / "api", store, "--read-only")
    try:
        client = Client(srv.base)
        assert client.get("/info").body["read_only"] is True
        refused = client.post("/branches", {"name": "x"})
        assert refused.status == 403
        assert refused.error["message"].startswith("access denied: listener 127.0.0.1:")
        assert refused.error["message"].endswith("is read-only (create_branch writes)")
        assert client.post("/merge", {"source": "dev", "dest": "main",
                                      "dry_run": True}).status == 200
        assert client.get("/diff", left="main", right="dev").status == 200
    finally:
        srv.stop()


def test_api_command_start_errors(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "hms_proxy.cli", "api", *args],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)

    missing = run("--store", str(tmp_path / "nothing"), "--port", "0")
    assert missing.returncode == 2 and "no store at" in missing.stderr
    store = http_store.build(tmp_path / "s")
    (tmp_path / "bad.json").write_text("{")
    bad = run("--store", str(store), "--port", "0", "--access-rules", str(tmp_path / "bad.json"))
    assert bad.returncode == 2 and "--access-rules" in bad.stderr and "Traceback" not in bad.stderr
    ref = run("--store", str(store), "--port", "0", "--ref", "nope")
    assert ref.returncode == 2 and "hms-proxy: error:" in ref.stderr
