"""hms_proxy/tools/lakefs_local.py without building or running lakeFS: the generated configuration,
the build cache lookup, the messages when Go is missing or too old, and the environment handed
to the lakeFS backend."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hms_proxy.tools import lakefs_local as L


def test_credentials_have_the_formats_lakefs_expects():
    assert len(L.ACCESS_KEY_ID) == 20 and L.ACCESS_KEY_ID.isalnum()
    assert len(L.SECRET_ACCESS_KEY) == 40


def test_config_puts_everything_under_the_workdir(tmp_path):
    text = L.lakefs_config(tmp_path, 18123)
    assert 'listen_address: "127.0.0.1:18123"' in text
    for sub in ("metadata", "data", "cache", "imports"):
        assert f'"{tmp_path / sub}"' in text
    assert "~" not in text  # no default path under the home directory


def test_config_keys(tmp_path):
    import yaml
    conf = yaml.safe_load(L.lakefs_config(tmp_path, 18123))
    assert conf["database"] == {"type": "local", "local": {"path": str(tmp_path / "metadata")}}
    assert conf["blockstore"]["type"] == "local"
    assert conf["blockstore"]["local"]["path"] == str(tmp_path / "data")
    assert conf["blockstore"]["signing"]["secret_key"]
    assert conf["auth"]["encrypt"]["secret_key"]
    assert conf["installation"] == {"user_name": L.USER_NAME, "access_key_id": L.ACCESS_KEY_ID,
                                    "secret_access_key": L.SECRET_ACCESS_KEY}
    assert conf["gateways"]["s3"] == {"domain_name": L.S3_DOMAIN, "region": "us-east-1"}
    assert conf["stats"] == {"enabled": False}
    assert conf["security"]["check_latest_version"] is False
    # lakeFS refuses unknown keys: the deprecated usage_report.enabled is left out on purpose
    assert "usage_report" not in conf
    assert "permanent" not in conf["committed"]  # lakeFS's own range defaults
    ranged = yaml.safe_load(L.lakefs_config(tmp_path, 18123, range_entries=500))
    assert ranged["committed"]["permanent"] == {"range_raggedness_entries": 500}
    assert ranged["committed"]["local_cache"] == conf["committed"]["local_cache"]
    assert "graveler" not in conf  # lakeFS's own batch delay (3ms)
    quick = yaml.safe_load(L.lakefs_config(tmp_path, 18123, batch_delay="0"))
    assert quick["graveler"] == {"max_batch_delay": "0"}
    assert yaml.safe_load(L.lakefs_config(tmp_path, 1, batch_delay="500us"))["graveler"] == \
        {"max_batch_delay": "500us"}
    for bad in ("3", "fast", "1ms; rm -rf /", "-1ms", ""):
        with pytest.raises(ValueError, match="not a duration"):
            L.lakefs_config(tmp_path, 1, batch_delay=bad)


def test_config_quotes_odd_paths(tmp_path):
    import yaml
    odd = tmp_path / "a: b #c"
    assert yaml.safe_load(L.lakefs_config(odd, 1))["database"]["local"]["path"] == \
        str(odd / "metadata")


@pytest.fixture
def no_go(monkeypatch, tmp_path):
    """No go on PATH, none in the usual places, an empty build cache."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setattr(L, "GO_FALLBACKS", ())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def test_missing_go_says_what_to_do(no_go):
    with pytest.raises(RuntimeError) as err:
        L.ensure_lakefs("v9.9.9")
    msg = str(err.value)
    assert "\n" not in msg
    assert "Go module" in msg and "Go >= 1.21" in msg
    assert "apt-get install golang-go" in msg and "PATH" in msg


def test_old_go_is_refused(no_go, monkeypatch):
    bindir = no_go / "old-bin"
    bindir.mkdir()
    go = bindir / "go"
    go.write_text("#!/bin/sh\necho go1.19.8\n")
    go.chmod(go.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(bindir))
    with pytest.raises(RuntimeError, match=r"needs Go >= 1\.21.*go1\.19\.8"):
        L.ensure_lakefs("v9.9.9")


def test_cached_binaries_need_no_go(no_go):
    out = no_go / "cache" / "hms-proxy" / "lakefs" / "v9.9.9"
    out.mkdir(parents=True)
    for name in ("lakefs", "lakectl"):
        (out / name).write_text("")
    bins = L.ensure_lakefs("v9.9.9")
    assert (bins.lakefs, bins.lakectl, bins.version) == (out / "lakefs", out / "lakectl",
                                                         "v9.9.9")


def test_cache_root_honours_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert L.cache_root() == tmp_path / "hms-proxy"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert L.cache_root() == Path(os.path.expanduser("~")) / ".cache" / "hms-proxy"


class _Exited:
    pid = 0

    def poll(self):
        return 0


def test_env_is_what_the_lakefs_backend_reads(tmp_path):
    from kvmodel.store.lakefs import LakeFSConfig

    bins = L.LakeFSBinaries(tmp_path / "lakefs", tmp_path / "lakectl", "v9.9.9")
    proc = L.LakeFSProcess(_Exited(), 18123, tmp_path, tmp_path / "log", False, bins)
    assert proc.api_url == "http://127.0.0.1:18123/api/v1"
    conf = LakeFSConfig.discover(environ=proc.env())
    assert conf == LakeFSConfig(proc.api_url, L.ACCESS_KEY_ID, L.SECRET_ACCESS_KEY)
    proc.stop()  # nothing to stop, the work directory is not ours: no-op
    assert tmp_path.exists()


FAKE_GO = r"""#!/bin/sh
# Stands in for go: `env GOVERSION`, `mod download -json M@V`, `build ... -o DIR/ ...`.
# The build finishes only once another process waits for the build lock ($FAKE_LOCK):
# /proc/locks shows a process blocked on a lock as "-> FLOCK ... <dev>:<inode> ...".
case "$1" in
  env) echo go1.26.0 ;;
  mod) printf '{"Path": "%s", "Version": "v0.0.1", "Dir": "%s"}\n' "${4%@*}" "$FAKE_MODULE" ;;
  build)
    test -f cmd/lakefs/main.go || { echo "not in a copy of the module" >&2; exit 1; }
    echo "$CGO_ENABLED $GOFLAGS $GOMODCACHE" >> "$FAKE_BUILDS"
    inode=$(stat -c %i "$FAKE_LOCK") || exit 1
    n=0
    until grep -q -- "-> FLOCK .*:$inode " /proc/locks; do
      n=$((n + 1))
      [ $n -le 3000 ] || { echo "nobody waited for the build lock" >&2; exit 1; }
      sleep 0.02
    done
    while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
    mkdir -p "$out" && touch "$out/lakefs" "$out/lakectl" ;;
  *) exit 2 ;;
esac
"""


def test_concurrent_callers_build_once(tmp_path):
    """Two processes ask for an uncached version at once: one builds (in a writable copy of
    the read-only module), the other waits for it (the fake build ends only once a process
    waits on the build lock); nothing is left behind."""
    import subprocess
    import sys

    bindir, module = tmp_path / "bin", tmp_path / "module"
    bindir.mkdir()
    (bindir / "go").write_text(FAKE_GO)
    (bindir / "go").chmod(0o755)
    (module / "cmd" / "lakefs").mkdir(parents=True)
    (module / "cmd" / "lakefs" / "main.go").write_text("package main\n")
    for d in (module / "cmd" / "lakefs", module / "cmd", module):  # as in the module cache
        d.chmod(0o555)
    env = dict(os.environ, PATH=f"{bindir}:/usr/bin:/bin", XDG_CACHE_HOME=str(tmp_path / "c"),
               FAKE_MODULE=str(module), FAKE_BUILDS=str(tmp_path / "builds"), GOFLAGS="",
               FAKE_LOCK=str(tmp_path / "c" / "hms-proxy" / "lakefs" / ".v0.0.1.lock"))
    code = "from hms_proxy.tools.lakefs_local import ensure_lakefs; print(ensure_lakefs('v0.0.1'))"
    try:
        procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        results = [p.communicate(timeout=180) for p in procs]
    finally:
        for d in (module, module / "cmd", module / "cmd" / "lakefs"):
            d.chmod(0o755)
    assert [p.returncode for p in procs] == [0, 0], results
    assert results[0][0] == results[1][0]
    builds = (tmp_path / "builds").read_text().splitlines()
    assert builds == [f"0 -mod=mod -buildvcs=false {tmp_path / 'c' / 'hms-proxy' / 'go'}/pkg/mod"]
    root = tmp_path / "c" / "hms-proxy" / "lakefs"
    assert sorted(p.name for p in root.iterdir()) == [".v0.0.1.lock", "v0.0.1"]
    assert sorted(p.name for p in (root / "v0.0.1").iterdir()) == ["lakectl", "lakefs"]
