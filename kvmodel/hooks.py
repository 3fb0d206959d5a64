"""Pre-commit and pre-merge hooks: checks that see what a commit or a merge would change on a
branch, and may veto it.

A *hook* is a callable ``hook(event: HookEvent) -> None | str``. Returning None (or True) lets
the operation go on; returning a string (or False), or raising :class:`HookVeto`, vetoes it
with that message. A hook that fails with any other exception vetoes too (a broken check must
not let changes through unchecked).

Hooks are configured per store, from two places:

* ``<store>/hooks.json``::

      {"pre-commit": ["mypkg.checks:no_friday_commits"],
       "pre-merge":  ["mypkg.checks:owners_review"],
       "builtin":    {"safe_schema_evolution": true}}

  each entry ``"module:function"`` (or ``"module:Class.attr"``), imported when loaded;
* the entry-point group ``hms_proxy.hooks``, named ``pre-commit.<x>`` or ``pre-merge.<x>``::

      [project.entry-points."hms_proxy.hooks"]
      "pre-merge.owners" = "mypkg.checks:owners_review"

The built-in :func:`safe_schema_evolution` runs on protected branches (both events) unless
``hooks.json`` turns it off; name ``kvmodel.hooks:safe_schema_evolution`` in a hook list to
check every branch with it.

:func:`commit_with_hooks` and :func:`merge_with_hooks` run the hooks, then do the operation
against the branch head the hooks saw (``HeadMoved`` when it moved meanwhile).
"""
from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlparse

from kvmodel.entities import decode, entity_change
from kvmodel.merge import three_way
from kvmodel.store.contract import Commit, VersionedStore
from kvmodel.store.errors import HeadMoved, MergeConflict, ReadOnlyRef, StoreError
from kvmodel.versioning import DiffReport, EntityChange, MergeResult, diff_refs, merge_refs

__all__ = ["HookVeto", "HookConfigError", "HookEvent", "HookSet", "Hook", "load_hooks",
           "commit_with_hooks", "merge_with_hooks", "safe_schema_evolution",
           "ENTRY_POINT_GROUP", "CONFIG_FILE", "EVENTS"]

EVENTS = ("pre-commit", "pre-merge")
ENTRY_POINT_GROUP = "hms_proxy.hooks"
CONFIG_FILE = "hooks.json"
BUILTINS = ("safe_schema_evolution",)
ATTEMPTS = 3  # times the hooks are re-run when the branch changed while they ran


class HookVeto(StoreError):
    """A hook refused the commit or merge. ``messages``: every veto message, in hook order;
    ``vetoes``: ``(hook name, message)`` pairs; ``event``: the :class:`HookEvent` (or None)."""

    def __init__(self, messages, event: HookEvent | None = None,
                 vetoes: list[tuple[str, str]] | None = None):
        if isinstance(messages, str):
            messages = [messages]
        self.messages = list(messages)
        self.event = event
        self.vetoes = list(vetoes) if vetoes is not None else [("", m) for m in self.messages]
        super().__init__("; ".join(self.messages))


class HookConfigError(StoreError):
    """hooks.json or a hook entry point is malformed, or names a hook that cannot be loaded."""


@dataclass(frozen=True)
class HookEvent:
    """What a hook is asked about.

    ``kind``: "pre-commit" or "pre-merge"; ``branch``: the branch written to (the merge
    destination); ``source``: the merge source (None for a commit); ``diff``: what the operation
    would change on the branch (a commit: the branch head against the branch with its staged
    changes; a merge: the changes it would apply to the destination head); ``protected``:
    whether ``branch`` is protected; ``head``: the branch head the hooks see (the operation is
    made against it). :meth:`values` gives the full before/after value of a changed key."""

    kind: str
    branch: str
    source: str | None
    diff: DiffReport
    protected: bool
    store: VersionedStore = field(repr=False, compare=False)
    head: str = ""
    message: str | None = None
    author: str = ""
    metadata: dict = field(default_factory=dict)
    strategy: str | None = None
    _values: Callable | None = field(default=None, repr=False, compare=False)

    def values(self, key: str) -> tuple[bytes | None, bytes | None]:
        """The value of ``key`` on the branch head, and the value the operation would leave
        (None: absent)."""
        if self._values is None:
            return None, None
        return self._values(key)

    def structs(self, change: EntityChange) -> tuple[object | None, object | None]:
        """The decoded before/after structs of a changed entity (None when absent)."""
        before, after = self.values(change.key)
        return decode(change.kind, before), decode(change.kind, after)


@dataclass(frozen=True)
class Hook:
    name: str
    func: Callable


@dataclass
class HookSet:
    """The hooks of one store: ``hooks[event]`` run on every branch, the built-in
    :func:`safe_schema_evolution` (when ``safe_schema_evolution``) on protected branches."""

    hooks: dict[str, list[Hook]] = field(default_factory=lambda: {e: [] for e in EVENTS})
    safe_schema_evolution: bool = True

    def for_event(self, kind: str, protected: bool) -> list[Hook]:
        if kind not in EVENTS:
            raise ValueError(f"unknown hook event {kind!r}; use one of {EVENTS}")
        out = list(self.hooks.get(kind, ()))
        if protected and self.safe_schema_evolution:
            out.append(Hook("safe_schema_evolution", safe_schema_evolution))
        return out

    def applies(self, kind: str, protected: bool) -> bool:
        """Whether any hook would run (else the diff need not be computed)."""
        return bool(self.for_event(kind, protected))

    def run(self, event: HookEvent) -> None:
        """Run every hook of ``event.kind``; raise HookVeto with every veto message."""
        vetoes: list[tuple[str, str]] = []
        for hook in self.for_event(event.kind, event.protected):
            for message in _call(hook, event):
                vetoes.append((hook.name, message))
        if vetoes:
            raise HookVeto([m for _, m in vetoes], event, vetoes)


def _call(hook: Hook, event: HookEvent) -> list[str]:
    try:
        out = hook.func(event)
    except HookVeto as veto:
        return veto.messages or [f"vetoed by hook {hook.name}"]
    except Exception as exc:  # a broken check vetoes: nothing goes through unchecked
        return [f"hook {hook.name} failed: {type(exc).__name__}: {exc}"]
    if out is None or out is True:
        return []
    if out is False:
        return [f"vetoed by hook {hook.name}"]
    if isinstance(out, str):
        return [out or f"vetoed by hook {hook.name}"]
    return [f"hook {hook.name} returned {type(out).__name__}, not None or a message"]


# --- loading ---------------------------------------------------------------------------------
def _store_dir(store_path) -> Path | None:
    if store_path is None:
        return None
    text = os.fspath(store_path)
    parsed = urlparse(text)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if "://" in text:
        return None  # a remote store: hooks come from entry points only
    return Path(text)


def _import(spec: str, origin: str) -> Callable:
    module, sep, attr = spec.partition(":")
    if not sep or not module.strip() or not attr.strip():
        raise HookConfigError(f"{origin}: hook {spec!r} must be 'module:function'")
    try:
        obj = importlib.import_module(module.strip())
        for part in attr.strip().split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise HookConfigError(f"{origin}: cannot load hook {spec!r}: {exc}") from exc
    if not callable(obj):
        raise HookConfigError(f"{origin}: hook {spec!r} is not callable")
    return obj


def _read_config(path: Path, hookset: HookSet) -> None:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HookConfigError(f"{path}: {exc}") from exc
    if not isinstance(config, dict):
        raise HookConfigError(f"{path}: expected a JSON object")
    unknown = set(config) - set(EVENTS) - {"builtin"}
    if unknown:
        raise HookConfigError(f"{path}: unknown keys {sorted(unknown)}; expected "
                              f"{list(EVENTS) + ['builtin']}")
    for kind in EVENTS:
        specs = config.get(kind, [])
        if isinstance(specs, str):
            specs = [specs]
        if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
            raise HookConfigError(f"{path}: {kind!r} must be a list of 'module:function'")
        hookset.hooks[kind].extend(Hook(s, _import(s, str(path))) for s in specs)
    builtin = config.get("builtin", {})
    if not isinstance(builtin, dict):
        raise HookConfigError(f"{path}: 'builtin' must be an object")
    for name, enabled in builtin.items():
        if name not in BUILTINS:
            raise HookConfigError(f"{path}: unknown built-in hook {name!r}; known: "
                                  f"{list(BUILTINS)}")
        if not isinstance(enabled, bool):
            raise HookConfigError(f"{path}: builtin.{name} must be true or false")
        setattr(hookset, name, enabled)


def _entry_points() -> list:
    eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return sorted(eps, key=lambda ep: ep.name)


def _read_entry_points(hookset: HookSet) -> None:
    for ep in _entry_points():
        kind, sep, name = ep.name.partition(".")
        if kind not in EVENTS or not sep or not name:
            raise HookConfigError(f"entry point {ep.name!r} in group {ENTRY_POINT_GROUP!r}: "
                                  "name it 'pre-commit.<name>' or 'pre-merge.<name>'")
        try:
            func = ep.load()
        except Exception as exc:
            raise HookConfigError(f"entry point {ep.name!r} ({ep.value}): cannot load: "
                                  f"{exc}") from exc
        if not callable(func):
            raise HookConfigError(f"entry point {ep.name!r} ({ep.value}) is not callable")
        hookset.hooks[kind].append(Hook(f"{ENTRY_POINT_GROUP}:{ep.name}", func))


def load_hooks(store_path=None) -> HookSet:
    """The hooks of the store at ``store_path`` (a directory, a ``file://`` URL, or None/a
    remote URL for entry points only): ``hooks.json``'s first, then the entry points', by
    name. Raises HookConfigError when a hook cannot be loaded."""
    hookset = HookSet()
    directory = _store_dir(store_path)
    if directory is not None:
        _read_config(directory / CONFIG_FILE, hookset)
    _read_entry_points(hookset)
    return hookset


# --- the operations, with their hooks -----------------------------------------------------------
def run_pre_commit_hooks(store: VersionedStore, store_path, branch: str, head: str, changes,
                         message: str, author: str, meta: dict) -> None:
    """The branch's pre-commit hooks on a commit made outside the Thrift calls (an import,
    statistics pointers): ``changes`` are its (key, value) pairs over ``head``. HookVeto
    stops it."""
    hooks = load_hooks(store_path if store_path is not None else getattr(store, "path", None))
    protected = _protected(store, branch)
    if not hooks.applies("pre-commit", protected):
        return
    after = dict(changes)
    report = DiffReport(head, branch, [entity_change(k, store.get(head, k), v)
                                       for k, v in sorted(changes, key=lambda kv: kv[0])])

    def values(key):
        return store.get(head, key), after.get(key, store.get(head, key))

    hooks.run(HookEvent("pre-commit", branch, None, report, protected, store, head, message,
                        author, dict(meta), None, values))


def _protected(store: VersionedStore, branch: str) -> bool:
    b = store.get_branch(branch)
    return bool(b is not None and b.protected)


def commit_with_hooks(store: VersionedStore, store_path, branch: str, message: str,
                      author: str = "", metadata: dict | None = None, *,
                      hooks: HookSet | None = None) -> Commit:
    """Run the pre-commit hooks on what committing ``branch`` would change, then commit it
    with ``expected_head`` = the head the hooks saw. When the branch changes while the hooks
    run (a write or a commit), they run again on the new state (HeadMoved after a few tries).
    Raises HookVeto, and what :meth:`VersionedStore.commit` raises."""
    hooks = hooks if hooks is not None else load_hooks(_path_of(store, store_path))
    for _ in range(ATTEMPTS):
        token = store.token(branch)
        ref = store.resolve(branch)
        if ref.branch is None:
            raise ReadOnlyRef(f"{branch!r} is not a branch")
        head = ref.commit
        protected = _protected(store, branch)
        if not hooks.applies("pre-commit", protected):
            return store.commit(branch, message, author, metadata, expected_head=head)
        report = diff_refs(store, head, branch)
        if report.changes:  # else nothing to check: the commit raises NothingToCommit

            def values(key, head=head):
                return store.get(head, key), store.get(branch, key)

            hooks.run(HookEvent("pre-commit", branch, None, report, protected, store, head,
                                message, author, dict(metadata or {}), None, values))
        if token is not None and store.token(branch) != token:
            continue  # written to while the hooks ran: check again what would be committed
        return store.commit(branch, message, author, metadata, expected_head=head)
    raise HeadMoved(f"branch {branch!r} kept changing while its pre-commit hooks ran")


_PREFER = {"fail": None, "source-wins": "source", "dest-wins": "dest"}


def merge_with_hooks(store: VersionedStore, store_path, source: str, dest: str, *,
                     strategy: str = "fail", dry_run: bool = False, author: str = "",
                     message: str | None = None, metadata: dict | None = None,
                     hooks: HookSet | None = None) -> MergeResult:
    """:func:`kvmodel.versioning.merge_refs`, with the pre-merge hooks run on the changes the
    merge would apply (from a dry run). The source is pinned to the commit the hooks saw, and
    the merge is made with ``expected_head`` = the destination head they saw (HeadMoved
    otherwise). A
    dry run runs the hooks too (HookVeto: the merge would be refused). Conflicts that stop the
    merge (strategy "fail") are reported as merge_refs reports them, without running hooks."""
    hooks = hooks if hooks is not None else load_hooks(_path_of(store, store_path))
    kw = {"strategy": strategy, "author": author, "metadata": metadata,
          "message": message if message is not None else f"Merge '{source}' into '{dest}'"}
    dref = store.resolve(dest)
    protected = dref.branch is not None and _protected(store, dest)
    if not hooks.applies("pre-merge", protected):
        result = merge_refs(store, source, dest, dry_run=dry_run, **{**kw, "message": message})
        return result if dry_run else _anchored(store, result, author)
    for _ in range(ATTEMPTS):
        dst_head = store.latest(dest).commit
        src_head = store.latest(source).commit
        preview = merge_refs(store, src_head, dest, dry_run=True, **kw)
        if store.latest(dest).commit == dst_head:
            break
    else:
        raise HeadMoved(f"branch {dest!r} kept moving while its merge was previewed")
    preview.source = source
    if preview.conflicts and strategy == "fail":
        if dry_run:
            return preview
        raise MergeConflict(preview)
    if preview.applied:
        cache: dict = {}

        def values(key):
            if "writes" not in cache:  # the merged values: the same 3-way merge, kept whole
                base = store.merge_base(src_head, dst_head)
                cache["writes"] = three_way(store, base, src_head, dst_head,
                                            _PREFER[strategy]).writes
            before = store.get(dst_head, key)
            return before, cache["writes"].get(key, before)

        report = DiffReport(dst_head, src_head, list(preview.applied))
        hooks.run(HookEvent("pre-merge", dest, source, report, protected, store, dst_head,
                            kw["message"], author, dict(metadata or {}), strategy, values))
    if dry_run:
        return preview
    result = merge_refs(store, src_head, dest, expected_head=dst_head, **kw)
    result.source = source
    return _anchored(store, result, author)


def _anchored(store: VersionedStore, result: MergeResult, author: str) -> MergeResult:
    """``result`` after the Iceberg tables the merge brought were anchored on its destination
    (a lakeFS store's; :mod:`kvmodel.iceberg_anchor`) and committed there."""
    from kvmodel.iceberg_anchor import anchor_after_merge, merged_tables

    if result.commit is not None:
        result.anchored, result.anchor_commit = anchor_after_merge(
            store, result.dest, result.source, merged_tables(result.applied), author)
    return result


def _path_of(store: VersionedStore, store_path):
    return store_path if store_path is not None else getattr(store, "path", None)


# --- the built-in: safe schema evolution ------------------------------------------------------
_INTEGERS = {"tinyint": 3, "smallint": 5, "int": 10, "integer": 10, "bigint": 19}  # digits
_DOUBLE_FROM = {"tinyint", "smallint", "int", "integer", "float"}
_DECIMAL = re.compile(r"(?:decimal|numeric)(?:\((\d+)(?:,(\d+))?\))?")
_VARCHAR = re.compile(r"varchar\((\d+)\)")
_VIEWS = {"VIRTUAL_VIEW", "MATERIALIZED_VIEW"}


def _norm(type_name) -> str:
    return re.sub(r"\s+", "", str(type_name or "")).lower()


def _decimal(t: str) -> tuple[int, int] | None:
    m = _DECIMAL.fullmatch(t)
    if m is None:
        return None
    return int(m.group(1) or 10), int(m.group(2) or 0)


def is_widening(old, new) -> bool:
    """Whether a column typed ``old`` can be retyped ``new`` without losing data: the same
    type; a larger integer (tinyint < smallint < int < bigint); tinyint/smallint/int/float to
    double; an integer to a decimal with enough integer digits; a decimal to one with the same
    scale and a larger precision; varchar to a longer varchar or string."""
    o, n = _norm(old), _norm(new)
    if o == n:
        return True
    if o in _INTEGERS and n in _INTEGERS:
        return _INTEGERS[n] >= _INTEGERS[o]
    if n == "double" and o in _DOUBLE_FROM:
        return True
    nd = _decimal(n)
    if nd is not None:
        if o in _INTEGERS:
            return nd[0] - nd[1] >= _INTEGERS[o]
        od = _decimal(o)
        return od is not None and od[1] == nd[1] and nd[0] >= od[0]
    ov = _VARCHAR.fullmatch(o)
    if ov is not None:
        nv = _VARCHAR.fullmatch(n)
        return n == "string" or (nv is not None and int(nv.group(1)) >= int(ov.group(1)))
    return False


def _col_names(struct) -> list[str]:
    sd = getattr(struct, "sd", None)
    return [c.name for c in (getattr(sd, "cols", None) or [])]


def _key_columns(value) -> list[tuple]:
    return [(c.get("name"), _norm(c.get("type"))) if isinstance(c, dict) else (c,)
            for c in (value or [])]


def _table_violations(change: EntityChange, event: HookEvent) -> list[str]:
    db, tbl = change.path[0], change.path[1]
    where = f"on protected branch {event.branch}" if event.protected \
        else f"on branch {event.branch}"
    fields = {f.field: f for f in change.fields}
    out: list[str] = []
    dropped = dict((fields["columns.dropped"].before or {})) if "columns.dropped" in fields \
        else {}
    added = dict((fields["columns.added"].after or {})) if "columns.added" in fields else {}
    renamed: dict[str, str] = {}
    if dropped and added:  # a drop and an add at the same position: a rename
        before, after = event.structs(change)
        old, new = _col_names(before), _col_names(after)
        for i, name in enumerate(old):
            if name in dropped and i < len(new) and new[i] in added:
                renamed[name] = new[i]
    for name in dropped:
        if name in renamed:
            out.append(f"table {db}.{tbl}: column {name!r} cannot be renamed to "
                       f"{renamed[name]!r} {where}")
        else:
            out.append(f"table {db}.{tbl}: column {name!r} cannot be dropped {where}")
    if "columns.retyped" in fields:
        fc = fields["columns.retyped"]
        for name, old in (fc.before or {}).items():
            new = (fc.after or {}).get(name)
            if not is_widening(old, new):
                out.append(f"table {db}.{tbl}: column {name!r} cannot change type from {old} "
                           f"to {new} {where}")
    if "columns" in fields:  # repeated column names: the lists were compared whole
        fc = fields["columns"]
        before, after = _key_columns(fc.before), _key_columns(fc.after)
        if after[:len(before)] != before:
            out.append(f"table {db}.{tbl}: columns cannot change except by appending new ones "
                       f"{where}")
    if "partitionKeys" in fields:
        fc = fields["partitionKeys"]
        if _key_columns(fc.before) != _key_columns(fc.after):
            old = ", ".join(" ".join(map(str, k)) for k in _key_columns(fc.before))
            new = ", ".join(" ".join(map(str, k)) for k in _key_columns(fc.after))
            out.append(f"table {db}.{tbl}: partition keys cannot change (from [{old}] to "
                       f"[{new}]) {where}")
    if out:  # a view's columns follow its query: not a data schema
        before, after = event.structs(change)
        if getattr(after or before, "tableType", None) in _VIEWS:
            return []
    return out


def safe_schema_evolution(event: HookEvent) -> list[str] | None:
    """The built-in hook: every table the operation modifies may only add columns and widen
    column types (see :func:`is_widening`); dropping, renaming (a drop and an add at the same
    position), narrowing or otherwise retyping a column, or changing the partition keys, is
    refused, one message per column naming the table and the column. Reordering columns, and
    creating or dropping whole tables, pass. Views are not checked."""
    messages: list[str] = []
    for change in event.diff.changes:
        if change.kind == "table" and change.change == "modified":
            messages.extend(_table_violations(change, event))
    if messages:
        raise HookVeto(messages, event)
    return None
