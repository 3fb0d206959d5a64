"""Access control: who a caller is, what each Thrift method does, and whether the rules allow it.

One :class:`Guard` per server sits between the routing of a call (which ref it works on,
``hms_proxy/hms/handler.py``) and the family that serves it, and refuses a call before anything
of it runs. It knows

* **who** calls: the verified client certificate's CN (``serve --tls-client-ca``, set by the
  server at the handshake), else the ``set_ugi`` user, authenticated by a shared secret when
  ``serve --auth-secrets`` names one for that user, else taken on trust (as HMS does without
  Kerberos) unless the rules say ``"trust_set_ugi": false``;
* **what** a method does: :data:`READS`, :data:`WRITES` or :data:`SESSION` (calls that touch
  neither the catalog nor shared state); every method of the interface is in one of them;
* **what is allowed**: read-only listeners (``--read-only``, ``--bind PORT=REF:ro``) and the
  rules file (``--access-rules``, see :class:`Rules`).

A refused call gets a MetaException (TApplicationException for the few methods that declare
none) naming the rule; refused calls and every write go to the audit log
(:mod:`hms_proxy.security.audit`).
"""
from __future__ import annotations

import fnmatch
import functools
import hashlib
import hmac
import json
import re
from dataclasses import dataclass

from thrift.Thrift import TApplicationException

from hms_proxy.thrift import errors

READ, WRITE, SESSION = "read", "write", "session"

#: The prefix of the set_ugi group entry that carries a shared secret (``serve --auth-secrets``).
SECRET_PREFIX = "secret:"

# --- what every method does ----------------------------------------------------------------
#: Calls that change the catalog, or state other clients share (transactions and locks,
#: compactions, tokens, notifications fired, server options).
WRITES = frozenset("""
    abort_txn abort_txns add_dynamic_partitions add_foreign_key add_index add_master_key
    add_partition add_partition_with_environment_context add_partitions add_partitions_pspec
    add_partitions_req add_primary_key add_token alter_database alter_function alter_index
    alter_partition alter_partition_with_environment_context alter_partitions
    alter_partitions_with_environment_context alter_table alter_table_with_cascade
    alter_table_with_environment_context append_partition append_partition_by_name
    append_partition_by_name_with_environment_context append_partition_with_environment_context
    cache_file_metadata cancel_delegation_token clear_file_metadata commit_txn compact compact2
    create_database create_function create_role create_table create_table_with_constraints
    create_table_with_environment_context create_type delete_partition_column_statistics
    delete_table_column_statistics drop_constraint drop_database drop_function
    drop_index_by_name drop_partition drop_partition_by_name
    drop_partition_by_name_with_environment_context drop_partition_with_environment_context
    drop_partitions_req drop_role drop_table drop_table_with_environment_context drop_type
    exchange_partition exchange_partitions fire_listener_event get_delegation_token
    grant_privileges grant_revoke_privileges grant_revoke_role grant_role lock
    markPartitionForEvent open_txns put_file_metadata remove_master_key remove_token
    rename_partition renew_delegation_token revoke_privileges revoke_role set_aggr_stats_for
    allocate_table_write_ids seed_write_id seed_txn_id
    setOption update_master_key update_partition_column_statistics
    update_table_column_statistics
    alter_catalog alter_database_req alter_partitions_req alter_table_req append_partition_req
    create_catalog create_database_req create_table_req drop_catalog drop_database_req
    drop_partition_req drop_table_req update_partition_column_statistics_req
    update_table_column_statistics_req rename_partition_req truncate_table truncate_table_req add_runtime_stats
    scheduled_query_maintenance scheduled_query_poll scheduled_query_progress
    update_creation_metadata
    add_unique_constraint add_not_null_constraint add_default_constraint add_check_constraint
""".split())

#: Calls that only read (``lock`` is one too when it takes only shared-read locks; keeping
#: locks one holds alive and releasing them is reading as well).
READS = frozenset("""
    get_runtime_stats check_lock get_aggr_stats_for get_all_databases get_all_functions get_all_tables
    get_all_token_identifiers get_current_notificationEventId get_database get_databases
    get_fields get_fields_with_environment_context get_file_metadata get_file_metadata_by_expr
    get_foreign_keys get_function get_functions get_index_by_name get_index_names get_indexes
    get_master_keys get_next_notification get_num_partitions_by_filter get_open_txns
    get_open_txns_info get_part_specs_by_filter get_partition get_partition_by_name
    get_partition_column_statistics get_partition_names get_partition_names_ps
    get_partition_values get_partition_with_auth get_partitions get_partitions_by_expr
    get_partitions_by_filter get_partitions_by_names get_partitions_ps
    get_partitions_ps_with_auth get_partitions_pspec get_partitions_statistics_req
    get_partitions_with_auth get_primary_keys get_principals_in_role get_privilege_set
    get_role_grants_for_principal get_role_names get_schema get_schema_with_environment_context
    get_table get_table_column_statistics get_table_meta get_table_names_by_filter
    get_table_objects_by_name get_table_objects_by_name_req get_table_req
    get_table_statistics_req get_tables get_tables_by_type get_token get_type get_type_all
    heartbeat heartbeat_txn_range isPartitionMarkedForEvent list_privileges list_roles
    partition_name_to_spec partition_name_to_vals show_compact show_locks unlock
    get_catalog get_catalogs get_database_req get_fields_req get_partition_names_ps_req
    get_partition_req get_partitions_by_names_req get_partitions_req get_schema_req
    get_all_table_constraints get_check_constraints get_default_constraints
    get_not_null_constraints get_partitions_by_filter_req get_partitions_ps_with_auth_req
    get_unique_constraints fetch_partition_names_req get_open_txns_req get_valid_write_ids
    get_max_allocated_table_write_id get_materialized_views_for_rewriting get_scheduled_query
""".split())

#: Calls about the connection or the server process, never the catalog: always allowed.
SESSION_CALLS = frozenset("""
    set_ugi get_config_value getMetaConf setMetaConf partition_name_has_valid_characters
    flushCache getName getVersion getStatus getStatusDetails getCounters getCounter getOption
    getOptions getCpuProfile aliveSince reinitialize shutdown
""".split())

_SHARED_READ = 1  # LockType.SHARED_READ


def kind_of(method: str, args=()) -> str:
    """READ, WRITE or SESSION for one call; a method in no table counts as a write."""
    if method == "lock" and args:
        components = getattr(args[0], "component", None) or []
        if components and all(c.type == _SHARED_READ for c in components):
            return READ
        return WRITE
    if method in READS:
        return READ
    if method in SESSION_CALLS:
        return SESSION
    return WRITE


# --- configuration files -------------------------------------------------------------------
class ConfigError(ValueError):
    """A rules, secrets or TLS file the server cannot use (``serve`` exits 2)."""


_ANCESTRY = re.compile(r"([~^]\d*)+$")


def base_ref(ref: str) -> str:
    """The name a ref expression is matched by: ``main~2`` and ``dev^2`` by their branch."""
    return _ANCESTRY.sub("", ref) or ref


@dataclass(frozen=True)
class Rule:
    number: int          # 1-based, as the messages name it
    branches: tuple[str, ...]
    read: tuple[str, ...]
    write: tuple[str, ...]
    protected: bool

    def describe(self, kind: str) -> str:
        where = ",".join(self.branches)
        if self.protected and kind == WRITE:
            return f"rule {self.number}: {where} protected"
        parts = [f"write=[{', '.join(self.write)}]"]
        if kind == READ:
            parts.insert(0, f"read=[{', '.join(self.read)}]")
        return f"rule {self.number}: {where} {' '.join(parts)}"


class Rules:
    """Per-branch rules, from ``serve --access-rules FILE.json``::

        {"groups": {"data-eng": ["alice", "carol"]},
         "trust_set_ugi": true,
         "rules": [
           {"branches": "main", "read": ["*"], "write": ["alice", "@data-eng"]},
           {"branches": ["dev-*", "feature-*"], "read": ["*"], "write": ["*"]},
           {"branches": "release-*", "read": ["*"], "protected": true},
           {"branches": "*", "read": ["@data-eng"]}]}

    The first rule whose ``branches`` glob matches the call's ref decides; no rule: refused.
    ``read`` / ``write``: user names, ``@group``, ``*`` (anyone, anonymous callers too);
    writers may read. ``protected``: no Thrift write at all (the branch changes by merges).
    """

    KEYS = {"groups", "rules", "trust_set_ugi"}
    RULE_KEYS = {"branches", "read", "write", "protected"}

    def __init__(self, rules: list[Rule], groups: dict[str, frozenset[str]],
                 trust_set_ugi: bool = True, source: str = "access rules"):
        self.rules = rules
        self.groups = groups
        self.trust_set_ugi = trust_set_ugi
        self.source = source
        self.rule_for = functools.lru_cache(maxsize=4096)(self._rule_for)

    @classmethod
    def load(cls, path: str) -> "Rules":
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise ConfigError(f"--access-rules {path}: {exc.strerror or exc}") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"--access-rules {path}: not valid JSON: {exc}") from None
        return cls.parse(data, source=path)

    @classmethod
    def parse(cls, data, source: str = "access rules") -> "Rules":
        def fail(message):
            raise ConfigError(f"--access-rules {source}: {message}")

        if not isinstance(data, dict):
            fail("the file must hold a JSON object with a 'rules' list")
        unknown = sorted(set(data) - cls.KEYS)
        if unknown:
            fail(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(cls.KEYS))})")
        groups_in = data.get("groups", {})
        if not isinstance(groups_in, dict):
            fail("'groups' must be an object mapping a group name to a list of user names")
        groups = {}
        for name, members in groups_in.items():
            if not _names(members) or not name:
                fail(f"group {name!r}: members must be a list of user names")
            groups[name] = frozenset(members)
        trust = data.get("trust_set_ugi", True)
        if not isinstance(trust, bool):
            fail("'trust_set_ugi' must be true or false")
        raw_rules = data.get("rules")
        if not isinstance(raw_rules, list) or not raw_rules:
            fail("'rules' must be a non-empty list of rules")
        rules = []
        for number, raw in enumerate(raw_rules, 1):
            where = f"rule {number}"
            if not isinstance(raw, dict):
                fail(f"{where}: a rule is an object with 'branches', 'read', 'write', 'protected'")
            unknown = sorted(set(raw) - cls.RULE_KEYS)
            if unknown:
                fail(f"{where}: unknown key {unknown[0]!r} "
                     f"(known: {', '.join(sorted(cls.RULE_KEYS))})")
            branches = _as_list(raw.get("branches"))
            if not branches or not _names(branches):
                fail(f"{where}: 'branches' must be a branch name or glob, or a list of them")
            lists = {}
            for key in ("read", "write"):
                value = _as_list(raw.get(key, []))
                if value is None or not _names(value, allow_empty=True):
                    fail(f"{where}: '{key}' must be a list of user names, @groups or '*'")
                lists[key] = tuple(value)
            protected = raw.get("protected", False)
            if not isinstance(protected, bool):
                fail(f"{where}: 'protected' must be true or false")
            if protected and lists["write"]:
                fail(f"{where}: a protected branch has no writers (it changes by merges only)")
            rules.append(Rule(number, tuple(branches), lists["read"], lists["write"], protected))
        return cls(rules, groups, trust, source)

    def _rule_for(self, ref: str) -> Rule | None:
        name = base_ref(ref)
        return next((r for r in self.rules
                     if any(fnmatch.fnmatchcase(name, p) for p in r.branches)), None)

    def groups_of(self, identity: str | None) -> set[str]:
        if identity is None:
            return set()
        return {g for g, members in self.groups.items() if identity in members}

    def decide(self, identity: str | None, groups, ref: str, kind: str) -> str | None:
        """None when allowed, else why not (the text after ``access denied:``)."""
        rule = self.rule_for(ref)
        if rule is None:
            return f"no rule of {self.source} covers branch '{ref}'"
        who = _who(identity)
        if kind == WRITE:
            if rule.protected:
                return (f"branch '{ref}' is writable only by merge ({rule.describe(WRITE)})")
            if _matches(rule.write, identity, groups):
                return None
            return f"{who} may not write branch '{ref}' ({rule.describe(WRITE)})"
        if _matches(rule.read, identity, groups) or _matches(rule.write, identity, groups):
            return None
        return f"{who} may not read branch '{ref}' ({rule.describe(READ)})"


def _as_list(value):
    if isinstance(value, str):
        return [value]
    return value if isinstance(value, list) else None


def _names(values, allow_empty=False) -> bool:
    return isinstance(values, list) and (allow_empty or bool(values)) and all(
        isinstance(v, str) and v.strip() for v in values)


def _matches(allowed, identity, groups) -> bool:
    for entry in allowed:
        if entry == "*":
            return True
        if entry.startswith("@"):
            if entry[1:] in groups:
                return True
        elif identity is not None and entry == identity:
            return True
    return False


def _who(identity) -> str:
    return "anonymous caller (no identity)" if identity is None else f"user '{identity}'"


class Secrets:
    """``serve --auth-secrets FILE.json``: ``{"alice": "s3cret", "bob": "sha256:<hex>"}``.

    A user listed here is who it says only when its ``set_ugi`` group list carries
    ``secret:<its secret>`` (an unmodified Hive or Spark client can send it: Hadoop's
    ``hadoop.user.group.static.mapping.overrides`` names the groups of a user)."""

    def __init__(self, entries: dict[str, str]):
        self.entries = entries

    @classmethod
    def load(cls, path: str) -> "Secrets":
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as exc:
            raise ConfigError(f"--auth-secrets {path}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ConfigError(f"--auth-secrets {path}: not valid JSON: {exc}") from None
        if not isinstance(data, dict) or not data:
            raise ConfigError(f"--auth-secrets {path}: the file must hold a JSON object "
                              f"mapping user names to secrets")
        for user, secret in data.items():
            if not isinstance(secret, str) or not secret or not user:
                raise ConfigError(f"--auth-secrets {path}: user {user!r}: the secret must be "
                                  f"a non-empty string")
            if secret.startswith("sha256:") and not re.fullmatch(r"sha256:[0-9a-f]{64}", secret):
                raise ConfigError(f"--auth-secrets {path}: user {user!r}: 'sha256:' must be "
                                  f"followed by 64 lower-case hex digits")
            if any(ch in secret for ch in ",;= \t\n"):
                raise ConfigError(f"--auth-secrets {path}: user {user!r}: a secret may not "
                                  f"hold ',', ';', '=' or white space")
        return cls(dict(data))

    def __contains__(self, user) -> bool:
        return user in self.entries

    def check(self, user: str, presented: list[str]) -> bool:
        expected = self.entries[user]
        for value in presented:
            if expected.startswith("sha256:"):
                value = "sha256:" + hashlib.sha256(value.encode()).hexdigest()
            if hmac.compare_digest(value.encode(), expected.encode()):
                return True
        return False


# --- the guard -----------------------------------------------------------------------------
class Guard:
    """Checks every call against the listener and the rules, and audits writes and refusals."""

    def __init__(self, rules: Rules | None = None, secrets: Secrets | None = None,
                 audit=None, default_ref: str = "main"):
        self.rules = rules
        self.secrets = secrets
        self.audit = audit
        self.default_ref = default_ref

    def call(self, ctx, method, args: list, run):
        """Run ``run()`` (the call) if allowed; ``method`` is the processor's method entry."""
        name = method.name
        if name == "set_ugi":
            return self._set_ugi(ctx, method, args, run)
        kind = kind_of(name, args)
        if kind == SESSION:
            return run()
        ref = ctx.ref or self.default_ref
        reason = self.refusal(ctx, ref, kind, name)
        if reason is not None:
            self._refuse(ctx, method, ref, reason)
        if kind != WRITE or self.audit is None:
            return run()
        try:
            value = run()
        except BaseException as exc:
            self.audit.record(ctx, name, ref, "error", _message(exc))
            raise
        self.audit.record(ctx, name, ref, "ok")
        return value

    def refusal(self, ctx, ref: str, kind: str, name: str) -> str | None:
        if kind == WRITE and getattr(ctx, "read_only", False):
            listener = getattr(ctx, "listener", "") or "this listener"
            return f"listener {listener} is read-only ({name} writes)"
        if self.rules is None:
            return None
        identity = ctx.identity
        groups = self.rules.groups_of(identity)
        if ctx.auth == "ugi":  # claimed by the client like the user name: trusted alike
            groups.update(ctx.groups or ())
        return self.rules.decide(identity, groups, ref, kind)

    def check_write(self, ctx, ref: str) -> None:
        """The store's write path asks again (``Family.writing``): a method misfiled as a
        read still cannot write where its caller may not."""
        reason = self.refusal(ctx, ref, WRITE, (ctx.call or "write").split(" ")[0])
        if reason is not None:
            raise errors.MetaError(f"access denied: {reason}")

    def _refuse(self, ctx, method, ref, reason, obj=None):
        message = f"access denied: {reason}"
        if self.audit is not None:
            self.audit.record(ctx, method.name, ref, "denied", message, obj=obj)
        if any(cls.__name__ == "MetaException" for _, cls in method.exceptions):
            raise errors.MetaError(message)
        raise TApplicationException(TApplicationException.INTERNAL_ERROR, message)

    def _set_ugi(self, ctx, method, args, run):
        user = args[0] if args else None
        groups = list(args[1] or []) if len(args) > 1 else []
        presented = [g[len(SECRET_PREFIX):] for g in groups if g.startswith(SECRET_PREFIX)]
        if len(args) > 1:  # a secret is never kept, echoed back or passed upstream
            args[1] = [g for g in groups if not g.startswith(SECRET_PREFIX)]
        if ctx.user is not None or ctx.auth in ("kerberos", "token"):
            return run()  # a second set_ugi ends the connection; under SASL it changes nothing
        auth = "ugi"
        if self.secrets is not None and user in self.secrets:
            if not self.secrets.check(user, presented):
                ctx.ref = ctx.ref or self.default_ref
                what = "a wrong secret" if presented else "no secret"
                self._refuse(ctx, method, ctx.ref,
                             f"user '{user}' presented {what} (serve --auth-secrets)",
                             obj=f"user {user}")
            auth = "secret"
        value = run()
        if ctx.auth != "cert":  # a client certificate outranks what set_ugi says
            if auth == "ugi" and self.rules is not None and not self.rules.trust_set_ugi:
                ctx.identity, ctx.auth = None, "none"
            elif user is not None:
                ctx.identity, ctx.auth = user, auth
        return value


def _message(exc: BaseException) -> str:
    """``AlreadyExistsException: Database shop already exists``: what the client got."""
    name = getattr(exc, "thrift_name", None) or type(exc).__name__
    text = getattr(exc, "message", None) or str(exc)
    return f"{name}: {text}" if text else name
