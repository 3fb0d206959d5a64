"""TLS for the Thrift listeners (``serve --tls-cert --tls-key [--tls-client-ca]``).

HMS 2.3 with ``hive.metastore.use.SSL=true`` listens on a plain SSL server socket and speaks
the same transport and binary protocol through it; its clients open an SSL socket checked
against ``hive.metastore.truststore.path``. So TLS here is the accepted socket wrapped, and
nothing else changes. The handshake runs in the connection's own thread, bounded by a
timeout, so a client that connects and never completes it holds one thread for that long at
most and never the accept loop. With a client CA, a client must present a certificate it
signed (mutual TLS), and the certificate's subject CN becomes the connection's identity.
"""
from __future__ import annotations

import socket
import ssl

from thrift.transport.TTransport import TTransportException

from hms_proxy.security.access import ConfigError

DEFAULT_HANDSHAKE_TIMEOUT = 10.0


class HandshakeFailed(TTransportException):
    """The client did not complete a TLS handshake the server accepts."""


class TLS:
    """The server side of TLS for every listener of one server."""

    def __init__(self, context: ssl.SSLContext, handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
                 client_certs: bool = False):
        self.context = context
        self.handshake_timeout = handshake_timeout
        self.client_certs = client_certs

    @classmethod
    def load(cls, cert: str, key: str | None = None, client_ca: str | None = None,
             handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT) -> "TLS":
        """Raises ConfigError on a file that cannot be used (missing, unreadable, a key
        that is not the certificate's...)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)  # TLS 1.2 and later only
        try:
            context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"--tls-cert {cert} / --tls-key {key}: cannot load the "
                              f"certificate and its key: {_reason(exc)}") from None
        if client_ca:
            try:
                context.load_verify_locations(cafile=client_ca)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(f"--tls-client-ca {client_ca}: {_reason(exc)}") from None
            context.verify_mode = ssl.CERT_REQUIRED
        if handshake_timeout <= 0:
            raise ConfigError("--tls-handshake-timeout must be more than 0 seconds")
        return cls(context, handshake_timeout, client_certs=bool(client_ca))

    def accept(self, conn: socket.socket, ctx=None) -> ssl.SSLSocket:
        """The TLS socket over an accepted connection, once the handshake is done; with
        client certificates, ``ctx.identity`` becomes the certificate's CN (``ctx.auth``
        ``cert``). Raises HandshakeFailed (the socket closed) when it fails or times out."""
        tls = None
        try:
            conn.settimeout(self.handshake_timeout)
            tls = self.context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
            tls.do_handshake()
            tls.settimeout(None)
            if self.client_certs and ctx is not None:
                cn = common_name(tls.getpeercert())
                if cn is None:
                    raise ssl.SSLError("the client certificate has no subject CN")
                ctx.identity, ctx.auth = cn, "cert"
            return tls
        except (OSError, ValueError) as exc:  # ssl.SSLError and socket.timeout are OSErrors
            for sock in (tls, conn):
                try:
                    if sock is not None:
                        sock.close()
                except OSError:
                    pass
            what = "timed out" if isinstance(exc, socket.timeout) else _reason(exc)
            raise HandshakeFailed(TTransportException.UNKNOWN,
                                  f"TLS handshake failed: {what}") from None


def common_name(cert: dict | None) -> str | None:
    """The subject CN of a certificate as ``SSLSocket.getpeercert()`` gives it."""
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return f"{exc.reason} ({exc.verify_message})" if getattr(exc, "verify_message", None) \
            else str(exc.reason)
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
