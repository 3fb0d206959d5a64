"""Thrift's SASL transport, the client's side, with GSSAPI from a keytab: how this server
authenticates to a Kerberized metastore it federates (``serve --upstream ...
--upstream-kerberos-principal hive/_HOST@REALM``), as a Hive client does with
``hive.metastore.sasl.enabled`` and a keytab login.

Its own credentials are the server's: ``--kerberos-principal`` and ``--kerberos-keytab`` (a
Kerberized server is a client of the upstream under the same name, as the stock HMS's own
clients are). The ticket is taken from the keytab into a credential cache in memory, never the
user's, and renewed by the GSS-API when it expires. The negotiation (:mod:`hms_proxy.security.
sasl` has the message format) is RFC 4752's, the client's part: tokens until the context is
established, then the server's offer of security layers, answered with the strongest this side
asks for (``auth`` unless ``qop`` says more) and no authorization id (acting as itself); the
frames after it are wrapped when the layer is ``auth-int`` or ``auth-conf``.
"""
from __future__ import annotations

import struct

from thrift.transport.TTransport import TTransportException

from hms_proxy.security.access import ConfigError
from hms_proxy.security.kerberos import AUTH, AUTH_CONF, AUTH_INT, INSTALL_HINT, _gss_text
from hms_proxy.security.sasl import (BAD, COMPLETE, ERROR, MAX_NEGOTIATION_MESSAGE, MAX_STEPS,
                                     OK, START, SaslTransport)


class GssapiClient:
    """Client credentials from a keytab and the upstream's service principal: opens SASL
    transports over connected sockets."""

    def __init__(self, client_principal: str, keytab: str, service_principal: str,
                 qop: int = AUTH, max_frame: int = 100 * 1024 * 1024):
        try:
            import gssapi
        except ImportError:
            raise ConfigError(INSTALL_HINT) from None
        self._gssapi = gssapi
        self.service_principal = service_principal
        self.qop = qop
        self.max_frame = max_frame
        try:
            name = gssapi.Name(client_principal, gssapi.NameType.kerberos_principal)
            self.creds = gssapi.Credentials(
                name=name, usage="initiate",
                store={"client_keytab": keytab, "ccache": f"MEMORY:hms-proxy-{id(self)}"})
        except gssapi.exceptions.GSSError as exc:
            raise ConfigError(f"--kerberos-keytab {keytab}: cannot act as {client_principal} "
                              f"({_gss_text(exc)})") from None

    def target(self, host: str) -> str:
        """The upstream's principal, ``_HOST`` replaced by the host of its URI."""
        return self.service_principal.replace("/_HOST", "/" + host.lower(), 1)

    def open(self, trans, host: str) -> SaslTransport:
        """Negotiates over ``trans`` (an open TSocket); the transport for the calls. Raises
        TTransportException with the server's or the GSS-API's reason."""
        gssapi = self._gssapi
        flags = [gssapi.RequirementFlag.mutual_authentication,
                 gssapi.RequirementFlag.integrity]
        if self.qop & AUTH_CONF:
            flags.append(gssapi.RequirementFlag.confidentiality)
        try:
            context = gssapi.SecurityContext(
                name=gssapi.Name(self.target(host), gssapi.NameType.kerberos_principal),
                creds=self.creds, usage="initiate", flags=flags)
            _send(trans, START, b"GSSAPI")
            _send(trans, OK, context.step() or b"")
            qop = None
            for _ in range(MAX_STEPS):
                status, payload = _receive(trans)
                if status in (BAD, ERROR):
                    raise TTransportException(
                        TTransportException.NOT_OPEN,
                        "SASL negotiation refused by the upstream: "
                        + payload.decode("utf-8", "replace"))
                if status == COMPLETE:
                    if qop is None:
                        raise TTransportException(TTransportException.NOT_OPEN,
                                                  "the upstream ended SASL negotiation early")
                    return SaslTransport(trans, _Layer(context, qop), self.max_frame)
                if status != OK:
                    raise TTransportException(TTransportException.NOT_OPEN,
                                              f"SASL negotiation: unexpected status {status}")
                if not context.complete:
                    _send(trans, OK, context.step(payload) or b"")
                    continue
                if not payload:  # the server's empty turn after the last token
                    _send(trans, OK, b"")
                    continue
                offer = context.unwrap(payload).message
                if len(offer) != 4:
                    raise TTransportException(TTransportException.NOT_OPEN,
                                              "SASL negotiation: a malformed security offer")
                offered = offer[0]
                for layer in (AUTH_CONF, AUTH_INT, AUTH):
                    if layer & offered and layer & self.qop:
                        qop = layer
                        break
                else:
                    raise TTransportException(
                        TTransportException.NOT_OPEN,
                        f"the upstream offers no quality of protection asked for "
                        f"(offered {offered}, asked {self.qop})")
                reply = bytes([qop]) + (0xFFFFFF).to_bytes(3, "big")
                _send(trans, OK, context.wrap(reply, False).message)
            raise TTransportException(TTransportException.NOT_OPEN,
                                      "SASL negotiation did not end")
        except gssapi.exceptions.GSSError as exc:
            raise TTransportException(TTransportException.NOT_OPEN,
                                      f"Kerberos to the upstream: {_gss_text(exc)}") from None


def _send(trans, status: int, payload: bytes) -> None:
    trans.write(struct.pack("!Bi", status, len(payload)) + payload)
    trans.flush()


def _receive(trans) -> tuple[int, bytes]:
    header = trans.readAll(5)
    status, length = header[0], struct.unpack("!i", header[1:])[0]
    if length < 0 or length > MAX_NEGOTIATION_MESSAGE:
        raise TTransportException(TTransportException.NOT_OPEN,
                                  f"SASL negotiation: a message of {length} bytes")
    return status, trans.readAll(length) if length else b""


class _Layer:
    """The security layer negotiated, in the shape SaslTransport takes a mechanism's."""

    def __init__(self, context, qop: int):
        self.context, self.qop = context, qop
        self.wraps = qop != AUTH

    def wrap(self, data: bytes) -> bytes:
        return self.context.wrap(data, self.qop == AUTH_CONF).message

    def unwrap(self, data: bytes) -> bytes:
        return self.context.unwrap(data).message
