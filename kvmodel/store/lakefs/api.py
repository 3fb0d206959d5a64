"""lakeFS's API as the store calls it: configuration, lakefs-sdk with lakeFS's errors translated
into the store's, and uploads over kept-alive connections of our own."""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlsplit

from kvmodel.store.errors import (
    DirtyBranch,
    InvalidRef,
    NothingToCommit,
    ProtectedRef,
    RefExists,
    RefNotFound,
    StoreError,
)
from kvmodel.store.lakefs.common import CONNECT_TIMEOUT, READ_TIMEOUT


class PathTaken(StoreError):
    """An upload made only if no object is at its path found one there."""


class LakeFSError(StoreError):
    """lakeFS answered something the store cannot map to a catalog error."""


class LakeFSUnreachable(LakeFSError):
    """lakeFS gave no answer (refused, dropped or timed out): an upload may have landed or
    not."""


class LakeFSTimeout(LakeFSUnreachable):
    """An upload's answer did not come within the read timeout: it may have landed or not."""


@dataclass(frozen=True)
class LakeFSConfig:
    """Where lakeFS is and who we are to it."""
    endpoint: str  # e.g. http://localhost:8000/api/v1
    access_key_id: str
    secret_access_key: str

    @classmethod
    def discover(cls, environ=None) -> "LakeFSConfig":
        """From ``LAKEFS_ENDPOINT``, ``LAKEFS_ACCESS_KEY_ID``, ``LAKEFS_SECRET_ACCESS_KEY``,
        else lakectl's configuration file (``LAKECTL_CONFIG`` or ``~/.lakectl.yaml``:
        ``server.endpoint_url``, ``credentials.access_key_id``/``secret_access_key``)."""
        env = os.environ if environ is None else environ
        endpoint = env.get("LAKEFS_ENDPOINT")
        key = env.get("LAKEFS_ACCESS_KEY_ID")
        secret = env.get("LAKEFS_SECRET_ACCESS_KEY")
        if not (endpoint and key and secret):
            path = env.get("LAKECTL_CONFIG") or os.path.expanduser("~/.lakectl.yaml")
            found = _read_lakectl(path) if os.path.exists(path) else {}
            endpoint = endpoint or found.get("endpoint")
            key = key or found.get("access_key_id")
            secret = secret or found.get("secret_access_key")
        if not (endpoint and key and secret):
            raise StoreError("lakeFS is not configured: set LAKEFS_ENDPOINT, "
                             "LAKEFS_ACCESS_KEY_ID and LAKEFS_SECRET_ACCESS_KEY (or write "
                             "~/.lakectl.yaml with lakectl config)")
        endpoint = endpoint.rstrip("/")
        if not endpoint.endswith("/api/v1"):
            endpoint += "/api/v1"
        return cls(endpoint, key, secret)


def _read_lakectl(path: str) -> dict:
    """The few fields of a lakectl YAML file (two-level ``section:``/``key: value`` lines; no
    YAML library needed)."""
    out, section = {}, None
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip())
            name, _, value = line.strip().partition(":")
            value = value.strip().strip("'\"")
            if indent == 0:
                section = name
                continue
            if section == "server" and name == "endpoint_url":
                out["endpoint"] = value
            elif section == "credentials" and name in ("access_key_id", "secret_access_key"):
                out[name] = value
    return out


class _Api:
    """lakefs-sdk's API objects over one client, and the error translation."""

    def __init__(self, config: LakeFSConfig, repository: str):
        try:
            import lakefs_sdk
        except ImportError:
            raise StoreError("the lakeFS backend needs lakefs-sdk: pip install "
                             "'hms-proxy[lakefs]'") from None
        conf = lakefs_sdk.Configuration(host=config.endpoint, username=config.access_key_id,
                                        password=config.secret_access_key)
        try:  # a refused connection is tried again shortly; a call that got no answer is not
            from urllib3 import Retry

            conf.retries = Retry(total=2, connect=2, read=0, status=0, redirect=0,
                                 backoff_factor=0.2)
        except ImportError:  # pragma: no cover - lakefs-sdk brings urllib3
            pass
        # a lakeFS that accepts but does not answer (hung, overloaded) fails the call within
        # seconds, before the metastore clients' own timeouts (Trino's is 10 s)
        self.timeout = (CONNECT_TIMEOUT, READ_TIMEOUT)
        self.client = lakefs_sdk.ApiClient(conf)
        self.sdk = lakefs_sdk
        self.repo = repository
        self.branches = lakefs_sdk.BranchesApi(self.client)
        self.commits = lakefs_sdk.CommitsApi(self.client)
        self.objects = lakefs_sdk.ObjectsApi(self.client)
        self.refs = lakefs_sdk.RefsApi(self.client)
        self.tags = lakefs_sdk.TagsApi(self.client)
        self.repos = lakefs_sdk.RepositoriesApi(self.client)
        self.calls = 0
        self._uploads = _Connections(config, self.timeout)
        self._fast = {lakefs_sdk.ObjectsApi.list_objects: _Api._list_objects,
                      lakefs_sdk.ObjectsApi.stat_object: _Api._stat_object}

    def __call__(self, fn, *args, not_found=RefNotFound, **kwargs):
        """``fn(repo, *args, **kwargs)`` with lakeFS's errors as store errors. Listings and
        stats of objects, the calls of every read and refresh, go over our own connections
        (:meth:`_list_objects`, :meth:`_stat_object`)."""
        from lakefs_sdk.exceptions import ApiException

        fast = self._fast.get(getattr(fn, "__func__", None))
        if fast is not None:
            kwargs.pop("_request_timeout", None)
            return fast(self, *args, not_found=not_found, **kwargs)
        self.calls += 1
        kwargs.setdefault("_request_timeout", self.timeout)
        try:
            return fn(self.repo, *args, **kwargs)
        except ApiException as exc:
            raise _translate(exc, not_found) from None
        except _UNREACHABLE as exc:  # connection refused, reset, retries exhausted...
            raise LakeFSError(f"lakeFS is not reachable at {self.client.configuration.host}: "
                              f"{_reason(exc)}") from None

    def _get(self, target: str, not_found):
        self.calls += 1
        status, reason, body = self._uploads.request(
            "GET", target, None, {"Authorization": self._uploads.auth,
                                  "Accept": "application/json"})
        if status != 200:
            raise _translate(_Failure(status, reason, body), not_found)
        return json.loads(body)

    def _list_objects(self, ref: str, *, after: str = "", amount: int | None = None,
                      prefix: str | None = None, delimiter: str | None = None,
                      user_metadata: bool | None = None, not_found=RefNotFound):
        """lakeFS's listObjects, its answer as plain objects: lakefs-sdk's models of a page
        of 1,000 objects cost more than lakeFS's answer (a refresh lists the branch's log
        every 0.25 s)."""
        query = {"after": after or "", "amount": amount, "prefix": prefix,
                 "delimiter": delimiter,
                 "user_metadata": None if user_metadata is None else str(user_metadata).lower()}
        target = (f"{self._uploads.base}/repositories/{quote(self.repo, safe='')}/refs/"
                  f"{quote(ref, safe='')}/objects/ls?" + urlencode(
                      {k: v for k, v in query.items() if v is not None}))
        return _Page(self._get(target, not_found))

    def _stat_object(self, ref: str, path: str, *, user_metadata: bool | None = None,
                     presign: bool | None = None, not_found=RefNotFound):
        query = {"path": path}
        if user_metadata is not None:
            query["user_metadata"] = str(user_metadata).lower()
        target = (f"{self._uploads.base}/repositories/{quote(self.repo, safe='')}/refs/"
                  f"{quote(ref, safe='')}/objects/stat?" + urlencode(query))
        return _Stats(self._get(target, not_found))

    def upload(self, branch: str, path: str, content: bytes, headers: dict | None = None):
        """POST the object's bytes as ``application/octet-stream``, over a kept-alive
        connection of our own: the write path's one call (a log entry), where lakefs-sdk's
        request and answer models cost more than lakeFS itself (~1.5 ms of ~3 ms here). The
        answer (the object's stats) is not read. Uploading the same bytes again is harmless
        (every path we write is unique or holds one value), so a kept-alive connection that
        lakeFS closed meanwhile is retried at once, and a refused one shortly, like the
        SDK's other calls."""
        target = (f"{self._uploads.base}/repositories/{quote(self.repo, safe='')}/branches/"
                  f"{quote(branch, safe='')}/objects?path={quote(path, safe='')}")
        header_params = {"Authorization": self._uploads.auth, "Accept": "application/json",
                         "Content-Type": "application/octet-stream", **(headers or {})}
        self.calls += 1
        status, reason, body = self._uploads.post(target, bytes(content), header_params)
        if status == 412:  # If-None-Match: * and the path is taken
            raise PathTaken(f"{path} exists on {branch}")
        if status != 201:
            raise _translate(_Failure(status, reason, body), RefNotFound)
        return body

    def upload_new(self, branch: str, path: str, content: bytes,
                   headers: dict | None = None) -> str:
        """Upload to ``path`` only if no object is there (lakeFS's ``If-None-Match: *``,
        atomic): :class:`PathTaken` when another is; the object's checksum. An upload retried on
        a new connection may find its own first attempt there: that is this upload, not
        another's (no two of our log objects hold the same bytes)."""
        digest = hashlib.md5(content).hexdigest()
        try:
            body = self.upload(branch, path, content, {**(headers or {}), "If-None-Match": "*"})
        except PathTaken:
            try:
                there = self(self.objects.stat_object, branch, path)
            except RefNotFound:
                raise PathTaken(f"{path} exists on {branch}") from None
            if there.checksum != digest:
                raise
            return there.checksum
        try:
            return json.loads(body).get("checksum") or digest
        except ValueError:
            return digest

    def close(self) -> None:
        self._uploads.close()
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing a pool that never opened
            pass


class _Failure(Exception):
    """An error status of lakeFS, as lakefs-sdk's ApiException carries it (for _translate)."""

    def __init__(self, status: int, reason: str, body: bytes):
        super().__init__(f"{status} {reason}")
        self.status, self.reason = status, reason
        self.body = body.decode("utf-8", "replace")


class _Stats:
    """An object's stats as lakeFS answers them (the fields the store reads)."""

    __slots__ = ("checksum", "metadata", "mtime", "path", "path_type", "physical_address",
                 "size_bytes")

    def __init__(self, raw: dict):
        self.path = raw.get("path", "")
        self.path_type = raw.get("path_type", "object")
        self.checksum = raw.get("checksum", "")
        self.mtime = raw.get("mtime", 0)
        self.metadata = raw.get("metadata") or {}
        self.physical_address = raw.get("physical_address", "")
        self.size_bytes = raw.get("size_bytes")


class _Pagination:
    __slots__ = ("has_more", "next_offset")

    def __init__(self, raw: dict):
        self.has_more = bool(raw.get("has_more"))
        self.next_offset = raw.get("next_offset") or ""


class _Page:
    __slots__ = ("pagination", "results")

    def __init__(self, raw: dict):
        self.results = [_Stats(r) for r in raw.get("results") or []]
        self.pagination = _Pagination(raw.get("pagination") or {})


class _Connections:
    """Kept-alive HTTP connections to lakeFS for uploads, a few idle ones kept for reuse."""

    IDLE = 16
    REFUSED_RETRIES = (0.2, 0.4)  # seconds before each retry of a refused connection

    def __init__(self, config: "LakeFSConfig", timeout: tuple[float, float]):
        url = urlsplit(config.endpoint)
        self.https = url.scheme == "https"
        self.host, self.port = url.hostname or "localhost", url.port
        self.base = url.path.rstrip("/")
        self.endpoint = config.endpoint
        token = f"{config.access_key_id}:{config.secret_access_key}".encode()
        self.auth = "Basic " + base64.b64encode(token).decode("ascii")
        self.connect_timeout, self.read_timeout = timeout
        self._idle: list = []
        self._lock = threading.Lock()

    def _new(self):
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port,
                                               timeout=self.connect_timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=self.connect_timeout)

    def post(self, target: str, body: bytes, headers: dict) -> tuple[int, str, bytes]:
        return self.request("POST", target, body, headers)

    def request(self, method: str, target: str, body: bytes | None,
                headers: dict) -> tuple[int, str, bytes]:
        waits = list(self.REFUSED_RETRIES)
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            reused = conn is not None
            conn = conn or self._new()
            try:
                if conn.sock is None:
                    conn.connect()
                conn.sock.settimeout(self.read_timeout)
                conn.request(method, target, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except ConnectionRefusedError as exc:  # lakeFS (re)starting
                conn.close()
                if waits:
                    time.sleep(waits.pop(0))
                    continue
                raise self._unreachable(exc) from None
            except (http.client.RemoteDisconnected, BrokenPipeError,
                    ConnectionResetError) as exc:
                conn.close()
                if reused:  # lakeFS closed kept-alive connections meanwhile: a new one
                    self.close()
                    continue
                raise self._unreachable(exc) from None
            except (OSError, http.client.HTTPException) as exc:  # timed out, and the rest
                conn.close()
                if isinstance(exc, TimeoutError):
                    raise LakeFSTimeout(str(self._unreachable(exc))) from None
                raise self._unreachable(exc) from None
            if not response.will_close:
                with self._lock:
                    if len(self._idle) < self.IDLE:
                        self._idle.append(conn)
                        conn = None
            if conn is not None:
                conn.close()
            return response.status, response.reason, data

    def _unreachable(self, exc) -> "LakeFSError":
        return LakeFSUnreachable(f"lakeFS is not reachable at {self.endpoint}: {_reason(exc)}")

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


try:
    from urllib3.exceptions import HTTPError as _Urllib3Error
except ImportError:  # pragma: no cover - lakefs-sdk brings urllib3
    _Urllib3Error = OSError
_UNREACHABLE = (OSError, _Urllib3Error)


def _reason(exc) -> str:
    reason = getattr(exc, "reason", None) or exc
    return str(reason).splitlines()[0][:300]


def _message(exc) -> str:
    import json

    body = getattr(exc, "body", None)
    if body:
        try:
            return str(json.loads(body).get("message") or body).strip()
        except (ValueError, AttributeError):
            return str(body).strip()
    return str(getattr(exc, "reason", "") or exc).strip()


def _translate(exc, not_found):
    status = getattr(exc, "status", None)
    text = _message(exc)
    if status == 404:
        return not_found(text or "not found")
    if status == 409:
        return RefExists(text) if "exist" in text.lower() else LakeFSError(f"conflict: {text}")
    if status == 403:
        return ProtectedRef(text)
    if status == 400:
        lowered = text.lower()
        if "no changes" in lowered:
            return NothingToCommit(text)
        if "uncommitted" in lowered or "dirty" in lowered:
            return DirtyBranch(text)
        return InvalidRef(text)
    if status == 401:
        return LakeFSError(f"lakeFS refused our credentials: {text}")
    return LakeFSError(f"lakeFS answered {status}: {text}")
