"""Where a statistics set's files are read from: a local directory, or objects of a lakeFS
repository through its S3 gateway.

On a ``lakefs://`` store, sets are written beside the data through the tables' ``s3a://REPO/
<branch>/...`` locations, and their pointers keep the path ref-free like every location
(``lakefs://REPO/@/warehouse/t/_stats/ds=a/<id>``): a set is read at the ref its pointer was read
at (:func:`at_ref`), where pointer and files were committed (or staged) together. Other URIs are
pyarrow's (``s3://``, ``gs://``, ``hdfs://``...); ``s3a://`` and ``s3://`` go to lakeFS's gateway
when lakeFS is configured (``LAKEFS_*`` or ``~/.lakectl.yaml``).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from typing import Callable

from hms_proxy.hms.warehouse import local_path
from kvmodel.store.lakefs import LakeFSConfig

_LOCK = threading.Lock()
_S3: dict = {}


def at_ref(set_path: str, view) -> str:
    """``set_path`` with a ref-free lakeFS path (``lakefs://REPO/@/...``) pinned to the ref of
    ``view`` (a store ReadView): its branch, else its commit."""
    ref = getattr(view, "ref", None)
    name = (getattr(ref, "branch", None) or getattr(ref, "commit", None) or "main") \
        if ref is not None else "main"
    return on_ref(set_path, name)


def on_ref(path: str, ref: str) -> str:
    """A ref-free lakeFS path (``lakefs://REPO/@/...``) at ``ref`` (a branch or commit); any
    other path as it is."""
    if not path.startswith("lakefs://") or "/@/" not in path:
        return path
    repo, _, rest = path[len("lakefs://"):].partition("/@/")
    return f"lakefs://{repo}/{ref}/{rest}"


def _lakefs_s3():
    """pyarrow's S3 file system over lakeFS's S3 gateway (path-style), once per endpoint."""

    config = LakeFSConfig.discover()
    with _LOCK:
        fs = _S3.get(config)
        if fs is None:
            from pyarrow import fs as pafs

            endpoint = config.endpoint.removesuffix("/api/v1")
            scheme, _, host = endpoint.partition("://")
            fs = _S3[config] = pafs.S3FileSystem(
                access_key=config.access_key_id, secret_key=config.secret_access_key,
                endpoint_override=host, scheme=scheme or "http", region="us-east-1",
                force_virtual_addressing=False)
        return fs


def _lakefs_configured() -> bool:
    if os.environ.get("LAKEFS_ENDPOINT"):
        return True
    path = os.environ.get("LAKECTL_CONFIG") or os.path.expanduser("~/.lakectl.yaml")
    return os.path.exists(path)


def lakefs_gateway(location: str) -> dict | None:
    """lakeFS's S3 gateway (``endpoint``, ``access_key_id``, ``secret_access_key``) when
    ``location`` is read through it (``s3a://`` or ``s3://`` with lakeFS configured, as
    :func:`locate` reads them), else None: for the readers that take their own S3 settings
    (pyiceberg's file IO, deltalake)."""
    if not location or not location.startswith(("s3a://", "s3://")) or \
            not _lakefs_configured():
        return None
    config = LakeFSConfig.discover()
    return {"endpoint": config.endpoint.removesuffix("/api/v1"),
            "access_key_id": config.access_key_id,
            "secret_access_key": config.secret_access_key}


def locate(path: str):
    """(pyarrow file system or None for a local path, the path within it)."""

    local = local_path(path)
    if local is not None:
        return None, local
    if path.startswith("lakefs://"):
        repo, _, rest = path[len("lakefs://"):].partition("/")
        ref, _, key = rest.partition("/")
        return _lakefs_s3(), f"{repo}/{'main' if ref == '@' else ref}/{key}"
    if path.startswith(("s3a://", "s3://")) and _lakefs_configured():
        return _lakefs_s3(), path.split("://", 1)[1]
    from pyarrow import fs as pafs

    if path.startswith("s3a://"):  # Hadoop's name of S3; pyarrow knows it as s3
        path = "s3://" + path[len("s3a://"):]
    return pafs.FileSystem.from_uri(path)


def open_input(path: str):
    """What ``pyarrow.parquet.ParquetFile`` opens for ``path``."""
    fs, inner = locate(path)
    return inner if fs is None else fs.open_input_file(inner)


def exists(path: str) -> bool:
    fs, inner = locate(path)
    if fs is None:
        return os.path.exists(inner)
    from pyarrow import fs as pafs

    return fs.get_file_info(inner).type != pafs.FileType.NotFound


def write_set_files(target: str, write: Callable[[str], None]) -> str:
    """Write a new set at ``target`` (``<location>/_stats/<partition>/<id>``, any location
    :func:`locate` reaches): ``write(directory)`` writes its files into a local directory that
    does not exist yet; they are then placed at ``target`` whole. Local: the directory is a
    hidden temporary sibling renamed into place. Elsewhere (lakeFS, S3...): the files are
    uploaded one object each under ``target``; nothing refers to the set until its pointer is
    recorded, after this returns. Returns ``target``."""
    fs, inner = locate(target)
    if fs is None:
        parent, name = os.path.split(inner.rstrip("/"))
        os.makedirs(parent, exist_ok=True)
        tmp = os.path.join(parent, f".{name}.tmp")
        try:
            write(tmp)
            os.rename(tmp, inner)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target
    with tempfile.TemporaryDirectory(prefix="hms-stats-") as tmp:
        local = os.path.join(tmp, "set")
        write(local)
        for name in sorted(os.listdir(local)):
            with open(os.path.join(local, name), "rb") as src, \
                    fs.open_output_stream(f"{inner.rstrip('/')}/{name}") as out:
                shutil.copyfileobj(src, out, 8 << 20)
    return target


__all__ = ["at_ref", "on_ref", "lakefs_gateway", "locate", "open_input", "exists", "write_set_files"]
