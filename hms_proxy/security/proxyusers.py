"""Hadoop's proxy-user rules (``hadoop.proxyuser.<user>.hosts``, ``.users``, ``.groups``): which
authenticated callers may act for whom, as Hadoop's ``DefaultImpersonationProvider`` decides.

The stock HMS checks them when a caller asks for a delegation token owned by somebody else
(``get_delegation_token(owner, renewer)`` from HiveServer2, Oozie or Livy, whose principal
gets tokens for the users it serves): the caller is the *real user*, the owner the user it acts
for, and the token records both. Given with ``serve --conf`` (the stock reads them from its
core-site.xml):

- ``hadoop.proxyuser.hive.hosts``: from where the real user ``hive`` (its short name) may act
  for others: ``*``, or a comma list of IP addresses, CIDR ranges and host names;
- ``hadoop.proxyuser.hive.users`` / ``.groups``: for whom: ``*``, or comma lists of user names
  and of groups one of whose members the owner must be. Without either, nobody.

A user's groups come from ``hadoop.user.group.static.mapping.overrides``
(``alice=etl,analysts;bob=;``) when it names the user, else from this machine's (as Hadoop's
default Unix group mapping on the metastore's host).
"""
from __future__ import annotations

import grp
import ipaddress
import os
import pwd
import socket
from dataclasses import dataclass, field

PREFIX = "hadoop.proxyuser."
STATIC_GROUPS = "hadoop.user.group.static.mapping.overrides"


class NotAllowed(Exception):
    """Hadoop's AuthorizationException: its message is what the client is answered."""


@dataclass(frozen=True)
class _Acl:
    users: frozenset = frozenset()
    groups: frozenset = frozenset()
    anyone: bool = False


def _names(value: str) -> frozenset:
    return frozenset(v.strip() for v in value.split(",") if v.strip())


@dataclass
class ProxyUsers:
    """The rules of one server (empty: nobody acts for anybody)."""

    acls: dict = field(default_factory=dict)  # real user's short name -> _Acl
    hosts: dict = field(default_factory=dict)  # real user's short name -> frozenset of entries
    static_groups: dict = field(default_factory=dict)  # user -> frozenset of groups

    @classmethod
    def of(cls, conf: dict | None) -> "ProxyUsers":
        conf = conf or {}
        users: dict = {}
        groups: dict = {}
        out = cls()
        for key, value in conf.items():
            if not key.startswith(PREFIX):
                continue
            name, _, kind = key[len(PREFIX):].rpartition(".")
            if not name:
                continue
            if kind == "users":
                users[name] = value
            elif kind == "groups":
                groups[name] = value
            elif kind == "hosts":
                out.hosts[name] = _names(value)
        for name in set(users) | set(groups):
            u, g = users.get(name, ""), groups.get(name, "")
            out.acls[name] = _Acl(_names(u), _names(g),
                                  u.strip() == "*" or g.strip() == "*")
        for item in conf.get(STATIC_GROUPS, "").split(";"):
            user, eq, names = item.partition("=")
            if eq and user.strip():
                out.static_groups[user.strip()] = _names(names)
        return out

    def __bool__(self) -> bool:
        return bool(self.acls or self.hosts)

    def groups_of(self, user: str) -> frozenset:
        if user in self.static_groups:
            return self.static_groups[user]
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            return frozenset()
        names = set()
        for gid in os.getgrouplist(user, entry.pw_gid):
            try:
                names.add(grp.getgrgid(gid).gr_name)
            except KeyError:
                continue
        return frozenset(names)

    def authorize(self, real_user: str, real_short: str, user: str, user_short: str,
                  address: str) -> None:
        """:class:`NotAllowed` unless ``real_user`` (its full name, and its short name) may
        act for ``user`` (the owner as asked, and its short name) from ``address`` (an IP)."""
        acl = self.acls.get(real_short)
        if acl is None or not (acl.anyone or user_short in acl.users or
                               acl.groups & self.groups_of(user_short)):
            raise NotAllowed(f"User: {real_user} is not allowed to impersonate {user}")
        if not _host_allowed(self.hosts.get(real_short), address):
            # the address as the stock names it: Java's InetAddress, no host name before "/"
            raise NotAllowed(f"Unauthorized connection for super-user: {real_user} "
                             f"from IP /{address}")


def _host_allowed(entries, address: str) -> bool:
    """Hadoop's MachineList: ``*``, IP addresses, CIDR ranges, host names (resolved)."""
    if not entries:
        return False
    if "*" in entries:
        return True
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for entry in entries:
        try:
            if "/" in entry:
                if ip in ipaddress.ip_network(entry, strict=False):
                    return True
                continue
            if ip == ipaddress.ip_address(entry):
                return True
            continue
        except ValueError:
            pass
        try:  # a host name
            if address in {info[4][0] for info in socket.getaddrinfo(entry, None)}:
                return True
        except OSError:
            continue
    return False
