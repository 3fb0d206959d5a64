"""pytest plugin: a metastore for the test session, and a branch of a seeded catalog per test.

Loaded by pytest whenever hms-proxy is installed (the ``pytest11`` entry point
``hms_proxy``); ``-p no:hms_proxy`` turns it off. It adds nothing to a run until a test asks
for one of its fixtures:

``hms_metastore`` (session)
    ``hms-proxy serve`` over a temporary embedded store, started once per session (per
    pytest-xdist worker) on free ports and stopped at the end; ``--hms-store DIR|lakefs://REPO``
    serves that store instead, ``--hms-uri thrift://HOST:PORT --hms-api http://HOST:PORT``
    uses a running server (its ``--http-port`` makes the branches and ports).
``hms_seed`` (session)
    Override it in a ``conftest.py`` to load the seed (through ``hms_spark_session``,
    ``hms_port.uri`` or ``hms_seed_branch.uri``); what it writes is committed and tagged once.
``hms_branch`` (function)
    A branch of the seed for the test, dropped after it (kept when it failed and
    ``--hms-keep`` was given: the report names it and the ``hms-proxy diff`` that shows what the
    test did). ``.uri`` is a Thrift port bound to it, ``.spark_conf()`` and
    ``.trino_properties()`` the settings of a client of it, ``.db("sales")`` its
    ``sales@branch`` form, ``.warehouse`` its own warehouse.
``hms_port`` (session)
    One Thrift port of the session that serves the running test's branch (the seed's while
    seeding): a client that connects once, as a SparkSession does, follows the tests.
``hms_spark`` (function), ``hms_spark_session`` (session)
    A SparkSession (PySpark needed) on ``hms_port``: plain SQL (``shop.orders``) reaches the
    test's branch; Spark's caches of tables and files are emptied between tests.

On the embedded store a test's branch gets its own copy of the seed's files (hard links: Spark
and Hive never rewrite a file in place), its databases, tables and partitions pointed there, so
nothing a test writes, drops or overwrites reaches the seed or another test; on lakeFS the
branch carries the data already. See ``docs/pytest.md``.
"""
from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

BRANCH_PREFIX = "pytest"
_KEY = "hms_proxy_plugin"


def pytest_addoption(parser):
    group = parser.getgroup("hms-proxy", "hms-proxy: a metastore and a branch per test")
    group.addoption("--hms-store", default=None, metavar="STORE",
                    help="serve this store (a directory, lakefs://REPO) for the session; "
                         "default: a temporary embedded store")
    group.addoption("--hms-uri", default=None, metavar="thrift://HOST:PORT",
                    help="use a running hms-proxy instead of starting one (needs --hms-api)")
    group.addoption("--hms-api", default=None, metavar="http://HOST:PORT",
                    help="the HTTP API (serve --http-port) of the server of --hms-uri")
    group.addoption("--hms-keep", action="store_true", default=False,
                    help="keep the branch of a failed test (the report names it)")


class HmsProxyError(RuntimeError):
    """The server or its HTTP API refused or failed."""


class _Api:
    """JSON over HTTP to the server's API (``/api/v1``)."""

    def __init__(self, base: str):
        self.base = base.rstrip("/")

    def call(self, method: str, path: str, body=None, ok=(200, 201)):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + "/api/v1" + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except OSError as exc:
            raise HmsProxyError(f"hms-proxy's API at {self.base}: {exc}") from None
        answer = json.loads(raw) if raw else {}
        if status not in ok:
            error = answer.get("error", {}) if isinstance(answer, dict) else {}
            raise HmsProxyError(f"{method} {path}: {status} {error.get('type', '')}: "
                                f"{error.get('message', raw[:200])}")
        return status, answer


@dataclass
class Branch:
    """A branch of the metastore with a Thrift port of its own."""

    name: str
    uri: str
    port: int
    warehouse: str
    start: str = ""  # the commit the test started from
    metastore: "Metastore" = field(default=None, repr=False)

    @property
    def ref(self) -> str:
        return self.name

    def db(self, database: str) -> str:
        """``database@branch``: the database on this branch through any port of the server."""
        return f"{database}@{self.name}"

    def table(self, database: str, table: str) -> str:
        """``database@branch.table`` quoted for Spark SQL."""
        return f"`{database}@{self.name}`.`{table}`"

    def spark_conf(self) -> dict[str, str]:
        """What a SparkSession on this branch needs (``builder.config(k, v)`` each)."""
        conf = {"spark.sql.catalogImplementation": "hive",
                "spark.hadoop.hive.metastore.uris": self.uri,
                "spark.sql.warehouse.dir": self.warehouse}
        if self.warehouse.startswith("s3a://"):
            conf.update(lakefs_spark_conf())
        return conf

    def trino_properties(self) -> dict[str, str]:
        """A Trino Hive catalog on this branch (``etc/catalog/NAME.properties``)."""
        return {"connector.name": "hive", "hive.metastore.uri": self.uri}

    def commit(self, message: str) -> str:
        """Commit the branch's changes; the commit id."""
        return self.metastore.commit(self.name, message)


class Metastore:
    """The session's server: its Thrift URI and HTTP API (through which branches, tags,
    commits and ports are made), its default branch, warehouse and lakeFS repository."""

    def __init__(self, uri: str, api: str, workdir: Path, process=None):
        self.uri = uri
        self.api = _Api(api)
        self.api_url = api
        self.workdir = workdir
        self.process = process
        host = uri.split("://", 1)[-1].rsplit(":", 1)
        self.host, self.port = host[0], int(host[1])
        info = self.info()
        self.default_branch = info.get("default_branch") or "main"
        self.repository = info.get("lakefs_repository")  # lakeFS: branches carry the data
        self.warehouse = info.get("warehouse")  # the server's: the seed's files are there

    def spark_conf(self) -> dict[str, str]:
        """A SparkSession on the server's default branch, whose tests then name their
        branch's databases ``db@branch`` (one JVM for every test; ``Branch.spark_conf`` is a
        session on one branch). Its warehouse is the server's, which each test's branch
        copies."""
        conf = {"spark.sql.catalogImplementation": "hive",
                "spark.hadoop.hive.metastore.uris": self.uri}
        if self.repository:  # files through lakeFS's S3 gateway, on the default branch
            conf.update(lakefs_spark_conf())
            conf["spark.sql.warehouse.dir"] = \
                f"s3a://{self.repository}/{self.default_branch}/warehouse"
        elif self.warehouse:
            conf["spark.sql.warehouse.dir"] = self.warehouse
        return conf

    @property
    def log_path(self) -> Path | None:
        return getattr(self.process, "log_path", None)

    def info(self) -> dict:
        return self.api.call("GET", "/info")[1]

    # --- refs -----------------------------------------------------------------------------
    def create_branch(self, name: str, source: str, own_files: bool = False) -> dict:
        body = {"name": name, "from": source}
        if own_files:
            body["own_files"] = True
        return self.api.call("POST", "/branches", body)[1]

    def delete_branch(self, name: str) -> None:
        self.api.call("DELETE", f"/branches/{name}", ok=(200, 404))

    def head(self, branch: str) -> str:
        return self.api.call("GET", f"/branches/{branch}")[1]["head"]

    def commit(self, branch: str, message: str) -> str:
        """Commit ``branch``; its head either way (nothing to commit is no error)."""
        status, body = self.api.call("POST", "/commits", {"branch": branch, "message": message},
                                     ok=(201, 409))
        if status == 409:
            if body.get("error", {}).get("type") != "NothingToCommit":
                raise HmsProxyError(f"commit of {branch}: {body.get('error')}")
            return self.head(branch)
        return body["id"]

    def tag(self, name: str, ref: str) -> str:
        return self.api.call("POST", "/tags", {"name": name, "ref": ref})[1]["commit"]

    def delete_tag(self, name: str) -> None:
        self.api.call("DELETE", f"/tags/{name}", ok=(200, 404))

    def listen(self, ref: str) -> tuple[int, str]:
        body = self.api.call("POST", "/listeners", {"ref": ref})[1]
        return body["port"], f"thrift://{self.host}:{body['port']}"

    def point(self, port: int, ref: str) -> None:
        """Serve ``ref`` on ``port`` (one of :meth:`listen`'s) from the next call on."""
        self.api.call("PUT", f"/listeners/{port}", {"ref": ref})

    def close_listener(self, port: int) -> None:
        self.api.call("DELETE", f"/listeners/{port}", ok=(200, 404))

    # --- a branch for a test ----------------------------------------------------------------
    def branch(self, name: str, source: str, own_files: bool) -> Branch:
        """A branch of ``source`` with a port bound to it. Over a local warehouse and with
        ``own_files``, the branch's files become its own (the server points its databases,
        tables and partitions at a directory of the branch's and links their files there, and
        deletes them with the branch), committed as the branch's first commit."""
        if self.repository:  # lakeFS: the branch carries the data
            start = self.create_branch(name, source)["head"]
            where = f"s3a://{self.repository}/{name}/warehouse"
        elif own_files and (self.warehouse or "").startswith("file:"):
            made = self.create_branch(name, source, own_files=True)
            where, start = made["warehouse"], made["head"]
            if made.get("relocated"):
                start = self.commit(name, f"pytest: the branch's files at {where}")
        else:  # the seed's branch, or a warehouse elsewhere (HDFS, S3): the server's
            start = self.create_branch(name, source)["head"]
            where = self.warehouse or ""
        port, uri = self.listen(name)
        return Branch(name, uri, port, where, start, self)

    def drop(self, branch: Branch) -> None:
        self.close_listener(branch.port)
        self.delete_branch(branch.name)


# --- fixtures ---------------------------------------------------------------------------------
def _worker(config) -> str:
    return getattr(config, "workerinput", {}).get("workerid", "main")


@pytest.fixture(scope="session")
def hms_metastore(request, tmp_path_factory):
    """The session's metastore (see the module's docstring)."""
    config = request.config
    uri, api = config.getoption("--hms-uri"), config.getoption("--hms-api")
    workdir = tmp_path_factory.mktemp("hms-proxy")
    if uri:
        if not api:
            raise pytest.UsageError("--hms-uri needs --hms-api http://HOST:PORT (the server's "
                                    "--http-port): branches and their ports are made there")
        yield Metastore(uri, api, workdir)
        return
    from hms_proxy.tools.metastores import start_proxy

    store = config.getoption("--hms-store") or str(workdir / "store")
    local = not store.startswith("lakefs://")
    process = start_proxy(workdir, "--http-port", "0", store=store,
                          warehouse=workdir / "warehouse" if local else None)
    try:
        http = process.announced_port("http")
        metastore = Metastore(process.uri, f"http://127.0.0.1:{http}", workdir, process)
        config.stash.setdefault(_KEY, {})["metastore"] = metastore
        yield metastore
    finally:
        process.stop()


@pytest.fixture(scope="session")
def hms_run_id(request) -> str:
    """A name part unique to this session and worker (branches and tags carry it)."""
    worker = re.sub(r"[^A-Za-z0-9]", "", _worker(request.config)) or "main"
    return f"{uuid.uuid4().hex[:8]}-{worker}"


@pytest.fixture(scope="session")
def hms_seed_branch(hms_metastore, hms_run_id):
    """The branch the seed is written on (from the server's default branch), its files in the
    server's warehouse (each test's branch gets its own copy of them)."""
    name = f"{BRANCH_PREFIX}-{hms_run_id}-seed"
    branch = hms_metastore.branch(name, hms_metastore.default_branch, own_files=False)
    yield branch
    hms_metastore.close_listener(branch.port)


def lakefs_spark_conf() -> dict[str, str]:
    """Spark's s3a settings for the lakeFS of ``LAKEFS_ENDPOINT`` (or ``~/.lakectl.yaml``):
    its S3 gateway, the connector fetched once from Maven Central."""
    from hms_proxy.tools import spark_s3
    from kvmodel.store.lakefs.api import LakeFSConfig

    config = LakeFSConfig.discover()
    return spark_s3.spark_conf(config.endpoint.removesuffix("/api/v1"), config.access_key_id,
                               config.secret_access_key)


@dataclass
class Port:
    """The session's moving port: ``uri`` serves ``ref`` (the running test's branch)."""

    uri: str
    port: int
    ref: str


@pytest.fixture(scope="session")
def hms_port(hms_metastore, hms_seed_branch):
    """A Thrift port that serves the seed's branch while seeding, then each test's branch."""
    port, uri = hms_metastore.listen(hms_seed_branch.name)
    yield Port(uri, port, hms_seed_branch.name)
    hms_metastore.close_listener(port)


@pytest.fixture(scope="session")
def hms_spark_session(hms_metastore, hms_port, hms_seed_branch, tmp_path_factory):
    """One SparkSession (local[1], Hive catalog) on :func:`hms_port` for the session; its
    warehouse is the server's (where the seed's databases go; each test's branch copies it)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        pytest.skip("hms_spark needs PySpark: pip install 'hms-proxy[stats]' (or pyspark)")
    builder = SparkSession.builder.master("local[1]").appName("hms-proxy-pytest")
    conf = {**hms_metastore.spark_conf(), "spark.hadoop.hive.metastore.uris": hms_port.uri,
            "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"}
    if hms_metastore.repository:  # new databases of the seed: on the seed's branch
        conf["spark.sql.warehouse.dir"] = hms_seed_branch.warehouse
    elif not hms_metastore.warehouse:
        conf["spark.sql.warehouse.dir"] = str(tmp_path_factory.mktemp("spark-warehouse"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()


@pytest.fixture
def hms_spark(hms_spark_session, hms_branch):
    """The session's SparkSession, on this test's branch with nothing cached from the last."""
    forget_spark_caches(hms_spark_session)
    return hms_spark_session


def forget_spark_caches(spark) -> None:
    """What Spark keeps of the catalog between statements: resolved tables, cached data, file
    listings, the current database (the branch under its port changed)."""
    spark.catalog.clearCache()
    spark._jsparkSession.sessionState().catalog().invalidateAllCachedTables()
    spark.catalog.setCurrentDatabase("default")


@pytest.fixture(scope="session")
def hms_seed(hms_seed_branch):
    """Override in conftest.py to load the seed onto ``hms_seed_branch`` (default: none)."""
    return None


@pytest.fixture(scope="session")
def hms_seed_ref(request, hms_metastore, hms_seed_branch, hms_run_id) -> str:
    """The tag of the committed seed, which every test's branch starts from."""
    request.getfixturevalue("hms_seed")
    hms_metastore.commit(hms_seed_branch.name, "pytest: the seed")
    tag = f"{BRANCH_PREFIX}-{hms_run_id}-seeded"
    hms_metastore.tag(tag, hms_seed_branch.name)
    yield tag
    hms_metastore.delete_tag(tag)
    hms_metastore.delete_branch(hms_seed_branch.name)


@pytest.fixture
def hms_branch(request, hms_metastore, hms_seed_ref, hms_seed_branch, hms_run_id):
    """A branch of the seed for this test (see the module's docstring)."""
    state = request.config.stash.setdefault(_KEY, {})
    state["n"] = state.get("n", 0) + 1
    slug = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-").lower()[:40]
    name = f"{BRANCH_PREFIX}-{hms_run_id}-{state['n']}-{slug}".rstrip("-")
    branch = hms_metastore.branch(name, hms_seed_ref, own_files=True)
    request.node.stash[_BRANCH] = branch
    if "hms_port" in request.fixturenames or _PORT in request.config.stash:
        moving = request.getfixturevalue("hms_port")
        hms_metastore.point(moving.port, branch.name)
        moving.ref = branch.name
        request.config.stash[_PORT] = True
    yield branch
    failed = request.node.stash.get(_FAILED, False)
    keep = failed and request.config.getoption("--hms-keep")
    if keep:
        hms_metastore.close_listener(branch.port)
        state.setdefault("kept", []).append(branch.name)
        return
    hms_metastore.drop(branch)


_BRANCH = pytest.StashKey[Branch]()
_PORT = pytest.StashKey[bool]()  # the session's moving port is in use
_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    item.stash[_FAILED] = True
    branch = item.stash.get(_BRANCH, None)
    if branch is None:
        return
    if item.config.getoption("--hms-keep"):
        text = (f"branch {branch.name} kept (--hms-keep): what the test did: hms-proxy diff "
                f"{branch.start} {branch.name}")
    else:
        text = f"branch {branch.name} (dropped; --hms-keep keeps it)"
    report.sections.append(("hms-proxy", text))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = config.stash.get(_KEY, {})
    kept = state.get("kept", [])
    metastore = state.get("metastore")
    if kept:
        terminalreporter.write_sep("-", "hms-proxy: branches kept")
        for name in kept:
            terminalreporter.write_line(name)
    if exitstatus not in (0, 5) and metastore is not None and metastore.log_path:
        terminalreporter.write_line(f"hms-proxy: the server's log: {metastore.log_path}")
