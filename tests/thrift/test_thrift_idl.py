"""The wire interface stays what Hive Metastore 2.3.10 speaks, and the generated code stays generated.

Chain of custody: hive-metastore-2.3.10.jar --(thrift/extract_idl.py)--> thrift/*.thrift
--(thrift/generate.sh)--> hms_proxy/gen. Each link is re-run here and compared with what is
committed, and the result is cross-checked against hmsclient's independently generated code.
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hms_proxy.thrift.gen.fb303 import FacebookService
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "hms_proxy" / "thrift" / "gen"


def _load_extractor():
    spec = importlib.util.spec_from_file_location("extract_idl", ROOT / "thrift" / "extract_idl.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


extract_idl = _load_extractor()

# Field-level differences between the 2.3.10 jar (our code) and hmsclient 0.1.1, which was
# generated from an older Hive 2.3 IDL. Keyed by (generated class name, field id).
CATALOG_FIELD = ("the 2.3.10 jar has optional catalog-name fields that hmsclient's older IDL "
                 "lacks; being optional, old clients simply never send them")
NEW_EXCEPTIONS = ("2.3.10 declares exceptions on get_table_objects_by_name; hmsclient's older "
                  "IDL returned only success")
ALLOWED_FIELD_DIFFERENCES = {
    ("AddPartitionsRequest", 6): CATALOG_FIELD,
    ("ColumnStatisticsDesc", 6): CATALOG_FIELD,
    ("Database", 8): CATALOG_FIELD,
    ("DropPartitionsRequest", 9): CATALOG_FIELD,
    ("Function", 9): CATALOG_FIELD,
    ("HiveObjectRef", 6): CATALOG_FIELD,
    ("Partition", 9): CATALOG_FIELD,
    ("PartitionSpec", 6): CATALOG_FIELD,
    ("PartitionsByExprRequest", 6): CATALOG_FIELD,
    ("PartitionsStatsRequest", 5): CATALOG_FIELD,
    ("Table", 16): CATALOG_FIELD,
    ("get_table_objects_by_name_result", 1): NEW_EXCEPTIONS,
    ("get_table_objects_by_name_result", 2): NEW_EXCEPTIONS,
    ("get_table_objects_by_name_result", 3): NEW_EXCEPTIONS,
}
# Whole structs/methods of 2.3.10 that hmsclient does not have at all.
PARTITION_VALUES = "get_partition_values and its structs are newer than hmsclient's IDL"
ALLOWED_MISSING_IN_HMSCLIENT = {
    "PartitionValuesRequest": PARTITION_VALUES,
    "PartitionValuesResponse": PARTITION_VALUES,
    "PartitionValuesRow": PARTITION_VALUES,
    "get_partition_values": PARTITION_VALUES,
}


@pytest.fixture(scope="module")
def jar_model() -> dict:
    """The model dumped from PySpark's jars (needs Java and PySpark)."""
    if not extract_idl.java_available():
        pytest.skip("java/javac not found: cannot read the HMS 2.3.10 jar")
    try:
        jars = extract_idl.pyspark_jars_dir()
    except ImportError:
        pytest.skip("pyspark is not installed: no hive-metastore-2.3.10.jar to read")
    if not (jars / extract_idl.HIVE_JAR).exists():
        pytest.skip(f"{extract_idl.HIVE_JAR} not in {jars}")
    return extract_idl.extract(jars)


@pytest.fixture(scope="module")
def hmsclient_modules():
    import hmsclient.genthrift.fb303.FacebookService as fb
    import hmsclient.genthrift.hive_metastore.ThriftHiveMetastore as svc
    import hmsclient.genthrift.hive_metastore.ttypes as ttypes_mod
    return ttypes_mod, svc, fb


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def test_generated_code_matches_idl(tmp_path):
    """hms_proxy/gen is exactly what thrift/generate.sh makes of the committed IDL."""
    if shutil.which("thrift") is None:
        pytest.skip("the thrift compiler is not installed (apt-get install thrift-compiler)")
    committed = re.search(r"Thrift Compiler \((.+?)\)", (GEN / "hive_metastore" / "ttypes.py").read_text())
    local = subprocess.run(["thrift", "--version"], capture_output=True, text=True).stdout
    if committed.group(1) not in local:
        pytest.skip(f"hms_proxy/gen was made by thrift {committed.group(1)}, found {local.strip()}")
    subprocess.run(["bash", str(ROOT / "thrift" / "generate.sh"), str(tmp_path)], check=True)
    assert _tree(tmp_path) == _tree(GEN)


def test_idl_matches_jar(jar_model):
    """thrift/*.thrift is exactly what extract_idl.py renders from the jar today."""
    for name, text in extract_idl.render_all(jar_model).items():
        assert (ROOT / "thrift" / name).read_text() == text, f"thrift/{name} is stale"


def test_every_jar_method_is_generated(jar_model):
    """Our Iface has exactly the 2.3.10 methods, including get_partition_values."""
    jar_methods = {m["name"] for m in jar_model["hive_metastore"]["service"]["methods"]}
    assert "get_partition_values" in jar_methods
    assert extract_idl.own_methods(ThriftHiveMetastore.Iface) == jar_methods
    fb_methods = {m["name"] for m in jar_model["fb303"]["service"]["methods"]}
    assert extract_idl.own_methods(FacebookService.Iface) == fb_methods


def test_oneway_methods_have_no_result():
    """fb303's reinitialize/shutdown are oneway in the jar; HMS itself has none."""
    assert not hasattr(FacebookService, "reinitialize_result")
    assert not hasattr(FacebookService, "shutdown_result")
    for name in extract_idl.own_methods(ThriftHiveMetastore.Iface):
        assert hasattr(ThriftHiveMetastore, f"{name}_result"), name


def test_get_partition_values_is_served():
    assert hasattr(ThriftHiveMetastore.Iface, "get_partition_values")
    assert ThriftHiveMetastore.get_partition_values_args.thrift_spec[1][2] == "request"


def _field_differences(ours, theirs, name: str) -> set[tuple[str, int]]:
    a, b = extract_idl.spec_fields(ours), extract_idl.spec_fields(theirs)
    return {(name, fid) for fid in set(a) | set(b) if a.get(fid) != b.get(fid)}


def _generated_pairs(module_ours, module_theirs, names):
    for name in sorted(names):
        theirs = getattr(module_theirs, name, None)
        if theirs is not None and hasattr(theirs, "thrift_spec"):
            yield name, getattr(module_ours, name), theirs


def test_agrees_with_hmsclient(hmsclient_modules):
    """Where hmsclient has the same struct or method, ids, names and types agree."""
    their_ttypes, their_svc, their_fb = hmsclient_modules
    ours_structs = {n for n, v in vars(ttypes).items() if isinstance(v, type) and hasattr(v, "thrift_spec")}
    ours_calls = {n for n, v in vars(ThriftHiveMetastore).items()
                  if isinstance(v, type) and n.endswith(("_args", "_result"))}
    diffs, missing = set(), set()
    for name in ours_structs:
        if not hasattr(their_ttypes, name):
            missing.add(name)
    for method in extract_idl.own_methods(ThriftHiveMetastore.Iface):
        if method not in extract_idl.own_methods(their_svc.Iface):
            missing.add(method)
    for name, ours, theirs in _generated_pairs(ttypes, their_ttypes, ours_structs):
        diffs |= _field_differences(ours, theirs, name)
    for name, ours, theirs in _generated_pairs(ThriftHiveMetastore, their_svc, ours_calls):
        diffs |= _field_differences(ours, theirs, name)
    fb_calls = {n for n, v in vars(FacebookService).items() if n.endswith(("_args", "_result"))}
    for name, ours, theirs in _generated_pairs(FacebookService, their_fb, fb_calls):
        diffs |= _field_differences(ours, theirs, name)
    assert diffs == set(ALLOWED_FIELD_DIFFERENCES)
    assert missing == set(ALLOWED_MISSING_IN_HMSCLIENT)


def test_defaults_survive_generation():
    """Defaults come from the jar's constructors, including primitives whose isset bit is unset."""
    assert ttypes.Table().temporary is False
    assert ttypes.DropPartitionsRequest().ifExists is True
    assert ttypes.LockComponent().operationType == ttypes.DataOperationType.UNSET
    assert ttypes.LockRequest().agentInfo == "Unknown"
    assert ttypes.PartitionsByExprRequest().maxParts == -1
