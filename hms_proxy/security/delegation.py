"""Hive's delegation tokens in Hadoop's formats: what a Kerberized HMS 2.3 hands out with
``get_delegation_token`` and accepts over SASL DIGEST-MD5 (:mod:`hms_proxy.security.digest`).

A token is Hadoop's ``Token``: an identifier, a password, a kind (``HIVE_DELEGATION_TOKEN``)
and a service (empty), written as Hadoop writes Writables and sent as a URL-safe base64
string without padding (``Token.encodeToUrlString``). The identifier is
``AbstractDelegationTokenIdentifier``'s Writable: a version byte (0), owner, renewer and real
user as ``Text`` (a vint length and UTF-8), issue and maximum dates as vlongs (milliseconds),
sequence number and master key id as vints. The password is HMAC-SHA1 of the identifier's bytes
under a master key (``DelegationKey``: key id, expiry, key bytes).

The stock's DBTokenStore keeps what these encode to (``TokenStoreDelegationTokenSecretManager.
encodeWritable``: URL-safe base64): the identifier as the token's identifier string, the
renew date and password (``HiveDelegationTokenSupport``'s layout: vint length, password, a
fixed 8-byte renew date) as the token string, each master key as a key string. Nothing here
touches a store: :mod:`hms_proxy.hms.tokens` does.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import io
import struct
import time
from dataclasses import dataclass

KIND = b"HIVE_DELEGATION_TOKEN"
VERSION = 0
DAY_MS = 24 * 60 * 60 * 1000
# Hive's settings and defaults (HiveDelegationTokenManager), read from ``serve --conf``
RENEW_INTERVAL_KEY = "hive.cluster.delegation.token.renew-interval"
MAX_LIFETIME_KEY = "hive.cluster.delegation.token.max-lifetime"
KEY_UPDATE_INTERVAL_KEY = "hive.cluster.delegation.key.update-interval"
GC_INTERVAL_KEY = "hive.cluster.delegation.token.gc-interval"
MASTER_KEY_BYTES = 64  # HmacSHA1's KeyGenerator default (Hadoop 3.5 makes 8: see docs)


class BadToken(Exception):
    """A token string or stored value that does not decode (the stock: an IOException
    without a message)."""


# --- Hadoop's WritableUtils ---------------------------------------------------------------------
def write_vlong(out: io.BytesIO, value: int) -> None:
    if -112 <= value <= 127:
        out.write(struct.pack("b", value))
        return
    length = -112
    if value < 0:
        value = ~value
        length = -120
    tmp = value
    while tmp:
        tmp >>= 8
        length -= 1
    out.write(struct.pack("b", length))
    size = -(length + 120) if length < -120 else -(length + 112)
    out.write(value.to_bytes(size, "big"))


write_vint = write_vlong


def read_vlong(data: io.BytesIO) -> int:
    first = _read(data, 1)
    head = struct.unpack("b", first)[0]
    if head >= -112:
        return head
    negative = head < -120
    size = (-119 - head) if negative else (-111 - head)  # bytes after the first
    value = int.from_bytes(_read(data, size - 1), "big")
    return ~value if negative else value


read_vint = read_vlong


def _read(data: io.BytesIO, size: int) -> bytes:
    if size < 0:
        raise BadToken("a negative length")
    chunk = data.read(size)
    if len(chunk) != size:
        raise BadToken("end of data")
    return chunk


def write_bytes(out: io.BytesIO, value: bytes) -> None:
    write_vint(out, len(value))
    out.write(value)


def read_bytes(data: io.BytesIO) -> bytes:
    return _read(data, read_vint(data))


def write_text(out: io.BytesIO, value: str) -> None:
    write_bytes(out, value.encode("utf-8"))


def read_text(data: io.BytesIO) -> str:
    try:
        return read_bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise BadToken("a Text that is not UTF-8") from None


def url_encode(raw: bytes) -> str:
    """commons-codec's URL-safe base64 without padding (``encodeBase64URLSafeString``)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def url_decode(text: str) -> bytes:
    """commons-codec's lenient decoder: either alphabet, padding optional."""
    if text is None:
        raise BadToken("no token")
    cleaned = text.strip().rstrip("=").replace("+", "-").replace("/", "_")
    try:
        return base64.urlsafe_b64decode(cleaned + "=" * (-len(cleaned) % 4))
    except (binascii.Error, ValueError):
        raise BadToken("not base64") from None


# --- the identifier, the token, the master key -----------------------------------------------
@dataclass(frozen=True)
class TokenIdentifier:
    owner: str
    renewer: str
    real_user: str
    issue_date: int
    max_date: int
    sequence_number: int
    master_key_id: int

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        out.write(bytes([VERSION]))
        for text in (self.owner, self.renewer, self.real_user):
            write_text(out, text)
        write_vlong(out, self.issue_date)
        write_vlong(out, self.max_date)
        write_vint(out, self.sequence_number)
        write_vint(out, self.master_key_id)
        return out.getvalue()

    @classmethod
    def from_bytes(cls, raw: bytes) -> "TokenIdentifier":
        data = io.BytesIO(raw)
        version = _read(data, 1)[0]
        if version != VERSION:
            raise BadToken(f"Unknown version of delegation token {version}")
        owner, renewer, real_user = read_text(data), read_text(data), read_text(data)
        return cls(owner, renewer, real_user, read_vlong(data), read_vlong(data),
                   read_vint(data), read_vint(data))

    def store_string(self) -> str:
        """The identifier as DBTokenStore names it (get_all_token_identifiers)."""
        return url_encode(self.to_bytes())

    def __str__(self) -> str:  # AbstractDelegationTokenIdentifier.toString, as messages show it
        return (f"HIVE_DELEGATION_TOKEN owner={self.owner}, renewer={self.renewer}, "
                f"realUser={self.real_user}, issueDate={self.issue_date}, "
                f"maxDate={self.max_date}, sequenceNumber={self.sequence_number}, "
                f"masterKeyId={self.master_key_id}")


def password_of(identifier: bytes, key: bytes) -> bytes:
    """``SecretManager.createPassword``: HMAC-SHA1 of the identifier under the master key."""
    return hmac.new(key, identifier, hashlib.sha1).digest()


@dataclass(frozen=True)
class Token:
    identifier: bytes
    password: bytes
    kind: bytes = KIND
    service: bytes = b""

    def encode(self) -> str:
        out = io.BytesIO()
        for part in (self.identifier, self.password, self.kind, self.service):
            write_bytes(out, part)
        return url_encode(out.getvalue())

    @classmethod
    def decode(cls, text: str) -> "Token":
        data = io.BytesIO(url_decode(text))
        parts = [read_bytes(data) for _ in range(4)]
        return cls(*parts)

    def ident(self) -> TokenIdentifier:
        return TokenIdentifier.from_bytes(self.identifier)


@dataclass(frozen=True)
class DelegationKey:
    key_id: int
    expiry: int
    key: bytes | None

    def encode(self) -> str:
        out = io.BytesIO()
        write_vint(out, self.key_id)
        write_vlong(out, self.expiry)
        if self.key is None:
            write_vint(out, -1)
        else:
            write_bytes(out, self.key)
        return url_encode(out.getvalue())

    @classmethod
    def decode(cls, text: str) -> "DelegationKey":
        data = io.BytesIO(url_decode(text))
        key_id, expiry = read_vint(data), read_vlong(data)
        size = read_vint(data)
        return cls(key_id, expiry, None if size < 0 else _read(data, size))


@dataclass(frozen=True)
class TokenInfo:
    """A token's renew date and password as the token store keeps them."""

    renew_date: int
    password: bytes

    def encode(self) -> str:
        out = io.BytesIO()
        write_bytes(out, self.password)
        out.write(struct.pack("!q", self.renew_date))
        return url_encode(out.getvalue())

    @classmethod
    def decode(cls, text: str) -> "TokenInfo":
        data = io.BytesIO(url_decode(text))
        size = read_vint(data)
        password = _read(data, size) if size >= 0 else b""
        return cls(struct.unpack("!q", _read(data, 8))[0], password)


@dataclass(frozen=True)
class Lifetimes:
    """Hive's token settings, in milliseconds."""

    renew_interval: int = DAY_MS
    max_lifetime: int = 7 * DAY_MS
    key_update_interval: int = DAY_MS
    gc_interval: int = 60 * 60 * 1000

    @classmethod
    def of(cls, conf: dict | None) -> "Lifetimes":
        conf = conf or {}

        def ms(key: str, default: int) -> int:
            try:
                return int(conf.get(key, default))
            except ValueError:
                return default
        return cls(ms(RENEW_INTERVAL_KEY, DAY_MS), ms(MAX_LIFETIME_KEY, 7 * DAY_MS),
                   ms(KEY_UPDATE_INTERVAL_KEY, DAY_MS), ms(GC_INTERVAL_KEY, 60 * 60 * 1000))


def now_ms() -> int:
    return int(time.time() * 1000)


def format_time(millis: int) -> str:
    """Hadoop's ``Time.formatTime``: ``yyyy-MM-dd HH:mm:ss,SSSZ`` in the server's zone."""
    seconds, ms = divmod(millis, 1000)
    local = time.localtime(seconds)
    return time.strftime("%Y-%m-%d %H:%M:%S", local) + f",{ms:03d}" + time.strftime("%z", local)


def simple_name(name: str, auth_to_local) -> str:
    """Hadoop's ``KerberosName.getShortName``: a name without a realm is already short; one
    with a realm goes through the auth_to_local rules (NoMatchingRule when none applies)."""
    if "@" not in name:
        return name.split("/", 1)[0]
    return auth_to_local.short_name(name)
