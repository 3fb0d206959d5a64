"""Backends of the versioned store, and :func:`open_store` to pick one from a URL or path."""
from __future__ import annotations

import os
from urllib.parse import unquote, urlparse

from kvmodel.store.contract import VersionedStore


def local_path(location: str | os.PathLike) -> str | None:
    """The directory of an embedded store at ``location`` (a path or a ``file://`` URL,
    unquoted as :func:`open_store` reads it); None for any other store (``lakefs://``).
    Not for table data locations, which Hadoop takes literally
    (:func:`hms_proxy.hms.warehouse.local_path`)."""
    target = os.fspath(location)
    parsed = urlparse(target)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return None if "://" in target else target


def lakefs_repository(location: str) -> str | None:
    """REPO of a ``lakefs://REPO`` store location, None for any other store; ValueError for a
    lakeFS URL that names more than a repository."""
    parsed = urlparse(location)
    if parsed.scheme != "lakefs":
        return None
    if not parsed.netloc or parsed.path.strip("/"):
        raise ValueError(f"a lakeFS store is lakefs://REPOSITORY, not {location!r}")
    return parsed.netloc


def open_store(url_or_path: str | os.PathLike, **lakefs_options) -> VersionedStore:
    """Open the store at ``url_or_path``.

    A plain directory path or a ``file://`` URL opens the embedded store
    (:class:`kvmodel.store.local.LocalStore`); ``lakefs://REPO`` the catalog in lakeFS
    repository REPO (:class:`kvmodel.store.lakefs.LakeFSStore`; endpoint and keys from
    ``LAKEFS_ENDPOINT``, ``LAKEFS_ACCESS_KEY_ID``, ``LAKEFS_SECRET_ACCESS_KEY`` or lakectl's
    configuration; ``lakefs_options``: keyword arguments of ``LakeFSStore``). Raises ValueError
    for any other scheme.
    """
    target = os.fspath(url_or_path)
    if not isinstance(target, str) or not target:
        raise ValueError(f"store location must be a non-empty path or URL, not {url_or_path!r}")
    parsed = urlparse(target)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"file URL must be local (file:///path), not {target!r}")
        target = unquote(parsed.path)
    elif parsed.scheme == "lakefs":
        repository = lakefs_repository(target)
        from kvmodel.store.lakefs import LakeFSStore

        return LakeFSStore(repository, **lakefs_options)
    elif "://" in target:
        raise ValueError(f"unsupported store URL {target!r}: use a directory path, "
                         "file:///path or lakefs://REPOSITORY")
    from kvmodel.store.local import LocalStore  # imported lazily, like optional backends

    return LocalStore(target)
