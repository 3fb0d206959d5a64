"""A real lakeFS on this machine, built from its Go module (no Docker, no prebuilt binary).

``ensure_lakefs()`` fetches ``github.com/treeverse/lakefs@VERSION`` with ``go mod download``
(``go install`` refuses a module whose go.mod has ``replace`` directives), copies it to a
writable directory, builds ``lakefs`` and ``lakectl`` there and caches them in
``~/.cache/hms-proxy/lakefs/VERSION/`` (``$XDG_CACHE_HOME`` honoured; Go's downloads in
``~/.cache/hms-proxy/go``). The first build takes minutes; later calls return at once. A file
lock makes concurrent callers build once; the binaries appear by an atomic rename.

``start_lakefs()`` runs one server on 127.0.0.1 (a free port) with a generated configuration:
metadata in a local KV store and objects in a local directory under its work directory, an
admin key set up at first start (no interactive setup), the S3 gateway on the same port,
statistics and outbound checks off. ``python -m hms_proxy.tools.lakefs_local`` runs one until
Ctrl-C, for demos.
"""
from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from hms_proxy.tools import ports

MODULE = "github.com/treeverse/lakefs"
DEFAULT_VERSION = "v1.84.1"  # >= v1.77.0: generated code is committed, a plain `go build` works
GO_FALLBACKS = ("/usr/local/go/bin/go",)  # where Go's own tarball installs it, often off PATH
MIN_GO = (1, 21)  # older Go cannot fetch the toolchain the module's go.mod asks for (1.26)
# Fixed credentials of the local server (loopback only): a reused work directory keeps the
# admin user set up at its first start, and stored secrets encrypted with ENCRYPT_KEY.
USER_NAME = "hms-proxy"
ACCESS_KEY_ID = "AKIAIOSFOLHMSPROXY00"  # 20 characters, like an AWS access key id
SECRET_ACCESS_KEY = "hmsproxyLocalLakeFS/secretAccessKey+0001"  # 40 characters
ENCRYPT_KEY = "hms-proxy-local-lakefs-encrypt-key"
SIGNING_KEY = "hms-proxy-local-lakefs-signing-key"
S3_DOMAIN = "s3.local.lakefs.io"
S3_REGION = "us-east-1"


def _say(msg: str) -> None:
    print(f"lakefs_local: {msg}", file=sys.stderr, flush=True)


# --- building --------------------------------------------------------------------------------
@dataclass(frozen=True)
class LakeFSBinaries:
    lakefs: Path
    lakectl: Path
    version: str


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hms-proxy"


def find_go() -> str:
    """The go command, or RuntimeError with a one-line hint."""
    need = f"the real lakeFS is built from its Go module and needs Go >= {MIN_GO[0]}.{MIN_GO[1]}"
    go = shutil.which("go") or next((p for p in GO_FALLBACKS if os.access(p, os.X_OK)), None)
    if go is None:
        raise RuntimeError(f"{need}, not found: apt-get install golang-go or set PATH")
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()
    digits = out.removeprefix("go").split(".")[:2]
    if not all(d.isdigit() for d in digits) or tuple(map(int, digits)) < MIN_GO:
        raise RuntimeError(f"{need}, {go} is {out or 'unknown'}: install a newer Go or set PATH")
    return go


def _go_env(go_root: Path) -> dict:
    env = dict(os.environ, GOPATH=str(go_root), GOMODCACHE=str(go_root / "pkg" / "mod"),
               CGO_ENABLED="0")
    # -mod=mod: go.sum may be completed; -buildvcs=false: the copy is no checkout of anything.
    env["GOFLAGS"] = " ".join(filter(None, [env.get("GOFLAGS"), "-mod=mod", "-buildvcs=false"]))
    env.setdefault("GOTOOLCHAIN", "auto")  # an older Go fetches the one go.mod asks for
    return env


def _rmtree(path: Path) -> None:
    """Remove a tree that may hold read-only directories (a copy of the module cache)."""
    for d, _dirs, _files in os.walk(path):
        os.chmod(d, 0o755)
    shutil.rmtree(path, ignore_errors=True)


def ensure_lakefs(version: str = DEFAULT_VERSION) -> LakeFSBinaries:
    """The lakefs and lakectl binaries of ``version``, built on first use (minutes)."""
    root = cache_root() / "lakefs"
    out = root / version
    bins = LakeFSBinaries(out / "lakefs", out / "lakectl", version)
    if bins.lakefs.exists() and bins.lakectl.exists():
        return bins
    go = find_go()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it: wait for it
        if bins.lakefs.exists() and bins.lakectl.exists():
            return bins
        for stale in root.glob(f".build-{version}-*"):  # left by a killed build
            _rmtree(stale)
        started = time.monotonic()
        env = _go_env(cache_root() / "go")
        _say(f"downloading {MODULE}@{version}")
        got = subprocess.run([go, "mod", "download", "-json", f"{MODULE}@{version}"], env=env,
                             capture_output=True, text=True, cwd=root)
        info = json.loads(got.stdout) if got.stdout.strip() else {}
        if got.returncode != 0 or info.get("Error") or not info.get("Dir"):
            raise RuntimeError(f"go mod download {MODULE}@{version} failed: "
                               f"{info.get('Error') or got.stderr.strip()}")
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{version}-", dir=root))
        try:
            src = tmp / "src"
            shutil.copytree(info["Dir"], src, copy_function=shutil.copyfile)
            for d, _dirs, _files in os.walk(src):  # the module cache's directories are 0555
                os.chmod(d, 0o755)
            jobs = str(max(1, min(os.cpu_count() or 1, 4)))  # bounds the compilers' memory
            ldflags = f"-s -w -X {MODULE}/pkg/version.Version={version}"
            _say(f"building lakefs and lakectl {version} (downloads and compiles: several "
                 "minutes the first time)")
            proc = subprocess.Popen([go, "build", "-trimpath", "-p", jobs, "-ldflags", ldflags,
                                     "-o", f"{tmp / 'bin'}/", "./cmd/lakefs", "./cmd/lakectl"],
                                    cwd=src, env=env, stdout=subprocess.PIPE, text=True,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                while True:
                    try:
                        output, _ = proc.communicate(timeout=60)
                        break
                    except subprocess.TimeoutExpired:
                        _say(f"still building ({time.monotonic() - started:.0f} s)")
            except BaseException:  # Ctrl-C: stop go and its compilers too
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise
            if proc.returncode != 0:
                raise RuntimeError(f"go build of lakeFS {version} failed:\n{output[-4000:]}")
            os.rename(tmp / "bin", out)  # atomic: readers see both binaries or none
        finally:
            _rmtree(tmp)
        _say(f"built lakeFS {version} in {time.monotonic() - started:.0f} s: {out}")
    return bins


# --- running ---------------------------------------------------------------------------------
def lakefs_config(workdir: Path, port: int, range_entries: int | None = None,
                  batch_delay: str | None = None) -> str:
    """The server's YAML configuration (JSON strings are YAML strings). Only keys lakeFS
    knows: it reads the file with viper's UnmarshalExact and refuses unknown ones.
    ``range_entries``: Graveler's ``committed.permanent.range_raggedness_entries`` (the mean
    entries of a range between content-defined boundaries; lakeFS's default 50,000, below
    which its 20 MB range cap usually cuts first). ``batch_delay``: Graveler's
    ``max_batch_delay``, how long lakeFS holds a branch or commit lookup to serve concurrent
    ones with it (a Go duration; lakeFS's default 3ms, paid by every call, several times by an
    upload)."""
    q = json.dumps
    w = Path(workdir)
    permanent = "" if range_entries is None else \
        f", permanent: {{range_raggedness_entries: {int(range_entries)}}}"
    graveler = "" if batch_delay is None else \
        f"graveler: {{max_batch_delay: {q(check_duration(batch_delay))}}}\n"
    return f"""\
listen_address: {q(f"127.0.0.1:{port}")}
logging: {{format: text, level: INFO, output: "-"}}
database: {{type: local, local: {{path: {q(str(w / "metadata"))}}}}}
blockstore:
  type: local
  signing: {{secret_key: {q(SIGNING_KEY)}}}
  local: {{path: {q(str(w / "data"))}, import_enabled: true,
          allowed_external_prefixes: [{q(str(w / "imports"))}]}}
committed: {{local_cache: {{dir: {q(str(w / "cache"))}}}{permanent}}}
{graveler}auth: {{encrypt: {{secret_key: {q(ENCRYPT_KEY)}}}}}
installation: {{user_name: {q(USER_NAME)}, access_key_id: {q(ACCESS_KEY_ID)},
               secret_access_key: {q(SECRET_ACCESS_KEY)}}}
gateways: {{s3: {{domain_name: {q(S3_DOMAIN)}, region: {q(S3_REGION)}}}}}
stats: {{enabled: false}}
email_subscription: {{enabled: false}}
security: {{check_latest_version: false, audit_check_url: "http://127.0.0.1:1/audit",
           audit_check_interval: 8760h}}
"""
# what docs/lakefs.md ("Speed") recommends for a lakeFS serving hms-proxy (make demo uses it;
# the tests and the bench's default use lakeFS's own settings)
RECOMMENDED = {"range_entries": 500, "batch_delay": "0s"}
BATCH_DELAY_HELP = ("lakeFS's graveler.max_batch_delay: how long it holds a branch lookup to "
                    "batch it with others (a Go duration such as 0 or 500us; lakeFS's default "
                    "3ms, waited by every call)")
_DURATION = re.compile(r"(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+|0")


def check_duration(text: str) -> str:
    """``text`` if it is a Go duration (``0``, ``500us``, ``3ms``, ``1.5s``), else ValueError."""
    if not _DURATION.fullmatch(str(text).strip()):
        raise ValueError(f"not a duration: {text!r} (like 0, 500us, 3ms)")
    return str(text).strip()


# usage_report.enabled is deprecated in this version (ignored, and warned about if set); with
# stats off nothing leaves the machine. The audit check runs once at start: it goes nowhere.


class LocalProcess:
    """A server we started in its own process group, with a work directory (removed by
    ``stop()`` when we made it) and a log; ``stop()`` or leaving ``with`` ends it."""

    STOP_TIMEOUT = 15.0

    def __init__(self, proc: subprocess.Popen, port: int, workdir: Path, log_path: Path,
                 owned_workdir: bool):
        self.proc, self.port, self.workdir, self.log_path = proc, port, workdir, log_path
        self.pid = proc.pid
        self._owned = owned_workdir
        atexit.register(self.stop)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM the process group, SIGKILL it after ``timeout`` seconds. Idempotent."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(self.STOP_TIMEOUT if timeout is None else timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
        if self._owned:
            self._owned = False
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


class LakeFSProcess(LocalProcess):
    """One running lakeFS server; ``stop()`` (or leaving the ``with`` block) ends it."""

    def __init__(self, proc: subprocess.Popen, port: int, workdir: Path, log_path: Path,
                 owned_workdir: bool, binaries: LakeFSBinaries):
        super().__init__(proc, port, workdir, log_path, owned_workdir)
        self.binaries = binaries
        self.endpoint = f"http://127.0.0.1:{port}"
        self.api_url = self.endpoint + "/api/v1"
        self.access_key_id, self.secret_access_key = ACCESS_KEY_ID, SECRET_ACCESS_KEY

    def env(self) -> dict:
        """What :meth:`kvmodel.store.lakefs.LakeFSConfig.discover` and lakectl read."""
        return {"LAKEFS_ENDPOINT": self.endpoint, "LAKEFS_ACCESS_KEY_ID": self.access_key_id,
                "LAKEFS_SECRET_ACCESS_KEY": self.secret_access_key,
                "LAKECTL_SERVER_ENDPOINT_URL": self.endpoint,
                "LAKECTL_CREDENTIALS_ACCESS_KEY_ID": self.access_key_id,
                "LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY": self.secret_access_key}

    def _repositories_api(self):
        import lakefs_sdk

        conf = lakefs_sdk.Configuration(host=self.api_url, username=self.access_key_id,
                                        password=self.secret_access_key)
        return lakefs_sdk.RepositoriesApi(lakefs_sdk.ApiClient(conf))

    def create_repository(self, name: str, branch: str = "main"):
        """A new repository whose objects live in ``<workdir>/data/<name>``."""
        import lakefs_sdk

        api = self._repositories_api()
        with api.api_client:
            return api.create_repository(lakefs_sdk.RepositoryCreation(
                name=name, storage_namespace=f"local://{name}", default_branch=branch))

    def repositories(self) -> set[str]:
        """The names of the repositories this lakeFS has (an earlier run's, with a kept
        work directory)."""
        api = self._repositories_api()
        names: set[str] = set()
        with api.api_client:
            after = ""
            while True:
                page = api.list_repositories(after=after, amount=1000)
                names.update(r.id for r in page.results)
                if not page.pagination.has_more:
                    return names
                after = page.pagination.next_offset


def _ready(proc: LakeFSProcess) -> bool:
    """Health check answers 204 and the admin key lists repositories."""
    auth = base64.b64encode(f"{proc.access_key_id}:{proc.secret_access_key}".encode()).decode()
    try:
        with urllib.request.urlopen(proc.api_url + "/healthcheck", timeout=2) as r:
            if r.status != 204:
                return False
        req = urllib.request.Request(proc.api_url + "/repositories",
                                     headers={"Authorization": "Basic " + auth})
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status == 200
    except OSError:  # refused, reset, timed out, or an HTTP error status (URLError)
        return False


def start_lakefs(workdir=None, port: int | None = None, version: str = DEFAULT_VERSION,
                 log_path=None, timeout: float = 120.0,
                 range_entries: int | None = None,
                 batch_delay: str | None = None) -> LakeFSProcess:
    """Build if needed, start one lakeFS, wait until it serves the admin key. Without
    ``workdir`` a temporary one is used and removed by ``stop()``."""
    binaries = ensure_lakefs(version)
    owned = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="lakefs-")) if owned else Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = Path(log_path) if log_path else workdir / "lakefs.log"
    config = workdir / "lakefs.yaml"
    # LAKEFS_* variables would override the file (viper reads the environment too).
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKEFS_")}

    def start(port: int) -> LakeFSProcess:
        config.write_text(lakefs_config(workdir, port, range_entries, batch_delay))
        since = ports.log_size(log_path)
        with open(log_path, "ab") as log:
            popen = subprocess.Popen([str(binaries.lakefs), "--config", str(config), "run"],
                                     cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        proc = LakeFSProcess(popen, port, workdir, log_path, False, binaries)
        deadline = time.monotonic() + timeout
        # ready: it answers, and it is this process that listens (not another program that
        # took the port first, which may even be a lakeFS with the same admin key)
        while not (_ready(proc) and ports.listens(popen.pid, port) is not False):
            if popen.poll() is not None or time.monotonic() > deadline:
                why = "exited" if popen.poll() is not None else f"not ready after {timeout:.0f} s"
                tail = proc.log_tail()
                proc.stop()
                if popen.poll() is not None and ports.port_was_taken(log_path, since):
                    raise ports.PortTaken(f"lakeFS: port {port} was taken by another process")
                raise RuntimeError(f"lakeFS {version} {why} (log {log_path}):\n{tail}")
            time.sleep(0.1)
        proc._owned = owned  # its stop() removes the temporary work directory
        return proc
    try:
        return ports.start_on_a_port(start, port)
    except BaseException:
        if owned:
            shutil.rmtree(workdir, ignore_errors=True)
        raise


def duration_arg(text: str) -> str:
    """argparse's type for a Go duration."""
    try:
        return check_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# --- python -m hms_proxy.tools.lakefs_local --------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hms_proxy.tools.lakefs_local",
                                     description="Run a local lakeFS until SIGINT/SIGTERM.")
    parser.add_argument("--port", type=int, help="default: a free port")
    parser.add_argument("--dir", help="work directory, kept (default: a temporary one)")
    parser.add_argument("--version", default=DEFAULT_VERSION)
    parser.add_argument("--build-only", action="store_true", help="build, print paths, exit")
    parser.add_argument("--range-entries", type=int, metavar="N",
                        help="lakeFS's committed.permanent.range_raggedness_entries (mean entries "
                             "per metadata range; lakeFS's default 50,000): about 500 keeps "
                             "hms-proxy's commits, diffs and merges small (docs/lakefs.md)")
    parser.add_argument("--batch-delay", type=duration_arg, metavar="DURATION",
                        help="lakeFS's graveler.max_batch_delay (lakeFS's default 3ms, waited "
                             "by every branch lookup): 0 makes an upload take ~1 ms instead of "
                             "~12 ms here (docs/lakefs.md)")
    args = parser.parse_args(argv)
    if args.build_only:
        try:
            bins = ensure_lakefs(args.version)
        except RuntimeError as exc:  # no Go, a failed download or build: say so in short
            print(f"lakefs_local: {str(exc).splitlines()[0]}", file=sys.stderr)
            return 2
        print(f"lakefs: {bins.lakefs}\nlakectl: {bins.lakectl}")
        return 0
    # Until lakeFS is up, SIGINT/SIGTERM interrupt (the build too) like Python's default
    # SIGINT; then the handlers only set a flag and write to a pipe (no locks, no I/O buffers)
    # and the loop below stops lakeFS.
    stop_r, stop_w = os.pipe()
    os.set_blocking(stop_w, False)
    caught: list[int] = []
    server = None

    def on_signal(signum, _frame):
        caught.append(signum)
        if server is None:
            raise KeyboardInterrupt
        try:
            os.write(stop_w, b"x")
        except OSError:
            pass
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    started = time.monotonic()
    try:
        server = start_lakefs(args.dir, args.port, args.version, range_entries=args.range_entries,
                              batch_delay=args.batch_delay)
    except KeyboardInterrupt:
        return 130
    except RuntimeError as exc:
        print(f"lakefs_local: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    _say(f"lakeFS {args.version} ready in {time.monotonic() - started:.1f} s, "
         f"pid {server.pid}, log {server.log_path}")
    for key, value in server.env().items():
        print(f"{key}={value}")
    print(f"# S3 gateway: {server.endpoint} (region {S3_REGION}, path-style); "
          f"work directory {server.workdir}", flush=True)
    try:
        while not caught and server.proc.poll() is None:
            select.select([stop_r], [], [], 1.0)
    finally:
        died = server.proc.poll() is not None
        server.stop()
    if died:
        _say(f"lakeFS exited unexpectedly:\n{server.log_tail()}")
        return 1
    _say("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
