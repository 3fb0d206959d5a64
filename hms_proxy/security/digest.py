"""SASL DIGEST-MD5 (RFC 2831), the server's side, as a Kerberized HMS 2.3 serves it for
delegation tokens: Java's DigestMD5Server behind Hive's SaslDigestCallbackHandler.

The client authenticates with a token (:mod:`hms_proxy.security.delegation`): its username is
the base64 of the token's identifier, its password the base64 of the token's password, the
realm ``default`` (Hadoop's ``SaslRpcServer.SASL_DEFAULT_REALM``) and the digest-uri
``null/default`` (the stock creates its server with no protocol and that realm as the server
name; Hive's own client asks for the same). One round: the server's challenge, the client's
response, and the server's ``rspauth`` in the final COMPLETE. The connection's caller is the
token's owner.

The qualities of protection offered are the server's ``--rpc-protection`` (Hadoop's
``hadoop.rpc.protection``), as for GSSAPI: ``auth``; ``auth-int``, every frame followed by the
first 10 bytes of an HMAC-MD5 of its sequence number and itself, then the message type 1 and
the sequence number (RFC 2831 2.3); ``auth-conf``, the frame and that MAC encrypted with RC4
(RFC 2831 2.4; the ciphers ``rc4``, ``rc4-56`` and ``rc4-40`` are offered, not ``des`` and
``3des``: Java's client, which Hive's and Spark's are, takes ``rc4`` when offered). The keys
are the RFC's, from H(A1); each direction has its own sequence number and its own RC4 stream,
which runs on from frame to frame. A client asking for a layer not offered is refused with the
stock's words. What a client that does not follow the protocol gets is the stock's BAD answer
in its words (``DIGEST-MD5: digest response format violation. ...``; ``DIGEST-MD5: IO error
acquiring password`` for a token that is unknown, cancelled, expired or not a token at all).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import struct

from hms_proxy.security.kerberos import AUTH, AUTH_CONF, AUTH_INT, AuthenticationFailed

REALM = "default"
DIGEST_URI = "null/default"
MAX_RESPONSE = 4096
NONCE_COUNT = 1
_KEYS = ("username", "realm", "nonce", "cnonce", "nonce-count", "qop", "digest-uri",
         "response", "maxbuf", "charset", "cipher", "authzid", "auth-param")
_VIOLATION = "DIGEST-MD5: digest response format violation. "
_QOPS = ((AUTH, "auth"), (AUTH_INT, "auth-int"), (AUTH_CONF, "auth-conf"))
CIPHERS = {"rc4-40": 5, "rc4-56": 7, "rc4": 16}  # offered, and how much of H(A1) keys them
_ZEROS = b":" + b"0" * 32  # A2's end with a security layer (RFC 2831 2.1.2.1)
_MAC = 10
_KIND = struct.pack("!H", 1)
_SEAL = {"client": b"Digest H(A1) to client-to-server sealing key magic constant",
         "server": b"Digest H(A1) to server-to-client sealing key magic constant"}
_SIGN = {"client": b"Digest session key to client-to-server signing key magic constant",
         "server": b"Digest session key to server-to-client signing key magic constant"}


def _refuse(message: str):
    raise AuthenticationFailed(message, message)


def parse_directives(data: bytes) -> dict[str, bytes]:
    """``key=value`` and ``key="quoted value"`` pairs separated by commas (RFC 2831's
    ``1#`` rule), the known keys only, each at most once."""
    found: dict[str, bytes] = {}
    i, n = 0, len(data)
    while i < n:
        while i < n and data[i] in b" \t\r\n,":
            i += 1
        start = i
        while i < n and data[i] != ord("="):
            i += 1
        if i >= n:  # a trailing word without a value: ignored, as the stock ignores it
            break
        key = data[start:i].strip().decode("utf-8", "replace")
        if "," in key:
            _refuse(f"Directive key contains a ',':{key}")
        i += 1
        while i < n and data[i] in b" \t":
            i += 1
        if i < n and data[i] == ord('"'):
            i += 1
            value = bytearray()
            while i < n and data[i] != ord('"'):
                if data[i] == ord("\\") and i + 1 < n:
                    i += 1
                value.append(data[i])
                i += 1
            if i >= n:
                _refuse(f"Unmatched quote found for directive: {key} with value: "
                        f"{bytes(value).decode('utf-8', 'replace')}")
            i += 1
            while i < n and data[i] in b" \t\r\n":
                i += 1
            if i < n and data[i] != ord(","):
                _refuse("Expecting comma or linear whitespace after quoted string: "
                        f"\"{bytes(value).decode('utf-8', 'replace')}\"")
            value = bytes(value)
        else:
            end = data.find(b",", i)
            end = n if end < 0 else end
            value = data[i:end].strip()
            i = end
            if not value:
                _refuse(f"Valueless directive found: {key}")
        lowered = key.lower()
        if lowered in _KEYS:
            if lowered in found:
                _refuse(f"DIGEST-MD5: peer sent more than one {key} directive: "
                        f"{value.decode('utf-8', 'replace')}")
            found[lowered] = value
    return found


def _h(data: bytes) -> bytes:
    return hashlib.md5(data).digest()


def _hex(data: bytes) -> bytes:
    return hashlib.md5(data).hexdigest().encode("ascii")


def _a1(username: bytes, realm: bytes, password: bytes, nonce: bytes, cnonce: bytes,
        authzid: bytes | None) -> bytes:
    a1 = _h(username + b":" + realm + b":" + password) + b":" + nonce + b":" + cnonce
    if authzid is not None:
        a1 += b":" + authzid
    return a1


def response_value(a2_prefix: bytes, qop: bytes, username: bytes, realm: bytes,
                   password: bytes, nonce: bytes, cnonce: bytes,
                   authzid: bytes | None) -> bytes:
    """RFC 2831 2.1.2.1: the ``response`` (``a2_prefix`` ``AUTHENTICATE``) and the
    ``rspauth`` (empty prefix); with a security layer (``auth-int``, ``auth-conf``) A2 ends
    in 32 zeros."""
    a1 = _a1(username, realm, password, nonce, cnonce, authzid)
    a2 = a2_prefix + b":" + DIGEST_URI.encode() + (_ZEROS if qop != b"auth" else b"")
    return _hex(_hex(a1) + b":" + nonce + b":" + b"%08x" % NONCE_COUNT + b":" + cnonce +
                b":" + qop + b":" + _hex(a2))


def can_encrypt() -> bool:
    """Whether ``auth-conf`` can be offered (RC4 comes from the cryptography module)."""
    try:
        from cryptography.hazmat.decrepit.ciphers.algorithms import ARC4  # noqa: F401
    except ImportError:
        return False
    return True


class Layer:
    """The security layer of a DIGEST-MD5 exchange, one side's (``me``: ``server`` or
    ``client``): integrity alone (``cipher`` None) or with RC4. ``ha1``: H(A1), binary."""

    def __init__(self, ha1: bytes, cipher: str | None, me: str = "server"):
        peer = "client" if me == "server" else "server"
        self._my_ki = _h(ha1 + _SIGN[me])
        self._peer_ki = _h(ha1 + _SIGN[peer])
        self._my_seq = 0
        self._peer_seq = 0
        self._enc = self._dec = None
        if cipher is not None:
            from cryptography.hazmat.decrepit.ciphers.algorithms import ARC4
            from cryptography.hazmat.primitives.ciphers import Cipher

            n = CIPHERS[cipher]
            self._enc = Cipher(ARC4(_h(ha1[:n] + _SEAL[me])), mode=None).encryptor()
            self._dec = Cipher(ARC4(_h(ha1[:n] + _SEAL[peer])), mode=None).decryptor()

    @staticmethod
    def _mac(key: bytes, seq: int, data: bytes) -> bytes:
        return hmac.new(key, struct.pack("!I", seq) + data, hashlib.md5).digest()[:_MAC]

    def wrap(self, data: bytes) -> bytes:
        seq = struct.pack("!I", self._my_seq)
        mac = self._mac(self._my_ki, self._my_seq, data)
        self._my_seq += 1
        if self._enc is None:
            return data + mac + _KIND + seq
        return self._enc.update(data + mac) + _KIND + seq

    def unwrap(self, data: bytes) -> bytes:
        if len(data) < _MAC + 6:
            raise ValueError("DIGEST-MD5: a wrapped message shorter than its trailer")
        body, kind, seq = data[:-6], data[-6:-4], struct.unpack("!I", data[-4:])[0]
        if kind != _KIND:
            raise ValueError("DIGEST-MD5: not a message of type 1")
        if seq != self._peer_seq:
            raise ValueError(f"DIGEST-MD5: out of order sequencing of messages from the peer "
                             f"(expected {self._peer_seq}, got {seq})")
        if self._dec is not None:
            body = self._dec.update(body)
        message, mac = body[:-_MAC], body[-_MAC:]
        if not hmac.compare_digest(mac, self._mac(self._peer_ki, seq, message)):
            raise ValueError("DIGEST-MD5: the message's MAC does not match")
        self._peer_seq += 1
        return message


class DigestServer:
    """One connection's DIGEST-MD5 exchange. ``lookup(identifier_bytes)`` answers the token's
    password and owner (a :class:`hms_proxy.hms.tokens.TokenAuth`), or None for a token that
    is unknown or no longer valid; ``short_name(owner)`` maps the owner to the caller's name."""

    name = "DIGEST-MD5"
    auth = "token"

    def __init__(self, lookup, short_name, protection: int = AUTH):
        self._lookup = lookup
        self._short_name = short_name
        self.protection = protection  # the layers offered (kerberos.AUTH... bits)
        self.stage = 0
        self.complete = False
        self.user: str | None = None
        self.principal: str | None = None
        self.nonce = base64.b64encode(secrets.token_bytes(30))
        self.layer: Layer | None = None

    @property
    def wraps(self) -> bool:
        return self.layer is not None

    def _offered(self) -> list[str]:
        return [name for bit, name in _QOPS if self.protection & bit]

    def step(self, response: bytes) -> bytes:
        if len(response) > MAX_RESPONSE:
            _refuse(f"DIGEST-MD5: Invalid digest response length. Got:  {len(response)} "
                    f"Expected < {MAX_RESPONSE}")
        if self.stage == 0:  # an initial response is ignored, as the stock ignores it
            self.stage = 1
            cipher = (',cipher="' + ",".join(CIPHERS) + '"').encode() \
                if self.protection & AUTH_CONF else b""
            return (f'realm="{REALM}",nonce="'.encode() + self.nonce + b'",qop="' +
                    ",".join(self._offered()).encode() + b'",charset=utf-8,algorithm=md5-sess'
                    + cipher)
        if self.stage == 1:
            return self._validate(parse_directives(response))
        _refuse("DIGEST-MD5: Server at illegal state")

    def _validate(self, fields: dict[str, bytes]) -> bytes:
        charset = fields.get("charset")
        if charset is not None and charset.decode("utf-8", "replace") != "utf-8":
            _refuse(_VIOLATION + "Incompatible charset value: " + charset.decode("latin-1"))
        username = fields.get("username")
        if username is None:
            _refuse(_VIOLATION + "Missing username.")
        realm = fields.get("realm", b"")
        if realm.decode("utf-8", "replace") != REALM:
            _refuse(_VIOLATION + "Nonexistent realm: " + realm.decode("utf-8", "replace"))
        if "nonce" not in fields:
            _refuse(_VIOLATION + "Missing nonce.")
        if fields["nonce"] != self.nonce:
            _refuse(_VIOLATION + "Mismatched nonce.")
        cnonce = fields.get("cnonce")
        if cnonce is None:
            _refuse(_VIOLATION + "Missing cnonce.")
        count = fields.get("nonce-count")
        if count is not None:
            try:
                matches = int(count, 16) == NONCE_COUNT
            except ValueError:
                matches = False
            if not matches:
                _refuse(_VIOLATION + "Nonce count does not match: " + count.decode("latin-1"))
        qop = fields.get("qop", b"auth")
        qop_text = qop.decode("utf-8", "replace")
        if qop_text not in ("auth", "auth-int", "auth-conf"):
            _refuse(_VIOLATION + "Invalid QOP: " + qop_text)
        if qop_text not in self._offered():
            _refuse("DIGEST-MD5: server does not support  qop: " + qop_text)
        cipher = None
        if qop_text == "auth-conf":
            cipher = fields.get("cipher", b"").decode("utf-8", "replace").lower()
            if not cipher:
                _refuse(_VIOLATION + "Missing cipher.")
            if cipher not in CIPHERS:
                _refuse("DIGEST-MD5: server does not support cipher: " + cipher)
        uri = fields.get("digest-uri")
        uri_text = None if uri is None else uri.decode("utf-8", "replace")
        if uri_text is None or uri_text.lower() != DIGEST_URI:
            _refuse(_VIOLATION + f"Mismatched URI: {uri_text}; expecting: {DIGEST_URI}")
        if "response" not in fields:
            _refuse("DIGEST-MD5: digest response format  violation. Missing response.")
        authzid = fields.get("authzid")
        found = self._token(username)
        password = base64.b64encode(found.password)
        expected = response_value(b"AUTHENTICATE", qop, username, realm, password, self.nonce,
                                  cnonce, authzid)
        if not secrets.compare_digest(expected, fields["response"]):
            _refuse(_VIOLATION + "Mismatched response.")
        if authzid is not None and authzid != username:
            _refuse(f"DIGEST-MD5: {username.decode('utf-8', 'replace')} is not authorized to "
                    f"act as {authzid.decode('utf-8', 'replace')}")
        try:
            self.user = self._short_name(found.owner)
        except Exception as exc:  # noqa: BLE001 - an owner no rule maps: not let in
            raise AuthenticationFailed(f"token owner {found.owner}: {exc}",
                                       "DIGEST-MD5: IO error checking authzid") from None
        self.principal = found.owner
        if qop_text != "auth":
            self.layer = Layer(_h(_a1(username, realm, password, self.nonce, cnonce, authzid)),
                               cipher)
        self.complete = True
        self.stage = 2
        return b"rspauth=" + response_value(b"", qop, username, realm, password, self.nonce,
                                            cnonce, authzid)

    def _token(self, username: bytes):
        try:
            identifier = base64.b64decode(username, validate=False)
        except (binascii.Error, ValueError):
            identifier = None
        found = None if not identifier else self._lookup(identifier)
        if found is None:
            raise AuthenticationFailed(
                f"DIGEST-MD5: no valid token for {username[:200]!r}",
                "DIGEST-MD5: IO error acquiring password")
        return found

    def wrap(self, data: bytes) -> bytes:
        return data if self.layer is None else self.layer.wrap(data)

    def unwrap(self, data: bytes) -> bytes:
        return data if self.layer is None else self.layer.unwrap(data)
