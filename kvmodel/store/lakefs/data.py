"""The table files the metastore itself manages on a branch (as HMS does): listing, deleting
and moving data objects."""
from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from kvmodel.store.contract import (
    BranchName,
    RefExpr,
)
from kvmodel.store.errors import (
    ProtectedRef,
    StoreError,
)
from kvmodel.store.lakefs.common import NOT_DATA, PAGE

# names listed beyond those expected in the first page of data_children (the siblings between
# the listing's start, the first name less its last character, and the first name)
CHILDREN_SLACK = 16
COPIES_AT_ONCE = 8  # lakeFS copy calls of one move in flight together (within lakefs-sdk's
# connection pool: 5 per core)


class DataObjects:
    """Methods of :class:`~kvmodel.store.lakefs.LakeFSStore` (see the package doc)."""

    @staticmethod
    def _data_path(path: str) -> str:
        path = path.lstrip("/")
        if path.startswith(NOT_DATA) or path.rstrip("/") + "/" in NOT_DATA:
            raise StoreError(f"{path!r} is the catalog's, not a data location")
        return path

    def data_object(self, ref: RefExpr, path: str) -> bytes:
        """The bytes of one object outside the catalog at ``ref`` (RefNotFound when none)."""
        return bytes(self.api(self.api.objects.get_object, ref, self._data_path(path)))

    def data_objects(self, branch: BranchName, directory: str) -> Iterator[tuple[str, int]]:
        """(path, size) of the objects under ``directory/`` on ``branch``."""
        for path, size, _ in self.data_listing(branch, directory):
            yield path, size

    def data_listing(self, branch: RefExpr, directory: str) -> Iterator[tuple[str, int, int]]:
        """(path, size, modification time in seconds since the epoch) of the objects under
        ``directory/`` at ``branch`` (staged ones included)."""
        prefix = self._data_path(directory).rstrip("/") + "/"
        for o in self._paged(self.api.objects.list_objects, branch, prefix=prefix, delimiter=""):
            if o.path_type == "object":
                yield o.path, o.size_bytes or 0, o.mtime or 0

    def data_exists(self, branch: RefExpr, directory: str) -> bool:
        """Whether any object is under ``directory/`` at ``branch``: a listing of one (a page of
        1,000 objects of a large table's directory costs lakeFS as much as 1,000)."""
        prefix = self._data_path(directory).rstrip("/") + "/"
        page = self.api(self.api.objects.list_objects, branch, prefix=prefix, delimiter="",
                        amount=1)
        return any(o.path_type == "object" for o in page.results)

    def data_children(self, branch: RefExpr, directory: str, first: str,
                      last: str, expect: int = PAGE) -> Iterator[str]:
        """The paths of the objects and subdirectories right under ``directory/`` at
        ``branch`` whose names lie between ``first`` and ``last`` (paths under
        ``directory``): a listing by ``/`` from just before ``first``, stopped past ``last``.

        ``expect``: about how many there are. lakeFS makes a whole page before it answers,
        and a page of subdirectories costs it about a millisecond each on a branch with many
        uncommitted objects, so the first page asks for about that many (a table of 30,000
        partitions listed 1,000 directories, a second of lakeFS's time, for one
        ``add_partition``) and the next ones four times more, up to lakeFS's largest."""
        prefix = self._data_path(directory).rstrip("/") + "/"
        start, stop = self._data_path(first), self._data_path(last)
        after = start[:-1] if start else ""  # lakeFS lists strictly after this
        amount = max(1, min(PAGE, expect + CHILDREN_SLACK))
        while True:
            page = self.api(self.api.objects.list_objects, branch, prefix=prefix, delimiter="/",
                            after=after, amount=amount)
            for o in page.results:
                if o.path > stop + "/":  # lakeFS's order: past the last one's directory
                    return
                yield o.path.rstrip("/")
            if not page.pagination.has_more:
                return
            after = page.pagination.next_offset
            amount = min(PAGE, amount * 4)

    def delete_data_paths(self, branch: BranchName, paths: list[str]) -> int:
        """Delete these data objects on ``branch`` (uncommitted); how many."""
        self._check_open()
        if self._protected(branch):
            raise ProtectedRef(f"branch {branch!r} is protected")
        paths = [self._data_path(p) for p in paths]
        for i in range(0, len(paths), PAGE):
            self.api(self.api.objects.delete_objects, branch,
                     self.api.sdk.PathList(paths=paths[i:i + PAGE]))
        return len(paths)

    def uncommitted(self, branch: BranchName, besides: tuple[str, ...] = ()) -> bool:
        """Whether ``branch`` has any uncommitted change: catalog keys or data objects (other
        than the objects ``besides``)."""
        return (next(iter(self.staged(branch)), None) is not None
                or self._data_staged(branch, besides))

    def delete_data(self, branch: BranchName, directory: str) -> int:
        """Delete everything under ``directory/`` on ``branch`` (uncommitted, as a client's
        deletes are); how many objects."""
        self._check_open()
        if self._protected(branch):
            raise ProtectedRef(f"branch {branch!r} is protected")
        paths = [p for p, _ in self.data_objects(branch, directory)]
        for i in range(0, len(paths), PAGE):
            self.api(self.api.objects.delete_objects, branch,
                     self.api.sdk.PathList(paths=paths[i:i + PAGE]))
        return len(paths)

    def staged_data(self, branch: BranchName, prefix: str) -> set[str]:
        """The data objects under ``prefix`` added on ``branch`` and not committed yet."""
        prefix = self._data_path(prefix)
        return {e.path for e in self._paged(self.api.branches.diff_branch, branch, prefix=prefix)
                if e.type == "added" and e.path_type == "object"}

    def copy_data(self, src_ref: BranchName, branch: BranchName, paths: list[str]) -> None:
        """Copy objects of ``src_ref`` to the same paths on ``branch`` (metadata only),
        :data:`COPIES_AT_ONCE` at a time."""
        self._check_open()
        if self._protected(branch):
            raise ProtectedRef(f"branch {branch!r} is protected")

        def copy(path):
            self.api(self.api.objects.copy_object, branch, self._data_path(path),
                     self.api.sdk.ObjectCopyCreation(src_path=self._data_path(path),
                                                     src_ref=src_ref))

        with ThreadPoolExecutor(max(1, min(COPIES_AT_ONCE, len(paths))),
                                thread_name_prefix="lakefs-copy") as pool:
            for _ in pool.map(copy, paths):
                pass

    def move_data(self, branch: BranchName, src: str, dst: str) -> int:
        """Move the objects under ``src/`` to ``dst/`` on ``branch`` (lakeFS copies are
        metadata only: no data is read or written); how many objects. lakeFS copies one object
        per call, so the copies go :data:`COPIES_AT_ONCE` at a time (a table of 1,000
        partitions renamed: 18 s one by one here, a few seconds so)."""
        self._check_open()
        if self._protected(branch):
            raise ProtectedRef(f"branch {branch!r} is protected")
        src_dir = self._data_path(src).rstrip("/") + "/"
        dst_dir = self._data_path(dst).rstrip("/") + "/"
        paths = [p for p, _ in self.data_objects(branch, src_dir)]

        def copy(path):
            self.api(self.api.objects.copy_object, branch, dst_dir + path[len(src_dir):],
                     self.api.sdk.ObjectCopyCreation(src_path=path, src_ref=branch))

        if len(paths) <= 1:
            for path in paths:
                copy(path)
        else:
            with ThreadPoolExecutor(min(COPIES_AT_ONCE, len(paths)),
                                    thread_name_prefix="lakefs-copy") as pool:
                for _ in pool.map(copy, paths):  # the first failure is raised
                    pass
        for i in range(0, len(paths), PAGE):
            self.api(self.api.objects.delete_objects, branch,
                     self.api.sdk.PathList(paths=paths[i:i + PAGE]))
        return len(paths)
