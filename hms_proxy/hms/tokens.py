"""Delegation tokens and master keys (get/renew/cancel_delegation_token, add/get/remove_token,
get_all_token_identifiers, add/update/remove_master_key, get_master_keys), as HMS 2.3 answers them.

HMS 2.3 keeps the tokens and master keys of its delegation token store in its database
(ObjectStore: DELEGATION_TOKENS, MASTER_KEYS) and serves these calls even without SASL. Here
they are stored with the catalog, so they are versioned, branched and merged like the rest::

    security/token/<identifier>          the token   (identifier with % and / percent-escaped)
    security/masterkey/<seq>             a master key (seq zero-padded to 10 digits: key order
                                         is sequence order)
    security/next-masterkey              the next master key sequence number

Values are Thrift binary of the small structs below (the stored string may be null, as in
HMS). Being per branch, the sequence numbers of two branches that both add master keys collide
on merge (a conflict on the same key), where HMS has one sequence.

What the stock HMS 2.3.10 answers, and so this (tests/hms/conformance/scenarios_tokens.py):

- ``get_delegation_token``, ``renew_delegation_token``, ``cancel_delegation_token``: without
  SASL HMS has no token manager; the call fails with a MetaException carrying the Java
  NullPointerException's text;
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

from thrift.Thrift import TType

from hms_proxy.hms import javafmt
from hms_proxy.hms.family import Family
from hms_proxy.thrift import errors
from hms_proxy.thrift.processor import CloseConnection
from kvmodel import codec

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
        raise errors.MetaError(NO_TOKEN_MANAGER.format(
            call="getDelegationToken(String, String, String)"))

    def renew_delegation_token(self, ctx, token_str_form):
        raise errors.MetaError(NO_TOKEN_MANAGER.format(call="renewDelegationToken(String)"))

    def cancel_delegation_token(self, ctx, token_str_form):
        raise errors.MetaError(NO_TOKEN_MANAGER.format(call="cancelDelegationToken(String)"))

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
