"""``hms-proxy bench --kerberos PROTECTION``: the same bench with both metastores Kerberized.

A KDC of the bench's own on loopback (:mod:`hms_proxy.tools.kdc`, MIT Kerberos) with the
service principal ``hive/localhost`` and a user ``bench``; our server with
``--kerberos-principal``, ``--kerberos-keytab`` and ``--rpc-protection PROTECTION``; the stock
HMS 2.3.10 with ``hive.metastore.sasl.enabled``, its principal and keytab and
``hadoop.rpc.protection`` set to PROTECTION (as its docs say); the JVM client logged in from
the user's ticket cache, each connection over libthrift's ``TSaslClientTransport`` with GSSAPI
and the matching quality of protection (``privacy`` is ``auth-conf``: every frame encrypted).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hms_proxy.tools import kdc as kdc_tool

QOP = {"authentication": "auth", "integrity": "auth-int", "privacy": "auth-conf"}
SERVICE = "hive/localhost"
USER = "bench"


@dataclass
class KerberizedBench:
    """What the bench's sides and client need to run Kerberized."""

    kdc: kdc_tool.KDC
    protection: str
    keytab: Path  # the service's
    user_keytab: Path
    ccache: Path

    @property
    def principal(self) -> str:
        return f"{SERVICE}@{self.kdc.realm}"

    def proxy_args(self) -> list[str]:
        return ["--kerberos-principal", self.principal, "--kerberos-keytab", str(self.keytab),
                "--rpc-protection", self.protection]

    def server_env(self, base: dict | None = None) -> dict:
        return self.kdc.env(base=base)

    def stock_options(self, workdir: Path) -> dict:
        """start_stock_hms's options for a Kerberized stock HMS."""
        return stock_kerberized_options(self.kdc, self.keytab, workdir, self.protection,
                                        ask=self.ask)

    def client_jvm_options(self) -> list[str]:
        return [*self.kdc.jvm_options(), f"-Dhmsbench.kerberos.service={SERVICE}",
                f"-Dhmsbench.qop={QOP[self.protection]}"]

    def client_env(self) -> dict:
        return self.kdc.env(self.ccache)

    def ask(self, proc) -> None:
        """Whether ``proc`` answers a Kerberized call (raises until it does): the bench user
        over this package's own GSSAPI client (hms_proxy.security.sasl_client)."""
        from thrift.protocol import TBinaryProtocol
        from thrift.transport import TSocket

        from hms_proxy.security.kerberos import AUTH, AUTH_CONF, AUTH_INT
        from hms_proxy.security.sasl_client import GssapiClient
        from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore

        qop = {"authentication": AUTH, "integrity": AUTH_INT, "privacy": AUTH_CONF}
        client = GssapiClient(f"{USER}@{self.kdc.realm}", str(self.user_keytab),
                              self.principal, qop=qop[self.protection])
        sock = TSocket.TSocket(proc.host, proc.port)
        sock.setTimeout(10_000)
        sock.open()
        try:
            transport = client.open(sock, "localhost")
            ThriftHiveMetastore.Client(
                TBinaryProtocol.TBinaryProtocol(transport)).get_all_databases()
        finally:
            sock.close()


def stock_kerberized_options(kdc: kdc_tool.KDC, keytab: Path, workdir: Path,
                             protection: str = "authentication", ask=None,
                             core_site: dict | None = None) -> dict:
    """``start_stock_hms``'s options for the stock HMS 2.3.10 Kerberized as its docs say:
    hive.metastore.sasl.enabled, the principal ``hive/localhost`` and its keytab, Hadoop's
    security set to kerberos in a core-site.xml with ``protection`` as
    hadoop.rpc.protection, and ``core_site``'s settings besides (Hadoop reads some, such as
    the hadoop.proxyuser rules, only from there)."""
    from xml.sax.saxutils import escape

    conf = Path(workdir) / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    settings = {"hadoop.security.authentication": "kerberos",
                "hadoop.rpc.protection": protection, **(core_site or {})}
    (conf / "core-site.xml").write_text(
        '<?xml version="1.0"?>\n<configuration>\n'
        + "".join(f"<property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                  for k, v in settings.items())
        + "</configuration>\n")
    return {"conf_dir": conf, "jvm_options": kdc.jvm_options(), "env": kdc.env(),
            "extra_properties": {"hive.metastore.sasl.enabled": "true",
                                 "hive.metastore.kerberos.principal": f"{SERVICE}@{kdc.realm}",
                                 "hive.metastore.kerberos.keytab.file": str(keytab)},
            "ask": ask}


def start(workroot: Path, protection: str) -> KerberizedBench:
    """A realm of the bench's own (stop it with ``.kdc.stop()``); SystemExit with a one-line
    hint when MIT Kerberos or the gssapi module is missing."""
    if protection not in QOP:
        raise SystemExit(f"--kerberos: one of {', '.join(QOP)}, not {protection!r}")
    hint = kdc_tool.missing()
    if hint:
        raise SystemExit(f"hms-proxy bench --kerberos: {hint}")
    try:
        import gssapi  # noqa: F401 - our server's Kerberos needs it
    except ImportError:
        from hms_proxy.security.kerberos import INSTALL_HINT
        raise SystemExit(f"hms-proxy bench --kerberos: {INSTALL_HINT}") from None
    kdc = kdc_tool.KDC(Path(workroot) / "kdc").start()
    # the readiness calls (:meth:`KerberizedBench.ask`) are made from this process, whose
    # Kerberos library reads the realm's configuration from here
    os.environ["KRB5_CONFIG"] = str(kdc.folder / "krb5.conf")
    try:
        keytab = kdc.keytab(SERVICE)
        user_keytab = kdc.keytab(USER)
        ccache = Path(workroot) / "kdc" / f"{USER}.ccache"
        kdc.kinit(USER, user_keytab, ccache)
    except BaseException:
        kdc.stop()
        raise
    return KerberizedBench(kdc, protection, keytab, user_keytab, ccache)
