"""TLS listeners (serve --tls-cert/--tls-key [--tls-client-ca]) against real clients: Thrift's
TSSLSocket, plain sockets that never finish a handshake, and Spark with
hive.metastore.use.SSL=true and a Java truststore."""
from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes
from tests.support.process import REPO_ROOT
from tests.support.tls import PKI, client_context, openssl_available, start_tls_proxy, tls_client
from tests.support.wait import wait_until

pytestmark = pytest.mark.skipif(not openssl_available(), reason="needs the openssl CLI")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    pki = PKI(tmp_path_factory.mktemp("pki"))
    pki.server = pki.issue("server", "localhost")
    pki.alice = pki.issue("alice", "alice")
    pki.expired = pki.issue("expired", "mallory", days=-1)
    pki.stranger = pki.issue("stranger", "eve", signer=pki.other_ca)
    return pki


# The handshake timeout of ``tls_server``: a stalled client is dropped after it, and a healthy
# handshake and call (milliseconds) fit in it many times over, on a loaded machine too.
HANDSHAKE_TIMEOUT = 3.0


@pytest.fixture(scope="module")
def tls_server(pki, tmp_path_factory):
    proc = start_tls_proxy(tmp_path_factory.mktemp("tls"), pki.server, pki.ca.cert,
                           "--tls-handshake-timeout", str(HANDSHAKE_TIMEOUT))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def mtls_server(pki, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("mtls")
    audit = workdir / "audit.log"
    proc = start_tls_proxy(workdir, pki.server, pki.ca.cert, "--tls-client-ca", pki.ca.cert,
                           "--autocommit", "--audit-log", audit, client=pki.alice)
    proc.audit = audit
    yield proc
    proc.stop()


def _database(name: str) -> ttypes.Database:
    return ttypes.Database(name=name, description=None, locationUri=None, parameters={})


def _logged(proc, text: str) -> bool:
    """Wait until the server's log shows ``text`` (it logs after closing the connection);
    fail, naming ``text``, if it never does."""
    return wait_until(lambda: text in proc.log_path.read_text(),
                      what=f"{text!r} in the server's log")


def _plain_call(proc, timeout=5.0):
    sock = TSocket.TSocket(proc.host, proc.port)
    sock.setTimeout(timeout * 1000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    try:
        return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport)).get_all_databases()
    finally:
        transport.close()


def test_calls_over_tls(tls_server, pki):
    context = client_context(pki.ca.cert)
    with tls_client(tls_server.host, tls_server.port, context) as client:
        client.set_ugi("alice", ["eng"])
        client.create_database(_database("tls_shop"))
        table = ttypes.Table(
            tableName="orders", dbName="tls_shop", owner="alice", partitionKeys=[],
            sd=ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("id", "int", None)],
                                        serdeInfo=ttypes.SerDeInfo(parameters={}),
                                        parameters={}),
            parameters={}, tableType="MANAGED_TABLE")
        client.create_table(table)
        assert client.get_table("tls_shop", "orders").sd.cols[0].name == "id"
        assert "tls_shop" in client.get_all_databases()
    with tls_client(tls_server.host, tls_server.port, context) as client:  # a second connection
        assert client.get_database("tls_shop").name == "tls_shop"


def test_plaintext_client_fails_cleanly_and_server_survives(tls_server, pki):
    # (the client waits longer than the handshake timeout: left hanging, it would be
    # dropped by that timeout, and the log would say "timed out")
    with pytest.raises((TTransport.TTransportException, OSError, EOFError)) as info:
        _plain_call(tls_server, timeout=60)
    assert getattr(info.value, "type", None) != TTransport.TTransportException.TIMED_OUT
    assert tls_server.alive()
    with tls_client(tls_server.host, tls_server.port, client_context(pki.ca.cert)) as client:
        assert "default" in client.get_all_databases()
    # refused at once, for what it sent, not left hanging until the handshake timeout
    assert _logged(tls_server, "TLS handshake failed: WRONG_VERSION_NUMBER")


def test_client_refuses_a_server_it_does_not_trust(tls_server, pki):
    with pytest.raises(TTransport.TTransportException):
        with tls_client(tls_server.host, tls_server.port, client_context(pki.other_ca.cert)):
            pass


def test_stalled_handshake_is_dropped_without_blocking_others(tls_server, pki):
    """A client that connects and never speaks holds its connection's thread for the handshake
    timeout (HANDSHAKE_TIMEOUT here) and never the accept loop."""
    started = time.monotonic()
    stalled = socket.create_connection((tls_server.host, tls_server.port))
    try:
        with tls_client(tls_server.host, tls_server.port, client_context(pki.ca.cert)) as client:
            assert "default" in client.get_all_databases()
        # served while the other one stalls: the server has not dropped the stalled one yet
        # (an accept loop waiting on its handshake would have served this one only after)
        readable, _, _ = select.select([stalled], [], [], 0)
        assert not readable, "the stalled connection was dropped before the other was served"
        stalled.settimeout(60)  # far beyond the handshake timeout: never dropped, it fails
        try:
            data = stalled.recv(1)  # the server closes it after the timeout
        except ConnectionResetError:
            data = b""
        assert data == b""
        assert time.monotonic() - started >= HANDSHAKE_TIMEOUT - 0.5  # after the timeout
    finally:
        stalled.close()
    assert _logged(tls_server, "TLS handshake failed: timed out")


def test_mtls_client_certificate_is_the_identity(mtls_server, pki):
    with tls_client(mtls_server.host, mtls_server.port,
                    client_context(pki.ca.cert, pki.alice)) as client:
        client.set_ugi("root", ["root"])  # what the client claims does not outrank its cert
        client.create_database(_database("mtls_db"))
    entries = [json.loads(line) for line in mtls_server.audit.read_text().splitlines()]
    entry = next(e for e in entries if e["method"] == "create_database")
    assert (entry["identity"], entry["auth"], entry["user"], entry["outcome"]) == \
        ("alice", "cert", "root", "ok")
    log = subprocess.run([sys.executable, "-m", "hms_proxy.cli", "log", "main", "--store",
                          str(mtls_server.workdir / "store"), "--json"],
                         cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    commit = json.loads(log.stdout)[0]
    assert commit["author"] == "alice"
    assert commit["metadata"]["auth"] == "cert"


@pytest.mark.parametrize("who", ["none", "expired", "stranger"])
def test_mtls_refuses_missing_expired_and_untrusted_certificates(mtls_server, pki, who):
    cert = {"none": None, "expired": pki.expired, "stranger": pki.stranger}[who]
    with pytest.raises((TTransport.TTransportException, OSError, EOFError)):
        with tls_client(mtls_server.host, mtls_server.port,
                        client_context(pki.ca.cert, cert)) as client:
            client.get_all_databases()  # TLS 1.3: the refusal may come with the first read
    assert mtls_server.alive()
    expected = {"none": "PEER_DID_NOT_RETURN_A_CERTIFICATE",
                "expired": "certificate has expired",
                "stranger": "unable to get local issuer certificate"}[who]
    assert _logged(mtls_server, expected), mtls_server.log_path.read_text()


def test_bad_tls_files_stop_the_server_at_start(pki, tmp_path):
    cases = [
        (["--tls-cert", pki.server.cert, "--tls-key", pki.alice.key], "cannot load"),
        (["--tls-cert", pki.server.cert, "--tls-key", tmp_path / "missing.key"], "cannot load"),
        (["--tls-cert", pki.server.cert], "--tls-cert and --tls-key go together"),
        (["--tls-cert", pki.server.cert, "--tls-key", pki.server.key, "--tls-client-ca",
          tmp_path / "missing-ca.pem"], "--tls-client-ca"),
    ]
    for args, message in cases:
        result = subprocess.run(
            [sys.executable, "-m", "hms_proxy.cli", "serve", "--store", str(tmp_path / "store"),
             "--port", "0", *map(str, args)], cwd=REPO_ROOT, capture_output=True, text=True,
            timeout=60)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("hms-proxy: error: ") and message in result.stderr
        assert not (tmp_path / "store").exists()  # refused before anything was created


@pytest.mark.spark
def test_spark_over_tls_with_a_shared_secret(pki, tmp_path):
    """An unmodified Spark (its built-in Hive 2.3.10 client) with hive.metastore.use.SSL and a
    JKS truststore runs DDL, INSERT and SELECT over TLS. Its Hadoop user is alice, and
    Hadoop's static group mapping (core-site.xml) gives alice the group 'secret:<secret>':
    the server authenticates her by it (serve --auth-secrets), and only she may write main."""
    (tmp_path / "rules.json").write_text(json.dumps({"rules": [
        {"branches": "main", "read": ["*"], "write": ["alice"]}]}))
    (tmp_path / "secrets.json").write_text(json.dumps({"alice": "s3cret-42"}))
    hadoop_conf = tmp_path / "hadoop-conf"
    hadoop_conf.mkdir()
    (hadoop_conf / "core-site.xml").write_text(
        '<?xml version="1.0"?>\n<configuration><property>'
        "<name>hadoop.user.group.static.mapping.overrides</name>"
        "<value>alice=analysts,secret:s3cret-42;</value></property></configuration>\n")
    audit = tmp_path / "audit.log"
    proc = start_tls_proxy(tmp_path / "server", pki.server, pki.ca.cert,
                           "--access-rules", tmp_path / "rules.json",
                           "--auth-secrets", tmp_path / "secrets.json",
                           "--audit-log", audit, "--autocommit")
    try:
        env = dict(os.environ, HADOOP_USER_NAME="alice", HADOOP_CONF_DIR=str(hadoop_conf),
                   PYTHONPATH=str(REPO_ROOT), PYSPARK_PYTHON=sys.executable)
        output = tmp_path / "out.json"
        job = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("tls_spark_job.py")),
             "--uri", proc.uri, "--truststore", str(pki.truststore("changeit")),
             "--password", "changeit", "--warehouse", str(tmp_path / "spark-warehouse"),
             "--output", str(output)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert output.exists(), job.stderr[-4000:]
        result = json.loads(output.read_text())
        assert "error" not in result, result["error"]
        assert result["rows"] == [["2024-01-01", 2, 3], ["2024-01-02", 1, 3]]
        assert result["partitions"] == ["ds=2024-01-01", "ds=2024-01-02"]
        writes = [json.loads(line) for line in audit.read_text().splitlines()]
        assert {e["method"] for e in writes} >= {"create_database", "add_partitions_req"}
        assert all((e["identity"], e["auth"], e["outcome"]) == ("alice", "secret", "ok")
                   for e in writes), writes
        # the secret never reaches the catalog, the log or the audit log
        assert "s3cret-42" not in audit.read_text() + proc.log_path.read_text()
    finally:
        proc.stop()
    log = subprocess.run([sys.executable, "-m", "hms_proxy.cli", "log", "main", "--store",
                          str(tmp_path / "server" / "store"), "--json"],
                         cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    authors = {c["author"] for c in json.loads(log.stdout)
               if c["message"] not in ("Repository created", "create the default database")}
    assert authors == {"alice"}
