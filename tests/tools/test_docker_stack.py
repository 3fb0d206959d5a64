"""The lakeFS compose stack (``docker/``) holds together: every service the demo needs is
there, in the order it needs them, with one set of lakeFS keys, the repository the server
serves is the one created, Spark's s3a goes through lakeFS's gateway, and the demo uses
commands this CLI has. No Docker engine runs on these machines: ``docker compose up`` itself
is not run here (the README says so); this checks what can be checked without it."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from hms_proxy.cli import build_parser  # noqa: E402

DOCKER = Path(__file__).resolve().parents[2] / "docker"


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load((DOCKER / "docker-compose.yml").read_text())


def test_services_and_their_order(compose):
    services = compose["services"]
    assert {"minio", "minio-init", "lakefs", "lakefs-init", "redis", "hms-proxy",
            "spark"} <= set(services)
    needs = {name: set((svc.get("depends_on") or {})) for name, svc in services.items()}
    assert "minio" in needs["minio-init"] and "minio-init" in needs["lakefs"]
    assert "lakefs" in needs["lakefs-init"]
    assert {"lakefs-init", "redis"} <= needs["hms-proxy"] and "hms-proxy" in needs["spark"]
    for name, deps in needs.items():
        assert deps <= set(services), name


def test_one_set_of_lakefs_keys(compose):
    services = compose["services"]
    lakefs = services["lakefs"]["environment"]
    key, secret = (lakefs["LAKEFS_INSTALLATION_ACCESS_KEY_ID"],
                   lakefs["LAKEFS_INSTALLATION_SECRET_ACCESS_KEY"])
    proxy = services["hms-proxy"]["environment"]
    assert (proxy["LAKEFS_ACCESS_KEY_ID"], proxy["LAKEFS_SECRET_ACCESS_KEY"]) == (key, secret)
    assert proxy["LAKEFS_ENDPOINT"] == "http://lakefs:8000"
    init = services["lakefs-init"]["environment"]
    assert (init["LAKECTL_CREDENTIALS_ACCESS_KEY_ID"],
            init["LAKECTL_CREDENTIALS_SECRET_ACCESS_KEY"]) == (key, secret)
    conf = dict(line.split(None, 1) for line in
                (DOCKER / "spark-defaults.conf").read_text().splitlines()
                if line.strip() and not line.startswith("#"))
    assert (conf["spark.hadoop.fs.s3a.access.key"].strip(),
            conf["spark.hadoop.fs.s3a.secret.key"].strip()) == (key, secret)
    assert conf["spark.hadoop.fs.s3a.endpoint"].strip() == "http://lakefs:8000"
    assert conf["spark.hadoop.hive.metastore.uris"].strip() == "thrift://hms-proxy:9083"
    # Spark's warehouse inside the repository the server serves, at its main branch
    repo = re.search(r"lakefs://(\S+)", " ".join(services["hms-proxy"]["command"])).group(1)
    assert conf["spark.sql.warehouse.dir"].strip() == f"s3a://{repo}/main/warehouse"


def test_the_server_serves_the_repository_created(compose):
    services = compose["services"]
    created = re.search(r"lakectl repo create lakefs://(\S+) (\S+)",
                        " ".join(services["lakefs-init"]["command"]))
    assert created, services["lakefs-init"]["command"]
    repo = created.group(1)
    assert created.group(2).startswith("s3://lake-data/")  # the bucket minio-init makes
    assert "mb -p local/lake-data" in " ".join(services["minio-init"]["command"])
    args = build_parser().parse_args(services["hms-proxy"]["command"])
    assert args.store == f"lakefs://{repo}" and args.port == 9083
    assert args.redis == "redis://redis:6379/0" and args.lakefs_locations == "s3a"
    # lakeFS reaches the server's HTTP API by its service name, on the port it serves
    assert args.lakefs_hooks == f"http://hms-proxy:{args.http_port}"
    assert f"{args.http_port}:{args.http_port}" in services["hms-proxy"]["ports"]
    dockerfile = (DOCKER / "Dockerfile").read_text()
    assert "'.[lakefs]'" in dockerfile and "redis" in dockerfile


def test_the_demo_uses_commands_this_cli_has():
    script = (DOCKER / "demo.sh").read_text()
    parser = build_parser()
    seen = []
    for line in script.splitlines():
        line = line.strip()
        if line.startswith("hms "):
            argv = shlex.split(line)[1:] + ["--store", "lakefs://lake"]
            args = parser.parse_args(argv)
            seen.append(args.command)
    assert seen == ["branch", "commit", "diff", "merge"]
    sql = (DOCKER / "demo.sql").read_text()
    assert "`shop@dev`" in sql and "PARTITIONED BY (ds STRING)" in sql


def test_lakefs_has_the_settings_the_docs_recommend_for_us(compose):
    """docs/lakefs.md "Speed": small metadata ranges, no wait to batch branch lookups (the
    names are lakeFS's configuration keys as environment variables, checked by hand against
    lakeFS 1.84: LAKEFS_GRAVELER_MAX_BATCH_DELAY=0s makes an upload take ~1 ms)."""
    from hms_proxy.tools import lakefs_local

    env = compose["services"]["lakefs"]["environment"]
    assert int(env["LAKEFS_COMMITTED_PERMANENT_RANGE_RAGGEDNESS_ENTRIES"]) == \
        lakefs_local.RECOMMENDED["range_entries"]
    assert lakefs_local.check_duration(env["LAKEFS_GRAVELER_MAX_BATCH_DELAY"]) == \
        lakefs_local.RECOMMENDED["batch_delay"]
