"""The REST door's token signing keys (hms_proxy.rest.oauth.Tokens): made once, rotated after
--rest-key-rotation, a replaced key kept while its tokens may be valid, seen by every server
over the store. The clock is the test's (offsets from now), not slept."""
from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("starlette")

from hms_proxy.rest import oauth  # noqa: E402
from hms_proxy.security import jwt  # noqa: E402
from kvmodel.store import open_store  # noqa: E402


class Clock:
    """time.time() plus an offset the test moves; the rest of the time module as is."""

    def __init__(self):
        self.offset = 0.0

    def time(self) -> float:
        return time.time() + self.offset

    def __getattr__(self, name):
        return getattr(time, name)


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(oauth, "time", fake)
    return fake


def _kid(answer: dict) -> str:
    return jwt.parse(answer["access_token"]).header["kid"]


def test_keys_rotate_and_a_replaced_key_verifies_its_tokens_while_they_live(tmp_path, clock):
    store = open_store(str(tmp_path / "store"))
    try:
        tokens = oauth.Tokens(store, "main", lifetime=1000, rotation=100)
        first = tokens.issue("alice", "secret")
        assert _kid(tokens.issue("bob", "secret")) == _kid(first)  # one key until rotation
        clock.offset = 101
        second = tokens.issue("alice", "secret")
        assert _kid(second) != _kid(first)
        assert tokens.own(first["access_token"], now=clock.time())["sub"] == "alice"
        other = oauth.Tokens(store, "main", lifetime=1000, rotation=100)  # another server
        assert other.own(second["access_token"], now=clock.time())["sub"] == "alice"
        assert other.own(first["access_token"], now=clock.time())["sub"] == "alice"
        clock.offset = 101 + 1000 + 61  # every token of the first key has expired
        third = tokens.issue("carol", "secret")
        kept = [k.kid for k in oauth.decode_keys(store.get("main", oauth.KEY))]
        assert kept == [_kid(second), _kid(third)]
        with pytest.raises(jwt.BadToken, match="unknown key"):
            tokens.own(first["access_token"], now=clock.time())
        # the other server had the first two keys in memory: it reads them again
        assert other.own(third["access_token"], now=clock.time())["sub"] == "carol"
    finally:
        store.close()


def test_a_key_of_the_layout_before_rotation_is_kept_and_replaced(tmp_path, clock):
    store = open_store(str(tmp_path / "store"))
    try:
        old = oauth.SigningKey("0123456789abcdef", b"k" * 32, 0)
        with store.write("main") as txn:
            txn.put(oauth.KEY, json.dumps({"kid": old.kid, "key": "a2trazZr" * 5 + "a2s="})
                    .encode())
        tokens = oauth.Tokens(store, "main", lifetime=60, rotation=100)
        assert [k.kid for k in tokens._known()] == [old.kid]
        answer = tokens.issue("alice", "secret")  # made at 0: rotated now, the old one kept
        assert _kid(answer) != old.kid
        assert [k.kid for k in oauth.decode_keys(store.get("main", oauth.KEY))] == \
            [old.kid, _kid(answer)]
    finally:
        store.close()
