"""A real lakeFS for the tests, started with testcontainers where a Docker engine answers.

``start_lakefs()`` runs ``treeverse/lakefs`` (local block storage, in-memory metadata,
set up with a fixed admin key) once per test session and returns (endpoint, access key id,
secret); without a Docker engine it calls ``pytest.skip`` with the reason. These machines have
no Docker engine, so the lakeFS backend's tests run against :mod:`tests.support.lakefs_double`
here; this is the same suite wired to a real lakeFS for machines that have one.
"""
from __future__ import annotations

import atexit
import time

import pytest

IMAGE = "treeverse/lakefs:1.48.1"
KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def docker_available() -> str | None:
    """None when a Docker engine answers, else why not."""
    try:
        import docker
    except ImportError:
        return "the docker package is not installed (pip install testcontainers)"
    try:
        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001 - no socket, permission, engine down
        return f"no Docker engine answers ({type(exc).__name__}: {exc})"
    return None


def start_lakefs() -> tuple[str, str, str]:
    why = docker_available()
    if why is not None:
        pytest.skip(f"real lakeFS not started: {why}")
    from testcontainers.core.container import DockerContainer

    container = (DockerContainer(IMAGE)
                 .with_env("LAKEFS_DATABASE_TYPE", "local")
                 .with_env("LAKEFS_BLOCKSTORE_TYPE", "local")
                 .with_env("LAKEFS_AUTH_ENCRYPT_SECRET_KEY", "hms-proxy-tests")
                 .with_env("LAKEFS_INSTALLATION_USER_NAME", "hms")
                 .with_env("LAKEFS_INSTALLATION_ACCESS_KEY_ID", KEY)
                 .with_env("LAKEFS_INSTALLATION_SECRET_ACCESS_KEY", SECRET)
                 .with_exposed_ports(8000)
                 .with_command("run"))
    container.start()
    atexit.register(container.stop)
    endpoint = (f"http://{container.get_container_host_ip()}:"
                f"{container.get_exposed_port(8000)}/api/v1")
    _wait_healthy(endpoint)
    return endpoint, KEY, SECRET


def _wait_healthy(endpoint: str, timeout: float = 60.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(endpoint + "/healthcheck", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def create_repository(endpoint: str, key: str, secret: str, name: str) -> None:
    import lakefs_sdk

    conf = lakefs_sdk.Configuration(host=endpoint, username=key, password=secret)
    with lakefs_sdk.ApiClient(conf) as client:
        lakefs_sdk.RepositoriesApi(client).create_repository(lakefs_sdk.RepositoryCreation(
            name=name, storage_namespace=f"local://data/{name}", default_branch="main"))
