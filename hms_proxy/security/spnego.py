"""Kerberos for the HTTP doors: SPNEGO (RFC 4559), ``serve --http-kerberos-principal
HTTP/_HOST@REALM``, what ``hive.server2.authentication.spnego.principal`` and Hadoop's
``hadoop.http.authentication.type=kerberos`` are to the stock.

A client (``curl --negotiate -u :``, Hadoop's and Hive's SPNEGO clients, a browser) sends
``Authorization: Negotiate <base64 GSS token>``: a SPNEGO (or bare Kerberos) token carrying its
service ticket for the HTTP principal. Kerberos completes in one step, so each request is
accepted on its own, with no state kept between requests (as Hadoop's
``KerberosAuthenticationHandler`` does): the accepted principal, mapped to a short name by the
same ``auth_to_local`` rules as the Thrift listeners (:class:`~hms_proxy.security.kerberos.
AuthToLocal`), is the caller; the acceptor's last token (the mutual authentication's AP-REP)
goes back in ``WWW-Authenticate: Negotiate <token>``. A token that cannot be accepted (garbage,
expired, a ticket for another service, a principal no rule maps) is refused with 403, as
Hadoop refuses it; one without any is challenged with 401 ``WWW-Authenticate: Negotiate``.
"""
from __future__ import annotations

import base64
import binascii
import os
import socket
from dataclasses import dataclass

from hms_proxy.security.access import ConfigError
from hms_proxy.security.kerberos import (INSTALL_HINT, AuthToLocal, NoMatchingRule, _gss_text,
                                         default_realm, server_principal)

SCHEME = "Negotiate"
#: the longest Negotiate token taken, base64 (a ticket with a large Windows PAC is some tens of
#: kilobytes; Hadoop's advice for hadoop.http.max.request.header.size is 64 KiB)
MAX_TOKEN = 64 << 10


class Refused(Exception):
    """A Negotiate token that is not accepted: the message says why (the GSS-API's words)."""


@dataclass(frozen=True)
class Accepted:
    """Who a Negotiate token proved to be, and the token to send back (None: nothing)."""

    principal: str
    user: str
    reply: str | None

    def reply_headers(self) -> dict:
        return {"WWW-Authenticate": f"{SCHEME} {self.reply}"} if self.reply else {}


class Spnego:
    """The HTTP doors' acceptor: the HTTP principal's credentials, loaded once at start."""

    def __init__(self, principal: str, keytab: str, auth_to_local: AuthToLocal, creds):
        self.principal = principal
        self.keytab = keytab
        self.auth_to_local = auth_to_local
        self._creds = creds

    @classmethod
    def load(cls, principal: str, keytab: str | None, rules: str | None = None,
             host: str | None = None, option: str = "--http-kerberos-keytab") -> "Spnego":
        """Raises ConfigError, in one line (naming ``option``, where the keytab was given),
        on a keytab that is missing, unreadable or without the principal's key, or when
        gssapi is not installed."""
        if not keytab:
            raise ConfigError("--http-kerberos-principal needs --http-kerberos-keytab "
                              "(or --kerberos-keytab)")
        if not os.path.isfile(keytab) or not os.access(keytab, os.R_OK):
            raise ConfigError(f"{option} {keytab}: no such readable file")
        try:
            import gssapi
        except ImportError:
            raise ConfigError(INSTALL_HINT.replace("--kerberos-principal",
                                                   "--http-kerberos-principal")) from None
        full = server_principal(principal, _host_name(host))
        realm = full.partition("@")[2] or default_realm()
        if "@" not in full and realm:
            full = f"{full}@{realm}"
        rules_mapped = AuthToLocal(rules, realm)
        try:
            name = gssapi.Name(full, gssapi.NameType.kerberos_principal)
            creds = gssapi.Credentials(name=name, usage="accept", store={"keytab": keytab})
            creds.inquire()  # the keytab holds a key of that principal, or this raises
        except gssapi.exceptions.GSSError as exc:
            raise ConfigError(f"{option} {keytab}: no key for {full} in it "
                              f"({_gss_text(exc)})") from None
        return cls(full, keytab, rules_mapped, creds)

    def accept(self, value: str) -> Accepted:
        """The caller of ``Authorization: Negotiate <value>``. Raises :class:`Refused`."""
        import gssapi

        value = (value or "").strip()
        if not value:
            raise Refused("Negotiate without a token")
        if len(value) > MAX_TOKEN:
            raise Refused(f"Negotiate token over {MAX_TOKEN} bytes")
        try:
            token = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise Refused("Negotiate token is not base64") from None
        try:
            context = gssapi.SecurityContext(creds=self._creds, usage="accept")
            reply = context.step(token)
            if not context.complete:  # no second round: nothing is kept between requests
                raise Refused("GSS negotiation needs more than one round (not Kerberos?)")
            principal = str(context.initiator_name)
        except gssapi.exceptions.GSSError as exc:
            raise Refused(f"GSS accept failed: {_reason(exc)}") from None
        try:
            user = self.auth_to_local.short_name(principal)
        except NoMatchingRule as exc:
            raise Refused(str(exc)) from None
        return Accepted(principal, user,
                        base64.b64encode(reply).decode("ascii") if reply else None)


def _reason(exc) -> str:
    """The GSS-API's reason in a few words: its minor status' message when it says something
    (``Cannot decrypt ticket for ...``, ``Ticket expired``, ``Request is a replay``), else the
    major status' first sentence."""
    text = _gss_text(exc)
    major, _, minor = text.partition(", Minor (")
    minor = minor.partition("): ")[2]
    if minor and minor != "Success":
        return minor
    return major.partition("): ")[2].split(". ")[0] or text


def _host_name(host: str | None) -> str | None:
    """The name ``_HOST`` stands for on a door bound to ``host``: an address' name (as Hadoop
    takes the bind address' canonical host name), this machine's for every address."""
    if not host or host in ("0.0.0.0", "::"):
        return None
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host.strip("[]"))
    except OSError:
        return host  # a name already
    return socket.getfqdn(host.strip("[]"))


def challenge(basic: str | None = None) -> str:
    """``WWW-Authenticate`` of a 401: Negotiate first (what Hadoop's client reads), then the
    Basic challenge when secrets are configured, as one header of two challenges."""
    return f"{SCHEME}, {basic}" if basic else SCHEME
