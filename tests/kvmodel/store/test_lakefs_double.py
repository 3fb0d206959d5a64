"""The lakeFS test double (:mod:`tests.support.lakefs_double`), driven through lakefs_sdk.

Every call goes through ``lakefs_sdk.ApiClient`` and its ``*Api`` classes, as the lakeFS backend's
will, so these tests also prove that the double's answers deserialize into lakefs_sdk's models
and that it accepts exactly what lakefs_sdk sends.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import lakefs_sdk
import pytest
from lakefs_sdk.exceptions import (
    ApiException,
    BadRequestException,
    ForbiddenException,
    NotFoundException,
    ServiceException,
    UnauthorizedException,
)
from lakefs_sdk.models import (
    BranchCreation,
    BranchProtectionRule,
    CommitCreation,
    Merge,
    ObjectStats,
    PathList,
    RepositoryCreation,
    ResetCreation,
    TagCreation,
    UpdateObjectUserMetadata,
)

from tests.support.lakefs_double import LakeFSDouble

AK = "AKIAIOSFODNN7EXAMPLE"
SK = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
REPO = "repo"


class Lakefs:
    """The lakefs_sdk APIs on one client, plus shorthands for the steps every test repeats."""

    def __init__(self, endpoint: str, tmp_path: Path, username: str = AK, password: str = SK):
        conf = lakefs_sdk.Configuration(host=endpoint, username=username, password=password)
        self.client = lakefs_sdk.ApiClient(conf)
        self.repos = lakefs_sdk.RepositoriesApi(self.client)
        self.branches = lakefs_sdk.BranchesApi(self.client)
        self.tags = lakefs_sdk.TagsApi(self.client)
        self.commits = lakefs_sdk.CommitsApi(self.client)
        self.objects = lakefs_sdk.ObjectsApi(self.client)
        self.refs = lakefs_sdk.RefsApi(self.client)
        self._tmp = tmp_path
        self._files = 0

    def upload(self, path: str, data: bytes, branch: str = "main", **kwargs) -> ObjectStats:
        # lakefs_sdk's upload_object opens ``content`` as a *file name* (ApiClient
        # .files_parameters), so bytes go through a temporary file
        self._files += 1
        source = self._tmp / f"upload-{self._files}"
        source.write_bytes(data)
        return self.objects.upload_object(REPO, branch, path, content=str(source), **kwargs)

    def commit(self, branch: str = "main", message: str = "change", **kwargs) -> str:
        return self.commits.commit(REPO, branch, CommitCreation(message=message, **kwargs)).id

    def read(self, ref: str, path: str) -> bytes:
        return bytes(self.objects.get_object(REPO, ref, path))

    def head(self, branch: str = "main") -> str:
        return self.branches.get_branch(REPO, branch).commit_id

    def branch(self, name: str, source: str = "main") -> str:
        return self.branches.create_branch(REPO, BranchCreation(name=name, source=source))

    def ls(self, ref: str = "main", **kwargs) -> list[str]:
        return [o.path for o in self.objects.list_objects(REPO, ref, **kwargs).results]

    def diff(self, left: str, right: str, **kwargs) -> dict[str, str]:
        return {d.path: d.type for d in self.refs.diff_refs(REPO, left, right, **kwargs).results}

    def log(self, ref: str = "main", **kwargs) -> list[str]:
        return [c.id for c in self.refs.log_commits(REPO, ref, **kwargs).results]

    def merge(self, source: str, dest: str = "main", **kwargs) -> str:
        return self.refs.merge_into_branch(REPO, source, dest, Merge(**kwargs)).reference


@pytest.fixture
def double() -> Iterator[LakeFSDouble]:
    with LakeFSDouble(access_key_id=AK, secret_access_key=SK) as served:
        served.create_repository(REPO, default_branch="main")
        yield served


@pytest.fixture
def lakefs(double, tmp_path) -> Lakefs:
    return Lakefs(double.endpoint, tmp_path)


def _status(excinfo: pytest.ExceptionInfo) -> int:
    return excinfo.value.status


def _message(excinfo: pytest.ExceptionInfo) -> str:
    return json.loads(excinfo.value.body)["message"]


# --- repositories, branches, tags -----------------------------------------------------------

def test_a_repository_starts_with_its_default_branch_at_repository_created(lakefs):
    repo = lakefs.repos.get_repository(REPO)
    assert (repo.id, repo.default_branch, repo.storage_namespace) == (REPO, "main", "local://repo")
    first = lakefs.commits.get_commit(REPO, lakefs.head())
    assert len(first.id) == 64 and int(first.id, 16) >= 0
    assert (first.message, first.parents, first.committer) == ("Repository created", [], "")
    assert (first.meta_range_id, first.generation) == ("", 1)
    assert [r.id for r in lakefs.repos.list_repositories().results] == [REPO]


def test_repositories_are_created_through_the_api_too(lakefs):
    created = lakefs.repos.create_repository(RepositoryCreation(
        name="other", storage_namespace="local://other", default_branch="trunk"))
    assert (created.id, created.default_branch) == ("other", "trunk")
    assert [b.id for b in lakefs.branches.list_branches("other").results] == ["trunk"]
    with pytest.raises(ApiException) as exists:
        lakefs.repos.create_repository(RepositoryCreation(name="other",
                                                          storage_namespace="local://x"))
    assert _status(exists) == 409
    with pytest.raises(BadRequestException):   # (lakefs_sdk itself checks name and namespace)
        lakefs.repos.create_repository(RepositoryCreation(
            name="third", storage_namespace="local://third", default_branch="no/slash"))


def test_branches_list_with_prefix_after_and_amount(lakefs):
    for name in ("feat-a", "feat-b", "feat-c", "fix-1"):
        assert lakefs.branch(name) == lakefs.head()
    page = lakefs.branches.list_branches(REPO, prefix="feat-", amount=2)
    assert [b.id for b in page.results] == ["feat-a", "feat-b"]
    assert (page.pagination.has_more, page.pagination.next_offset) == (True, "feat-b")
    page = lakefs.branches.list_branches(REPO, prefix="feat-", after="feat-b", amount=2)
    assert [b.id for b in page.results] == ["feat-c"]
    assert (page.pagination.has_more, page.pagination.next_offset) == (False, "")


def test_branch_creation_deletion_and_their_errors(lakefs):
    lakefs.branch("dev")
    with pytest.raises(ApiException) as exists:
        lakefs.branch("dev")
    assert _status(exists) == 409
    with pytest.raises(BadRequestException):
        lakefs.branch("no/slashes")
    with pytest.raises(NotFoundException):
        lakefs.branch("x", source="no-such-ref")
    lakefs.branches.delete_branch(REPO, "dev")
    with pytest.raises(NotFoundException):
        lakefs.branches.get_branch(REPO, "dev")
    with pytest.raises(ForbiddenException):
        lakefs.branches.delete_branch(REPO, "main")


def test_tags_point_at_commits(lakefs):
    lakefs.upload("a", b"1")
    commit = lakefs.commit()
    tag = lakefs.tags.create_tag(REPO, TagCreation(id="v1", ref="main"))
    assert (tag.id, tag.commit_id) == ("v1", commit)
    assert lakefs.tags.get_tag(REPO, "v1").commit_id == commit
    assert [t.id for t in lakefs.tags.list_tags(REPO).results] == ["v1"]
    for clash in ("v1", "main"):   # an existing tag, an existing branch
        with pytest.raises(ApiException) as conflict:
            lakefs.tags.create_tag(REPO, TagCreation(id=clash, ref="main"))
        assert _status(conflict) == 409
    assert lakefs.read("v1", "a") == b"1"
    lakefs.tags.delete_tag(REPO, "v1")
    with pytest.raises(NotFoundException):
        lakefs.tags.get_tag(REPO, "v1")


# --- commits and log ------------------------------------------------------------------------

def test_commit_records_parent_committer_metadata_and_date(lakefs):
    first = lakefs.head()
    lakefs.upload("a", b"1")
    commit = lakefs.commits.commit(REPO, "main", CommitCreation(
        message="add a", metadata={"k": "v"}, var_date=1_700_000_000))
    assert (commit.parents, commit.committer, commit.message) == ([first], AK, "add a")
    assert (commit.metadata, commit.creation_date, commit.generation) == ({"k": "v"},
                                                                         1_700_000_000, 2)
    assert len(commit.meta_range_id) == 64
    assert lakefs.head() == commit.id
    for ref in (commit.id, commit.id[:12], "main"):
        assert lakefs.commits.get_commit(REPO, ref).id == commit.id
    with pytest.raises(NotFoundException):
        lakefs.commits.get_commit(REPO, "0" * 64)


def test_commit_without_changes_is_refused_unless_allow_empty(lakefs):
    with pytest.raises(BadRequestException) as empty:
        lakefs.commit()
    assert "no changes" in _message(empty)
    lakefs.upload("a", b"1")
    lakefs.commit()
    lakefs.upload("a", b"1")            # the same object again: not a change
    with pytest.raises(BadRequestException):
        lakefs.commit()
    allowed = lakefs.commits.commit(REPO, "main", CommitCreation(message="e", allow_empty=True))
    assert allowed.id == lakefs.head()


def test_log_is_newest_first_paginated_and_filtered(lakefs):
    first = lakefs.head()
    lakefs.upload("a", b"1")
    c1 = lakefs.commit()
    lakefs.upload("dir/b", b"1")
    c2 = lakefs.commit()
    lakefs.upload("a", b"2")
    c3 = lakefs.commit()
    assert lakefs.log() == [c3, c2, c1, first]
    page = lakefs.refs.log_commits(REPO, "main", amount=2)
    assert [c.id for c in page.results] == [c3, c2]
    assert (page.pagination.has_more, page.pagination.next_offset) == (True, c2)
    assert lakefs.log(after=c2) == [c1, first]
    assert lakefs.log(objects=["a"]) == [c3, c1]
    assert lakefs.log(prefixes=["dir/"]) == [c2]
    limited = lakefs.refs.log_commits(REPO, "main", amount=1, limit=True)
    assert ([c.id for c in limited.results], limited.pagination.has_more) == ([c3], False)
    assert lakefs.log(c2) == [c2, c1, first]
    with pytest.raises(BadRequestException):   # lakeFS validates the log ref as a branch id
        lakefs.log("main~1")


def test_log_follows_all_parents_unless_first_parent(lakefs):
    lakefs.branch("dev")
    lakefs.upload("d", b"1", branch="dev")
    on_dev = lakefs.commit("dev")
    lakefs.upload("m", b"1")
    on_main = lakefs.commit()
    merge = lakefs.merge("dev")
    assert lakefs.log()[:3] == [merge, on_main, on_dev]
    assert on_dev not in lakefs.log(first_parent=True)


# --- reading: staging, refs, listing --------------------------------------------------------

def test_staged_writes_are_read_on_the_branch_not_at_its_commit(lakefs):
    lakefs.upload("x", b"staged")
    head = lakefs.head()
    assert lakefs.read("main", "x") == b"staged"
    assert lakefs.objects.stat_object(REPO, "main", "x").size_bytes == 6
    assert lakefs.ls("main") == ["x"]
    for committed_only in (head, "main@"):
        with pytest.raises(NotFoundException):
            lakefs.read(committed_only, "x")
        assert lakefs.ls(committed_only) == []
    commit = lakefs.commit()
    assert lakefs.read(commit, "x") == b"staged"
    lakefs.objects.delete_object(REPO, "main", "x")
    assert lakefs.ls("main") == [] and lakefs.ls("main@") == ["x"]


def test_ref_expressions_resolve_as_lakefs(lakefs):
    first = lakefs.head()
    lakefs.upload("a", b"1")
    c1 = lakefs.commit()
    lakefs.upload("a", b"2")
    c2 = lakefs.commit()
    lakefs.tags.create_tag(REPO, TagCreation(id="t1", ref=c1))

    def resolve(ref: str) -> str:
        return lakefs.commits.get_commit(REPO, ref).id

    expected = {"main": c2, "main~1": c1, "main~": c1, "main~2": first, "main^": c1,
                "main^1": c1, "main^0": c2, "main~1^1": first, "main@": c2, "t1": c1,
                "t1~1": first, c2[:8]: c2, f"{c2}~1": c1}
    assert {ref: resolve(ref) for ref in expected} == expected
    with pytest.raises(NotFoundException):
        resolve("main~3")                    # past the first commit
    for invalid in ("main^2", "t1@", "main@~1", "main@@", "main~x"):
        with pytest.raises(BadRequestException):
            resolve(invalid)
    assert lakefs.read("main~1", "a") == b"1"


def test_second_parent_of_a_merge_commit(lakefs):
    lakefs.branch("dev")
    lakefs.upload("d", b"1", branch="dev")
    on_dev = lakefs.commit("dev")
    before = lakefs.head()
    lakefs.merge("dev")
    assert lakefs.commits.get_commit(REPO, "main^1").id == before
    assert lakefs.commits.get_commit(REPO, "main^2").id == on_dev


def test_list_objects_is_sorted_paginated_and_groups_by_delimiter(lakefs):
    for path in ("d/x/1", "c", "b/1", "a/2", "a/1"):
        lakefs.upload(path, b"-")
    assert lakefs.ls() == ["a/1", "a/2", "b/1", "c", "d/x/1"]
    page = lakefs.objects.list_objects(REPO, "main", amount=2)
    assert [o.path for o in page.results] == ["a/1", "a/2"]
    assert (page.pagination.has_more, page.pagination.next_offset) == (True, "a/2")
    assert (page.pagination.results, page.pagination.max_per_page) == (2, 1000)
    assert lakefs.ls(after="a/2", amount=2) == ["b/1", "c"]
    grouped = lakefs.objects.list_objects(REPO, "main", delimiter="/").results
    assert [(o.path, o.path_type) for o in grouped] == [
        ("a/", "common_prefix"), ("b/", "common_prefix"), ("c", "object"),
        ("d/", "common_prefix")]
    assert lakefs.ls(prefix="d/", delimiter="/") == ["d/x/"]
    assert lakefs.ls(delimiter="/", after="b/") == ["c", "d/"]


def test_objects_carry_md5_checksum_size_and_address(lakefs):
    stats = lakefs.upload("a", b"hello")
    assert stats.checksum == "5d41402abc4b2a76b9719d911017c592"
    assert (stats.size_bytes, stats.path_type, stats.metadata) == (5, "object", {})
    assert stats.physical_address.startswith("local://repo/data/")
    assert stats.content_type == "application/octet-stream"


def test_user_metadata_from_upload_headers_and_update(lakefs):
    lakefs.upload("a", b"1", _headers={"X-Lakefs-Meta-Owner": "hive"})
    assert lakefs.objects.stat_object(REPO, "main", "a").metadata == {"owner": "hive"}
    assert lakefs.objects.stat_object(REPO, "main", "a", user_metadata=False).metadata == {}
    listed = lakefs.objects.list_objects(REPO, "main", user_metadata=False).results[0]
    assert listed.metadata is None
    lakefs.commit()
    lakefs.objects.update_object_user_metadata(
        REPO, "main", "a", UpdateObjectUserMetadata(set={"owner": "spark", "v": "2"}))
    assert lakefs.objects.stat_object(REPO, "main", "a").metadata == {"owner": "spark", "v": "2"}
    assert lakefs.objects.stat_object(REPO, "main@", "a").metadata == {"owner": "hive"}
    assert [d.type for d in lakefs.branches.diff_branch(REPO, "main").results] == ["changed"]


def test_conditional_uploads(lakefs):
    lakefs.upload("a", b"1", if_none_match="*")
    with pytest.raises(ApiException) as exists:
        lakefs.upload("a", b"2", if_none_match="*")
    assert _status(exists) == 412
    with pytest.raises(ApiException) as stale:
        lakefs.upload("a", b"2", if_match='"not-the-etag"')
    assert _status(stale) == 412
    etag = lakefs.objects.stat_object(REPO, "main", "a").checksum
    lakefs.upload("a", b"2", if_match=f'"{etag}"')
    assert lakefs.read("main", "a") == b"2"


def test_a_raw_body_upload_is_accepted_as_by_lakefs(lakefs):
    # lakefs_sdk's upload_object only sends multipart from a file; call_api can send raw bytes
    stats = lakefs.client.call_api(
        "/repositories/{repository}/branches/{branch}/objects", "POST",
        path_params={"repository": REPO, "branch": "main"}, query_params=[("path", "raw")],
        header_params={"Content-Type": "application/octet-stream", "Accept": "application/json"},
        body=b"raw bytes", auth_settings=["basic_auth"],
        response_types_map={"201": "ObjectStats"}, _return_http_data_only=True)
    assert (stats.path, stats.size_bytes) == ("raw", 9)
    assert lakefs.read("main", "raw") == b"raw bytes"


def test_get_object_ranges_and_head_object(lakefs):
    lakefs.upload("a", b"hello")
    assert bytes(lakefs.objects.get_object(REPO, "main", "a", range="bytes=1-3")) == b"ell"
    assert bytes(lakefs.objects.get_object(REPO, "main", "a", range="bytes=-2")) == b"lo"
    assert lakefs.objects.head_object(REPO, "main", "a") is None
    with pytest.raises(NotFoundException):
        lakefs.objects.head_object(REPO, "main", "missing")


def test_delete_object_and_bulk_delete(lakefs):
    for path in ("a", "b", "c"):
        lakefs.upload(path, b"-")
    lakefs.commit()
    lakefs.objects.delete_object(REPO, "main", "a")
    lakefs.objects.delete_object(REPO, "main", "never-there")     # a no-op, as in lakeFS
    result = lakefs.objects.delete_objects(REPO, "main", PathList(paths=["b", "zzz"]))
    assert result.errors == []
    assert lakefs.ls() == ["c"] and lakefs.ls("main@") == ["a", "b", "c"]


# --- diff -----------------------------------------------------------------------------------

@pytest.fixture
def diverged(lakefs) -> Lakefs:
    """main and dev from a common commit: dev changed a and added c, main changed b."""
    lakefs.upload("a", b"1")
    lakefs.upload("b", b"1")
    lakefs.commit()
    lakefs.branch("dev")
    lakefs.upload("a", b"2", branch="dev")
    lakefs.upload("c", b"1", branch="dev")
    lakefs.commit("dev")
    lakefs.upload("b", b"2")
    lakefs.commit()
    return lakefs


def test_two_dot_and_three_dot_diff(diverged):
    assert diverged.diff("main", "dev", type="two_dot") == {"a": "changed", "b": "changed",
                                                            "c": "added"}
    assert diverged.diff("main", "dev") == {"a": "changed", "c": "added"}   # three_dot default
    assert diverged.diff("dev", "main", type="three_dot") == {"b": "changed"}
    diverged.upload("a", b"3")
    diverged.commit()
    assert diverged.diff("main", "dev") == {"a": "conflict", "c": "added"}


def test_a_branch_in_a_diff_is_its_head_unless_suffixed_with_dollar(diverged):
    diverged.upload("d", b"1", branch="dev")
    assert "d" not in diverged.diff("main", "dev", type="two_dot")
    assert diverged.diff("main", "dev$", type="two_dot")["d"] == "added"
    with pytest.raises(BadRequestException):
        diverged.diff("main", "dev$")          # three-dot needs commits
    with pytest.raises(BadRequestException):
        diverged.diff("dev$", "main", type="two_dot")


def test_diff_pagination_and_delimiter(lakefs):
    for path in ("x/1", "x/2", "y"):
        lakefs.upload(path, b"-")
    lakefs.commit()
    page = lakefs.refs.diff_refs(REPO, "main~1", "main", type="two_dot", amount=2)
    assert [d.path for d in page.results] == ["x/1", "x/2"]
    assert (page.pagination.has_more, page.pagination.next_offset) == (True, "x/2")
    grouped = lakefs.refs.diff_refs(REPO, "main~1", "main", type="two_dot", delimiter="/")
    assert [(d.path, d.type, d.path_type) for d in grouped.results] == [
        ("x/", "prefix_changed", "common_prefix"), ("y", "added", "object")]
    assert grouped.results[1].size_bytes == 1


def test_diff_branch_lists_uncommitted_changes(lakefs):
    lakefs.upload("keep", b"1")
    lakefs.upload("gone", b"1")
    lakefs.upload("edit", b"1")
    lakefs.commit()
    lakefs.upload("keep", b"1")                 # identical: not a change
    lakefs.upload("edit", b"2")
    lakefs.upload("new", b"1")
    lakefs.objects.delete_object(REPO, "main", "gone")
    lakefs.upload("tmp", b"1")
    lakefs.objects.delete_object(REPO, "main", "tmp")   # staged then deleted: nothing
    changes = lakefs.branches.diff_branch(REPO, "main").results
    assert {d.path: d.type for d in changes} == {"edit": "changed", "gone": "removed",
                                                "new": "added"}
    assert [d.path for d in lakefs.branches.diff_branch(REPO, "main", prefix="n").results] == [
        "new"]


# --- merge ----------------------------------------------------------------------------------

def test_a_clean_merge_makes_a_commit_with_two_parents(diverged):
    main_head, dev_head = diverged.head("main"), diverged.head("dev")
    base = diverged.refs.find_merge_base(REPO, "dev", "main")
    assert (base.source_commit_id, base.destination_commit_id) == (dev_head, main_head)
    assert base.base_commit_id == diverged.commits.get_commit(REPO, "dev~1").id
    merged = diverged.refs.merge_into_branch(REPO, "dev", "main").reference   # no body at all
    commit = diverged.commits.get_commit(REPO, merged)
    assert diverged.head() == merged
    assert commit.parents == [main_head, dev_head]
    assert commit.message == "Merge 'dev' into 'main'"
    assert commit.metadata == {".lakefs.merge.strategy": "default"}
    assert {p: diverged.read("main", p) for p in diverged.ls()} == {"a": b"2", "b": b"2",
                                                                   "c": b"1"}


def test_a_conflict_answers_409_and_strategies_resolve_it(diverged):
    diverged.upload("a", b"3")              # main changes a too
    diverged.commit()
    diverged.branch("main2")
    with pytest.raises(ApiException) as conflict:
        diverged.merge("dev")
    assert _status(conflict) == 409
    assert json.loads(conflict.value.body) == {"reference": ""}
    assert diverged.merge("dev", strategy="dest-wins") == diverged.head("main")
    assert diverged.read("main", "a") == b"3" and diverged.read("main", "c") == b"1"
    diverged.merge("dev", "main2", strategy="source-wins", message="take theirs")
    assert diverged.read("main2", "a") == b"2"
    commit = diverged.commits.get_commit(REPO, "main2")
    assert (commit.message, commit.metadata[".lakefs.merge.strategy"]) == ("take theirs",
                                                                          "source-wins")
    with pytest.raises(BadRequestException):
        diverged.merge("dev", strategy="ours")


def test_deleting_what_the_other_side_changed_is_a_conflict(diverged):
    diverged.objects.delete_object(REPO, "dev", "b")
    diverged.commit("dev")
    with pytest.raises(ApiException) as conflict:
        diverged.merge("dev")
    assert _status(conflict) == 409


def test_merge_refuses_a_dirty_destination_and_nothing_to_merge(diverged):
    diverged.upload("z", b"1")
    with pytest.raises(BadRequestException) as dirty:
        diverged.merge("dev")
    assert "dirty branch" in _message(dirty)
    diverged.branches.reset_branch(REPO, "main", ResetCreation(type="reset"))
    diverged.upload("staged-on-dev", b"1", branch="dev")   # the source's staging is ignored
    diverged.merge("dev")
    assert "staged-on-dev" not in diverged.ls()
    with pytest.raises(BadRequestException) as nothing:
        diverged.merge("dev")
    assert "no changes" in _message(nothing)
    empty = diverged.merge("dev", allow_empty=True)
    assert diverged.head() == empty


def test_squash_merge_keeps_only_the_destination_parent(diverged):
    before = diverged.head()
    merged = diverged.merge("dev", squash_merge=True)
    assert diverged.commits.get_commit(REPO, merged).parents == [before]
    assert diverged.read("main", "c") == b"1"


# --- reset and protection -------------------------------------------------------------------

def test_reset_object_prefix_and_whole_branch(lakefs):
    lakefs.upload("keep", b"1")
    lakefs.commit()
    for path in ("keep", "p/1", "p/2", "q"):
        lakefs.upload(path, b"2")
    lakefs.branches.reset_branch(REPO, "main", ResetCreation(type="object", path="keep"))
    assert lakefs.read("main", "keep") == b"1"
    lakefs.branches.reset_branch(REPO, "main", ResetCreation(type="common_prefix", path="p/"))
    assert lakefs.ls() == ["keep", "q"]
    lakefs.branches.reset_branch(REPO, "main", ResetCreation(type="reset"))
    assert lakefs.ls() == ["keep"] and lakefs.branches.diff_branch(REPO, "main").results == []


def test_protected_branches_refuse_direct_changes_but_take_merges(lakefs):
    lakefs.upload("a", b"1")
    lakefs.commit()
    lakefs.branch("dev")
    lakefs.repos.set_branch_protection_rules(REPO, [BranchProtectionRule(pattern="ma*")])
    answer = lakefs.repos.get_branch_protection_rules_with_http_info(REPO)
    assert [r.pattern for r in answer.data] == ["ma*"]
    refused = [lambda: lakefs.upload("b", b"1"), lambda: lakefs.commit(allow_empty=True),
               lambda: lakefs.objects.delete_object(REPO, "main", "a"),
               lambda: lakefs.branches.reset_branch(REPO, "main", ResetCreation(type="reset"))]
    for call in refused:
        with pytest.raises(ForbiddenException):
            call()
    bulk = lakefs.objects.delete_objects(REPO, "main", PathList(paths=["a"]))
    assert [(e.path, e.status_code) for e in bulk.errors] == [("a", 403)]
    lakefs.upload("b", b"1", branch="dev")
    lakefs.commit("dev")
    lakefs.merge("dev")
    assert lakefs.read("main", "b") == b"1"
    with pytest.raises(ApiException) as stale:
        lakefs.repos.set_branch_protection_rules(REPO, [], if_match="stale")
    assert _status(stale) == 412
    lakefs.repos.set_branch_protection_rules(REPO, [], if_match=answer.headers["ETag"])
    lakefs.upload("c", b"1")


# --- errors, credentials, failures, threads -------------------------------------------------

def test_unknown_things_answer_404_with_lakefs_error_json(lakefs):
    with pytest.raises(NotFoundException) as repo:
        lakefs.repos.get_repository("nope")
    assert _message(repo) == "repository not found"
    for call in (lambda: lakefs.branches.get_branch(REPO, "nope"),
                 lambda: lakefs.read("main", "nope"),
                 lambda: lakefs.read("nope", "a"),
                 lambda: lakefs.upload("a", b"1", branch="nope")):
        with pytest.raises(NotFoundException):
            call()


def test_bad_or_missing_credentials_answer_401(double, tmp_path):
    wrong = Lakefs(double.endpoint, tmp_path, password="wrong")
    with pytest.raises(UnauthorizedException) as refused:
        wrong.repos.get_repository(REPO)
    assert _message(refused) == "error authenticating request"
    anonymous = lakefs_sdk.ApiClient(lakefs_sdk.Configuration(host=double.endpoint))
    with pytest.raises(UnauthorizedException):
        lakefs_sdk.RepositoriesApi(anonymous).list_repositories()
    lakefs_sdk.HealthCheckApi(anonymous).health_check()    # needs no credentials, as in lakeFS


def test_fail_next_injects_errors_and_calls_counts_requests(double, lakefs):
    lakefs.ls()
    double.fail_next(2, status=503)
    for _ in range(2):
        with pytest.raises(ServiceException) as failed:
            lakefs.ls()
        assert _status(failed) == 503
    assert lakefs.ls() == []
    assert double.calls["GET /repositories/{repository}/refs/{ref}/objects/ls"] == 4
    double.fail_next(status=429)
    with pytest.raises(ApiException) as throttled:
        lakefs.head()
    assert _status(throttled) == 429
    assert double.server_errors == []


def test_concurrent_writers_are_all_kept(lakefs, tmp_path):
    def write(n: int) -> None:
        writer = Lakefs(lakefs.client.configuration.host, tmp_path / f"w{n}")
        (tmp_path / f"w{n}").mkdir()
        for i in range(5):
            writer.upload(f"w{n}/{i}", bytes([n, i]))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lakefs.commit()
    assert len(lakefs.ls("main@", amount=1000)) == 30
