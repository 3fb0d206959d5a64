"""Hadoop's proxy-user rules (hms_proxy.security.proxyusers) as its DefaultImpersonationProvider
reads them; against the stock HMS they are compared in test_delegation_tokens.py."""
from __future__ import annotations

import pytest

from hms_proxy.security.proxyusers import NotAllowed, ProxyUsers


def _allowed(rules: dict, real: str, user: str, address: str = "127.0.0.1") -> str:
    try:
        ProxyUsers.of(rules).authorize(f"{real}@R", real, user, user, address)
        return "yes"
    except NotAllowed as exc:
        return str(exc)


@pytest.mark.parametrize("rules, real, user, address, answer", [
    ({}, "hive", "alice", "127.0.0.1", "User: hive@R is not allowed to impersonate alice"),
    ({"hadoop.proxyuser.hive.hosts": "*"}, "hive", "alice", "127.0.0.1",
     "User: hive@R is not allowed to impersonate alice"),  # hosts alone: for nobody
    ({"hadoop.proxyuser.hive.hosts": "*", "hadoop.proxyuser.hive.users": "*"},
     "hive", "alice", "10.0.0.1", "yes"),
    ({"hadoop.proxyuser.hive.hosts": "*", "hadoop.proxyuser.hive.groups": "*"},
     "hive", "alice", "10.0.0.1", "yes"),
    ({"hadoop.proxyuser.hive.hosts": "*", "hadoop.proxyuser.hive.users": "bob, alice"},
     "hive", "alice", "10.0.0.1", "yes"),
    ({"hadoop.proxyuser.hive.users": "alice"}, "hive", "alice", "127.0.0.1",
     "Unauthorized connection for super-user: hive@R from IP /127.0.0.1"),  # no hosts
    ({"hadoop.proxyuser.hive.hosts": "10.0.0.0/8", "hadoop.proxyuser.hive.users": "alice"},
     "hive", "alice", "10.2.3.4", "yes"),
    ({"hadoop.proxyuser.hive.hosts": "10.0.0.0/8,192.168.1.5",
      "hadoop.proxyuser.hive.users": "alice"}, "hive", "alice", "192.168.1.6",
     "Unauthorized connection for super-user: hive@R from IP /192.168.1.6"),
    ({"hadoop.proxyuser.hive.hosts": "localhost", "hadoop.proxyuser.hive.users": "alice"},
     "hive", "alice", "127.0.0.1", "yes"),  # a host name, resolved
    ({"hadoop.proxyuser.hive.hosts": "*", "hadoop.proxyuser.hive.groups": "etl",
      "hadoop.user.group.static.mapping.overrides": "alice=etl,bi;bob=;"},
     "hive", "alice", "127.0.0.1", "yes"),  # a group of hers
    ({"hadoop.proxyuser.hive.hosts": "*", "hadoop.proxyuser.hive.groups": "etl",
      "hadoop.user.group.static.mapping.overrides": "alice=etl,bi;bob=;"},
     "hive", "bob", "127.0.0.1", "User: hive@R is not allowed to impersonate bob"),
    ({"hadoop.proxyuser.oozie.hosts": "*", "hadoop.proxyuser.oozie.users": "*"},
     "hive", "alice", "127.0.0.1", "User: hive@R is not allowed to impersonate alice"),
])
def test_rules_decide_as_hadoops(rules, real, user, address, answer):
    assert _allowed(rules, real, user, address) == answer


def test_other_settings_make_no_rules():
    assert not ProxyUsers.of({"hive.cluster.delegation.token.renew-interval": "1000"})
    assert ProxyUsers.of({"hadoop.proxyuser.hive.hosts": "*"})
