"""hms_proxy/tools/trino_local.py without running Trino: Java selection, catalog properties, the
one-line answer when no JDK can run it; and the Trino bench's duration parsing."""
from __future__ import annotations

import pytest

from hms_proxy.tools import trino_local as T
from hms_proxy.tools.bench.trino_bench import millis


def test_without_a_java_24_jdk_the_answer_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(T, "find_java", lambda minimum: None)
    with pytest.raises(RuntimeError, match=r"needs a Java 24\+ JDK .*HMS_TRINO_JAVA_HOME"):
        T.choose()
    assert T.main(["--download-only"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("trino_local: a real Trino (476) needs")


def test_java_major_reads_the_specification_version():
    import shutil

    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH")
    assert T.java_major(java) >= 17
    assert T.java_major("/nonexistent/java") is None


def test_catalog_properties_local_and_lakefs():
    local = T.hive_catalog("thrift://127.0.0.1:9083")
    assert local["hive.metastore.uri"] == "thrift://127.0.0.1:9083"
    assert local["fs.hadoop.enabled"] == "true" and "fs.native-s3.enabled" not in local

    class Lake:
        endpoint, access_key_id, secret_access_key = "http://127.0.0.1:8000", "AK", "SK"

    lake = T.hive_catalog("thrift://h:1", lakefs=Lake(), timeout="3s",
                          extra={"hive.security": "sql-standard"})
    assert lake["fs.native-s3.enabled"] == "true" and lake["s3.path-style-access"] == "true"
    assert lake["s3.endpoint"] == "http://127.0.0.1:8000" and "fs.hadoop.enabled" not in lake
    assert lake["hive.metastore.thrift.client.read-timeout"] == "3s"
    assert lake["hive.security"] == "sql-standard"


def test_create_catalog_sql_quotes_values():
    sql = T.create_catalog_sql("c1", {"a.b": "it's"})
    assert sql == """CREATE CATALOG c1 USING hive WITH ("a.b" = 'it''s')"""


@pytest.mark.parametrize("text,ms", [("12.50ms", 12.5), ("1.20s", 1200.0), ("2.00m", 120000.0),
                                     ("350.00us", 0.35)])
def test_trino_durations(text, ms):
    assert millis(text) == pytest.approx(ms)
    with pytest.raises(ValueError):
        millis("soon")
