"""Refs and commits over HTTP: branches, tags, protection, the log and one commit.

Branch and tag operations are writes on the ref they create, delete or protect (rules by its
name), and reads of the ref they start from; the listing shows only the refs the caller may
read. They go to the store directly, as ``hms-proxy branch|tag`` do.
"""
from __future__ import annotations

from hms_proxy.api import diffs
from hms_proxy.api.auth import READ, WRITE
from hms_proxy.api.errors import ApiError, bad_request
from hms_proxy.api.request import Request
from hms_proxy.hms import warehouse
from kvmodel.catalog import path_prefix
from kvmodel.hooks import commit_with_hooks
from kvmodel.store.errors import InvalidRef
from kvmodel.store.refs import validate_name
from kvmodel.versioning import touches


def _uncommitted(store, name: str) -> bool:
    return next(iter(store.staged(name)), None) is not None


def branch_json(store, branch) -> dict:
    return {"name": branch.name, "head": branch.head, "protected": bool(branch.protected),
            "uncommitted": _uncommitted(store, branch.name),
            "commit": store.get_commit(branch.head).to_json()}


def tag_json(store, tag) -> dict:
    return {"name": tag.name, "commit": tag.commit,
            "commit_info": store.get_commit(tag.commit).to_json()}


def _branch(store, name: str):
    branch = store.get_branch(name)
    if branch is None:
        raise ApiError(404, "RefNotFound", f"no branch {name!r}")
    return branch


def _tag(store, name: str):
    tag = next((t for t in store.list_tags() if t.name == name), None)
    if tag is None:
        raise ApiError(404, "RefNotFound", f"no tag {name!r}")
    return tag


# --- info and listing ------------------------------------------------------------------------
def info(app, req: Request):
    return 200, {"service": "hms-proxy", "api": "v1", "version": app.version,
                 "default_branch": app.default_ref, "read_only": app.policy.read_only,
                 "access_rules": app.policy.rules is not None,
                 "lakefs_repository": getattr(app.store, "repository", None),
                 "warehouse": app.warehouse,
                 "caller": req.caller.to_json()}


def list_refs(app, req: Request):
    store, caller = app.store, req.caller
    branches = [branch_json(store, b) for b in store.list_branches()
                if app.policy.allowed(caller, b.name)]
    tags = [tag_json(store, t) for t in store.list_tags() if app.policy.allowed(caller, t.name)]
    return 200, {"default_branch": app.default_ref, "branches": branches, "tags": tags}


# --- branches ----------------------------------------------------------------------------------
def get_branch(app, req: Request):
    name = req.segment("name")
    app.policy.check(req.caller, name, READ, "get_branch", name)
    return 200, branch_json(app.store, _branch(app.store, name))


def create_branch(app, req: Request):
    body = req.fields({"name": (str, True), "from": (str, False), "own_files": (bool, False)})
    name, source = body["name"].strip(), body.get("from", app.default_ref).strip()
    _valid_name(name)
    app.policy.check(req.caller, source, READ, "create_branch", name)
    app.policy.check(req.caller, name, WRITE, "create_branch", name)
    if any(t.name == name for t in app.store.list_tags()):
        raise ApiError(409, "RefExists", f"a tag named {name!r} exists")
    target = None
    if body.get("own_files"):
        if app.warehouse is None:
            raise bad_request("'own_files' needs hms-proxy serve (this server knows no "
                              "warehouse)")
        try:
            target = warehouse.branch_files(app.warehouse, name)
        except ValueError as exc:
            raise ApiError(409, "OwnFiles", str(exc)) from None

    def make():
        made = app.store.create_branch(name, source)
        moved = 0 if target is None else \
            warehouse.give_own_files(app.store, name, app.warehouse, target)
        return made, moved

    branch, moved = app.policy.write(req.caller, name, "create_branch", name, make)
    answer = branch_json(app.store, app.store.get_branch(name) or branch)
    if target is not None:
        answer["warehouse"], answer["relocated"] = target, moved
    return 201, answer


def delete_branch(app, req: Request):
    name = req.segment("name")
    app.policy.check(req.caller, name, WRITE, "delete_branch", name)
    branch = _branch(app.store, name)
    app.policy.write(req.caller, name, "delete_branch", name,
                     lambda: app.store.delete_branch(name))
    if app.warehouse is not None:  # the files a branch of its own files had: gone with it
        warehouse.drop_branch_files(app.warehouse, name)
    return 200, {"deleted": name, "head": branch.head}


def protect_branch(app, req: Request):
    name = req.segment("name")
    body = req.fields({"protected": (bool, True)})
    app.policy.check(req.caller, name, WRITE, "protect_branch", name)
    _branch(app.store, name)
    app.policy.write(req.caller, name, "protect_branch" if body["protected"] else
                     "unprotect_branch", name,
                     lambda: app.store.set_branch_protection(name, body["protected"]))
    return 200, branch_json(app.store, _branch(app.store, name))


# --- tags --------------------------------------------------------------------------------------
def get_tag(app, req: Request):
    name = req.segment("name")
    app.policy.check(req.caller, name, READ, "get_tag", name)
    return 200, tag_json(app.store, _tag(app.store, name))


def create_tag(app, req: Request):
    body = req.fields({"name": (str, True), "ref": (str, True)})
    name, ref = body["name"].strip(), body["ref"].strip()
    _valid_name(name)
    app.policy.check(req.caller, ref, READ, "create_tag", name)
    app.policy.check(req.caller, name, WRITE, "create_tag", name)
    if app.store.get_branch(name) is not None:
        raise ApiError(409, "RefExists", f"a branch named {name!r} exists")
    tag = app.policy.write(req.caller, name, "create_tag", name,
                           lambda: app.store.create_tag(name, ref))
    return 201, tag_json(app.store, tag)


def delete_tag(app, req: Request):
    name = req.segment("name")
    app.policy.check(req.caller, name, WRITE, "delete_tag", name)
    tag = _tag(app.store, name)
    app.policy.write(req.caller, name, "delete_tag", name, lambda: app.store.delete_tag(name))
    return 200, {"deleted": name, "commit": tag.commit}


def _valid_name(name: str) -> None:

    try:
        validate_name(name)
    except InvalidRef as exc:
        raise ApiError(400, "InvalidRef", str(exc)) from None


# --- commits -----------------------------------------------------------------------------------
def log(app, req: Request):
    """The commits reachable from ``ref``, newest first, a page at a time; ``path`` keeps
    those that changed a database or table (as ``hms-proxy log --path``)."""
    ref = req.ref("ref", app.default_ref)
    offset, limit = req.paging()
    path = req.text("path", max_length=600)
    prefix = None
    if path:
        try:
            prefix = path_prefix(path)
        except ValueError:
            raise bad_request(
                f"'path' takes DB, DB.TABLE or @CATALOG#DB[.TABLE], not {path!r}") from None
    app.policy.check(req.caller, ref, READ, "log", ref)
    store = app.store
    head = store.resolve(ref).commit
    commits, seen, more = [], 0, False
    for commit in store.log(ref):
        if prefix is not None and not touches(store, commit, prefix):
            continue
        if seen >= offset + limit:
            more = True
            break
        if seen >= offset:
            commits.append(commit.to_json())
        seen += 1
    return 200, {"ref": ref, "head": head, "path": path or None, "offset": offset,
                 "limit": limit, "next_offset": offset + limit if more else None,
                 "commits": commits}


def create_commit(app, req: Request):
    """Commit a branch's uncommitted changes (pre-commit hooks run as for ``hms-proxy
    commit``); 409 NothingToCommit when there are none."""
    body = req.fields({"branch": (str, True), "message": (str, True)})
    branch = body["branch"].strip()
    app.policy.check(req.caller, branch, WRITE, "commit", branch)
    if app.store.get_branch(branch) is None:
        raise ApiError(404, "RefNotFound", f"no branch {branch!r}")
    author = req.caller.identity or "anonymous"
    metadata = {"via": "http", "auth": req.caller.auth}
    commit = app.policy.write(
        req.caller, branch, "commit", branch,
        lambda: commit_with_hooks(app.store, app.store_path, branch, body["message"],
                                  author, metadata))
    return 201, commit.to_json()


def show_commit(app, req: Request):
    """One commit (an id, a prefix of one, or any ref) and its changes against its first
    parent, as the diff answers them (first page; page on with ``/diff``)."""

    expr = req.segment("id")
    app.policy.check(req.caller, expr, READ, "show", expr)
    store = app.store
    commit = store.get_commit(store.resolve(expr).commit)
    diff = None
    if commit.parents:
        offset, limit = req.paging()
        diff = diffs.diff_page(app, commit.parents[0], commit.id, None, offset, limit)
    return 200, {"commit": commit.to_json(), "diff": diff}

