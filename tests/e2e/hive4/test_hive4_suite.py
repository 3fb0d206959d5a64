"""Hive 4.0.1's own metastore client tests (``org.apache.hadoop.hive.metastore.client.Test*`` of
Maven Central's ``hive-standalone-metastore-server-4.0.1-tests.jar``) against our server: of the
tests that pass on the stock HMS 4.0.1, how many pass on ours.

The classes run in Hive's "Cluster" mode (``MetaStoreFactoryForTests`` with
``-Dtest.hms.client.configs``: a client of a metastore that is already running), through
``SuiteRunner.java``, one JVM for all of them, each against a fresh metastore (the tests assume
an empty one, apart from the default catalog and database: with one server for all, ``--shared``,
TestCatalogs and TestGetTableMeta see what the classes before them left): the metastore of the
next class starts while a class runs. The client settings: ``metastore.warehouse.dir`` and
``metastore.warehouse.external.dir`` (``file://`` directories of the class, given to the
metastore too), a 120 s socket timeout; each test fails after 180 s.

``stock_4.0.1_results.txt`` holds what the same runner gives against the stock HMS 4.0.1 (Derby,
schema by Hive's schematool, :mod:`hms_proxy.tools.hive4_local`), ``known_differences.txt`` the
stock passes that do not pass on ours yet, each with its cause. The test fails when a stock pass
that is not listed fails on ours (a regression), when a listed one passes (the list must stay
true: take it out), and when our server logs an internal error during a test not listed.

    python -m tests.e2e.hive4.test_hive4_suite --write-known   # rewrite known_differences.txt
    python -m tests.e2e.hive4.test_hive4_suite --record-stock  # re-record against the stock
    python -m tests.e2e.hive4.test_hive4_suite --download      # the jars only (make test)
    python -m tests.e2e.hive4.test_hive4_suite [--shared] [CLASS ...]  # run ours, print it

(with CLASS names, those classes only: the lines of the others are kept.)

Four classes are not run: none of their tests passes against an external metastore, the stock
one included (two write through an ``ObjectStore`` in the client's JVM; :data:`NOT_RUN`).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import fcntl
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "SuiteRunner.java"
STOCK_RESULTS = HERE / "stock_4.0.1_results.txt"
KNOWN = HERE / "known_differences.txt"

VERSION = "4.0.1"
# What the classes need besides the metastore's own classpath (hive4_local): the tests jar,
# JUnit 4 with its Hamcrest, and Mockito (three tests of TestMetastoreScheduledQueries use its
# argument matchers, which need neither Byte Buddy nor Objenesis).
TEST_JARS = [
    f"org/apache/hive/hive-standalone-metastore-server/{VERSION}/"
    f"hive-standalone-metastore-server-{VERSION}-tests.jar",
    "junit/junit/4.13.2/junit-4.13.2.jar",
    "org/hamcrest/hamcrest-core/1.3/hamcrest-core-1.3.jar",
    "org/mockito/mockito-core/3.3.3/mockito-core-3.3.3.jar",
]

CLASSES = """TestDatabases TestTablesCreateDropAlterTruncate TestTablesGetExists TestTablesList
TestAddPartitions TestAddPartitionsFromPartSpec TestAlterPartitions TestAppendPartitions
TestDropPartitions TestGetPartitions TestListPartitions TestExchangePartitions TestFunctions
TestCatalogs TestPrimaryKey TestForeignKey TestUniqueConstraint TestNotNullConstraint
TestDefaultConstraint TestCheckConstraint TestGetAllTableConstraints TestGetTableMeta
TestRuntimeStats TestMetastoreScheduledQueries""".split()

# Every test of these fails against the stock HMS 4.0.1 in this mode too (its failure here).
NOT_RUN = {
    "TestHiveMetaStoreClient": "HiveMetaStoreClient.getConnCount() is 1 where 0 is expected",
    "TestPartitionStat": "the column statistics' bit vectors come back null",
    "TestGetAllWriteEventInfo": "writes TXN_WRITE_NOTIFICATION_LOG through an ObjectStore in "
                                "the client's JVM (no such table there)",
    "TestReplicationMetrics": "writes REPLICATION_METRICS through an ObjectStore in the "
                              "client's JVM (no such table there)",
}

JVM_OPTIONS = ["-Xmx1g"]
TEST_TIMEOUT_S = 180
SOCKET_TIMEOUT = "120s"
CLASS_TIMEOUT_S = 1800.0


def _say(msg: str) -> None:
    print(f"hive4 suite: {msg}", file=sys.stderr, flush=True)


# --- the jars and the runner ------------------------------------------------------------------

def jars_dir() -> Path:
    """``~/.cache/hms-proxy/hive/4.0.1-tests``: :data:`TEST_JARS`, downloaded once per machine
    (SHA-1 checked); the directory appears by an atomic rename."""
    from hms_proxy.tools import hive4_local, maven

    root = hive4_local.cache_root()
    home = root / f"{VERSION}-tests"
    names = [Path(j).name for j in TEST_JARS]
    if all((home / n).is_file() for n in names):
        return home
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{VERSION}-tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all((home / n).is_file() for n in names):
            return home
        tmp = Path(tempfile.mkdtemp(prefix=f".tests-{VERSION}-", dir=root))
        tmp.chmod(0o755)
        try:
            for relative in TEST_JARS:
                maven.fetch_verified(relative, tmp / Path(relative).name,
                                     lambda url: _say(f"downloading {url} (once)"))
            shutil.rmtree(home, ignore_errors=True)
            os.rename(tmp, home)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return home


def runner_classpath() -> str:
    """The compiled runner (cached by :func:`compile_java`), the test jars, the 4.0.1 jars."""
    from hms_proxy.tools.hive4_local import classpath, ensure_hive4
    from hms_proxy.tools.metastores import compile_java

    jars = jars_dir()
    classes = compile_java(SOURCE, "the Hive 4 suite runner", jars)
    return os.pathsep.join([str(classes), f"{jars}{os.sep}*", classpath(ensure_hive4())])


# --- running the classes ----------------------------------------------------------------------

@dataclass
class Outcome:
    cls: str
    test: str
    status: str  # PASS FAIL IGNORED SKIPPED
    start_ms: int
    end_ms: int
    message: str


@dataclass
class Run:
    outcomes: dict[tuple[str, str], Outcome]
    internal_errors: list[tuple[str, str, str]]  # (class, test or "(class)", log line)
    seconds: float
    workdir: Path


def _site_xml(path: Path, props: dict[str, str]) -> None:
    body = "\n".join(f"  <property><name>{k}</name><value>{v}</value></property>"
                     for k, v in props.items())
    path.write_text(f'<?xml version="1.0"?>\n<configuration>\n{body}\n</configuration>\n')


def _start(kind: str, server_dir: Path, wh: str, ext: str):
    if kind == "stock":
        from hms_proxy.tools import hive4_local
        from hms_proxy.tools.metastores import start_standalone

        hive4_local.init_schema(server_dir)  # its transaction and scheduled-query tables too
        return start_standalone(
            f"stock-hms-{VERSION}", hive4_local.classpath(hive4_local.ensure_hive4()),
            server_dir, 240.0, {"metastore.thrift.bind.host": "127.0.0.1",
                                "metastore.warehouse.dir": wh,
                                "metastore.warehouse.external.dir": ext})
    from tests.support.proxy import start_proxy

    # the warehouse given as the URI (start_proxy's warehouse= takes a path)
    return start_proxy(server_dir, "--warehouse", wh,
                       "--conf", f"metastore.warehouse.external.dir={ext}",
                       "--log-level", "WARNING", warehouse=False, timeout=120.0)


def _dirs(base: Path) -> tuple[str, str]:
    for sub in ("warehouse", "external"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    return f"file://{base}/warehouse", f"file://{base}/external"


LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")


def _internal_errors(log: str, cls: str, outcomes: list[Outcome]) -> list[tuple[str, str, str]]:
    """Our server's "internal error in METHOD" lines, each given to the test of ``cls`` that
    ran when it was logged."""
    found = []
    for line in log.splitlines():
        if "internal error in" not in line:
            continue
        test = "(class)"
        m = LOG_TIME.match(line)
        if m:
            ms = int(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp()) * 1000 \
                + int(m.group(2))
            for o in outcomes:
                if o.cls == cls and o.test != "(class)" and o.start_ms <= ms <= o.end_ms + 50:
                    test = o.test
                    break
        found.append((cls, test, line.strip()[:300]))
    return found


def run_suite(kind: str, workdir: Path, classes: list[str] | None = None, *,
              shared: bool = False, progress=_say) -> Run:
    """Run ``classes`` (default :data:`CLASSES`) against ``kind`` ("ours" or "stock"), each
    against a fresh metastore (``shared``: one for all, ours only); the metastore of the next
    class starts while a class runs, for ours (the stock's JVMs one at a time)."""
    classes = list(classes or CLASSES)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    cp = runner_classpath()
    started = time.monotonic()
    out_path = workdir / "results.txt"
    tmp = workdir / "tmp"
    tmp.mkdir(exist_ok=True)
    jvm_log = open(workdir / "junit.log", "wb")
    jvm = subprocess.Popen(
        ["java", *JVM_OPTIONS, f"-Djava.io.tmpdir={tmp}", f"-Dtest.tmp.dir={tmp}",
         f"-Dsuite.test.timeout={TEST_TIMEOUT_S}", "-cp", cp, "SuiteRunner", str(out_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=jvm_log, cwd=workdir, text=True,
        start_new_session=True)
    answers: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in jvm.stdout:
            if line.startswith("@@done "):
                answers.put(line.strip())
        answers.put(None)
    threading.Thread(target=read, daemon=True).start()

    def server_for(cls: str):
        base = workdir / ("shared" if shared else cls)
        wh, ext = _dirs(base)
        return _start(kind, base / "server", wh, ext), wh, ext

    pool = concurrent.futures.ThreadPoolExecutor(1)
    ahead = kind == "ours" and not shared
    internal: list[tuple[str, str, str]] = []
    servers: list = []
    try:
        pending = pool.submit(server_for, classes[0])
        for i, cls in enumerate(classes):
            if not shared or i == 0:  # else the same server, warehouse and site file
                server, wh, ext = pending.result()
                servers.append(server)
                if ahead and i + 1 < len(classes):
                    pending = pool.submit(server_for, classes[i + 1])
                site = workdir / f"site-{cls}.xml"
                _site_xml(site, {
                    "metastore.thrift.uris": server.uri,
                    "metastore.warehouse.dir": wh,
                    "metastore.warehouse.external.dir": ext,
                    "metastore.client.socket.timeout": SOCKET_TIMEOUT,  # a hung call: 2 min
                })
            class_started = time.monotonic()
            jvm.stdin.write(f"{cls}\t{site}\n")
            jvm.stdin.flush()
            try:
                answer = answers.get(timeout=CLASS_TIMEOUT_S)
            except queue.Empty:
                answer = None
            if answer is None:
                raise RuntimeError(f"the suite's JVM gave no result for {cls}; see "
                                   f"{workdir / 'junit.log'}")
            _, _, p, f, ign, skip = answer.split()
            progress(f"{kind} {cls}: {p} pass, {f} fail, {int(ign) + int(skip)} ignored "
                     f"({time.monotonic() - class_started:.1f}s)")
            if not shared:
                server.stop()
                if kind == "ours":
                    internal += _internal_errors(server.log_text(), cls, _read(out_path))
                if not ahead and i + 1 < len(classes):
                    pending = pool.submit(server_for, classes[i + 1])
        jvm.stdin.write("\n")
        jvm.stdin.flush()
        jvm.wait(timeout=60)
    finally:
        if jvm.poll() is None:
            jvm.kill()
            jvm.wait()
        jvm_log.close()
        pool.shutdown(wait=True)
        if not pending.cancelled() and pending.done() and pending.exception() is None:
            leftover = pending.result()[0]
            if leftover not in servers:
                leftover.stop()
        for server in servers:
            server.stop()
    outcomes_list = _read(out_path)
    if shared and kind == "ours":
        log = servers[0].log_text()
        for cls in classes:  # given to a test by its time; the rest to the first class
            internal += [e for e in _internal_errors(log, cls, outcomes_list)
                         if e[1] != "(class)" or cls == classes[0]]
    outcomes = {}
    for o in outcomes_list:
        key = (o.cls, o.test)
        if key not in outcomes or outcomes[key].status != "FAIL":  # a FAIL is kept
            outcomes[key] = o
    return Run(outcomes, internal, time.monotonic() - started, workdir)


def _read(path: Path) -> list[Outcome]:
    out = []
    if not path.exists():
        return out
    for line in path.read_text(errors="replace").splitlines():
        parts = line.split("\t", 5)
        if len(parts) == 6:
            out.append(Outcome(parts[0], parts[1], parts[2], int(parts[3]), int(parts[4]),
                               parts[5]))
    return out


# --- the recorded files -----------------------------------------------------------------------

def load_stock() -> dict[tuple[str, str], str]:
    """``stock_4.0.1_results.txt``: (class, test) -> PASS, FAIL, IGNORED or SKIPPED."""
    rows = {}
    for line in STOCK_RESULTS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            cls, test, status = line.split("\t")[:3]
            rows[(cls, test)] = status
    return rows


def load_known() -> dict[tuple[str, str], str]:
    """``known_differences.txt``: (class, test) -> cause; lines ``CLASS.TEST: cause``."""
    rows = {}
    for line in KNOWN.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, cause = line.partition(":")
            cls, _, test = name.strip().partition(".")
            rows[(cls, test)] = cause.strip()
    return rows


EXPECTED = re.compile(r"expected:<(.*)> but was:<(.*)>( @\S+)?", re.S)


def cause_of(o: Outcome | None, workdir: Path, width: int = 70) -> str:
    """A failure's message in short: for an assertEquals, the first difference."""
    if o is None:
        return "not run"
    msg = o.message.replace(f"file:{workdir}", "<dir>").replace(str(workdir), "<dir>")
    m = EXPECTED.search(msg)
    if m:
        exp, got = m.group(1), m.group(2)
        p = 0
        while p < min(len(exp), len(got)) and exp[p] == got[p]:
            p += 1
        s = 0
        while s < min(len(exp), len(got)) - p and exp[-1 - s] == got[-1 - s]:
            s += 1
        head = msg[:m.start()].strip().removeprefix("java.lang.AssertionError:").strip()
        return (f"{head} expected {exp[p:len(exp) - s][:width]!r}, got "
                f"{got[p:len(got) - s][:width]!r}{m.group(3) or ''}").strip()
    msg, _, cause = msg.partition(" | cause: ")
    if msg.startswith("java.lang.Exception: Unexpected exception, ") and ": " in cause:
        msg = msg.removeprefix("java.lang.Exception: ") + ": " + cause[:120]
    for prefix in ("java.lang.AssertionError: ", "org.apache.hadoop.hive.metastore.api.",
                   "org.apache.thrift.", "java.lang."):
        msg = msg.replace(prefix, "")
    return msg[:240]


def write_stock(outcomes: dict[tuple[str, str], Outcome], source: str) -> None:
    passed = sum(o.status == "PASS" for o in outcomes.values())
    lines = [f"# Hive {VERSION}'s metastore client tests against the stock HMS {VERSION} (Derby, "
             "schema by Hive's",
             "# schematool), a fresh one per class, with the settings of "
             "tests/e2e/hive4/test_hive4_suite.py:",
             f"# {source}. CLASS TAB TEST TAB STATUS:",
             f"# {passed} PASS of {len(outcomes)}. Not run (all their tests fail on the stock "
             "too): "
             + ", ".join(NOT_RUN) + "."]
    order = {c: i for i, c in enumerate(CLASSES)}
    for (cls, test), o in sorted(outcomes.items(), key=lambda kv: (order.get(kv[0][0], 99),
                                                                     kv[0][1])):
        lines.append(f"{cls}\t{test}\t{o.status}")
    STOCK_RESULTS.write_text("\n".join(lines) + "\n")


def write_known(run: Run, stock: dict[tuple[str, str], str]) -> int:
    """``known_differences.txt`` from ``run``: every stock pass that fails on ours, with the
    cause already written there, else the failure's message in short (the lines of the classes
    ``run`` did not run kept)."""
    old = load_known() if KNOWN.exists() else {}
    ran = {cls for cls, _ in run.outcomes}
    failing = sorted({k for k, st in stock.items()
                      if st == "PASS" and not _passes(run.outcomes.get(k)) and k[0] in ran}
                     | {k for k in old if k[0] not in ran})  # the classes not run: as listed
    lines = [f"# The tests of Hive {VERSION}'s metastore client suite that pass on the stock HMS "
             f"{VERSION} and not yet on ours",
             "# (tests/e2e/hive4/test_hive4_suite.py): CLASS.TEST: cause. Rewritten, keeping the "
             "causes written here, by",
             "#   python -m tests.e2e.hive4.test_hive4_suite --write-known"]
    for key in failing:
        cause = old.get(key) or cause_of(run.outcomes.get(key), run.workdir)
        lines.append(f"{key[0]}.{key[1]}: {cause}")
    KNOWN.write_text("\n".join(lines) + "\n")
    return len(failing)


def _passes(o: Outcome | None) -> bool:
    return o is not None and o.status == "PASS"


# --- the comparison ---------------------------------------------------------------------------

def compare(run: Run, stock: dict[tuple[str, str], str],
            known: dict[tuple[str, str], str]) -> tuple[str, list[str]]:
    """The summary, and the problems (empty when the check holds)."""
    stock_passes = [k for k, st in stock.items() if st == "PASS"]
    ours_pass = [k for k in stock_passes if _passes(run.outcomes.get(k))]
    problems = []
    regressions = [k for k in stock_passes if not _passes(run.outcomes.get(k)) and k not in known]
    fixed = [k for k in known if _passes(run.outcomes.get(k))]
    stale = [k for k in known if stock.get(k) != "PASS"]
    listed_errors = [e for e in run.internal_errors if (e[0], e[1]) in known]
    errors = [e for e in run.internal_errors if (e[0], e[1]) not in known]
    for k in regressions:
        problems.append(f"REGRESSION {k[0]}.{k[1]}: {cause_of(run.outcomes.get(k), run.workdir)}")
    for k in fixed:
        problems.append(f"NOW PASSES {k[0]}.{k[1]} (listed in known_differences.txt: take it out)")
    for k in stale:
        problems.append(f"LISTED BUT NOT A STOCK PASS {k[0]}.{k[1]} (stock: {stock.get(k)})")
    for cls, test, line in errors:
        problems.append(f"INTERNAL ERROR during {cls}.{test}: {line}")
    class_failures = [o for o in run.outcomes.values() if o.test == "(class)"]
    summary = (f"Hive {VERSION}'s metastore client tests: {len(ours_pass)} of the "
               f"{len(stock_passes)} stock passes pass on ours ({len(known)} known differences; "
               f"{len(regressions)} regressions, {len(fixed)} listed now passing, {len(errors)} "
               f"internal errors outside the listed tests, {len(listed_errors)} in them; "
               f"{len(class_failures)} class-level failures) in {run.seconds:.0f}s")
    return summary, problems


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_hive4_metastore_client_suite(tmp_path):
    """Every stock pass of Hive 4.0.1's client suite passes on ours, but the listed ones."""
    stock, known = load_stock(), load_known()
    run = run_suite("ours", tmp_path, progress=lambda msg: None)
    summary, problems = compare(run, stock, known)
    print(summary)
    if problems:
        pytest.fail(summary + "\n" + "\n".join(problems) + "\n(python -m "
                    "tests.e2e.hive4.test_hive4_suite --write-known rewrites the list)",
                    pytrace=False)


# --- the command line -------------------------------------------------------------------------

def _stock_from_harness(path: Path) -> dict[tuple[str, str], Outcome]:
    """An earlier recording (CLASS TAB TEST TAB STATUS TAB MESSAGE), the classes not run left
    out."""
    out = {}
    for line in path.read_text(errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0] in CLASSES:
            key = (parts[0], parts[1])
            if key not in out or out[key].status != "FAIL":
                out[key] = Outcome(parts[0], parts[1], parts[2], 0, 0, "")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.e2e.hive4.test_hive4_suite",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("classes", nargs="*", help="simple class names (default: all run ones)")
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--download", action="store_true", help="fetch the jars and compile only")
    what.add_argument("--record-stock", action="store_true",
                      help="run against the stock HMS 4.0.1, rewrite stock_4.0.1_results.txt")
    what.add_argument("--stock-from", type=Path, metavar="RESULTS",
                      help="rewrite stock_4.0.1_results.txt from an earlier recording")
    what.add_argument("--write-known", action="store_true",
                      help="run against ours, rewrite known_differences.txt")
    ap.add_argument("--shared", action="store_true", help="one server of ours for all classes")
    ap.add_argument("--workdir", type=Path, help="where the servers and logs go (kept)")
    args = ap.parse_args(argv)
    if args.download:
        print(f"Hive {VERSION} client tests:", jars_dir(),
              runner_classpath().split(os.pathsep)[0])
        return 0
    if args.stock_from:
        write_stock(_stock_from_harness(args.stock_from),
                    f"converted from an earlier recording ({args.stock_from.name})")
        print(f"wrote {STOCK_RESULTS}")
        return 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hive4-suite-"))
    if args.record_stock:
        run = run_suite("stock", workdir, args.classes or None)
        if args.classes:  # those classes' rows replaced, the others kept
            kept = {k: Outcome(k[0], k[1], st, 0, 0, "") for k, st in load_stock().items()
                    if k[0] not in args.classes}
            run.outcomes = {**kept, **run.outcomes}
        write_stock(run.outcomes, f"recorded {time.strftime('%Y-%m-%d')} in {run.seconds:.0f}s "
                                  f"(python -m tests.e2e.hive4.test_hive4_suite --record-stock)")
        print(f"wrote {STOCK_RESULTS} (logs in {workdir})")
        return 0
    run = run_suite("ours", workdir, args.classes or None, shared=args.shared)
    stock = load_stock()
    if args.classes:
        stock = {k: v for k, v in stock.items() if k[0] in args.classes}
    if args.write_known:
        n = write_known(run, stock)
        print(f"wrote {KNOWN}: {n} differences")
    summary, problems = compare(run, stock, load_known() if KNOWN.exists() else {})
    print("\n".join(problems))
    print(summary)
    print(f"results: {workdir / 'results.txt'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
