"""Kerberos for the Thrift listeners: ``serve --kerberos-principal --kerberos-keytab``, what
``hive.metastore.sasl.enabled=true`` with ``hive.metastore.kerberos.principal`` and
``hive.metastore.kerberos.keytab.file`` is to the stock HMS.

A client authenticates with SASL's GSSAPI mechanism (RFC 4752) inside Thrift's SASL transport
(:mod:`hms_proxy.security.sasl`): its Kerberos service ticket for the server's principal,
then the security layer: the server offers the qualities of protection it allows
(``--rpc-protection``, Hadoop's ``hadoop.rpc.protection``: ``authentication`` = ``auth``,
``integrity`` = ``auth-int``, ``privacy`` = ``auth-conf``), the client picks one and names who
it acts as; the stock (Hadoop's SaslGssCallbackHandler) authorizes a client only as itself,
and so does this. The authenticated principal, mapped to a short name by ``auth_to_local``
rules as Hadoop maps it (:class:`AuthToLocal`), is the connection's identity: the caller of
the access rules, the audit log and commit authors, the owner ``set_ugi`` would have named;
``set_ugi`` cannot change it.

``_HOST`` in the principal is the server's host name, lower case, as Hadoop's
``SecurityUtil.getServerPrincipal`` replaces it for a server bound to every address.

Python's ``gssapi`` (``pip install 'hms-proxy[kerberos]'``, built against MIT Kerberos'
``libkrb5-dev``) does the GSS-API work.
"""
from __future__ import annotations

import os
import re
import socket
import struct

from hms_proxy.security.access import ConfigError

INSTALL_HINT = ("serve --kerberos-principal needs the gssapi module: pip install "
                "'hms-proxy[kerberos]' (it builds against MIT Kerberos: apt-get install "
                "libkrb5-dev)")

# the security layers of RFC 4752: the bit of each in the server's offer and client's choice
AUTH, AUTH_INT, AUTH_CONF = 1, 2, 4
_QOP_NAMES = {
    "authentication": AUTH, "auth": AUTH,
    "integrity": AUTH_INT, "auth-int": AUTH_INT,
    "privacy": AUTH_CONF, "auth-conf": AUTH_CONF,
}
QOP_SASL_NAMES = {AUTH: "auth", AUTH_INT: "auth-int", AUTH_CONF: "auth-conf"}
MAX_BUFFER = 0xFFFFFF  # what the server takes in one wrapped frame (the transport's own bound
                       # on a frame applies besides)


def parse_protection(text: str) -> int:
    """``--rpc-protection``: a comma list of Hadoop's names (or SASL's); the bit mask."""
    mask = 0
    for word in (text or "").split(","):
        word = word.strip().lower()
        if not word:
            continue
        if word not in _QOP_NAMES:
            raise ConfigError(f"--rpc-protection: unknown quality of protection {word!r} "
                              "(authentication, integrity, privacy)")
        mask |= _QOP_NAMES[word]
    if not mask:
        raise ConfigError("--rpc-protection: name at least one of authentication, "
                          "integrity, privacy")
    return mask


def server_principal(principal: str, host: str | None = None) -> str:
    """``hive/_HOST@REALM`` with ``_HOST`` replaced by ``host`` (or this machine's name)."""
    if "/_HOST@" not in principal and not principal.endswith("/_HOST"):
        return principal
    name = host if host and host not in ("0.0.0.0", "::", "") else socket.getfqdn()
    return principal.replace("/_HOST", "/" + name.lower(), 1)


# --- auth_to_local ----------------------------------------------------------------------------
class NoMatchingRule(Exception):
    """No rule maps a principal to a short name (Hadoop's NoMatchingRule)."""


_RULE = re.compile(
    r"\s*(?:(DEFAULT)|RULE:\[(\d+):([^\]]*)\](?:\(([^)]*)\))?"
    r"(?:s/([^/]*)/([^/]*)/(g)?)?/?(L)?)\s*")


class AuthToLocal:
    """Hadoop's ``hadoop.security.auth_to_local`` rules (its "hadoop" mechanism):

    - ``DEFAULT``: a principal of the default realm maps to its first component
      (``alice@R`` and ``alice/host@R`` to ``alice``);
    - ``RULE:[n:format](regex)s/pattern/replacement/g/L``: for a principal of ``n``
      components, ``format`` builds a string (``$0`` the realm, ``$1``... the components),
      which must match ``regex`` in full; the substitution (every match with ``g``) gives the
      short name, lower-cased with ``L``.

    The first rule that applies wins; none applying refuses the principal. A result that still
    holds ``/`` or ``@`` is refused too, as Hadoop refuses a non-simple short name.
    """

    def __init__(self, rules: str, default_realm: str | None):
        self.default_realm = default_realm
        self.rules = []
        text = (rules or "DEFAULT").strip()
        pos = 0
        while pos < len(text):
            m = _RULE.match(text, pos)
            if m is None or m.end() == pos:
                raise ConfigError(f"--kerberos-auth-to-local: cannot read the rule at "
                                  f"{text[pos:pos + 40]!r}")
            self.rules.append(m.groups())
            pos = m.end()

    def short_name(self, principal: str) -> str:
        name, _, realm = principal.partition("@")
        parts = name.split("/")
        for default, count, fmt, regex, pattern, replacement, every, lower in self.rules:
            if default:
                if realm == self.default_realm and len(parts) <= 2:
                    return parts[0]
                continue
            if int(count) != len(parts):
                continue
            built = re.sub(r"\$(\d+)", lambda g: realm if g.group(1) == "0" else
                           (parts[int(g.group(1)) - 1] if int(g.group(1)) <= len(parts) else ""),
                           fmt)
            if regex is not None and not re.fullmatch(regex, built):
                continue
            result = built
            if pattern is not None:
                repl = re.sub(r"\$(\d+)", r"\\g<\1>", replacement)
                result = re.sub(pattern, repl, built, count=0 if every else 1)
            if lower:
                result = result.lower()
            if "/" in result or "@" in result:
                raise NoMatchingRule(f"Non-simple name {result} after auth_to_local rule "
                                     f"for {principal}")
            return result
        raise NoMatchingRule(f"No rules applied to {principal}")


def default_realm() -> str | None:
    """The default realm of the krb5.conf in use (KRB5_CONFIG), or None."""
    try:
        import gssapi
        name = gssapi.Name("x", gssapi.NameType.user).canonicalize(gssapi.MechType.kerberos)
        return str(name).partition("@")[2] or None
    except Exception:  # noqa: BLE001 - no realm configured: DEFAULT maps nothing
        return None


# --- the server side -------------------------------------------------------------------------
class Kerberos:
    """The acceptor credentials and settings of one server, loaded once at start."""

    def __init__(self, principal: str, keytab: str, protection: int, auth_to_local: AuthToLocal):
        self.principal = principal
        self.keytab = keytab
        self.protection = protection
        self.auth_to_local = auth_to_local
        self._creds = None

    @classmethod
    def load(cls, principal: str, keytab: str | None, protection: str = "authentication",
             rules: str | None = None, host: str | None = None) -> "Kerberos":
        """Raises ConfigError, in one line, on a keytab that is missing or unreadable, or that
        does not hold the principal's key, or when gssapi is not installed."""
        if not keytab:
            raise ConfigError("--kerberos-principal needs --kerberos-keytab")
        if not os.path.isfile(keytab) or not os.access(keytab, os.R_OK):
            raise ConfigError(f"--kerberos-keytab {keytab}: no such readable file")
        try:
            import gssapi
        except ImportError:
            raise ConfigError(INSTALL_HINT) from None
        full = server_principal(principal, host)
        mask = parse_protection(protection)
        realm = full.partition("@")[2] or default_realm()
        if "@" not in full and realm:
            full = f"{full}@{realm}"
        self = cls(full, keytab, mask, AuthToLocal(rules, realm))
        try:
            name = gssapi.Name(full, gssapi.NameType.kerberos_principal)
            self._creds = gssapi.Credentials(name=name, usage="accept",
                                             store={"keytab": keytab})
            self._creds.inquire()  # the keytab holds a key of that principal, or this raises
        except gssapi.exceptions.GSSError as exc:
            raise ConfigError(f"--kerberos-keytab {keytab}: no key for {full} in it "
                              f"({_gss_text(exc)})") from None
        return self

    def mechanism(self) -> "GssapiServer":
        return GssapiServer(self)


class AuthenticationFailed(Exception):
    """The client's SASL exchange failed: ``answer`` goes back to it (the stock's words, which
    tell a stranger nothing), the message to the server's log."""

    def __init__(self, message: str, answer: str | None = None):
        super().__init__(message)
        self.answer = answer or message


class GssapiServer:
    """One connection's GSSAPI exchange (RFC 4752, the server's side), then its wrap/unwrap."""

    name = "GSSAPI"

    def __init__(self, kerberos: Kerberos):
        import gssapi
        self._gssapi = gssapi
        self.kerberos = kerberos
        self.context = gssapi.SecurityContext(creds=kerberos._creds, usage="accept")
        self.stage = 0  # 0: GSS tokens, 1: offer the layers, 2: read the choice
        self.complete = False
        self.principal: str | None = None
        self.user: str | None = None
        self.qop = AUTH

    def step(self, response: bytes) -> bytes:
        gssapi = self._gssapi
        try:
            if self.stage == 0:
                token = self.context.step(response)
                if self.context.complete:
                    self.principal = str(self.context.initiator_name)
                    self.stage = 1
                    if token:
                        return token
                    return self._offer()
                return token or b""
            if self.stage == 1:  # the client's empty answer to the last token
                return self._offer()
            if self.stage == 2:
                return self._choice(response)
        except gssapi.exceptions.GSSError as exc:
            raise AuthenticationFailed(f"GSS initiate failed: {_gss_text(exc)}",
                                       "GSS initiate failed") from None
        raise AuthenticationFailed("SASL GSSAPI exchange already complete")

    def _offer(self) -> bytes:
        self.stage = 2
        word = struct.pack("!I", (self.kerberos.protection << 24) | MAX_BUFFER)
        return self.context.wrap(word, False).message

    def _choice(self, response: bytes) -> bytes:
        plain = self.context.unwrap(response).message
        if len(plain) < 4:
            raise AuthenticationFailed("Invalid response length from the client: "
                                       f"{len(plain)} bytes")
        chosen = plain[0]
        if chosen not in (AUTH, AUTH_INT, AUTH_CONF) or not chosen & self.kerberos.protection:
            allowed = ", ".join(name for bit, name in QOP_SASL_NAMES.items()
                                if bit & self.kerberos.protection)
            raise AuthenticationFailed(
                f"Client selected unsupported protection: {chosen} (allowed: {allowed})",
                "Problem with callback handler")  # the stock's words: its handler checks it
        authzid = plain[4:].decode("utf-8", "replace")
        if authzid and authzid != self.principal:
            raise AuthenticationFailed(
                f"{self.principal} is not authorized to connect as {authzid}",
                "Problem with callback handler")
        try:
            self.user = self.kerberos.auth_to_local.short_name(self.principal)
        except NoMatchingRule as exc:
            raise AuthenticationFailed(str(exc), "Problem with callback handler") from None
        self.qop = chosen
        self.complete = True
        self.stage = 3
        return b""

    @property
    def wraps(self) -> bool:
        return self.qop != AUTH

    def wrap(self, data: bytes) -> bytes:
        return self.context.wrap(data, self.qop == AUTH_CONF).message

    def unwrap(self, data: bytes) -> bytes:
        result = self.context.unwrap(data)
        if self.qop == AUTH_CONF and not result.encrypted:
            raise AuthenticationFailed("privacy was negotiated and a frame came unencrypted")
        return result.message


def _gss_text(exc) -> str:
    """The GSS-API's own words for an error, on one line."""
    try:
        text = exc.gen_message()
    except Exception:  # noqa: BLE001 - a minor status the library cannot render
        text = str(exc)
    return " ".join(str(text).split())
