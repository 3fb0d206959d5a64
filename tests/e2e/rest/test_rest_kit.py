"""Iceberg's own REST compatibility kit (``RESTCompatibilityKitSuite`` of iceberg-open-api
1.10.0, from Maven Central) against our server on main and on a branch, and against Iceberg's
reference server in the same run. Every test of the kit passes on ours but those listed in
:data:`NOT_APPLICABLE` (and in docs/iceberg-rest.md) with the reason; the figures are
printed."""
from __future__ import annotations

import shutil

import pytest

from hms_proxy.tools import iceberg_rest_local as kit
from tests.e2e.rest.conftest import start_rest_server

pytestmark = [pytest.mark.timeout(1200), pytest.mark.slow]

HIVE_NAMES = "a Hive name is letters, digits and '_' ('/' also separates the catalog's keys)"
NOT_APPLICABLE = {
    "RESTCompatibilityKitCatalogTests.testNamespaceWithSlash()": HIVE_NAMES,
    "RESTCompatibilityKitCatalogTests.testTableNameWithSlash()": HIVE_NAMES,
}
# the server refuses a table in a namespace that does not exist (Hive databases must exist)
OURS = {"rck.requires-namespace-create": "true"}


@pytest.fixture(scope="module")
def jars():
    if shutil.which("java") is None:
        pytest.skip("no java: Iceberg's REST kit runs on the JVM")
    try:
        return kit.ensure_jars()
    except RuntimeError as exc:
        pytest.skip(f"Iceberg's REST jars could not be fetched: {exc}")


@pytest.fixture(scope="module")
def reference(jars, tmp_path_factory):
    """The kit's results on Iceberg's reference server (run once for the module)."""
    work = tmp_path_factory.mktemp("kit-reference")
    server = kit.start_reference_server(work / "reference")
    try:
        expected = kit.run_kit(server.uri, "rck_warehouse", work / "ref-reports")
    finally:
        server.stop()
    print(f"\nkit on the reference: {expected.line()}")
    assert not expected.failed, expected.failed  # the kit itself works here
    return expected


def check(got, expected, where: str) -> None:
    print(f"\nkit on ours ({where}): {got.line()}\nkit on the reference: {expected.line()}")
    assert set(got.failed) == set(NOT_APPLICABLE), got.failed
    assert got.found == expected.found
    assert got.succeeded + len(got.failed) + len(got.skipped) == got.found


@pytest.mark.parametrize("ref", ["main", "kit_dev"])
def test_kit_passes_on_ours_as_on_the_reference(jars, reference, tmp_path, ref):
    ours = start_rest_server(tmp_path / "ours")
    try:
        if ref != "main":
            ours.cli("branch", "create", ref, "--from", "main")
        got = kit.run_kit(ours.rest_uri, ref, tmp_path / "ours-reports", OURS)
    finally:
        ours.proc.stop()
    check(got, reference, ref)


def test_kit_on_a_lakefs_branch(jars, reference, tmp_path):
    """The kit against our server over a real lakeFS, on a branch lakeFS's API made: every
    metadata file through lakeFS's S3 gateway."""
    from tests.e2e.rest.conftest import start_lakefs_rest_server

    ours = start_lakefs_rest_server(tmp_path / "hms", "kit", branches=("kit_dev",))
    try:
        # the kit's own client reads and writes s3a:// files too, with Iceberg's S3FileIO
        # through the gateway (endpoint, path-style, region: /v1/config's; the keys: the
        # client's), and file: ones (tables it places in /tmp) with Hadoop's. Iceberg 1.10's
        # S3FileIO has no s3.chunked-encoding-enabled yet (1.12 reads it from /v1/config): the
        # AWS SDK's checksum trailers, which lakeFS's gateway refuses, are turned off in the JVM
        client = {"io-impl": "org.apache.iceberg.io.ResolvingFileIO",
                  "aws.requestChecksumCalculation": "when_required",
                  "aws.responseChecksumValidation": "when_required", **ours.keys}
        got = kit.run_kit(ours.rest_uri, "kit_dev", tmp_path / "ours-reports",
                          {**OURS, **client})
    finally:
        ours.proc.stop()
    check(got, reference, f"lakeFS repository {ours.repo}, branch kit_dev")
