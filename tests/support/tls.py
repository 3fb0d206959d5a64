"""Certificates for the TLS tests (the ``openssl`` CLI), TLS Thrift clients, and our server
started with TLS (readiness checked over TLS, which :mod:`hms_proxy.tools.metastores` cannot do)."""
from __future__ import annotations

import re
import shutil
import ssl
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from thrift.protocol import TBinaryProtocol
from thrift.transport import TSSLSocket, TTransport

from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from hms_proxy.tools.metastores import MetastoreProcess, log_tail
from tests.support.process import REPO_ROOT
from tests.support.wait import wait_until

_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def openssl_available() -> bool:
    return shutil.which("openssl") is not None


def _run(*cmd, cwd):
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)


@dataclass
class Pair:
    cert: Path
    key: Path


class PKI:
    """A test CA (and a second, untrusted one) under ``root``, issuing certificates."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.ca = self._self_signed("ca", "hms-test-ca")
        self.other_ca = self._self_signed("other-ca", "some-other-ca")
        (self.root / "san.ext").write_text(
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")

    def _self_signed(self, name: str, cn: str) -> Pair:
        pair = Pair(self.root / f"{name}.pem", self.root / f"{name}.key")
        _run("openssl", "req", "-x509", *_EC, "-keyout", pair.key, "-out", pair.cert,
             "-days", "2", "-subj", f"/CN={cn}", cwd=self.root)
        return pair

    def issue(self, name: str, cn: str, *, days: int = 2, signer: Pair | None = None) -> Pair:
        """A certificate for ``cn`` signed by the CA (or ``signer``); ``days=-1``: expired."""
        signer = signer or self.ca
        pair = Pair(self.root / f"{name}.pem", self.root / f"{name}.key")
        csr = self.root / f"{name}.csr"
        _run("openssl", "req", *_EC, "-keyout", pair.key, "-out", csr, "-subj", f"/CN={cn}",
             cwd=self.root)
        _run("openssl", "x509", "-req", "-in", csr, "-CA", signer.cert, "-CAkey", signer.key,
             "-CAcreateserial", "-out", pair.cert, "-days", str(days),
             "-extfile", self.root / "san.ext", cwd=self.root)
        return pair

    def truststore(self, password: str = "changeit") -> Path:
        """The CA in a Java truststore (JKS), for hive.metastore.truststore.path."""
        path = self.root / "truststore.jks"
        if not path.exists():
            _run("keytool", "-importcert", "-noprompt", "-alias", "hms-test-ca", "-file",
                 self.ca.cert, "-keystore", path, "-storetype", "JKS", "-storepass", password,
                 cwd=self.root)
        return path


def client_context(ca: Path, cert: Pair | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert.cert), str(cert.key))
    return context


@contextmanager
def tls_client(host: str, port: int, context: ssl.SSLContext, timeout: float = 30.0):
    """A ThriftHiveMetastore client over TLS (thrift's TSSLSocket), buffered binary protocol
    as Hive's client speaks it."""
    sock = TSSLSocket.TSSLSocket(host, port, ssl_context=context, server_hostname="localhost")
    sock.setTimeout(timeout * 1000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    try:
        yield ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
    finally:
        transport.close()


def start_tls_proxy(workdir: Path, server: Pair, ca: Path, *extra_args: str,
                    client: Pair | None = None, timeout: float = 60.0) -> MetastoreProcess:
    """Our server with ``--tls-cert/--tls-key`` over a fresh store in ``workdir``, on a port
    it picks itself (``--port 0``: no other process can take it between a pick and the
    server's bind), read from the line it prints; ready when a TLS client (with ``client``'s
    certificate, for mTLS) gets an answer."""
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    warehouse = workdir / "warehouse"
    warehouse.mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "hms_proxy.cli", "serve", "--store", str(workdir / "store"),
           "--port", "0", "--host", "127.0.0.1", "--warehouse", str(warehouse),
           "--tls-cert", str(server.cert), "--tls-key", str(server.key), *map(str, extra_args)]
    log_path = workdir / "proxy.log"
    log_file = open(log_path, "ab")
    log_start = log_file.tell()
    popen = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=log_file, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    proc = MetastoreProcess("proxy", "127.0.0.1", 0, warehouse, log_path, popen, workdir,
                            log_file)
    context = client_context(ca, client)
    last: list[Exception] = []

    def running() -> None:
        if not proc.alive():
            raise RuntimeError(f"server exited with {popen.returncode}:\n{log_tail(log_path)}")

    def announced_port() -> int | None:
        running()
        with open(log_path, "rb") as f:
            f.seek(log_start)
            found = re.search(r"^hms-proxy listening on 127\.0\.0\.1:(\d+)$",
                              f.read().decode(errors="replace"), re.M)
        return int(found.group(1)) if found else None

    def answers() -> bool:
        running()
        try:
            with tls_client(proc.host, proc.port, context, timeout=5) as c:
                c.get_all_databases()
            return True
        except Exception as exc:  # noqa: BLE001 - not ready yet
            last[:] = [exc]
            return False

    try:
        proc.port = wait_until(announced_port, timeout=timeout, what="the server's port")
        wait_until(answers, timeout=timeout, interval=0.3, what="an answer over TLS")
    except AssertionError as exc:
        proc.stop()
        raise TimeoutError(f"TLS server not ready: {exc} {last!r}\n{log_tail(log_path)}") \
            from None
    except BaseException:
        proc.stop()
        raise
    return proc
