"""``hms-proxy branch|tag|commit|log|show|diff|merge|revert|reset``: the catalog's versions.

Every command opens the store, does one thing and closes it (the store serialises writers, so
these are safe next to a running server). Exit status: 0 done, 1 a conflict or nothing to do
(merge conflicts, nothing to commit, a pre-commit/pre-merge hook's veto), 2 an error (one
``hms-proxy: error: ...`` line on stderr).
``--json`` prints machine-readable output instead of the compact human one.

The contextual diff, merge and revert come from :mod:`kvmodel.versioning`, and ``commit`` and
``merge`` run the store's hooks through :mod:`kvmodel.hooks`, imported lazily by the commands
that need them.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections import defaultdict
from contextlib import contextmanager

from hms_proxy.security import audit
from kvmodel import iceberg_diff
from kvmodel.catalog import path_prefix, under
from kvmodel.hooks import HookVeto, commit_with_hooks, merge_with_hooks
from kvmodel.locations import open_catalog_store
from kvmodel.store import local_path
from kvmodel.store.contract import SHORT_ID, Commit
from kvmodel.store.errors import MergeConflict, NothingToCommit, StoreError
from kvmodel.versioning import author_or_user, diff_refs, revert_commit, touches

DEFAULT_STORE = "./metastore"
SHORT = SHORT_ID  # characters of a commit id shown in human output
STRATEGIES = ("fail", "source-wins", "dest-wins")


class CliError(Exception):
    """An error reported as ``hms-proxy: error: <message>``, exit status 2."""


# --- registration ------------------------------------------------------------------------------
def register(subparsers) -> None:
    """Add the versioning sub-commands to ``hms-proxy``'s sub-parsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", default=os.environ.get("HMS_STORE", DEFAULT_STORE),
                        help="store path (default ./metastore, env HMS_STORE)")
    common.add_argument("--json", action="store_true", help="machine-readable JSON output")
    kw = {"parents": [common]}

    # branch
    branch = subparsers.add_parser("branch", help="create, list, delete and protect branches",
                                   description="Create, list, delete and protect branches.")
    bsub = branch.add_subparsers(dest="branch_command", required=True, metavar="ACTION")
    p = bsub.add_parser("create", help="create a branch", **kw)
    p.add_argument("name")
    p.add_argument("--from", dest="source", default="main", metavar="REF",
                   help="branch, tag or commit to start from (default main)")
    p.set_defaults(func=_command(cmd_branch_create))
    p = bsub.add_parser("list", help="list branches", **kw)
    p.set_defaults(func=_command(cmd_branch_list))
    p = bsub.add_parser("delete", help="delete a branch and its uncommitted changes", **kw)
    p.add_argument("name")
    p.set_defaults(func=_command(cmd_branch_delete))
    p = bsub.add_parser("protect", help="protect a branch against delete and reset", **kw)
    p.add_argument("name")
    p.add_argument("--off", action="store_true", help="remove the protection")
    p.set_defaults(func=_command(cmd_branch_protect))

    # tag
    tag = subparsers.add_parser("tag", help="create, list and delete tags",
                                description="Create, list and delete tags.")
    tsub = tag.add_subparsers(dest="tag_command", required=True, metavar="ACTION")
    p = tsub.add_parser("create", help="tag a commit", **kw)
    p.add_argument("name")
    p.add_argument("ref", help="branch, tag or commit to tag")
    p.set_defaults(func=_command(cmd_tag_create))
    p = tsub.add_parser("list", help="list tags", **kw)
    p.set_defaults(func=_command(cmd_tag_list))
    p = tsub.add_parser("delete", help="delete a tag", **kw)
    p.add_argument("name")
    p.set_defaults(func=_command(cmd_tag_delete))

    # commit
    p = subparsers.add_parser("commit", help="commit a branch's uncommitted changes",
                              description="Commit a branch's uncommitted changes.", **kw)
    p.add_argument("branch")
    p.add_argument("-m", "--message", required=True)
    p.add_argument("--author", default=None, help="author (default $USER)")
    p.add_argument("--meta", action="append", metavar="KEY=VALUE",
                   help="commit metadata (repeatable)")
    p.add_argument("--audit-log", default=None, metavar="FILE",
                   help="the server's audit log (serve --audit-log): record who wrote the "
                        "changes since the branch's last commit as metadata 'writers'")
    p.set_defaults(func=_command(cmd_commit))

    # log
    p = subparsers.add_parser("log", help="commits reachable from a ref, newest first",
                              description="Commits reachable from a ref, newest first.", **kw)
    p.add_argument("ref", nargs="?", default="main", help="branch, tag or commit (default main)")
    p.add_argument("-n", "--limit", type=int, default=None, help="show at most N commits")
    p.add_argument("--path", default=None, metavar="[@CAT#]DB[.TABLE]",
                   help="only commits changing this database or table (@CAT#: of catalog CAT)")
    p.set_defaults(func=_command(cmd_log))

    # show
    p = subparsers.add_parser("show", help="a commit and its changes",
                              description="A commit and its changes against its first parent.",
                              **kw)
    p.add_argument("commit", help="commit id (or any ref)")
    p.add_argument("--partitions", action="store_true", help="list partitions in full")
    p.set_defaults(func=_command(cmd_show))

    # diff
    p = subparsers.add_parser("diff", help="catalog changes between two refs",
                              description="Catalog changes from LEFT to RIGHT (a branch "
                                          "includes its uncommitted changes).", **kw)
    p.add_argument("left")
    p.add_argument("right")
    p.add_argument("--path", default=None, metavar="[@CAT#]DB[.TABLE]",
                   help="only this database or table (@CAT#: of catalog CAT)")
    p.add_argument("--partitions", action="store_true", help="list partitions in full")
    p.set_defaults(func=_command(cmd_diff))

    # merge
    p = subparsers.add_parser("merge", help="merge one ref into a branch",
                              description="Merge SOURCE into the branch DEST, 3-way, field by "
                                          "field. An Iceberg table both sides committed to "
                                          "is merged in Iceberg's terms (SOURCE's snapshots "
                                          "replayed on DEST's where Iceberg's own checks "
                                          "pass, one more commit); on a "
                                          "lakeFS store the Iceberg tables merged are anchored "
                                          "on DEST (docs/branching.md).", **kw)
    p.add_argument("source")
    p.add_argument("dest")
    p.add_argument("--strategy", choices=STRATEGIES, default="fail",
                   help="on conflicts: fail (default), source-wins or dest-wins")
    p.add_argument("--dry-run", action="store_true", help="report, commit nothing")
    p.add_argument("-m", "--message", default=None)
    p.add_argument("--author", default=None, help="author (default $USER)")
    p.set_defaults(func=_command(cmd_merge))

    # revert
    p = subparsers.add_parser("revert", help="undo a commit on a branch with a new commit",
                              description="Undo COMMIT's changes on BRANCH with a new commit.",
                              **kw)
    p.add_argument("branch")
    p.add_argument("commit")
    p.add_argument("-m", "--message", default=None)
    p.add_argument("--author", default=None, help="author (default $USER)")
    p.set_defaults(func=_command(cmd_revert))

    # reset
    p = subparsers.add_parser("reset", help="drop a branch's uncommitted changes",
                              description="Drop a branch's uncommitted changes.", **kw)
    p.add_argument("branch")
    p.set_defaults(func=_command(cmd_reset))

    # lakefs-hooks
    hooks = subparsers.add_parser(
        "lakefs-hooks", help="the lakeFS action that keeps the catalog with the data",
        description="lakeFS runs the hooks of the action files of a ref around its commits, "
                    "merges and branch deletions. This action calls hms-proxy's HTTP API (serve "
                    "--http-port): before a commit made by lakectl, the UI or the API the "
                    "branch's write log is folded into per-key objects; a merge whose catalog "
                    "conflicts, or that would keep one side's whole table where both changed "
                    "it, is refused with the tables and fields named; after a merge the Iceberg "
                    "tables it brought are anchored on the destination, and before a branch is "
                    "deleted the other branches' Iceberg tables that name it are (docs/lakefs.md).")
    hsub = hooks.add_subparsers(dest="hooks_command", required=True, metavar="ACTION")
    p = hsub.add_parser("install", help="write the action on a branch and commit it", **kw)
    p.add_argument("--url", required=True, metavar="URL",
                   help="hms-proxy's HTTP API as lakeFS reaches it, e.g. http://hms:8080 "
                        "(lakeFS runs the action on its own commit: the server must answer)")
    p.add_argument("--branch", default="main",
                   help="the branch to commit it on (default main); branches made from it "
                        "afterwards have it")
    p.set_defaults(func=_command(cmd_lakefs_hooks_install))
    p = hsub.add_parser("show", help="print the action file for a URL", **kw)
    p.add_argument("--url", required=True, metavar="URL", help="hms-proxy's HTTP API")
    p.set_defaults(func=_command(cmd_lakefs_hooks_show))


# --- plumbing ----------------------------------------------------------------------------------
def _command(func):
    """Wrap a command: errors become one stderr line and exit status 2."""

    @functools.wraps(func)
    def run(args) -> int:
        try:
            return func(args) or 0
        except (CliError, StoreError, ValueError, OSError) as exc:
            if isinstance(exc, BrokenPipeError):  # `hms-proxy log | head`
                _silence_stdout()
                return 0
            message = str(exc) or type(exc).__name__
            print(f"hms-proxy: error: {message.splitlines()[0]}", file=sys.stderr)
            return 2

    return run


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass



@contextmanager
def _open(args):
    """The store, open only for the duration of the command. Unlike ``serve``, a command never
    creates a store: a mistyped path is an error, not a new empty catalog."""
    local = local_path(args.store)
    if local is not None and not os.path.exists(os.path.join(local, "store.db")):
        raise CliError(f"no store at {args.store} (hms-proxy serve creates one; pick another "
                       "with --store or HMS_STORE)")
    store = open_catalog_store(args.store)
    try:
        yield store
    finally:
        store.close()



def _emit_json(data) -> None:
    if hasattr(data, "to_json"):
        data = data.to_json()
    if isinstance(data, (str, bytes)):
        text = data.decode() if isinstance(data, bytes) else data
    else:
        text = json.dumps(data, indent=2, default=_json_default)
    print(text)


def _json_default(value):
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "to_json"):
        return value.to_json()
    if hasattr(value, "__dataclass_fields__"):
        return {f: getattr(value, f) for f in value.__dataclass_fields__}
    return str(value)


def short(commit_id: str) -> str:
    return commit_id[:SHORT]


def fmt_time(created: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created))



def _path_prefix(path: str) -> str:
    try:
        return path_prefix(path)
    except ValueError as exc:
        raise CliError(f"--path {exc}") from None


def first_line(message: str) -> str:
    return message.splitlines()[0] if message else ""




def _parse_meta(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--meta takes KEY=VALUE, not {pair!r}")
        out[key.strip()] = value
    return out


# --- branches and tags -------------------------------------------------------------------------
def cmd_branch_create(args) -> int:
    with _open(args) as store:
        branch = store.create_branch(args.name, args.source)
    if args.json:
        _emit_json({"name": branch.name, "head": branch.head, "protected": branch.protected})
    else:
        print(f"created branch {branch.name} at {short(branch.head)} (from {args.source})")
    return 0


def cmd_branch_list(args) -> int:
    with _open(args) as store:
        branches = store.list_branches()
    if args.json:
        _emit_json([{"name": b.name, "head": b.head, "protected": b.protected}
                    for b in branches])
        return 0
    width = max((len(b.name) for b in branches), default=0)
    for b in branches:
        line = f"{b.name:<{width}}  {short(b.head)}"
        print(line + ("  protected" if b.protected else ""))
    return 0


def cmd_branch_delete(args) -> int:
    with _open(args) as store:
        head = _branch_head(store, args.name)
        store.delete_branch(args.name)
    if args.json:
        _emit_json({"deleted": args.name, "head": head})
    else:
        print(f"deleted branch {args.name} (was {short(head)})")
    return 0


def _branch_head(store, name: str) -> str:
    for b in store.list_branches():
        if b.name == name:
            return b.head
    raise CliError(f"no branch {name!r}")


def cmd_branch_protect(args) -> int:
    protected = not args.off
    with _open(args) as store:
        store.set_branch_protection(args.name, protected)
    if args.json:
        _emit_json({"name": args.name, "protected": protected})
    else:
        print(f"branch {args.name} is {'now' if protected else 'no longer'} protected")
    return 0


def cmd_tag_create(args) -> int:
    with _open(args) as store:
        tag = store.create_tag(args.name, args.ref)
    if args.json:
        _emit_json({"name": tag.name, "commit": tag.commit})
    else:
        print(f"created tag {tag.name} at {short(tag.commit)}")
    return 0


def cmd_tag_list(args) -> int:
    with _open(args) as store:
        tags = store.list_tags()
    if args.json:
        _emit_json([{"name": t.name, "commit": t.commit} for t in tags])
        return 0
    width = max((len(t.name) for t in tags), default=0)
    for t in tags:
        print(f"{t.name:<{width}}  {short(t.commit)}")
    return 0


def cmd_tag_delete(args) -> int:
    with _open(args) as store:
        commit = next((t.commit for t in store.list_tags() if t.name == args.name), None)
        store.delete_tag(args.name)
    if args.json:
        _emit_json({"deleted": args.name, "commit": commit})
    else:
        print(f"deleted tag {args.name}" + (f" (was {short(commit)})" if commit else ""))
    return 0


# --- commit, log, reset ------------------------------------------------------------------------
def cmd_commit(args) -> int:
    metadata = _parse_meta(args.meta)
    with _open(args) as store:
        if getattr(args, "audit_log", None):
            since = store.get_commit(store.resolve(args.branch).commit).created
            try:
                writers = audit.writers_since(args.audit_log, args.branch, since)
            except OSError as exc:
                raise CliError(f"--audit-log {args.audit_log}: {exc.strerror or exc}") from None
            if writers:
                metadata.setdefault("writers", ",".join(writers))
        try:
            commit = commit_with_hooks(store, local_path(args.store), args.branch,
                                       args.message, author=author_or_user(args.author), metadata=metadata)
        except HookVeto as veto:
            return _report_veto(args, veto, f"commit on branch {args.branch}")
        except NothingToCommit:
            if args.json:
                _emit_json({"branch": args.branch, "commit": None, "changed_keys": 0})
            else:
                print(f"nothing to commit on branch {args.branch}")
            return 1
        # counted from the commit itself: exact even if writes landed while we committed
        changed = sum(1 for _ in store.diff(commit.parents[0], commit.id)) \
            if commit.parents else None
    if args.json:
        _emit_json({"branch": args.branch, "commit": commit.to_json(),
                    "changed_keys": changed})
    else:
        count = "" if changed is None else \
            f" ({changed} key{'' if changed == 1 else 's'} changed)"
        print(f"[{args.branch} {short(commit.id)}] {first_line(commit.message)}{count}")
    return 0



def cmd_log(args) -> int:
    if args.limit is not None and args.limit < 0:
        raise CliError("--limit must be 0 or more")
    prefix = _path_prefix(args.path) if args.path else None
    commits: list[Commit] = []
    with _open(args) as store:
        if prefix is None:
            commits = list(store.log(args.ref, args.limit))
        elif args.limit != 0:
            for commit in store.log(args.ref):
                if touches(store, commit, prefix):
                    commits.append(commit)
                    if args.limit is not None and len(commits) >= args.limit:
                        break
    if args.json:
        _emit_json([c.to_json() for c in commits])
        return 0
    width = max((len(c.author or "-") for c in commits), default=0)
    for c in commits:
        print(f"{short(c.id)}  {fmt_time(c.created)}  {c.author or '-':<{width}}  "
              f"{first_line(c.message)}")
    return 0


def cmd_lakefs_hooks_install(args) -> int:
    from kvmodel import lakefs_actions

    with _open(args) as store:
        if not hasattr(store, "fold_for_commit"):
            raise CliError(f"{args.store} is not a lakeFS repository (lakefs://REPO)")
        print(lakefs_actions.install(store, args.url, args.branch))
    return 0


def cmd_lakefs_hooks_show(args) -> int:
    from kvmodel import lakefs_actions

    print(lakefs_actions.action_yaml(args.url), end="")
    return 0


def cmd_reset(args) -> int:
    with _open(args) as store:
        dropped = store.reset(args.branch)
    if args.json:
        _emit_json({"branch": args.branch, "dropped_keys": dropped})
    elif dropped:
        print(f"dropped {dropped} uncommitted key{'' if dropped == 1 else 's'} on "
              f"branch {args.branch}")
    else:
        print(f"branch {args.branch} had no uncommitted changes")
    return 0


# --- show, diff, merge, revert (kvmodel.versioning, imported in the commands that need it) ----
def cmd_show(args) -> int:
    with _open(args) as store:
        commit = store.get_commit(store.resolve(args.commit).commit)
        report = diff_refs(store, commit.parents[0], commit.id) if commit.parents else None
    if args.json:
        out = commit.to_json()
        out["diff"] = None if report is None else report.to_json()
        _emit_json(out)
        return 0
    print("\n".join(format_commit(commit)))
    print()
    if report is None:
        print("(root commit)")
    else:
        print("\n".join(format_diff(report, partitions=args.partitions)
                        or ["(no changes)"]))
    return 0


def format_commit(commit: Commit) -> list[str]:
    lines = [f"commit {commit.id}"]
    if commit.parents:
        label = "Parent:" if len(commit.parents) == 1 else "Merge: "
        lines.append(f"{label} {' '.join(short(p) for p in commit.parents)}")
    lines.append(f"Author: {commit.author or '-'}")
    lines.append(f"Date:   {fmt_time(commit.created)}")
    for key in sorted(commit.metadata):
        lines.append(f"Meta:   {key}={commit.metadata[key]}")
    lines.append("")
    lines.extend(f"    {line}".rstrip() for line in (commit.message or "").splitlines())
    return lines


def cmd_diff(args) -> int:
    prefix = _path_prefix(args.path) if args.path else ""
    with _open(args) as store:
        report = diff_refs(store, args.left, args.right, prefix)
        if prefix:  # db.orders must not bring db.orders2 along
            report = _filtered(report, prefix)
        iceberg = iceberg_diff.for_changes(store, report.changes, args.left, args.right)
    if args.json:
        _emit_json({**report.to_json(), "iceberg": iceberg})
        return 0
    lines = format_diff(report, partitions=args.partitions, iceberg=iceberg)
    print("\n".join(lines) if lines else "(no changes)")
    return 0


def _filtered(report, prefix: str):
    keep = [c for c in report.changes if not getattr(c, "key", None) or under(c.key, prefix)]
    if len(keep) == len(report.changes):
        return report
    try:
        import dataclasses

        return dataclasses.replace(report, changes=keep)
    except Exception:  # not a dataclass: keep the engine's report as it is
        return report


def cmd_merge(args) -> int:
    with _open(args) as store:
        try:
            result = merge_with_hooks(store, local_path(args.store), args.source, args.dest,
                                      strategy=args.strategy, dry_run=args.dry_run,
                                      author=author_or_user(args.author), message=args.message)
        except HookVeto as veto:
            what = f"merge of {args.source} into {args.dest}"
            return _report_veto(args, veto, ("dry run: " if args.dry_run else "") + what)
        except MergeConflict as exc:
            result = exc.result
            if args.json:
                _emit_json(result)
            else:
                print("\n".join(format_conflicts(result, args)))
            return 1
    if args.json:
        _emit_json(result)
    else:
        print("\n".join(format_merge(result, args)))
    conflicts = list(getattr(result, "conflicts", None) or [])
    return 1 if conflicts and args.strategy == "fail" else 0


def _report_veto(args, veto, what: str) -> int:
    """A pre-commit/pre-merge hook veto: ``hms-proxy: error: <what> vetoed by hooks:`` then
    one indented line per message on stderr (and the messages as JSON with --json); exit 1."""
    messages = list(getattr(veto, "messages", None) or [str(veto)])
    if args.json:
        _emit_json({"vetoed": True, "operation": what, "messages": messages})
    print(f"hms-proxy: error: {what} vetoed by hooks (nothing committed):", file=sys.stderr)
    for message in messages:
        print(f"  {message}", file=sys.stderr)
    return 1


def cmd_revert(args) -> int:
    with _open(args) as store:
        target = store.resolve(args.commit).commit
        try:
            commit = revert_commit(store, args.branch, target, author=author_or_user(args.author),
                                   message=args.message)
        except MergeConflict as exc:
            conflicts = list(exc.result.conflicts or [])
            if args.json:
                _emit_json(exc.result)
            else:
                n = len(conflicts)
                print(f"revert of {short(target)} on {args.branch} stopped: {n} conflict"
                      f"{'' if n == 1 else 's'} with later changes (nothing committed)")
                print("\n".join(fmt_conflict(c) for c in conflicts))
            return 1
        except NothingToCommit as exc:
            if args.json:
                _emit_json({"branch": args.branch, "reverted": target, "commit": None,
                            "changed_keys": 0})
            else:
                print(f"nothing to revert: {exc}")
            return 1
        changed = sum(1 for _ in store.diff(commit.parents[0], commit.id)) \
            if commit.parents else None
    if args.json:
        _emit_json({"branch": args.branch, "reverted": target, "commit": commit.to_json(),
                    "changed_keys": changed})
    else:
        count = "" if changed is None else \
            f" ({changed} key{'' if changed == 1 else 's'} changed)"
        print(f"[{args.branch} {short(commit.id)}] {first_line(commit.message)}{count}")
    return 0


# --- formatting of the engine's reports --------------------------------------------------------
_PLURAL = {"partition": "partitions", "function": "functions", "table": "tables",
           "database": "databases", "role": "roles", "table_column_stats": "column stats",
           "partition_column_stats": "partition column stats"}
_LABEL = {"table_column_stats": "column stats", "partition_column_stats": "column stats"}
_MARK = {"added": "+", "removed": "-", "modified": "~"}
MAX_VALUE = 80


def fmt_value(value) -> str:
    """A field value, compact: lists as [a, b], maps as {k: v}, long text cut."""
    if value is None:
        text = "(none)"
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        text = "[" + ", ".join(fmt_value(v) for v in items) + "]"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{k}: {fmt_value(v)}" for k, v in value.items()) + "}"
    elif isinstance(value, bytes):
        text = value.hex()
    elif hasattr(value, "__dict__") and not isinstance(value, (str, int, float, bool)):
        text = type(value).__name__ + fmt_value({k: v for k, v in vars(value).items()
                                                 if v is not None})
    else:
        text = str(value)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 3] + "..."


def fmt_field(fc) -> str:
    """``parameters.owner: alice -> bob``; ``columns.added: [discount int]``;
    ``columns.retyped: amount int -> bigint``."""
    name = getattr(fc, "field", str(fc))
    before, after = getattr(fc, "before", None), getattr(fc, "after", None)
    if before is None and after is None:
        return name
    one_sided = name.endswith((".added", ".dropped", ".removed"))
    if one_sided and (before is None or after is None):
        value = after if before is None else before
        if isinstance(value, dict):  # {column: type}
            return f"{name}: [" + ", ".join(f"{k} {fmt_value(v)}" for k, v in value.items()) + "]"
        return f"{name}: {fmt_value(value)}"
    if isinstance(before, dict) and isinstance(after, dict) and before.keys() == after.keys() \
            and name.endswith((".retyped", ".comment")):
        return f"{name}: " + ", ".join(f"{k} {fmt_value(before[k])} -> {fmt_value(after[k])}"
                                       for k in before)
    if before is None:
        return f"{name}: {fmt_value(after)}"
    if after is None:
        return f"{name}: {fmt_value(before)} -> (none)"
    return f"{name}: {fmt_value(before)} -> {fmt_value(after)}"


def fmt_fields(fields) -> str:
    return "  ".join(fmt_field(f) for f in fields or ())


def _entity_line(indent: str, change, label: str) -> str:
    mark = _MARK.get(change.change, "?")
    line = f"{indent}{mark} {label}"
    fields = fmt_fields(change.fields) if change.change == "modified" else ""
    return f"{line}  {fields}" if fields else line


def _rollup(counts: dict[str, int]) -> str:
    parts = [f"{sign}{counts.get(kind, 0)}"
             for kind, sign in (("added", "+"), ("removed", "-"), ("modified", "~"))
             if counts.get(kind, 0)]
    return " ".join(parts)


def format_diff(report, partitions: bool = False, iceberg: dict | None = None) -> list[str]:
    """The human diff: by database, then table; a table's own field changes on its line, what
    lies under it (partitions, statistics) rolled up per kind unless ``partitions``; an
    Iceberg table's snapshots, columns and properties under it (``iceberg``:
    :func:`kvmodel.iceberg_diff.for_changes`)."""
    top: list = []  # path of one element and not a database (roles...)
    dbs: dict[str, dict] = defaultdict(lambda: {"self": None, "tables": defaultdict(
        lambda: {"self": None, "children": []}), "other": []})
    for change in report.changes:
        path = tuple(change.path or ())
        kind = change.kind
        if not path:
            top.append(change)
        elif len(path) == 1:
            if kind == "database":
                dbs[path[0]]["self"] = change
            else:
                top.append(change)
        elif len(path) == 2:
            if kind == "table":
                dbs[path[0]]["tables"][path[1]]["self"] = change
            else:
                dbs[path[0]]["other"].append(change)
        else:
            dbs[path[0]]["tables"][path[1]]["children"].append(change)

    lines: list[str] = []
    for db in sorted(dbs):
        group = dbs[db]
        if group["self"] is not None:
            lines.append(_entity_line("", group["self"], db))
        else:
            lines.append(db)
        for change in sorted(group["other"], key=lambda c: tuple(c.path)):
            lines.append(_entity_line("  ", change, f"{change.kind} {'.'.join(change.path)}"))
        for tbl in sorted(group["tables"]):
            entry = group["tables"][tbl]
            if entry["self"] is not None:
                lines.append(_entity_line("  ", entry["self"], f"{db}.{tbl}"))
            else:
                lines.append(f"  ~ {db}.{tbl}")
            summary = (iceberg or {}).get(f"{db}.{tbl}")
            if summary is not None:
                lines += [f"    iceberg: {line}" for line in (
                    [summary["error"]] if "error" in summary else iceberg_diff.text(summary))]
            children = sorted(entry["children"], key=lambda c: (c.kind, tuple(c.path)))
            if partitions:
                for change in children:
                    rest = " ".join(str(p) for p in change.path[2:])
                    label = rest if change.kind == "partition" else \
                        f"{_LABEL.get(change.kind, change.kind)} {rest}"
                    lines.append(_entity_line("    ", change, label))
            else:
                by_kind: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
                for change in children:
                    by_kind[change.kind][change.change] += 1
                order = sorted(by_kind, key=lambda k: (k != "partition", k))
                for kind in order:
                    lines.append(f"    {_PLURAL.get(kind, kind)}: {_rollup(by_kind[kind])}")
    for change in sorted(top, key=lambda c: tuple(c.path or ())):
        label = f"{change.kind} {'.'.join(change.path)}" if change.path else \
            f"{change.kind} {getattr(change, 'key', '')}"
        lines.append(_entity_line("", change, label))
    return lines


def summarize(changes) -> str:
    """``1 table added, 120 partitions added, 5 partitions modified``."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for change in changes or ():
        counts[(change.kind, change.change)] += 1
    parts = []
    for (kind, what), n in sorted(counts.items(),
                                  key=lambda kv: (kv[0][0] == "partition", kv[0])):
        noun = _PLURAL.get(kind, kind) if n != 1 else \
            {"partition_column_stats": "partition column stats"}.get(kind, _LABEL.get(kind, kind))
        parts.append(f"{n} {noun} {what}")
    return ", ".join(parts) if parts else "no changes"


def fmt_conflict(conflict) -> str:
    path = ".".join(str(p) for p in (conflict.path or ())) or getattr(conflict, "key", "")
    line = f"CONFLICT ({conflict.type}) {conflict.kind} {path}"
    fields = [getattr(f, "field", f) for f in (conflict.fields or ())]
    if fields:
        line += "  fields: " + ", ".join(str(f) for f in fields)
    dropped = "DROPPED" in str(conflict.type).upper()

    def side(value) -> str:
        return "(dropped)" if value is None and dropped else fmt_value(value)

    line += f"  source: {side(conflict.source)}  dest: {side(conflict.dest)}"
    return line


def format_conflicts(result, args) -> list[str]:
    conflicts = list(result.conflicts or [])
    n = len(conflicts)
    lines = [f"merge of {args.source} into {args.dest} stopped: {n} conflict"
             f"{'' if n == 1 else 's'} (nothing committed; --strategy source-wins or dest-wins "
             "resolves them)"]
    lines.extend(fmt_conflict(c) for c in conflicts)
    return lines


def format_merge(result, args) -> list[str]:
    applied = list(result.applied or [])
    conflicts = list(result.conflicts or [])
    if conflicts and args.strategy == "fail":  # a dry run reporting what would stop the merge
        n = len(conflicts)
        return ([f"dry run: merging {args.source} into {args.dest} would stop on {n} "
                 f"conflict{'' if n == 1 else 's'} (--strategy source-wins or dest-wins "
                 "resolves them)"] + format_conflicts(result, args)[1:])
    lines = []
    if args.dry_run:
        lines.append(f"dry run: merging {args.source} into {args.dest} would apply "
                     f"{summarize(applied)}")
        for plan in getattr(result, "iceberg", None) or []:
            lines.append(f"  Iceberg table {plan.table}: {plan.summary()}")
    elif result.commit is None:
        lines.append(f"{args.dest} is already up to date with {args.source}")
    else:
        lines.append(f"merged {args.source} into {args.dest}: {short(result.commit.id)} "
                     f"({summarize(applied)})")
        if getattr(result, "iceberg_commit", None) is not None:
            lines.append(f"Iceberg tables both sides committed to, merged in Iceberg's terms: "
                         f"{short(result.iceberg_commit.id)} ("
                         + "; ".join(f"{p.table}: {p.summary()}" for p in result.iceberg) + ")")
        anchored = getattr(result, "anchored", None) or []
        if anchored:
            lines.append(f"anchored {len(anchored)} Iceberg table"
                         f"{'' if len(anchored) == 1 else 's'} on {args.dest}: "
                         f"{short(result.anchor_commit.id)} ("
                         + ", ".join(f"{a.table}: {a.manifest_lists} manifest lists, "
                                     f"{a.manifests} manifests" for a in anchored) + ")")
    if conflicts:
        resolved = getattr(result, "resolved_by", None) or args.strategy
        lines.append(f"{len(conflicts)} conflict{'' if len(conflicts) == 1 else 's'} "
                     f"resolved by {resolved}:")
        lines.extend("  " + fmt_conflict(c) for c in conflicts)
    return lines
