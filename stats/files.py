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
import threading

from hms_proxy.hms.warehouse import local_path
from kvmodel.store.lakefs import LakeFSConfig

_LOCK = threading.Lock()
_S3: dict = {}


def at_ref(set_path: str, view) -> str:
    """``set_path`` with a ref-free lakeFS path (``lakefs://REPO/@/...``) pinned to the ref of
    ``view`` (a store ReadView): its branch, else its commit."""
    if not set_path.startswith("lakefs://") or "/@/" not in set_path:
        return set_path
    ref = getattr(view, "ref", None)
    name = (getattr(ref, "branch", None) or getattr(ref, "commit", None) or "main") \
        if ref is not None else "main"
    repo, _, rest = set_path[len("lakefs://"):].partition("/@/")
    return f"lakefs://{repo}/{name}/{rest}"


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


__all__ = ["at_ref", "locate", "open_input", "exists"]
