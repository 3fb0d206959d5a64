"""A throwaway MIT Kerberos KDC on loopback, with a realm of its own: for the tests, the docs'
walk-through and the bench (``serve --kerberos-*`` needs a KDC to mean anything).

Debian's ``krb5-kdc`` (``krb5kdc``, ``kdb5_util``, ``kadmin.local``) and ``krb5-user``
(``kinit``) are the programs; ``make test`` installs them when missing and apt-get is usable.
Everything lives in one directory::

    krb5.conf        the clients' and servers' configuration (KRB5_CONFIG): the realm's KDC on
                     127.0.0.1:<port>, no DNS, no reverse lookups
    kdc.conf         the KDC's own (KRB5_KDC_PROFILE)
    principal*       the database, stash: the master key
    <name>.keytab    a keytab per principal made with :meth:`KDC.keytab`

The environment of :meth:`KDC.env` points a process at this realm (KRB5_CONFIG, and a ticket
cache of its own with :meth:`KDC.kinit`); the JVM needs ``-Djava.security.krb5.conf``
(:meth:`KDC.jvm_options`).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PROGRAMS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")
INSTALL_HINT = ("MIT Kerberos is not installed: apt-get install -y krb5-kdc krb5-admin-server "
                "krb5-user libkrb5-dev")


def _program(name: str) -> str | None:
    for folder in (None, "/usr/sbin", "/usr/bin", "/sbin"):
        found = shutil.which(name, path=folder)
        if found:
            return found
    return None


def missing() -> str | None:
    """None when the programs are here; else the one-line install hint."""
    return None if all(_program(p) for p in PROGRAMS) else INSTALL_HINT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KDC:
    """A running KDC of ``realm`` in ``folder``; :meth:`stop` (or ``with``) ends it."""

    def __init__(self, folder: Path, realm: str = "HMS.TEST"):
        self.folder = Path(folder)
        self.realm = realm
        self.port = 0
        self.proc: subprocess.Popen | None = None

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> "KDC":
        hint = missing()
        if hint:
            raise RuntimeError(hint)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        realm = self.realm
        db = self.folder / "principal"
        (self.folder / "kdc.conf").write_text(
            "[kdcdefaults]\n"
            f" kdc_ports = {self.port}\n kdc_tcp_ports = {self.port}\n"
            "[realms]\n"
            f" {realm} = {{\n"
            f"  database_name = {db}\n"
            f"  key_stash_file = {self.folder / 'stash'}\n"
            f"  acl_file = {self.folder / 'kadm5.acl'}\n"
            "  max_life = 1d\n  max_renewable_life = 7d\n"
            "  supported_enctypes = aes256-cts-hmac-sha1-96:normal "
            "aes128-cts-hmac-sha1-96:normal\n"
            " }\n"
            "[logging]\n"
            f" kdc = FILE:{self.folder / 'kdc.log'}\n")
        (self.folder / "kadm5.acl").write_text("")
        (self.folder / "krb5.conf").write_text(
            "[libdefaults]\n"
            f" default_realm = {realm}\n"
            " dns_lookup_kdc = false\n dns_lookup_realm = false\n"
            " dns_canonicalize_hostname = false\n rdns = false\n"
            " ignore_acceptor_hostname = false\n"
            " udp_preference_limit = 1\n"  # TCP, as the JVM's clients too
            " ticket_lifetime = 24h\n renew_lifetime = 7d\n forwardable = true\n"
            "[realms]\n"
            f" {realm} = {{\n  kdc = 127.0.0.1:{self.port}\n }}\n"
            "[domain_realm]\n"
            f" localhost = {realm}\n 127.0.0.1 = {realm}\n")
        env = self.env()
        subprocess.run([_program("kdb5_util"), "create", "-s", "-r", realm, "-P", "master-pw"],
                       env=env, check=True, capture_output=True, timeout=60)
        self.proc = subprocess.Popen([_program("krb5kdc"), "-n", "-r", realm], env=env,
                                     stdout=subprocess.DEVNULL,
                                     stderr=open(self.folder / "krb5kdc.err", "wb"),
                                     start_new_session=True)
        deadline = time.monotonic() + 30
        while True:  # up when it takes a TCP connection on its port
            if self.proc.poll() is not None:
                raise RuntimeError("krb5kdc exited: "
                                   + (self.folder / "krb5kdc.err").read_text(errors="replace"))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("krb5kdc did not listen within 30 s") from None
                time.sleep(0.05)
        return self

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def __enter__(self) -> "KDC":
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- principals ---------------------------------------------------------------------
    def env(self, ccache: Path | str | None = None, base: dict | None = None) -> dict:
        """An environment for this realm (KRB5_CONFIG; ``ccache``: KRB5CCNAME)."""
        env = dict(os.environ if base is None else base)
        env["KRB5_CONFIG"] = str(self.folder / "krb5.conf")
        env["KRB5_KDC_PROFILE"] = str(self.folder / "kdc.conf")
        env.pop("KRB5_KTNAME", None)
        if ccache is not None:
            env["KRB5CCNAME"] = f"FILE:{ccache}"
        return env

    def kadmin(self, query: str) -> str:
        out = subprocess.run([_program("kadmin.local"), "-r", self.realm, "-q", query],
                             env=self.env(), check=True, capture_output=True, text=True,
                             timeout=60)
        return out.stdout

    def principal(self, name: str, password: str | None = None) -> str:
        """Adds ``name`` (``alice``, ``hive/localhost``) to the realm; its full name."""
        full = name if "@" in name else f"{name}@{self.realm}"
        secret = f"-pw {password}" if password else "-randkey"
        self.kadmin(f"addprinc {secret} {full}")
        return full

    def keytab(self, *names: str, path: Path | None = None) -> Path:
        """A keytab holding the keys of ``names`` (each made when not there yet)."""
        path = path or self.folder / (names[0].replace("/", "_").split("@")[0] + ".keytab")
        for name in names:
            full = name if "@" in name else f"{name}@{self.realm}"
            if "Principal:" not in self.kadmin(f"getprinc {full}"):
                self.principal(full)
            self.kadmin(f"ktadd -k {path} -norandkey {full}")
        return path

    def kinit(self, principal: str, keytab: Path, ccache: Path) -> dict:
        """A ticket for ``principal`` from ``keytab`` in ``ccache``; the environment using it."""
        env = self.env(ccache)
        full = principal if "@" in principal else f"{principal}@{self.realm}"
        subprocess.run([_program("kinit"), "-kt", str(keytab), full], env=env, check=True,
                       capture_output=True, timeout=60)
        return env

    def jvm_options(self) -> list[str]:
        return [f"-Djava.security.krb5.conf={self.folder / 'krb5.conf'}",
                "-Dsun.security.krb5.disableReferrals=true",
                "-Djavax.security.auth.useSubjectCredsOnly=false"]
