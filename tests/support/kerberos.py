"""Kerberos for the tests: one KDC per test session (hms_proxy.tools.kdc), keytabs for the
server and the users, and Thrift clients over SASL GSSAPI with Thrift's own
``TSaslClientTransport`` and pure-sasl (the Python client a Kerberized HMS is used with).

pure-sasl's GSSAPI goes through the ``kerberos`` module, which reads ``KRB5_CONFIG`` and
``KRB5CCNAME`` from this process's environment when it starts an exchange: :func:`as_user`
points both at the session's realm and the user's ticket cache.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from tests.support.client import Client


def client_modules_missing() -> str | None:
    for module in ("gssapi", "kerberos", "puresasl"):
        try:
            __import__(module)
        except ImportError:
            return f"needs the {module} module (pip install 'hms-proxy[kerberos]' pure-sasl kerberos)"
    return None


class Realm:
    """The session's KDC with a server principal (``hive/localhost``) and users' keytabs and
    ticket caches."""

    def __init__(self, kdc, folder: Path):
        self.kdc = kdc
        self.folder = folder
        self.service = kdc.principal("hive/localhost")
        self.server_keytab = kdc.keytab("hive/localhost")
        self._users: dict[str, Path] = {}

    @property
    def name(self) -> str:
        return self.kdc.realm

    def user(self, name: str) -> Path:
        """The ticket cache of ``name`` (made with its keytab on first use)."""
        if name not in self._users:
            keytab = self.kdc.keytab(name)
            cache = self.folder / (name.replace("/", "_") + ".ccache")
            self.kdc.kinit(name, keytab, cache)
            self._users[name] = cache
        return self._users[name]

    def server_env(self, base: dict | None = None) -> dict:
        return self.kdc.env(base=base)

    def server_args(self, *more: str) -> tuple[str, ...]:
        return ("--kerberos-principal", "hive/localhost@" + self.name,
                "--kerberos-keytab", str(self.server_keytab), *more)


@contextmanager
def started_realm(folder: Path) -> Iterator[Realm]:
    """A KDC of its own in ``folder`` (hms_proxy.tools.kdc) and its Realm, stopped on leaving:
    a module's ``realm`` fixture."""
    from hms_proxy.tools.kdc import KDC

    kdc = KDC(folder / "kdc").start()
    try:
        yield Realm(kdc, folder)
    finally:
        kdc.stop()


@contextmanager
def as_user(realm: Realm, user: str | None):
    """This process's Kerberos environment set to ``user``'s ticket cache (None: no ticket)."""
    saved = {k: os.environ.get(k) for k in ("KRB5_CONFIG", "KRB5CCNAME")}
    os.environ["KRB5_CONFIG"] = str(realm.kdc.folder / "krb5.conf")
    os.environ["KRB5CCNAME"] = f"FILE:{realm.user(user)}" if user else \
        f"FILE:{realm.folder / 'nobody.ccache'}"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def sasl_client(realm: Realm, proc, user: str | None = "alice", qop: str = "auth",
                host: str = "localhost", timeout: float = 60.0,
                authorization_id: str | None = None) -> Iterator[Client]:
    """A Thrift client of ``proc`` authenticated as ``user`` over SASL GSSAPI."""
    with as_user(realm, user):
        sock = TSocket.TSocket(proc.host, proc.port)
        sock.setTimeout(timeout * 1000)
        kwargs = {"qops": [qop.encode() if isinstance(qop, str) else qop]}
        if authorization_id is not None:
            kwargs["authorization_id"] = authorization_id
        transport = TTransport.TSaslClientTransport(sock, host, "hive", **kwargs)
        transport.open()
        try:
            yield Client(TBinaryProtocol.TBinaryProtocol(transport))
        finally:
            transport.close()


def start_stock_kerberized(realm: Realm, workdir: Path, protection: str = "authentication",
                           with_transactions: bool = True, extra_properties: dict | None = None,
                           core_site: dict | None = None):
    """The stock HMS 2.3.10, Kerberized as its docs say (hive.metastore.sasl.enabled, its
    principal and keytab, Hadoop's security set to kerberos with ``protection`` as
    hadoop.rpc.protection: :func:`hms_proxy.tools.bench.kerberized.stock_kerberized_options`,
    as the bench starts it); with its transaction tables unless told (pyiceberg and Trino lock
    a table to commit), ``extra_properties`` besides (hive-site) and ``core_site``'s (Hadoop's
    own, such as the hadoop.proxyuser rules)."""
    from hms_proxy.tools.bench.kerberized import stock_kerberized_options
    from hms_proxy.tools.metastores import start_stock_hms

    options = stock_kerberized_options(realm.kdc, realm.server_keytab, workdir, protection,
                                       ask=ready_as(realm), core_site=core_site)
    options["extra_properties"].update(extra_properties or {})
    return start_stock_hms(workdir, with_transactions=with_transactions, **options)


QOP_OF = {"authentication": "auth", "integrity": "auth-int", "privacy": "auth-conf"}


def start_standalone_kerberized(realm: Realm, workdir: Path, start,
                                protection: str = "authentication", **kwargs):
    """A stock standalone metastore (``start``: :func:`hms_proxy.tools.hive31_local.
    start_stock_hms31` or :func:`hms_proxy.tools.hive4_local.start_stock_hms4`) Kerberized as
    the 2.3.10 one is (:func:`start_stock_kerberized`), its settings under the standalone
    metastore's own names (``metastore.sasl.enabled``...) as well as Hive's."""
    from hms_proxy.tools.bench.kerberized import stock_kerberized_options

    options = stock_kerberized_options(realm.kdc, realm.server_keytab, workdir, protection,
                                       ask=ready_as(realm, qop=QOP_OF[protection]))
    hive = options.pop("extra_properties")
    extra = {**hive, **{k.replace("hive.metastore.", "metastore.", 1): v
                        for k, v in hive.items()}}
    return start(workdir, extra=extra, **options, **kwargs)


def spark_settings(realm: Realm, folder: Path, protection: str = "authentication",
                   user: str = "alice") -> tuple[dict, dict]:
    """(Spark's settings, its environment) for a Spark session against a Kerberized
    metastore, as an unmodified Spark is set up on a gateway host: ``user``'s ticket cache,
    Hadoop's security set to kerberos with ``protection`` as hadoop.rpc.protection in a
    core-site.xml of ``folder`` (HADOOP_CONF_DIR), hive.metastore.sasl.enabled and the
    server's principal. For :func:`tests.e2e.spark.conftest.run_sides` (None unsets)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "core-site.xml").write_text(
        '<?xml version="1.0"?>\n<configuration>\n'
        "<property><name>hadoop.security.authentication</name><value>kerberos</value>"
        f"</property>\n<property><name>hadoop.rpc.protection</name><value>{protection}</value>"
        "</property>\n</configuration>\n")
    conf = {"spark.driver.extraJavaOptions":
            f"-Djava.security.krb5.conf={realm.kdc.folder / 'krb5.conf'} "
            "-Dsun.security.krb5.disableReferrals=true",
            "spark.hadoop.hive.metastore.sasl.enabled": "true",
            "spark.hadoop.hive.metastore.kerberos.principal": f"hive/localhost@{realm.name}"}
    env = {"KRB5CCNAME": f"FILE:{realm.user(user)}",
           "KRB5_CONFIG": str(realm.kdc.folder / "krb5.conf"),
           "HADOOP_CONF_DIR": str(folder), "HADOOP_USER_NAME": None}
    return conf, env


def ready_as(realm: Realm, user: str = "alice", qop: str = "auth"):
    """``start_proxy(..., ask=...)``: the server answers a Kerberized call."""
    def ask(proc):
        with sasl_client(realm, proc, user, qop=qop, timeout=10) as client:
            client.get_all_databases()
    return ask


def java_digest_call(proc, token: str, qop: str = "auth", calls: int = 1) -> dict:
    """A delegation token used over DIGEST-MD5 by the JDK's client through libthrift, as Hive's
    own client (a Spark executor) uses it, asking for ``qop``: what it answered
    (tests/security/java/DigestClient.java)."""
    import json
    import subprocess

    from hms_proxy.tools import metastores

    classes = metastores.compile_java(Path(__file__).resolve().parent.parent / "security" /
                                      "java" / "DigestClient.java", "the DIGEST-MD5 Java client")
    out = subprocess.run(["java", "-cp", f"{classes}:{metastores.classpath()}", "DigestClient",
                          proc.host, str(proc.port), token, qop, str(calls)],
                         capture_output=True, text=True, timeout=120)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise AssertionError(f"DigestClient printed nothing: {out.stderr[-2000:]}")
    return json.loads(lines[-1])
