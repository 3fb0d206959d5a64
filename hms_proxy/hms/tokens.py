"""Delegation tokens and master keys (get/renew/cancel_delegation_token, add/get/remove_token,
get_all_token_identifiers, add/update/remove_master_key, get_master_keys), as HMS 2.3 answers them.

HMS 2.3 keeps the tokens and master keys of its delegation token store in its database
(ObjectStore: DELEGATION_TOKENS, MASTER_KEYS) and serves these calls even without SASL. Here
they are stored with the catalog, so they are versioned, branched and merged like the rest::

    security/token/<identifier>          the token   (identifier with % and / percent-escaped)
    security/masterkey/<seq>             a master key (seq zero-padded to 10 digits: key order
                                         is sequence order)
    security/next-masterkey              the next master key sequence number
    security/next-token-sequence         the next delegation token sequence number (a
                                         Kerberized server's tokens: :class:`Delegation`)

Values are Thrift binary of the small structs below (the stored string may be null, as in
HMS). Being per branch, the sequence numbers of two branches that both add master keys collide
on merge (a conflict on the same key), where HMS has one sequence.

What the stock HMS 2.3.10 answers, and so this (tests/hms/conformance/scenarios_tokens.py):

- ``get_delegation_token``, ``renew_delegation_token``, ``cancel_delegation_token``: without
  SASL HMS has no token manager; the call fails with a MetaException carrying the Java
  NullPointerException's text. On a Kerberized server (``serve --kerberos-principal``) they
  are served as the stock with SASL and a DBTokenStore serves them (:class:`Delegation`,
  below): the tokens and master keys are the rows above, at the server's ref;
- ``add_token`` answers False (and changes nothing) for an identifier that exists, True after
  adding; a null identifier, or an identifier or token longer than 767 characters (its
  VARCHAR(767) columns), is an internal error; a null token is stored;
- ``get_token`` of an unknown identifier, or of a null token, answers nothing (the client
  sees MISSING_RESULT); ``remove_token`` answers whether it removed one;
- ``add_master_key`` answers the new key's sequence number (1, 2, ...); a null key is stored;
  a key longer than 767 characters fails with DataNucleus' MetaException after using up 11
  sequence numbers (HMS's handler retries the failed JDO call 10 times, each allocating one);
- ``update_master_key`` of an unknown sequence number fails with a MetaException whose text is
  the NoSuchObjectException's (``NoSuchObjectException(message:No key found with keyId: N)``);
  ``remove_master_key`` answers whether it removed one;
- ``get_master_keys`` lists the keys by sequence number; while one of them is null, HMS fails
  writing the reply and drops the connection, and so does this server.
"""
from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass

from thrift.Thrift import TType

from hms_proxy.hms import javafmt
from hms_proxy.hms.family import Family
from hms_proxy.security import delegation as dt
from hms_proxy.security.proxyusers import NotAllowed, ProxyUsers
from hms_proxy.thrift import errors
from hms_proxy.thrift.processor import CloseConnection
from kvmodel import codec

log = logging.getLogger("hms_proxy.hms.tokens")

TOKEN_PREFIX = "security/token/"
MASTER_KEY_PREFIX = "security/masterkey/"
NEXT_MASTER_KEY = "security/next-masterkey"
MAX_LENGTH = 767              # DELEGATION_TOKENS.TOKEN_IDENT / TOKEN, MASTER_KEYS.MASTER_KEY
FAILED_ADD_SEQUENCE_USE = 11  # a failed add_master_key: the call and hive.hmshandler.retry.attempts

NO_TOKEN_MANAGER = (
    'java.lang.NullPointerException: Cannot invoke "org.apache.hadoop.hive.thrift.'
    'HiveDelegationTokenManager.{call}" because '
    '"org.apache.hadoop.hive.metastore.HiveMetaStore.delegationTokenManager" is null')


class StoredToken:
    """A DELEGATION_TOKENS row."""

    thrift_spec = (None,
                   (1, TType.STRING, "identifier", "UTF8", None),
                   (2, TType.STRING, "token", "UTF8", None))

    def __init__(self, identifier=None, token=None):
        self.identifier = identifier
        self.token = token


class StoredMasterKey:
    """A MASTER_KEYS row."""

    thrift_spec = (None,
                   (1, TType.I32, "seq", None, None),
                   (2, TType.STRING, "key", "UTF8", None))

    def __init__(self, seq=None, key=None):
        self.seq = seq
        self.key = key


class StoredSequence:
    thrift_spec = (None, (1, TType.I64, "next", None, None))

    def __init__(self, next=None):  # noqa: A002 - the Thrift field's name
        self.next = next


def token_key(identifier: str) -> str:
    return TOKEN_PREFIX + identifier.replace("%", "%25").replace("/", "%2F")


def master_key_key(seq: int) -> str:
    return f"{MASTER_KEY_PREFIX}{seq:010d}" if seq >= 0 else f"{MASTER_KEY_PREFIX}-{-seq:010d}"


class TokenCalls(Family):
    # --- delegation tokens: no token manager without SASL -----------------------------------
    def get_delegation_token(self, ctx, token_owner, renewer_kerberos_principal_name):
        manager = self.env.delegation
        if manager is None:
            raise errors.MetaError(NO_TOKEN_MANAGER.format(
                call="getDelegationToken(String, String, String)"))
        return manager.issue(ctx, token_owner, renewer_kerberos_principal_name)

    def renew_delegation_token(self, ctx, token_str_form):
        manager = self.env.delegation
        if manager is None:
            raise errors.MetaError(NO_TOKEN_MANAGER.format(call="renewDelegationToken(String)"))
        return manager.renew(ctx, token_str_form)

    def cancel_delegation_token(self, ctx, token_str_form):
        manager = self.env.delegation
        if manager is None:
            raise errors.MetaError(NO_TOKEN_MANAGER.format(call="cancelDelegationToken(String)"))
        manager.cancel(token_str_form)

    # --- the token store ----------------------------------------------------------------------
    def add_token(self, ctx, token_identifier, delegation_token):
        if token_identifier is None:
            raise errors.InternalError("add_token: a null token identifier")
        key = token_key(token_identifier)
        with self.writing(ctx) as cat:
            if cat.raw(key) is not None:
                return False
            if javafmt.string_length(token_identifier) > MAX_LENGTH or (
                    delegation_token is not None and javafmt.string_length(delegation_token) > MAX_LENGTH):
                raise errors.InternalError("add_token: longer than the column")
            cat.put(key, StoredToken(token_identifier, delegation_token))
        return True

    def get_token(self, ctx, token_identifier):
        if token_identifier is None:
            return None
        with self.reading(ctx) as cat:
            data = cat.raw(token_key(token_identifier))
        return None if data is None else codec.decode(StoredToken, data).token

    def remove_token(self, ctx, token_identifier):
        if token_identifier is None:
            return False
        key = token_key(token_identifier)
        with self.writing(ctx) as cat:
            if cat.raw(key) is None:
                return False
            cat.delete(key)
        return True

    def get_all_token_identifiers(self, ctx):
        with self.reading(ctx) as cat:
            return [codec.decode(StoredToken, data).identifier
                    for _, data in cat.view.scan_prefix(TOKEN_PREFIX)]

    # --- master keys --------------------------------------------------------------------------
    @staticmethod
    def _next_seq(cat) -> int:
        data = cat.raw(NEXT_MASTER_KEY)
        return 1 if data is None else codec.decode(StoredSequence, data).next

    def add_master_key(self, ctx, key):
        too_long = key is not None and javafmt.string_length(key) > MAX_LENGTH
        with self.writing(ctx) as cat:
            seq = self._next_seq(cat)
            used = FAILED_ADD_SEQUENCE_USE if too_long else 1
            cat.put(NEXT_MASTER_KEY, StoredSequence(seq + used))
            if not too_long:
                cat.put(master_key_key(seq), StoredMasterKey(seq, key))
        if too_long:
            raise errors.MetaError(_too_long(key))
        return seq

    def update_master_key(self, ctx, seq_number, key):
        seq = seq_number or 0
        with self.writing(ctx) as cat:
            if cat.raw(master_key_key(seq)) is None:
                raise errors.MetaError(
                    f"NoSuchObjectException(message:No key found with keyId: {seq})")
            if key is not None and javafmt.string_length(key) > MAX_LENGTH:
                raise errors.MetaError(_too_long(key))
            cat.put(master_key_key(seq), StoredMasterKey(seq, key))

    def remove_master_key(self, ctx, key_seq):
        key = master_key_key(key_seq or 0)
        with self.writing(ctx) as cat:
            if cat.raw(key) is None:
                return False
            cat.delete(key)
        return True

    def get_master_keys(self, ctx):
        with self.reading(ctx) as cat:
            keys = [codec.decode(StoredMasterKey, data).key
                    for _, data in cat.view.scan_prefix(MASTER_KEY_PREFIX)]
        if any(k is None for k in keys):
            # HMS fails writing a list holding a null string and drops the connection
            raise CloseConnection("get_master_keys: a null master key cannot be sent")
        return keys


def _too_long(value: str) -> str:
    """DataNucleus' message for a value longer than its column."""
    return (f'Attempt to store value "{value}" in column "MASTER_KEY" that has maximum length '
            f"of {MAX_LENGTH}. Please correct your data!")


# --- the token manager of a Kerberized server -----------------------------------------------------
NEXT_TOKEN_SEQUENCE = "security/next-token-sequence"


@dataclass(frozen=True)
class TokenAuth:
    """What DIGEST-MD5 needs of a valid token: its owner and password."""

    owner: str
    password: bytes


class Delegation:
    """Delegation tokens as a Kerberized HMS 2.3.10 serves them (HiveDelegationTokenManager,
    TokenStoreDelegationTokenSecretManager over a DBTokenStore, Hadoop's
    AbstractDelegationTokenSecretManager), kept at the server's ref (``serve --ref``), whichever
    ref a call names: every server and worker over the same store issues, renews and accepts
    the same tokens. Each token operation is one write transaction of the store, which is
    serialisable: a master key is made inside the transaction that needs it, after re-reading
    the keys, so two servers never make two current keys, and the token sequence number is a
    counter in the store (the stock's is per process).

    The stock's rules, kept as the stock keeps them (compared in
    tests/security/test_delegation_tokens.py):

    - ``get_delegation_token(owner, renewer)``: the owner must be the caller (compared by short
      names), or one the caller may act for by the ``hadoop.proxyuser`` rules
      (:mod:`hms_proxy.security.proxyusers`): then the token's real user is the caller's full
      name; anyone else is refused as Hadoop refuses the impersonation; a connection
      authenticated by a token may get another one, as on the stock. The renewer is kept as
      its short name. Issue date now, maximum date now + max lifetime, renew date now + renew
      interval.
    - ``renew_delegation_token``: only while the token is stored; Hadoop compares the renewer
      with the caller's *full* name (the stock 2.3.10 passes the principal, HADOOP-15068), so
      a Kerberos caller ``alice@REALM`` cannot renew a token whose renewer is ``alice``, and a
      caller authenticated by the token itself (named by its owner) can; the new renew date
      is answered and, unlike the stock (which forgets it in a DBTokenStore), stored.
    - ``cancel_delegation_token``: Hive's token-store manager removes the token for any
      caller and answers nothing for a token that is not there.
    - a token string that does not decode: a MetaException without a message.

    Master keys roll every key update interval (a key is current while it is younger than
    that: its expiry, made + update interval + max lifetime, is more than a max lifetime
    away) and are removed once expired; tokens whose renew or maximum date has passed are
    removed by the first token operation after each gc interval (the stock: a thread)."""

    def __init__(self, store, ref: str, lifetimes: dt.Lifetimes, auth_to_local,
                 proxy_users: ProxyUsers | None = None):
        self.store = store
        self.ref = ref
        self.lifetimes = lifetimes
        self.auth_to_local = auth_to_local
        self.proxy_users = proxy_users or ProxyUsers()
        self._last_gc = 0

    # --- names ----------------------------------------------------------------------------
    def short_name(self, name: str) -> str:
        return dt.simple_name(name, self.auth_to_local)

    @staticmethod
    def _caller(ctx) -> str:
        return getattr(ctx, "principal", None) or getattr(ctx, "user", None) or ""

    # --- the calls --------------------------------------------------------------------------
    def issue(self, ctx, owner: str | None, renewer: str | None) -> str:
        from hms_proxy.security.kerberos import NoMatchingRule
        caller = self._caller(ctx)
        if not owner:
            raise errors.MetaError("java.lang.IllegalArgumentException: Null user")
        try:
            owner_short = self.short_name(owner)
        except NoMatchingRule as exc:
            raise errors.MetaError(
                f"java.lang.IllegalArgumentException: Illegal principal name {owner}: "
                f"{_NO_MATCHING_RULE}: {exc}") from None
        real_user = ""  # the caller when it acts for the owner (a proxy user)
        caller_short = getattr(ctx, "user", None) or self.short_name(caller)
        if owner_short != caller_short:
            address = (getattr(ctx, "peer", "") or "").rpartition(":")[0]
            try:
                self.proxy_users.authorize(caller, caller_short, owner, owner_short, address)
            except NotAllowed as exc:
                raise errors.MetaError(str(exc)) from None
            real_user = caller
        if renewer is None:  # Hadoop's Text of a null string
            raise errors.MetaError('java.lang.NullPointerException: Cannot invoke '
                                   '"String.toCharArray()" because "string" is null')
        try:
            renewer_short = self.short_name(renewer) if renewer else ""
        except NoMatchingRule as exc:
            raise errors.MetaError(
                f"java.lang.RuntimeException: {_NO_MATCHING_RULE}: {exc}") from None
        now = dt.now_ms()
        with self.store.write(self.ref) as txn:
            key = self._current_key(txn, now)
            data = txn.get(NEXT_TOKEN_SEQUENCE)
            seq = 1 if data is None else codec.decode(StoredSequence, data).next
            txn.put(NEXT_TOKEN_SEQUENCE, codec.encode(StoredSequence(seq + 1)))
            ident = dt.TokenIdentifier(owner, renewer_short, real_user, now,
                                       now + self.lifetimes.max_lifetime, seq, key.key_id)
            raw = ident.to_bytes()
            password = dt.password_of(raw, key.key)
            self._put(txn, ident, dt.TokenInfo(now + self.lifetimes.renew_interval, password))
            self._collect(txn, now)
        return dt.Token(raw, password).encode()

    def renew(self, ctx, text: str | None) -> int:
        token, ident = _decoded(text)
        caller = self._caller(ctx)
        now = dt.now_ms()
        with self.store.write(self.ref) as txn:
            if self._info(txn, ident) is None:
                raise errors.MetaError(f"token does not exist: {ident}")
            if ident.max_date < now:
                raise errors.MetaError(
                    f"{caller} tried to renew an expired token ({ident}) max expiration date: "
                    f"{dt.format_time(ident.max_date)} currentTime: {dt.format_time(now)}")
            if not ident.renewer:
                raise errors.MetaError(f"{caller} tried to renew a token ({ident}) "
                                       "without a renewer")
            if ident.renewer != caller:
                raise errors.MetaError(f"{caller} tries to renew a token ({ident}) with "
                                       f"non-matching renewer {ident.renewer}")
            key = self._keys(txn).get(ident.master_key_id)
            if key is None or key[1].key is None:
                raise errors.MetaError(
                    f"Unable to find master key for keyId={ident.master_key_id} from cache. "
                    f"Failed to renew an unexpired token ({ident}) with "
                    f"sequenceNumber={ident.sequence_number}")
            password = dt.password_of(token.identifier, key[1].key)
            if not secrets.compare_digest(password, token.password):
                raise errors.MetaError(f"{caller} is trying to renew a token ({ident}) with "
                                       "wrong password")
            renew_time = min(ident.max_date, now + self.lifetimes.renew_interval)
            self._put(txn, ident, dt.TokenInfo(renew_time, password))
        return renew_time

    def cancel(self, text: str | None) -> None:
        _, ident = _decoded(text)
        log.info("Token cancelation requested for identifier: %s", ident)
        with self.store.write(self.ref) as txn:
            txn.delete(token_key(ident.store_string()))

    def lookup(self, identifier: bytes) -> TokenAuth | None:
        """DIGEST-MD5's password callback: the token's owner and password while it is stored
        and its renew date has not passed (Hadoop's checkToken), else None."""
        try:
            ident = dt.TokenIdentifier.from_bytes(identifier)
        except dt.BadToken:
            return None
        with self.store.read(self.ref) as view:
            info = self._info(view, ident)
        if info is None or info.renew_date < dt.now_ms():
            return None
        return TokenAuth(ident.owner, info.password)

    # --- rows -------------------------------------------------------------------------------
    @staticmethod
    def _put(txn, ident: dt.TokenIdentifier, info: dt.TokenInfo) -> None:
        name = ident.store_string()
        txn.put(token_key(name), codec.encode(StoredToken(name, info.encode())))

    @staticmethod
    def _info(view, ident: dt.TokenIdentifier) -> dt.TokenInfo | None:
        data = view.get(token_key(ident.store_string()))
        if data is None:
            return None
        stored = codec.decode(StoredToken, data).token
        try:
            return None if stored is None else dt.TokenInfo.decode(stored)
        except dt.BadToken:
            return None

    @staticmethod
    def _keys(view) -> dict[int, tuple[int, dt.DelegationKey]]:
        """The decodable master keys by key id: (row sequence number, key). A key string a
        client stored with add_master_key that is no DelegationKey is left alone."""
        keys = {}
        for _, data in view.scan_prefix(MASTER_KEY_PREFIX):
            row = codec.decode(StoredMasterKey, data)
            if row.key is None:
                continue
            try:
                key = dt.DelegationKey.decode(row.key)
            except dt.BadToken:
                continue
            keys[key.key_id] = (row.seq, key)
        return keys

    def _current_key(self, txn, now: int) -> dt.DelegationKey:
        keys = self._keys(txn)
        current = [key for _, key in keys.values()
                   if key.key is not None and key.expiry - self.lifetimes.max_lifetime > now]
        if current:
            return max(current, key=lambda key: key.key_id)
        for seq, key in keys.values():  # the roll: expired keys go, a new one comes
            if key.expiry < now:
                log.info("Removing expired key id=%d", key.key_id)
                txn.delete(master_key_key(seq))
        data = txn.get(NEXT_MASTER_KEY)
        seq = 1 if data is None else codec.decode(StoredSequence, data).next
        txn.put(NEXT_MASTER_KEY, codec.encode(StoredSequence(seq + 1)))
        key = dt.DelegationKey(seq, now + self.lifetimes.key_update_interval +
                               self.lifetimes.max_lifetime,
                               secrets.token_bytes(dt.MASTER_KEY_BYTES))
        txn.put(master_key_key(seq), codec.encode(StoredMasterKey(seq, key.encode())))
        log.info("New master key with key id=%d", seq)
        return key

    def _collect(self, txn, now: int) -> None:
        if now - self._last_gc < self.lifetimes.gc_interval:
            return
        self._last_gc = now
        for name, data in list(txn.scan_prefix(TOKEN_PREFIX)):
            row = codec.decode(StoredToken, data)
            try:
                ident = dt.TokenIdentifier.from_bytes(dt.url_decode(row.identifier))
                info = dt.TokenInfo.decode(row.token) if row.token is not None else None
            except dt.BadToken:
                continue  # a row a client stored with add_token: not ours to judge
            if now > ident.max_date or (info is not None and now > info.renew_date):
                txn.delete(name)


_NO_MATCHING_RULE = "org.apache.hadoop.security.authentication.util.KerberosName$NoMatchingRule"


def _decoded(text: str | None) -> tuple[dt.Token, dt.TokenIdentifier]:
    """A token string and its identifier; the stock's MetaException without a message (an
    IOException's) for one that does not decode."""
    if text is None:
        raise errors.MetaError("org.apache.hadoop.HadoopIllegalArgumentException: Invalid "
                               "argument, newValue is null")
    try:
        token = dt.Token.decode(text)
        return token, token.ident()
    except dt.BadToken:
        raise errors.MetaError(None) from None
