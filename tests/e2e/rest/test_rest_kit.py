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
V3 = "Iceberg format version 3 is not supported yet (refused with 406)"
NOT_APPLICABLE = {
    "RESTCompatibilityKitCatalogTests.testNamespaceWithSlash()": HIVE_NAMES,
    "RESTCompatibilityKitCatalogTests.testTableNameWithSlash()": HIVE_NAMES,
    "RESTCompatibilityKitCatalogTests.createTableTransaction(int)[3]": V3,
    "RESTCompatibilityKitCatalogTests.testCreateTableWithDefaultColumnValue()": V3,
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


@pytest.mark.parametrize("ref", ["main", "kit_dev"])
def test_kit_passes_on_ours_as_on_the_reference(jars, tmp_path, ref):
    ours = start_rest_server(tmp_path / "ours")
    try:
        if ref != "main":
            ours.cli("branch", "create", ref, "--from", "main")
        got = kit.run_kit(ours.rest_uri, ref, tmp_path / "ours-reports", OURS)
    finally:
        ours.proc.stop()
    reference = kit.start_reference_server(tmp_path / "reference")
    try:
        expected = kit.run_kit(reference.uri, "rck_warehouse", tmp_path / "ref-reports")
    finally:
        reference.stop()
    print(f"\nkit on ours ({ref}): {got.line()}\nkit on the reference: {expected.line()}")
    assert not expected.failed, expected.failed  # the kit itself works here
    assert set(got.failed) == set(NOT_APPLICABLE), got.failed
    assert got.found == expected.found
    assert got.succeeded + len(got.failed) + len(got.skipped) == got.found
