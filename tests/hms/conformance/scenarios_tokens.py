"""Delegation tokens (no SASL: no token manager), the token store and master keys.

Tokens and master keys are global on the oracle: identifiers and keys of these scenarios start
with their own prefix, listings are filtered to it, and everything added is removed at the end.
Master key sequence numbers are recorded relative to the scenario's first one.
"""

from __future__ import annotations

from tests.hms.conformance.harness import scenario

TOK = "cftok_"
KEY = "cfkey_"
EMOJI = "\U0001F600"  # two UTF-16 units: HMS's column widths count those


def my_tokens(ids):
    return sorted(i for i in ids if i.startswith(TOK))


def my_keys(keys):
    return sorted(k for k in keys if k is not None and k.startswith(KEY))


@scenario
def delegation_tokens_without_sasl(c, rec):
    rec.call("get_delegation_token", "alice", "bob", msg=True)
    rec.call("get_delegation_token", None, None, msg=True)
    rec.call("renew_delegation_token", "AAoABWFsaWNl", msg=True)
    rec.call("renew_delegation_token", None, msg=True)
    rec.call("cancel_delegation_token", "AAoABWFsaWNl", msg=True)
    rec.call("cancel_delegation_token", None, msg=True)


@scenario
def token_store(c, rec):
    t = TOK
    rec.call("get_all_token_identifiers", transform=my_tokens)
    rec.call("add_token", t + "a", "secret-a")
    rec.call("add_token", t + "a", "secret-other", label="add_token existing")
    rec.call("get_token", t + "a", label="get_token keeps the first")
    rec.call("add_token", t + "with/slash%25", "s/%")
    rec.call("get_token", t + "with/slash%25")
    rec.call("add_token", t + "null", None, label="add_token null token")
    rec.call("get_token", t + "null", msg=True, label="get_token null token")
    rec.call("add_token", t + "empty", "")
    rec.call("get_token", t + "empty")
    rec.call("add_token", None, "x", msg=True, label="add_token null identifier")
    rec.call("add_token", t + "x" * 800, "y", msg=True, label="add_token identifier too long")
    rec.call("add_token", t + "long", "y" * 768, msg=True, label="add_token token too long")
    rec.call("add_token", t + "a", "y" * 800, label="add_token existing, token too long")
    rec.call("add_token", t + "\u00e9" * (767 - len(t)), "s" * 767, label="add_token widest")
    rec.call("add_token", t + EMOJI * 380, "e", label="add_token 766 UTF-16 units")
    rec.call("add_token", t + EMOJI * 381, "e", msg=True, label="add_token 768 UTF-16 units")
    rec.call("add_token", t + "e", EMOJI * 384, msg=True, label="add_token token 768 units")
    rec.call("get_token", t + "missing", msg=True, label="get_token missing")
    rec.call("get_token", None, msg=True, label="get_token null")
    rec.call("get_all_token_identifiers", transform=my_tokens)
    for ident in (t + "a", t + "with/slash%25", t + "null", t + "empty",
                  t + "\u00e9" * (767 - len(t)), t + EMOJI * 380):
        rec.call("remove_token", ident)
    rec.call("remove_token", t + "a", label="remove_token again")
    rec.call("remove_token", None, label="remove_token null")
    rec.call("get_token", t + "a", msg=True, label="get_token removed")
    rec.call("get_all_token_identifiers", transform=my_tokens)


@scenario
def master_keys(c, rec):
    base = {}

    def seq(value):
        """The first sequence number is the base; later ones are recorded relative to it."""
        if not isinstance(value, int):
            return value
        base.setdefault("seq", value)
        return value - base["seq"]

    first = rec.call("add_master_key", KEY + "1", transform=seq)
    if first is None:
        return
    rec.call("get_master_keys", transform=my_keys)
    second = rec.call("add_master_key", KEY + "2", transform=seq)
    rec.call("add_master_key", KEY + "k" * 800, msg=True, label="add_master_key too long")
    third = rec.call("add_master_key", KEY + "3", transform=seq,
                     label="add_master_key after a failed one")
    widest = rec.call("add_master_key", KEY + "w" * (767 - len(KEY)), transform=seq)
    emoji = rec.call("add_master_key", KEY + EMOJI * 380 + "x", transform=seq,
                     label="add_master_key 767 UTF-16 units")
    rec.call("add_master_key", KEY + EMOJI * 381, msg=True, label="add_master_key 768 units")
    empty = rec.call("add_master_key", "", transform=seq, label="add_master_key empty")
    rec.call("get_master_keys", transform=my_keys)
    rec.call("update_master_key", first, KEY + "1b", label="update_master_key first")
    rec.call("update_master_key", 2_000_000_000, "x", msg=True,
             label="update_master_key missing")
    rec.call("update_master_key", None, "q", msg=True, label="update_master_key null seq")
    rec.call("update_master_key", -5, "q", msg=True, label="update_master_key negative")
    rec.call("update_master_key", first, "z" * 800, msg=True, label="update_master_key too long")
    rec.call("update_master_key", 2_000_000_000, "z" * 800, msg=True,
             label="update_master_key missing and too long")
    rec.call("get_master_keys", transform=my_keys)
    null = rec.call("add_master_key", None, transform=seq, label="add_master_key null")
    rec.call("get_master_keys", transform=my_keys, label="get_master_keys with a null key")
    rec.call("update_master_key", null, KEY + "was-null", label="update_master_key the null key")
    rec.call("get_master_keys", transform=my_keys)
    rec.call("update_master_key", null, None, label="update_master_key to null")
    rec.call("get_master_keys", transform=my_keys, label="get_master_keys with a null key again")
    rec.call("remove_master_key", null, label="remove_master_key the null key")
    rec.call("remove_master_key", first, label="remove_master_key first")
    rec.call("remove_master_key", first, label="remove_master_key again")
    rec.call("remove_master_key", None, label="remove_master_key null")
    rec.call("remove_master_key", 2_000_000_000, label="remove_master_key missing")
    rec.call("get_master_keys", transform=my_keys)
    for number in (second, third, widest, emoji, empty):
        if number is not None:
            rec.call("remove_master_key", number, label="remove_master_key (cleanup)")
    rec.call("get_master_keys", transform=my_keys)
