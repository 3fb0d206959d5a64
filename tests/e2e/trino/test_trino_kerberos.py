"""Trino's Hive catalog with Kerberos (``hive.metastore.authentication.type=KERBEROS``, its own
principal and keytab, the metastore's principal as ``hive/_HOST@REALM``) over our Kerberized
server and over the stock HMS 2.3.10 Kerberized against the same KDC: the same statements
create, insert and read the same rows, and our server sees Trino's principal as the caller."""
from __future__ import annotations

import shutil

import pytest

from hms_proxy.tools import kdc as kdc_tool
from tests.support.kerberos import (client_modules_missing, ready_as,
                                    start_stock_kerberized, started_realm)
from tests.support.proxy import start_proxy

pytestmark = [pytest.mark.slow, pytest.mark.trino, pytest.mark.timeout(900),
              pytest.mark.skipif(bool(kdc_tool.missing() or client_modules_missing()),
                                 reason=kdc_tool.missing() or client_modules_missing() or "")]


@pytest.fixture(scope="module")
def realm(tmp_path_factory):
    with started_realm(tmp_path_factory.mktemp("krb-trino")) as realm:
        yield realm


@pytest.fixture(scope="module")
def trino(realm, tmp_path_factory):
    """A Trino of its own, its krb5.conf this realm's from the start: a JVM reads
    java.security.krb5.conf once, at its first Kerberos use, which in the session's shared Trino
    may come before this realm exists."""
    from hms_proxy.tools import trino_local

    workdir = tmp_path_factory.mktemp("trino-krb")
    (workdir / "etc").mkdir()
    shutil.copyfile(realm.kdc.folder / "krb5.conf", workdir / "etc" / "krb5.conf")
    try:
        proc = trino_local.start_trino(workdir)
    except trino_local.JavaMissing as exc:  # no Java 24+ JDK on this machine: say so
        pytest.skip(str(exc))
    yield proc
    proc.stop()


def _statements(warehouse) -> list[str]:
    return [
        f"CREATE SCHEMA {{c}}.krb WITH (location = 'file://{warehouse}/krb.db')",
        "CREATE TABLE {c}.krb.events (id bigint, name varchar, ds varchar) "
        "WITH (format = 'PARQUET', partitioned_by = ARRAY['ds'])",
        "INSERT INTO {c}.krb.events VALUES (1, 'a', '2024-01-01'), (2, 'b', '2024-01-01'), "
        "(3, 'c', '2024-01-02')",
        "SELECT ds, count(*), sum(id) FROM {c}.krb.events GROUP BY ds ORDER BY ds",
        'SELECT ds FROM {c}.krb."events$partitions" ORDER BY ds',
        "SHOW TABLES FROM {c}.krb",
        "CREATE TABLE {c}.krb.copy AS SELECT id, name FROM {c}.krb.events WHERE ds = '2024-01-02'",
        "SELECT * FROM {c}.krb.copy",
        "DROP TABLE {c}.krb.copy",
        "DELETE FROM {c}.krb.events WHERE ds = '2024-01-01'",
        "SELECT id FROM {c}.krb.events ORDER BY id",
    ]


def _run(trino, catalog: str, warehouse) -> list:
    out = []
    for statement in _statements(warehouse):
        try:
            out.append([list(row) for row in trino.execute(statement.format(c=catalog))])
        except Exception as exc:  # noqa: BLE001 - the answer compared
            out.append(f"{type(exc).__name__}: {str(exc)[:300]}")
    return out


def test_trino_kerberized_catalog_creates_inserts_and_reads(realm, trino, tmp_path):
    from hms_proxy.tools import trino_local

    keytab = realm.kdc.keytab("trino")
    stock = start_stock_kerberized(realm, tmp_path / "stock")
    ours = start_proxy(tmp_path / "server", *realm.server_args(), env=realm.server_env(),
                       ask=ready_as(realm))
    try:
        kerberos = {"hive.metastore.authentication.type": "KERBEROS",
                    "hive.metastore.service.principal": f"hive/_HOST@{realm.name}",
                    "hive.metastore.client.principal": f"trino@{realm.name}",
                    "hive.metastore.client.keytab": str(keytab)}
        answers = {}
        for name, proc in (("stock", stock), ("ours", ours)):
            warehouse = tmp_path / f"wh-{name}"
            warehouse.mkdir()
            catalog = f"krb_{name}"
            trino.add_catalog(catalog, trino_local.hive_catalog(
                f"thrift://localhost:{proc.port}", extra=kerberos))
            try:
                answers[name] = _run(trino, catalog, warehouse)
            finally:
                trino.drop_catalog(catalog)
        assert answers["ours"] == answers["stock"]
        assert answers["stock"][3] == [["2024-01-01", 2, 3], ["2024-01-02", 1, 3]]
        assert answers["stock"][-1] == [[3]]
        log = ours.log_path.read_text()
        assert "create_table krb.events user=trino" in log, log[-3000:]
    finally:
        ours.stop()
        stock.stop()
