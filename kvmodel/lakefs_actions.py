"""lakeFS actions that keep the catalog with the data whatever commits and merges a branch:
``lakectl``, the lakeFS UI, its API, and the tools built on them.

lakeFS runs the hooks of the action files under ``_lakefs_actions/`` of a ref before it
commits or merges. :data:`ACTION_PATH` holds one action with two webhooks served by
``hms-proxy serve --http-port`` (``POST /api/v1/lakefs/hooks``):

* **prepare-commit**: lakeFS calls it before it seals what the commit will hold; hms-proxy
  folds the branch's write log into per-key objects then (:meth:`LakeFSStore.fold`), so the
  commit holds the catalog as ``lakectl diff``, the UI and lakeFS's merge see it: one object
  per database, table and partition, conflicts found per object;
* **pre-merge**: lakeFS calls it with the merge commit it computed (not yet the branch's
  head); hms-proxy runs its own 3-way merge of the catalog from the merge base
  (:func:`kvmodel.merge.three_way`) and refuses the merge (lakeFS then aborts it) when that
  merge has conflicts, or when what lakeFS's merge of the objects reads as is not what the
  catalog merge gives (both branches changed one table, in different fields: lakeFS keeps one
  whole object, ``hms-proxy merge`` merges them field by field), and when both committed to
  one Iceberg table (kept as each branch's own variant, :mod:`kvmodel.store.lakefs.variants`,
  so lakeFS merged them without a conflict: ``hms-proxy merge`` replays one side's snapshots
  on the other's). The refusal names the table and the fields, or ``hms-proxy merge``;
  lakeFS shows it in the action's run (``lakectl actions runs describe``).
  The merges of hms-proxy's own temporary branches (``hms-proxy merge`` at work: its 3-way
  result, Iceberg replays included, is what they bring) are let by;
* **post-merge**: the Iceberg tables lakeFS's merge brought are anchored on the destination
  branch and committed there (:mod:`kvmodel.iceberg_anchor`: their paths through the source
  branch moved to the destination, so that deleting the source keeps them readable);
* **pre-delete-branch**: before lakeFS deletes a branch, every other branch's Iceberg tables
  that still name files through it are anchored; when that fails the deletion is refused.

Without the action, what every ref reads as is still right (the store reads the log entries a
commit holds, from any branch), but a lakeFS merge of branches that both changed one table
keeps the change written last.
"""
from __future__ import annotations

import logging
import random
import time

from kvmodel.entities import parse_key
from kvmodel.iceberg_anchor import anchor_after_merge, anchor_before_delete
from kvmodel.locations import LAKEFS_ACTION
from kvmodel.merge import three_way
from kvmodel.store.errors import NothingToCommit, StoreError
from kvmodel.store.lakefs.common import TEMP_BRANCH

ACTION_PATH = LAKEFS_ACTION
INSTALL_ATTEMPTS = 8  # servers started together commit the branch at the same moments
ACTION_NAME = "hms-proxy catalog"
HOOK_PATH = "/api/v1/lakefs/hooks"
log = logging.getLogger("kvmodel.lakefs_actions")


class BranchNotClean(StoreError):
    """The branch has uncommitted changes of its own: the action's commit would take them."""


class HookRefusal(StoreError):
    """A hook's answer that aborts lakeFS's operation: ``problems``, one line each."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def action_yaml(base_url: str, timeout: str = "60s") -> str:
    """The action file for an hms-proxy whose HTTP API is at ``base_url``."""
    url = base_url.rstrip("/") + HOOK_PATH
    return (f"name: {ACTION_NAME}\n"
            "description: keeps the Hive catalog of hms-proxy with the data (folds its write "
            "log before a commit, checks the catalog's 3-way merge before a merge, anchors "
            "Iceberg tables on their branch after a merge and before a branch is deleted)\n"
            "on:\n"
            "  prepare-commit:\n"
            "  pre-merge:\n"
            "  post-merge:\n"
            "  pre-delete-branch:\n"
            "hooks:\n"
            "  - id: hms_proxy_catalog\n"
            "    type: webhook\n"
            "    properties:\n"
            f"      url: \"{url}\"\n"
            f"      timeout: {timeout}\n")


def install(store, base_url: str, branch: str) -> str:
    """Write the action file on ``branch`` and commit it, unless the branch's head holds it
    already; what was done, in a line. The branch must have no other uncommitted change (a
    commit takes the whole branch); lakeFS runs the new action on that very commit, so the
    server at ``base_url`` must answer.

    Servers started together each install: the action file another one uploaded and has not
    committed yet is not a change of the user's (it is overwritten, and the commit of either
    takes it); a commit that finds nothing left to commit found the other's commit. With
    one URL for every server (the service's address) they all end with it; with a URL of
    their own (``self``) the commit made last names its server, and the line says so."""
    want = action_yaml(base_url).encode()
    commit, failed, raced = None, None, False
    for _ in range(INSTALL_ATTEMPTS):
        have = _committed_action(store, branch)
        if have == want:
            break
        if store.uncommitted(branch, besides=(ACTION_PATH,)):
            raise BranchNotClean(f"branch {branch!r} has uncommitted changes: commit or reset "
                                 "them before installing the lakeFS action (its commit would "
                                 "take them)")
        store.api.upload(branch, ACTION_PATH, want)
        try:
            commit = store.commit(branch, "hms-proxy: lakeFS action keeping the catalog with "
                                          "the data", author="hms-proxy")
            break
        except NothingToCommit:  # another server's commit took our upload, or the same file
            raced = True
            break
        except StoreError as exc:  # another server's commit moved the branch meanwhile
            failed, raced = exc, True  # (lakeFS: "predicate failed"): read again
            time.sleep(random.uniform(0.05, 0.3))
    have = _committed_action(store, branch)
    if have == want:
        return (f"installed {ACTION_PATH} on {branch} (commit {commit.id[:12]})" if commit
                else f"the lakeFS action is on {branch} already ({ACTION_PATH}"
                     + (", committed by another server at the same time)" if raced else ")"))
    if have is None and failed is not None:
        raise failed
    return (f"the lakeFS action on {branch} calls {_hook_url(have)}: another server installed "
            "its own at the same time (give every server of a deployment the same URL)")


def _committed_action(store, branch: str) -> bytes | None:
    """The action file as ``branch``'s head commit holds it (``branch@``: staged objects
    aside), or None."""
    try:
        return store.data_object(f"{branch}@", ACTION_PATH)
    except StoreError:
        return None


def _hook_url(action: bytes | None) -> str:
    for line in (action or b"").decode(errors="replace").splitlines():
        if line.strip().startswith("url:"):
            return line.split(":", 1)[1].strip().strip('"')
    return "no hms-proxy"


def on_event(store, event: dict) -> dict:
    """What a lakeFS hook call gets (``event``: lakeFS's JSON); :class:`HookRefusal` aborts
    lakeFS's operation."""
    while hasattr(store, "wrapped"):  # the store itself: canonical values, as merges see them
        store = store.wrapped
    kind = event.get("event_type")
    repository = event.get("repository_id")
    if repository != getattr(store, "repository", None):
        raise HookRefusal([f"this hms-proxy serves lakeFS repository "
                           f"{getattr(store, 'repository', None)!r}, not {repository!r}"])
    if kind == "prepare-commit":
        branch = _text(event, "branch_id")
        folded = store.fold_for_commit(branch)
        return {"event": kind, "branch": branch, "folded": folded}
    if kind == "pre-merge":
        source, merged = _text(event, "source_ref"), _text(event, "commit_id")
        if source.startswith(TEMP_BRANCH) or str(event.get("branch_id") or "").startswith(
                TEMP_BRANCH):  # hms-proxy's own merge at work: its 3-way result is there
            return {"event": kind, "ignored": True}
        problems = check_merge(store, source, merged, event.get("branch_id"),
                               event.get("merge_source"))
        if problems:
            log.warning("refused lakeFS's merge of %s into %s: %s", event.get("merge_source")
                        or source, event.get("branch_id"), "; ".join(problems))
            raise HookRefusal(problems)
        return {"event": kind, "branch": event.get("branch_id"), "catalog": "merges cleanly"}
    if kind == "post-merge":
        branch = _text(event, "branch_id")
        if branch.startswith(TEMP_BRANCH):  # hms-proxy's own merge at work
            return {"event": kind, "ignored": True}
        merged = _text(event, "commit_id")
        parents = store.get_commit(merged).parents
        changed = [parse_key(d.key) for d in store.diff(parents[0], merged)] if parents else []
        names = sorted({tuple(path[:2]) for kind_, path in changed if kind_ == "table"})
        source = event.get("merge_source") or event.get("source_ref") or "?"
        done, commit = anchor_after_merge(store, branch, source, names, "hms-proxy")
        return {"event": kind, "branch": branch, "anchored": [a.to_json() for a in done],
                "commit": commit.id if commit is not None else None}
    if kind == "pre-delete-branch":
        doomed = _text(event, "branch_id")
        if doomed.startswith(TEMP_BRANCH):
            return {"event": kind, "ignored": True}
        try:
            done = anchor_before_delete(store, doomed,
                                        skip=lambda name: name.startswith(TEMP_BRANCH))
        except Exception as exc:  # noqa: BLE001 - refused: a live table would lose its files
            raise HookRefusal([f"branch {doomed} is named by Iceberg tables of other branches "
                               f"and they could not be anchored: {exc}"]) from None
        return {"event": kind, "branch": doomed, "anchored": [a.to_json() for a in done]}
    return {"event": kind, "ignored": True}


def _text(event: dict, name: str) -> str:
    value = event.get(name)
    if not isinstance(value, str) or not value:
        raise HookRefusal([f"lakeFS's event has no {name}"])
    return value


def check_merge(store, source: str, merged: str, dest_name: str | None = None,
                source_name: str | None = None) -> list[str]:
    """Why lakeFS's merge commit ``merged`` of ``source`` (``source_name``, as the user named
    it, into branch ``dest_name``) must not become its branch's head, one line each (none: it
    reads as the catalog's own 3-way merge)."""
    commit = store.get_commit(merged)
    if not commit.parents:
        return []
    dest = commit.parents[0]
    base = store.merge_base(source, dest)
    if base is None:
        return []
    outcome = three_way(store, base, source, dest, None)
    problems = [f"{_name(c.kind, c.path)}: {c.type.lower().replace('_', ' ')} "
                f"({', '.join(c.fields)}): merge with `hms-proxy merge --strategy ...` or "
                f"change one side" for c in outcome.conflicts]
    # Iceberg tables both branches committed to (kept per branch, so lakeFS merged them
    # without a conflict): lakeFS's merge reads as one side's snapshots
    problems += [f"{_name('table', parse_key(key)[1])}: both branches committed to this "
                 "Iceberg table and lakeFS's merge would keep one side's snapshots only: merge "
                 f"with `hms-proxy merge {source_name or source} {dest_name or dest}`, which "
                 f"merges it in Iceberg's terms ({len(plan.replay)} snapshot"
                 f"{'' if len(plan.replay) == 1 else 's'} of {source_name or source} replayed)"
                 for key, plan in sorted(outcome.iceberg.items())]
    if problems:
        return problems
    made = {d.key: d.right for d in store.diff(dest, merged)}
    with store.read(merged) as got_view, store.read(dest) as dest_view:
        keys = sorted(set(made) | set(outcome.writes))
        got = dict(zip(keys, got_view.get_many(keys)))
        had = dict(zip(keys, dest_view.get_many(keys)))
    for key in keys:
        want = outcome.writes.get(key, had[key])
        if got[key] != want:
            kind, path = parse_key(key)
            problems.append(f"{_name(kind, path)}: both branches changed it and lakeFS's merge "
                            "keeps one side's whole object; `hms-proxy merge` merges it field "
                            "by field")
    return problems


def _name(kind: str, path: tuple) -> str:
    return f"{kind.replace('_', ' ')} {'.'.join(path)}"


__all__ = ["ACTION_PATH", "HOOK_PATH", "HookRefusal", "action_yaml", "install", "on_event",
           "check_merge"]
