"""The wire interface is what Hive Metastore 2.3.10 speaks, with 3.1.3's and 4.0.1's laid over
it, and the generated code stays generated.

Chain of custody: hive-metastore-2.3.10.jar (PySpark's), hive-standalone-metastore-3.1.3.jar
and hive-standalone-metastore-common-4.0.1.jar (Maven Central's) --(thrift/extract_idl.py)-->
thrift/*.thrift and hms_proxy/thrift/generations.py --(thrift/generate.sh)--> hms_proxy/gen.
Each link is re-run here and compared with what is committed; every place a newer generation
reuses an id differently is pinned with the reason the older one keeps it; the 2.3.10 part is
cross-checked against hmsclient's independently generated code.
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hms_proxy.thrift import generations
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


# Where 3.1.3 or 4.0.1 reuse an id (or a name) differently from the older IDL, the older keeps
# it: a client of that generation must keep seeing exactly what it saw. What a newer client
# then sends under such an id is skipped on reading (a different wire type) or read under the
# older name (same type); docs/compatibility.md says what each costs a newer client.
SAME_WIRE = "same wire type (string and binary are both Thrift strings): no client sees a difference"
RENAMED = "renamed in 3.x, same id and type: only the name in our code differs"
SHIFTED = ("3.x inserted writeid at 2 and moved every later field up one; add_dynamic_partitions "
           "is read in either layout (hms_proxy/thrift/layouts.py)")
INSERT_SHIFTED = ("3.x inserted `replace` at 1 and moved the file lists up one; fire_listener_event "
                  "from a 3.x client keeps its table and partition, not its file list")
TABLE_16 = ("2.3.10 has catName at 16; 3.x put creationMetadata (materialized views, not served) "
            "there and catName at 17, which a newer client's tables carry: read and written here "
            "as catalogName")
OPEN_TXNS = ("a set in 2.3, a list in 3.x: a 3.x/4.x client cannot read get_open_txns's answer; "
             "it calls get_open_txns_req, a method of its own")
NAMES_THROWS = ("2.3 declares MetaException as o2 at id 1; 3.x added NoSuchObjectException at 1: "
                "a 3.x client reads our MetaException as a NoSuchObjectException (same message)")
OPTIONAL_IN_4 = "4.0.1 made it optional; a 4.x client always sends it"
ISCHEMA = "3.1.3 left o2 without an id (-1 on the wire), 4.0.1 gave it 2: 4.0.1's id is served"
KNOWN_CONFLICTS = {
    **{f"struct {s} field {n}: {v} optional binary bitVectors, kept optional string bitVectors": SAME_WIRE
       for s, n in (("BinaryColumnStatsData", 4), ("BooleanColumnStatsData", 4),
                    ("DateColumnStatsData", 5), ("DecimalColumnStatsData", 5),
                    ("DoubleColumnStatsData", 5), ("LongColumnStatsData", 5),
                    ("StringColumnStatsData", 5)) for v in ("3.1.3", "4.0.1")},
    **{f"struct LockComponent field 7: {v} optional bool isTransactional, kept optional bool isAcid": RENAMED
       for v in ("3.1.3", "4.0.1")},
    **{line.format(v=v): SHIFTED for v in ("3.1.3", "4.0.1") for line in (
        "struct AddDynamicPartitions field 2: {v} required i64 writeid, kept required string dbname",
        "struct AddDynamicPartitions field 3: {v} required string dbname, kept required string tablename",
        "struct AddDynamicPartitions field 4: {v} required string tablename, kept required list<string> partitionnames",
        "struct AddDynamicPartitions field 5: {v} required list<string> partitionnames, kept optional DataOperationType operationType",
        "struct AddDynamicPartitions field 6: {v} optional DataOperationType operationType, the name is taken")},
    **{line.format(v=v): INSERT_SHIFTED for v in ("3.1.3", "4.0.1") for line in (
        "struct InsertEventRequestData field 1: {v} optional bool replace, kept required list<string> filesAdded",
        "struct InsertEventRequestData field 2: {v} required list<string> filesAdded, kept optional list<string> filesAddedChecksum",
        "struct InsertEventRequestData field 3: {v} optional list<string> filesAddedChecksum, the name is taken")},
    **{f"struct Table field 16: {v} optional CreationMetadata creationMetadata, kept optional string catName": TABLE_16
       for v in ("3.1.3", "4.0.1")},
    # read as catalogName (extract_idl.ALIASES): 3.1.3's is added under that name, 4.0.1's is it
    "struct Table field 17: 3.1.3 optional string catName, the name is taken": TABLE_16,
    "struct Table field 17: 4.0.1 optional string catName, kept optional string catalogName": TABLE_16,
    **{f"struct GetOpenTxnsResponse field 2: {v} required list<i64> open_txns, kept required set<i64> open_txns": OPEN_TXNS
       for v in ("3.1.3", "4.0.1")},
    **{line.format(v=v): NAMES_THROWS for v in ("3.1.3", "4.0.1") for line in (
        "method get_partition_names throws 1: {v} NoSuchObjectException o1, kept MetaException o2",
        "method get_partition_names throws 2: {v} MetaException o2, the name is taken")},
    "struct GetValidWriteIdsRequest field 2: 4.0.1 optional string validTxnList, kept required string validTxnList": OPTIONAL_IN_4,
}


@pytest.fixture(scope="module")
def jar_models() -> tuple[dict, dict]:
    """(the 2.3.10 model from PySpark's jars, {3.1.3, 4.0.1: their models from Maven Central's
    jars, downloaded once into ~/.cache/hms-proxy}); needs Java and PySpark."""
    if not extract_idl.java_available():
        pytest.skip("java/javac not found: cannot read the HMS 2.3.10 jar")
    try:
        jars = extract_idl.pyspark_jars_dir()
    except ImportError:
        pytest.skip("pyspark is not installed: no hive-metastore-2.3.10.jar to read")
    if not (jars / extract_idl.HIVE_JAR).exists():
        pytest.skip(f"{extract_idl.HIVE_JAR} not in {jars}")
    return extract_idl.extract_all(jars)


@pytest.fixture(scope="module")
def jar_model(jar_models) -> dict:
    """The superset model the committed IDL is rendered from."""
    return extract_idl.superset_model(*jar_models)[0]


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


def test_idl_matches_jar(jar_model, jar_models):
    """thrift/*.thrift and generations.py are exactly what extract_idl.py renders today."""
    for name, text in extract_idl.render_all(jar_model).items():
        assert (ROOT / "thrift" / name).read_text() == text, f"thrift/{name} is stale"
    assert extract_idl.GENERATIONS.read_text() == extract_idl.render_generations(*jar_models)


def test_every_conflict_between_generations_is_known(jar_models):
    """Each id a newer IDL reuses differently is one we decided about (KNOWN_CONFLICTS says
    why the older keeps it); a new jar with a new conflict fails here, not at a client."""
    _, conflicts = extract_idl.superset_model(*jar_models)
    assert sorted(conflicts) == sorted(KNOWN_CONFLICTS)


def test_every_jar_method_is_generated(jar_models):
    """Our Iface has every method of 2.3.10, 3.1.3 and 4.0.1, and nothing else."""
    model23, newer = jar_models
    jar_methods = {m["name"] for m in model23["hive_metastore"]["service"]["methods"]}
    assert "get_partition_values" in jar_methods
    for m in newer.values():
        jar_methods |= {x["name"] for x in m["service"]["methods"]}
    assert {"get_catalogs", "get_table_req", "get_database_req", "get_table"} <= jar_methods
    assert extract_idl.own_methods(ThriftHiveMetastore.Iface) == jar_methods
    assert set(generations.METHODS) == jar_methods
    fb_methods = {m["name"] for m in model23["fb303"]["service"]["methods"]}
    assert extract_idl.own_methods(FacebookService.Iface) == fb_methods


def test_a_newer_clients_table_reads_as_ours():
    """What a 3.x/4.x client sends under an id 2.3 uses differently (Table 16: a
    CreationMetadata struct where 2.3.10 has the string catName) is skipped, with the C
    accelerated protocol and with the pure-Python one, and the rest of the table is read, its
    catalog (17) as ``catalogName``."""
    from thrift.protocol import TBinaryProtocol
    from thrift.Thrift import TType
    from thrift.transport import TTransport

    class NewerTable:  # the 3.x layout of ids 16-17, written field by field
        def write(self, oprot):
            oprot.writeStructBegin("Table")
            oprot.writeFieldBegin("tableName", TType.STRING, 1)
            oprot.writeString("t")
            oprot.writeFieldEnd()
            oprot.writeFieldBegin("creationMetadata", TType.STRUCT, 16)
            ttypes.CreationMetadata(catName="hive", dbName="d", tblName="t",
                                    tablesUsed=set()).write(oprot)
            oprot.writeFieldEnd()
            oprot.writeFieldBegin("catName", TType.STRING, 17)
            oprot.writeString("hive")
            oprot.writeFieldEnd()
            oprot.writeFieldBegin("writeId", TType.I64, 19)
            oprot.writeI64(7)
            oprot.writeFieldEnd()
            oprot.writeFieldStop()
            oprot.writeStructEnd()

    buf = TTransport.TMemoryBuffer()
    NewerTable().write(TBinaryProtocol.TBinaryProtocol(buf))
    data = buf.getvalue()
    for factory in (TBinaryProtocol.TBinaryProtocolAcceleratedFactory(),
                    TBinaryProtocol.TBinaryProtocolFactory()):
        table = ttypes.Table()
        table.read(factory.getProtocol(TTransport.TMemoryBuffer(data)))
        assert (table.tableName, table.catName, table.catalogName, table.writeId) == \
            ("t", None, "hive", 7)


def test_oneway_methods_have_no_result():
    """fb303's reinitialize/shutdown are oneway in the jar; HMS itself has none."""
    assert not hasattr(FacebookService, "reinitialize_result")
    assert not hasattr(FacebookService, "shutdown_result")
    for name in extract_idl.own_methods(ThriftHiveMetastore.Iface):
        assert hasattr(ThriftHiveMetastore, f"{name}_result"), name


def test_get_partition_values_is_served():
    assert hasattr(ThriftHiveMetastore.Iface, "get_partition_values")
    assert ThriftHiveMetastore.get_partition_values_args.thrift_spec[1][2] == "request"


# Arguments and exceptions 3.x/4.x added to methods 2.3.10 already had (a 2.3 client never
# sends or expects them).
NEWER_METHOD_FIELDS = {
    ("create_table_with_constraints_args", 4), ("create_table_with_constraints_args", 5),
    ("create_table_with_constraints_args", 6), ("create_table_with_constraints_args", 7),
    ("delete_table_column_statistics_args", 4), ("delete_partition_column_statistics_args", 5),
    ("get_partitions_by_names_result", 3),
}


def _field_differences(ours, theirs, name: str) -> set[tuple[str, int]]:
    a, b = extract_idl.spec_fields(ours), extract_idl.spec_fields(theirs)
    known = generations.FIELDS_2_3.get(name)
    if known is not None:  # a 2.3.10 struct: only its 2.3.10 fields are compared
        a = {fid: f for fid, f in a.items() if fid in known}
    a = {fid: f for fid, f in a.items() if (name, fid) not in NEWER_METHOD_FIELDS}
    return {(name, fid) for fid in set(a) | set(b) if a.get(fid) != b.get(fid)}


def _generated_pairs(module_ours, module_theirs, names):
    for name in sorted(names):
        theirs = getattr(module_theirs, name, None)
        if theirs is not None and hasattr(theirs, "thrift_spec"):
            yield name, getattr(module_ours, name), theirs


def test_agrees_with_hmsclient(hmsclient_modules):
    """Where hmsclient has the same struct or method, ids, names and types agree."""
    their_ttypes, their_svc, their_fb = hmsclient_modules
    ours_structs = set(generations.FIELDS_2_3)  # the 2.3.10 part of the superset
    methods_23 = {m for m, versions in generations.METHODS.items() if "2.3.10" in versions}
    ours_calls = {n for n, v in vars(ThriftHiveMetastore).items() if isinstance(v, type)
                  and n.endswith(("_args", "_result")) and n.rsplit("_", 1)[0] in methods_23}
    diffs, missing = set(), set()
    for name in ours_structs:
        if not hasattr(their_ttypes, name):
            missing.add(name)
    for method in methods_23:
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
