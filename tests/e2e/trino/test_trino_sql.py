"""A real Trino runs the same SQL against the stock HMS 2.3.10 and against us, in one test.

One Trino coordinator serves the session (tests/support/trino.py); each metastore gets a Hive
catalog of its own, reached through a recording relay (tests/support/thrift_recorder.py) so the
test also sees which metastore calls Trino made: the same ones on both servers, or Trino took
another path because of something we answered. The oracle-side calls are what
tests/hms/conformance/recorded/ replays (``HMS_TRINO_RECORD=1`` rewrites that file).
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.e2e.trino import scenario
from tests.support.client import wait_served
from tests.support.process import REPO_ROOT

pytestmark = [pytest.mark.oracle, pytest.mark.slow, pytest.mark.trino]

ARTIFACTS = REPO_ROOT / "tests" / ".artifacts" / "trino"
RECORDED = REPO_ROOT / "tests" / "hms" / "conformance" / "recorded"


class CatalogRun:
    """The scenario's side in one catalog: a connection per Trino user (session properties
    and roles persist on it)."""

    def __init__(self, trino, catalog: str, schema: str, replacements: dict[str, str],
                 external: str):
        self.trino, self.catalog, self.schema = trino, catalog, schema
        self.conns: dict[str, object] = {}
        self.fill = {"catalog": catalog, "schema": schema, "external": external}
        self.replacements = {**replacements, catalog: "<catalog>", schema: "<schema>"}
        self.outcomes: list[tuple] = []

    def execute(self, sql: str, user: str = "hms") -> list:
        if user not in self.conns:
            self.conns[user] = self.trino.connect(catalog=self.catalog, schema=self.schema,
                                                  user=user)
        cur = self.conns[user].cursor()
        try:
            cur.execute(sql)
            return cur.fetchall()
        finally:
            cur.close()

    def step(self, step: scenario.Step) -> tuple:
        outcome = scenario.run(lambda sql: self.execute(sql, step.user), step, self.fill,
                               self.replacements)
        self.outcomes.append(outcome)
        return outcome


def recorded_calls(recorder, replacements: dict[str, str]) -> list[dict]:
    from tests.support.thrift_recorder import map_strings

    def fix(text: str) -> str:
        for old, new in replacements.items():
            text = text.replace(old, new)
        return text

    calls = recorder.take()
    start = calls[0][0] if calls else 0.0
    return [{"t": round(t - start, 4), "conn": conn, "method": name,
             "args": map_strings(args, fix)} for t, conn, name, args in calls]


@pytest.fixture(scope="module")
def trino():
    from tests.support.trino import real_trino

    return real_trino()


# Trino retries a failed metastore call up to 9 times, 1 s apart (its defaults), whatever the
# error: each ACID step against a Hive 2.3 metastore, the stock one and ours alike, waits ~18 s
# on the refused get_config_value(metastore.txn.timeout). The same retries, 20 ms apart, on
# both sides.
FAST_RETRIES = {"hive.metastore.thrift.client.min-backoff-delay": "20ms",
                "hive.metastore.thrift.client.max-backoff-delay": "20ms"}


def side_by_side(trino, oracle, target_uri: str, target: dict, tmp_path: Path,
                 record_as: str | None = None, steps: list | None = None) -> list[str]:
    """Run the scenario in a catalog over the stock HMS and one over ``target_uri``, step by
    step; the differences and failed expectations. ``target``: ``warehouse`` (the prefix of
    the target's table locations), ``external`` (a location for an external table) and
    optional ``catalog`` keywords of trino_local.hive_catalog (a lakeFS, extra properties).
    ``record_as``: the file of tests/hms/conformance/recorded/ the oracle's calls go to when
    HMS_TRINO_RECORD is set."""
    steps = scenario.STEPS if steps is None else steps
    from tests.support.thrift_recorder import Recorder
    from tests.support.trino import add_catalog

    schema = f"trs_{uuid.uuid4().hex[:8]}"
    extra = target.get("catalog", {}).get("extra") or {}
    external = tmp_path / "external_oracle"
    external.mkdir()
    host, port = target_uri.removeprefix("thrift://").rsplit(":", 1)
    recorders = {"oracle": Recorder((oracle.host, oracle.port)),
                 "proxy": Recorder((host, int(port)))}
    sides = {
        "oracle": CatalogRun(trino, add_catalog(recorders["oracle"].uri, prefix="oracle",
                                                extra=dict(FAST_RETRIES, **extra)),
                             schema, {"file:" + str(oracle.warehouse): "file:<WAREHOUSE>",
                                      str(oracle.warehouse): "<WAREHOUSE>",
                                      external.as_uri(): "<EXTERNAL>",
                                      "file:" + str(external): "<EXTERNAL>"},
                             external.as_uri()),
        "proxy": CatalogRun(trino, add_catalog(recorders["proxy"].uri, prefix="proxy",
                                               **dict(target.get("catalog", {}),
                                                      extra=dict(FAST_RETRIES, **extra))),
                            schema, {target["warehouse"]: "file:<WAREHOUSE>",
                                     target["external"]: "<EXTERNAL>"},
                            target["external"]),
    }
    if target["warehouse"].startswith("file:"):
        sides["proxy"].replacements[target["warehouse"].removeprefix("file:")] = "<WAREHOUSE>"
    if target["external"].startswith("file:///"):  # HMS shows file:/path
        sides["proxy"].replacements["file:" + target["external"].removeprefix("file://")] = \
            "<EXTERNAL>"

    problems = []
    transcript = []
    for i, step in enumerate(steps):
        got = {name: side.step(step) for name, side in sides.items()}
        transcript.append({"step": i, "sql": step.sql, **got})
        if got["oracle"] != got["proxy"]:
            problems.append(f"step {i} `{step.sql}`:\n  stock HMS: {got['oracle']}\n"
                            f"  hms-proxy: {got['proxy']}")
        for name in sides:
            why = scenario.check_expectation(step, got[name], sides[name].fill)
            if why:
                problems.append(f"step {i} `{step.sql}` on {name}: {why}")
    for side in sides.values():
        trino.drop_catalog(side.catalog)

    calls = {name: recorded_calls(rec, sides[name].replacements)
             for name, rec in recorders.items()}
    for rec in recorders.values():
        rec.close()
    label = target.get("label", "local")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"sql-transcript-{label}.json").write_text(
        json.dumps(transcript, indent=1, default=str))
    for name, seq in calls.items():
        (ARTIFACTS / f"calls-{label}-{name}.json").write_text(json.dumps(seq, indent=0))
    if record_as and os.environ.get("HMS_TRINO_RECORD"):
        RECORDED.mkdir(parents=True, exist_ok=True)
        out = {"trino_version": trino.version, "schema": "<schema>",
               "catalog": target.get("catalog", {}).get("extra") or {},
               "calls": calls["oracle"]}
        (RECORDED / record_as).write_text(json.dumps(out, indent=0) + "\n")

    # The same SQL made Trino call the same methods, as many times, on both servers: another
    # method or count means it took another path (a fallback, a retry) because of an answer of
    # ours. Except: Trino probes whether a metastore takes date column statistics by sending
    # them in a call of their own until one succeeds, and its concurrent INSERT threads send
    # more or fewer such calls depending on timing.
    # Over lakeFS Trino writes through its native S3 file system, not the Hadoop one it uses
    # for the stock HMS's file: tables, and its S3 write path makes other calls (an INSERT
    # OVERWRITE of an existing partition on S3 does not alter the partition): there only the
    # methods called are compared.
    timing = {"update_partition_column_statistics", "update_table_column_statistics"}
    same_file_system = "lakefs" not in target.get("catalog", {})
    counts = {name: collections.Counter(c["method"] for c in seq) for name, seq in calls.items()}
    compared = set(counts["oracle"]) | set(counts["proxy"])
    diff = {m: (counts["oracle"][m], counts["proxy"][m]) for m in compared
            if (m in counts["oracle"]) != (m in counts["proxy"])
            or (same_file_system and m not in timing
                and counts["oracle"][m] != counts["proxy"][m])}
    if diff:
        problems.append(f"metastore calls differ (stock HMS, hms-proxy): {diff}")
    return problems


def test_trino_sql_matches_stock_hms(trino, oracle, proxy, tmp_path):
    """Our server on the embedded store (the session's) against the stock HMS."""
    external = tmp_path / "external_proxy"
    external.mkdir()
    problems = side_by_side(trino, oracle, proxy.uri,
                            {"warehouse": "file:" + str(proxy.warehouse),
                             "external": external.as_uri()}, tmp_path, record_as="trino.json")
    assert len(scenario.STEPS) >= 40
    assert not problems, "\n".join(problems)


def test_trino_with_a_catalog_name_matches_stock_hms_31(trino, proxy, tmp_path):
    """``hive.metastore.thrift.catalog-name=hive``: Trino names every database ``@hive#db``, as
    against a Hive 3.x metastore; the oracle is the stock HMS 3.1.3 (Maven Central). The
    transactional-table steps are left out: the stock 3.1.3 standalone metastore refuses every
    full ACID table (its ACID formats live in hive-exec, not on its class path), and Trino's
    ACID statements need ``serve --min-client-generation 3.1`` here (test_trino_acid.py)."""
    from hms_proxy.tools.hive31_local import start_stock_hms31

    external = tmp_path / "external_proxy"
    external.mkdir()
    steps = [s for s in scenario.STEPS if " acid" not in s.sql]
    assert len(scenario.STEPS) - len(steps) == 5
    stock = start_stock_hms31(tmp_path / "stock-hms-3.1.3")
    try:
        problems = side_by_side(
            trino, stock, proxy.uri,
            {"warehouse": "file:" + str(proxy.warehouse), "external": external.as_uri(),
             "label": "catalog-name",
             "catalog": {"extra": {"hive.metastore.thrift.catalog-name": "hive"}}},
            tmp_path, steps=steps)
    finally:
        stock.stop()
    assert not problems, "\n".join(problems)


def grant_admin_role(server, user: str) -> None:
    """What a metastore administrator does once: the admin role to ``user``."""
    from tests.support.client import connect
    from tests.support.client import ttypes as T

    with connect(server) as c:
        held = c.list_roles(user, T.PrincipalType.USER)
        if not any(r.roleName == "admin" for r in held):
            c.grant_role("admin", user, T.PrincipalType.USER, "admin", T.PrincipalType.ROLE,
                         False)


def test_trino_sql_standard_security_matches_stock_hms(trino, oracle, proxy, tmp_path):
    """Trino's sql-standard access control keeps roles and grants in the metastore."""
    for server in (oracle, proxy):
        grant_admin_role(server, "alice")
    external = tmp_path / "external_proxy"
    external.mkdir()
    problems = side_by_side(trino, oracle, proxy.uri,
                            {"label": "security", "warehouse": "file:" + str(proxy.warehouse),
                             "external": external.as_uri(),
                             "catalog": {"extra": {"hive.security": "sql-standard"}}},
                            tmp_path, record_as="trino-sql-standard.json",
                            steps=scenario.SECURITY_STEPS)
    assert not problems, "\n".join(problems)


@pytest.fixture
def lake(tmp_path):
    """Our server over a fresh repository of the session's real lakeFS, serving main on one
    port and the branch dev on another; Trino reaches the data through lakeFS's S3 gateway."""
    import lakefs_sdk  # noqa: F401

    from tests.support.lakefs import new_repository, real_lakefs
    from tests.support.proxy import start_proxy

    lakefs = real_lakefs()
    repo = new_repository("trino")
    env = dict(os.environ, **lakefs.env())
    store = f"lakefs://{repo}"
    made = subprocess.run([sys.executable, "-m", "hms_proxy.cli", "branch", "create", "dev",
                           "--from", "main", "--store", store], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    server = start_proxy(tmp_path / "lake", "--bind", "0=dev", store=store,
                         warehouse=False, env=env)
    dev_port = server.ref_port("dev")
    yield {"lakefs": lakefs, "repo": repo, "store": store, "env": env, "server": server,
           "main_uri": server.uri, "dev_uri": f"thrift://127.0.0.1:{dev_port}"}
    server.stop()


def cli(lake, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hms_proxy.cli", *args, "--store", lake["store"]],
                          cwd=REPO_ROOT, env=lake["env"], capture_output=True, text=True,
                          timeout=300)


def test_trino_sql_on_a_lakefs_branch_matches_stock_hms(trino, oracle, lake, tmp_path):
    """The same scenario with our server over a real lakeFS, on the branch dev: table files
    go through lakeFS's S3 gateway (Trino's native S3 file system, path-style)."""
    repo = lake["repo"]
    problems = side_by_side(
        trino, oracle, lake["dev_uri"],
        {"label": "lakefs", "warehouse": f"s3a://{repo}/dev/warehouse",
         "external": f"s3a://{repo}/dev/external/trino",
         "catalog": {"lakefs": lake["lakefs"]}}, tmp_path)
    assert not problems, "\n".join(problems)


def test_trino_sees_a_branch_and_main_only_after_the_merge(trino, lake):
    """Trino on dev's listener writes a table; Trino on main's does not see it until dev is
    committed and merged, then reads the same rows from main's files."""
    from tests.support.trino import add_catalog

    dev = add_catalog(lake["dev_uri"], prefix="dev", lakefs=lake["lakefs"])
    main = add_catalog(lake["main_uri"], prefix="main", lakefs=lake["lakefs"])
    try:
        trino.execute("CREATE SCHEMA shop", catalog=dev)
        trino.execute("CREATE TABLE shop.orders WITH (format = 'PARQUET', "
                      "partitioned_by = ARRAY['ds']) AS SELECT orderkey, totalprice, "
                      "orderpriority AS ds FROM tpch.tiny.orders", catalog=dev)
        want = trino.execute("SELECT ds, count(*), sum(totalprice) FROM shop.orders "
                             "GROUP BY ds ORDER BY ds", catalog=dev)
        assert len(want) == 5 and sum(r[1] for r in want) == 15000
        assert trino.execute("SHOW SCHEMAS LIKE 'shop'", catalog=main) == []
        assert trino.execute("SHOW SCHEMAS LIKE 'shop'", catalog=dev) == [["shop"]]
        # a qualified schema name reads the branch from main's listener too
        assert trino.execute('SELECT ds, count(*), sum(totalprice) FROM "shop@dev".orders '
                             "GROUP BY ds ORDER BY ds", catalog=main) == want
        # the branch's data files are on dev only
        assert cli(lake, "commit", "dev", "-m", "orders from Trino").returncode == 0
        merged = cli(lake, "merge", "dev", "main", "-m", "review done")
        assert merged.returncode == 0, merged.stdout + merged.stderr
        # the CLI's merge is another process's change: main's server sees it within its bound
        wait_served(lake["server"], lambda c: "shop" in c.get_all_databases(),
                    what="main's server sees the merged schema")
        assert trino.execute("SHOW SCHEMAS LIKE 'shop'", catalog=main) == [["shop"]]
        got = trino.execute("SELECT ds, count(*), sum(totalprice) FROM shop.orders "
                            "GROUP BY ds ORDER BY ds", catalog=main)
        assert got == want
        paths = trino.execute('SELECT DISTINCT "$path" FROM shop.orders', catalog=main)
        assert paths and all(p[0].startswith(f"s3a://{lake['repo']}/main/") for p in paths), paths
    finally:
        trino.drop_catalog(dev)
        trino.drop_catalog(main)


def test_trino_creates_then_writes_a_table_on_lakefs(trino, lake):
    """CREATE TABLE before any file exists, then INSERT and SELECT, as on local files; the
    metastore made the table's directory when it created the table (a directory marker object
    in lakeFS), as the stock HMS makes it on S3."""
    import lakefs_sdk

    from tests.support.trino import add_catalog

    dev = add_catalog(lake["dev_uri"], prefix="mk", lakefs=lake["lakefs"])
    try:
        trino.execute("CREATE SCHEMA marked", catalog=dev)
        trino.execute("CREATE TABLE marked.plain (x integer, why varchar) "
                      "WITH (format = 'PARQUET')", catalog=dev)
        with lake["lakefs"].sdk() as client:
            marker = lakefs_sdk.ObjectsApi(client).stat_object(
                lake["repo"], "dev", "warehouse/marked.db/plain/")
        assert marker.size_bytes == 0
        assert trino.execute("INSERT INTO marked.plain VALUES (1, 'x'), (2, 'y')",
                             catalog=dev) == [[2]]
        assert trino.execute("SELECT x, why FROM marked.plain ORDER BY x", catalog=dev) == \
            [[1, "x"], [2, "y"]]
        trino.execute("CREATE TABLE marked.parts (x integer, ds varchar) "
                      "WITH (format = 'PARQUET', partitioned_by = ARRAY['ds'])", catalog=dev)
        assert trino.execute("INSERT INTO marked.parts VALUES (1, 'a')", catalog=dev) == [[1]]
        assert trino.execute("SELECT x, ds FROM marked.parts", catalog=dev) == [[1, "a"]]
    finally:
        trino.drop_catalog(dev)
