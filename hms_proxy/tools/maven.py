"""Files from Maven Central (``$HMS_MAVEN_REPO`` for a mirror), checked against the SHA-1 the
repository publishes beside each one: what the Trino and stock-metastore launchers download
into ~/.cache/hms-proxy."""
from __future__ import annotations

import hashlib
import os
import shutil
import urllib.request
from pathlib import Path
from typing import Callable

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"


def url_of(relative: str) -> str:
    return f"{os.environ.get('HMS_MAVEN_REPO', MAVEN_CENTRAL).rstrip('/')}/{relative}"


def sha1_of(path: Path) -> str:
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_verified(relative: str, dest: Path, announce: Callable[[str], None] | None = None,
                   timeout: float = 120.0) -> Path:
    """The repository's ``relative`` at ``dest``: kept when already there with the published
    SHA-1, else downloaded beside it and renamed into place once its SHA-1 matches."""
    url = url_of(relative)
    with urllib.request.urlopen(url + ".sha1", timeout=60) as resp:
        expected = resp.read().decode().split()[0].strip().lower()
    if dest.exists():
        if sha1_of(dest) == expected:
            return dest
        dest.unlink()
    if announce is not None:
        announce(url)
    part = dest.with_name(dest.name + ".part")
    with urllib.request.urlopen(url, timeout=timeout) as resp, open(part, "wb") as out:
        shutil.copyfileobj(resp, out, 1 << 20)
    got = sha1_of(part)
    if got != expected:
        part.unlink()
        raise RuntimeError(f"{url}: SHA-1 {got} is not the repository's {expected}")
    os.replace(part, dest)
    return dest
