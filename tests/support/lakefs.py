"""The real lakeFS of the test session: built from its Go module and started once, on first use
(:mod:`hms_proxy.tools.lakefs_local`), stopped when the session ends.

``HMS_TEST_LAKEFS_ENDPOINT`` (with ``..._ACCESS_KEY_ID`` and ``..._SECRET_ACCESS_KEY``) points
the tests at another lakeFS instead. Every test that needs lakeFS makes its own repository
(:func:`new_repository`), so tests never see each other's branches.
"""
from __future__ import annotations

import atexit
import os
import re
import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class RealLakeFS:
    endpoint: str          # http://127.0.0.1:PORT (the API is under /api/v1, S3 at the root)
    access_key_id: str
    secret_access_key: str
    log_path: str | None = None

    @property
    def api_url(self) -> str:
        return self.endpoint + "/api/v1"

    def env(self) -> dict:
        return {"LAKEFS_ENDPOINT": self.endpoint, "LAKEFS_ACCESS_KEY_ID": self.access_key_id,
                "LAKEFS_SECRET_ACCESS_KEY": self.secret_access_key}

    def config(self):
        from kvmodel.store.lakefs import LakeFSConfig

        return LakeFSConfig(self.api_url, self.access_key_id, self.secret_access_key)

    def api_calls(self):
        """lakeFS's own count of the API calls it served, by operation (ListObjects, GetObject,
        StatObject, GetBranch...), from its Prometheus metrics: calls made by any process, so a
        test takes the difference around what it does (tests run one at a time)."""
        import urllib.request
        from collections import Counter

        counts: Counter = Counter()
        with urllib.request.urlopen(self.endpoint + "/metrics", timeout=10) as resp:
            for line in resp.read().decode().splitlines():
                if line.startswith("api_request_duration_seconds_count{"):
                    labels, value = line.rsplit(" ", 1)
                    op = labels.split('operation="', 1)[1].split('"', 1)[0]
                    counts[op] += int(float(value))
        return counts

    def sdk(self):
        """A lakefs_sdk ApiClient (close it, or use it in ``with``)."""
        import lakefs_sdk

        return lakefs_sdk.ApiClient(lakefs_sdk.Configuration(
            host=self.api_url, username=self.access_key_id, password=self.secret_access_key))


_SERVER: RealLakeFS | None = None


def real_lakefs() -> RealLakeFS:
    """The session's lakeFS (started on first call; the first build takes minutes)."""
    global _SERVER
    if _SERVER is not None:
        return _SERVER
    env = os.environ
    if env.get("HMS_TEST_LAKEFS_ENDPOINT"):
        endpoint = env["HMS_TEST_LAKEFS_ENDPOINT"].rstrip("/").removesuffix("/api/v1")
        _SERVER = RealLakeFS(endpoint, env["HMS_TEST_LAKEFS_ACCESS_KEY_ID"],
                             env["HMS_TEST_LAKEFS_SECRET_ACCESS_KEY"])
        return _SERVER
    from hms_proxy.tools import lakefs_local

    global _PROC
    proc = _PROC = lakefs_local.start_lakefs()  # a temporary work directory, removed by stop()
    atexit.register(proc.stop)
    _SERVER = RealLakeFS(proc.endpoint, proc.access_key_id, proc.secret_access_key,
                         str(proc.log_path))
    return _SERVER


_PROC = None


def stop() -> None:
    """Stop the lakeFS this process started (at the end of a pytest session: an xdist worker
    leaves without running atexit's functions)."""
    global _SERVER, _PROC
    if _PROC is not None:
        _PROC.stop()
        _PROC = _SERVER = None


def new_repository(prefix: str = "r", branch: str = "main") -> str:
    """A fresh repository on the session's lakeFS; its name."""
    import lakefs_sdk

    server = real_lakefs()
    name = f"{prefix}{uuid.uuid4().hex[:16]}".lower()
    with server.sdk() as client:
        lakefs_sdk.RepositoriesApi(client).create_repository(
            lakefs_sdk.RepositoryCreation(name=name, storage_namespace=f"local://{name}",
                                          default_branch=branch))
    return name


class LakeFSApi:
    """lakeFS's API as lakectl, the lakeFS UI and integrations call it (commit, branch create,
    merge, revert, cherry-pick, tag create, branch reset, listings, action runs): what moves a
    branch without hms-proxy in between. ``client`` is an SDK client (:meth:`RealLakeFS.sdk`)."""

    def __init__(self, client, repo: str):
        import lakefs_sdk

        self._sdk = lakefs_sdk
        self.repo = repo
        self.commits = lakefs_sdk.CommitsApi(client)
        self.branches = lakefs_sdk.BranchesApi(client)
        self.refs = lakefs_sdk.RefsApi(client)
        self.tags = lakefs_sdk.TagsApi(client)
        self.objects = lakefs_sdk.ObjectsApi(client)
        self.actions = lakefs_sdk.ActionsApi(client)

    def commit(self, branch: str, message: str = "lakectl commit") -> str:
        """``lakectl commit``; the new commit's id."""
        return self.commits.commit(self.repo, branch,
                                   self._sdk.CommitCreation(message=message)).id

    def branch(self, name: str, source: str = "main") -> None:
        self.branches.create_branch(self.repo, self._sdk.BranchCreation(name=name,
                                                                         source=source))

    def merge(self, source: str, dest: str, strategy: str | None = None) -> str:
        """``lakectl merge``; the merge commit's id."""
        return self.refs.merge_into_branch(self.repo, source, dest, merge=self._sdk.Merge(
            message=f"merge {source} into {dest}", strategy=strategy)).reference

    def delete_branch(self, name: str) -> None:
        """``lakectl branch delete`` (what the UI offers once a branch is merged)."""
        self.branches.delete_branch(self.repo, name)

    def revert(self, branch: str, ref: str, parent: int = 0) -> None:
        """``lakectl branch revert``; ``parent`` 1 for a merge commit."""
        self.branches.revert_branch(self.repo, branch, self._sdk.RevertCreation(
            ref=ref, parent_number=parent))

    def cherry_pick(self, branch: str, ref: str) -> None:
        self.branches.cherry_pick(self.repo, branch, self._sdk.CherryPickCreation(ref=ref))

    def tag(self, name: str, ref: str) -> None:
        self.tags.create_tag(self.repo, self._sdk.TagCreation(id=name, ref=ref))

    def reset(self, branch: str) -> None:
        """``lakectl branch reset``: drop the branch's uncommitted changes."""
        self.branches.reset_branch(self.repo, branch, self._sdk.ResetCreation(type="reset"))

    def paths(self, ref: str, prefix: str) -> list[str]:
        return sorted(o.path for o in self.objects.list_objects(self.repo, ref, prefix=prefix,
                                                                amount=1000).results)

    def data_files(self, ref: str, directory: str) -> list[str]:
        """The data files (not directory markers, not hidden files) under ``directory/``."""
        return [p for p in self.paths(ref, directory.rstrip("/") + "/")
                if not p.endswith("/") and "/." not in p and "/_" not in p]

    def hook_output(self, run_id: str) -> str:
        """What the hooks of an action run printed, as the lakeFS UI shows it."""
        hooks = self.actions.list_run_hooks(self.repo, run_id).results
        return "".join(bytes(self.actions.get_run_hook_output(self.repo, run_id,
                                                              h.hook_run_id)).decode()
                       for h in hooks)


def new_store(prefix: str = "r", **kwargs):
    """A LakeFSStore over a fresh repository of the session's lakeFS."""
    from kvmodel.store.lakefs import LakeFSStore

    return LakeFSStore(new_repository(prefix), real_lakefs().config(), **kwargs)


def past_staleness_bound(since: float) -> None:
    """Wait until a server's lakeFS store must see a change that another process finished at
    ``since`` (``time.monotonic()``, after the change was acknowledged): a read that starts
    :attr:`~kvmodel.store.lakefs.LakeFSStore.stale_after` later is answered from a state asked
    of lakeFS after the change, however loaded the machine (the store's guarantee, proved by
    ``test_another_servers_writes_are_seen_within_the_staleness_bound``). Only for a change
    no answer tells apart; where one does, wait for that answer
    (:func:`tests.support.client.wait_served`)."""
    import time

    from kvmodel.store.lakefs import STALE_AFTER

    time.sleep(max(0.0, since + STALE_AFTER - time.monotonic()) + 0.05)


def peer_id(server) -> str:
    """The peer id a started server (``tests.support.proxy``) announced in its log."""
    from tests.support.wait import wait_until

    found = wait_until(lambda: re.search(r"lakeFS peer ([0-9a-f]+)@", server.log_text()),
                       what=f"{server.name} announcing its peer port")
    return found.group(1)


def log_writers(server, branch: str = "main") -> list[str]:
    """The peer id of the server that wrote each entry of ``branch``'s log, in slot order
    (the repository the server serves)."""
    import lakefs_sdk

    from kvmodel.store.lakefs import log as lakefs_log

    repo = re.search(r"serving lakefs://(\S+) ", server.log_text()).group(1)
    with real_lakefs().sdk() as api:
        objects = lakefs_sdk.ObjectsApi(api)
        found, after = [], ""
        while True:
            page = objects.list_objects(repo, branch, prefix=lakefs_log.LOG + branch + "/",
                                        after=after, amount=1000, user_metadata=True)
            found += [lakefs_log.listed(o.path, o.metadata, o.checksum) for o in page.results]
            if not page.pagination.has_more:
                break
            after = page.pagination.next_offset
    return [o.writer.partition("@")[0] for o in sorted(found, key=lambda o: o.seq)]


__all__ = ["RealLakeFS", "real_lakefs", "new_repository", "new_store", "past_staleness_bound",
           "peer_id", "log_writers"]
