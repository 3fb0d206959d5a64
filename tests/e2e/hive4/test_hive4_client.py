"""Hive 4's own metastore client (``HiveMetaStoreClient`` 4.0.1, tests/e2e/hive4/Hive4Client.java)
against the stock HMS 4.0.1 and against us: databases, tables, partitions, column statistics,
constraints, transactions and drops, each step's result (or error class and message) equal.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.proxy import start_proxy

pytestmark = [pytest.mark.oracle, pytest.mark.timeout(900)]

SOURCE = os.path.join(os.path.dirname(__file__), "Hive4Client.java")


@pytest.fixture(scope="module")
def client_classpath():
    """The program compiled against the 4.0.1 jars (both cached once per machine)."""
    from hms_proxy.tools.hive4_local import ensure_hive4
    from hms_proxy.tools.metastores import compile_java

    lib = ensure_hive4() / "lib"
    classes = compile_java(Path(SOURCE), "the Hive 4 client program", lib)
    return f"{classes}{os.pathsep}{lib}/*"


def _run(classpath, proc) -> list[str]:
    done = subprocess.run(["java", "-cp", classpath, "Hive4Client",
                           f"thrift://{proc.host}:{proc.port}"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_hive4_client_sees_the_stock_hms_4_answers(client_classpath, tmp_path):
    from hms_proxy.tools.hive4_local import start_stock_hms4

    # with the schema made by Hive's schematool: its transaction tables are not DataNucleus's
    stock = start_stock_hms4(tmp_path / "stock-hms-4.0.1", with_transactions=True)
    try:
        expected = _run(client_classpath, stock)
    finally:
        stock.stop()
    ours = start_proxy(tmp_path / "ours")
    try:
        actual = _run(client_classpath, ours)
        log = ours.log_text()
    finally:
        ours.stop()
    assert "internal error in" not in log  # (HMS's own internal errors are answered on purpose)
    assert len(expected) >= 40
    assert "open, commit and abort transactions: 1" in expected
    # a committed and an aborted writer: the aborted one's write id is invalid, marked aborted
    assert ("write ids of a table: first 1 next 1 again 0 hwm 2 invalid [2] aborted [1]"
            in expected)
    assert len(actual) == len(expected), (expected, actual)
    differences = [f"stock 4.0.1: {e}\nhms-proxy:   {a}" for e, a in zip(expected, actual)
                   if e != a]
    assert not differences, "\n".join(differences)
