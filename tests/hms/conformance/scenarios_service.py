"""fb303 service calls and the metastore's own service calls: counters, options, status,
reinitialize, shutdown, flushCache, getMetaConf / setMetaConf."""

from __future__ import annotations

from tests.hms.conformance.builders import database
from tests.hms.conformance.harness import scenario
from tests.support.client import connect

META_KEYS = [
    "hive.metastore.try.direct.sql",
    "hive.metastore.try.direct.sql.ddl",
    "hive.metastore.client.socket.timeout",
    "hive.metastore.partition.name.whitelist.pattern",
    "hive.metastore.client.capability.check",
    "hive.metastore.limit.partition.request",  # not a meta variable in HMS 2.3
]


@scenario
def fb303_service_calls(c, rec):
    rec.call("getStatusDetails")
    # HMS counts the calls of each function since it started (documented difference: this
    # server keeps no counters); only the shape is compared.
    rec.call("getCounters", transform=lambda m: isinstance(m, dict))
    rec.call("getCounter", "cfsvc.no.such.counter")
    rec.call("getCounter", "")
    rec.call("getCounter", None)
    rec.call("getOption", "cfsvc.no.such.option")
    rec.call("getOption", None)
    rec.call("getOptions")
    rec.call("setOption", "cfsvc.option", "v1")
    rec.call("getOption", "cfsvc.option", label="getOption after setOption")
    rec.call("getOptions", label="getOptions after setOption")
    rec.call("setOption", None, None, label="setOption null")
    rec.call("setOption", "cfsvc.option", None, label="setOption null value")
    rec.call("setOption", None, "v", label="setOption null key")
    rec.call("setOption", "cfsvc.option", "v2", label="setOption again")
    rec.call("getOption", "cfsvc.option", label="getOption after second setOption")
    rec.call("getCpuProfile", 0)
    rec.call("getCpuProfile", 1)
    rec.call("getCpuProfile", -1)
    rec.call("flushCache")
    rec.call("reinitialize")
    rec.call("getStatus", label="getStatus after reinitialize")
    rec.call("get_database", "default", transform=lambda d: d.name,
             label="get_database after reinitialize")


@scenario
def fb303_shutdown_keeps_serving(c, rec):
    rec.call("create_database", database("cfsvc_db"))
    rec.call("shutdown")
    # HMS 2.3's shutdown only releases the calling thread's RawStore: the next call on the
    # same connection opens a new one, and the server goes on serving everybody.
    rec.call("get_database", "cfsvc_db", transform=lambda d: d.name,
             label="get_database after shutdown")
    rec.call("shutdown", label="shutdown again")
    rec.call("getStatus", label="getStatus after shutdown")
    rec.call("drop_database", "cfsvc_db", True, True)
    with connect(rec.proc) as other:
        rec.note("another connection after shutdown", other.get_database("default").name)


@scenario
def meta_conf(c, rec):
    for key in META_KEYS:
        rec.call("getMetaConf", key, msg=True)
    rec.call("getMetaConf", "hive.exec.dynamic.partition", msg=True, label="getMetaConf non-meta key")
    rec.call("getMetaConf", "cfsvc.no.such.key", msg=True, label="getMetaConf unknown key")
    rec.call("getMetaConf", "", msg=True, label="getMetaConf empty key")
    rec.call("getMetaConf", None, msg=True, label="getMetaConf null key")
    rec.call("setMetaConf", "hive.exec.dynamic.partition", "false", msg=True,
             label="setMetaConf non-meta key")
    rec.call("setMetaConf", "cfsvc.no.such.key", "x", msg=True, label="setMetaConf unknown key")
    rec.call("setMetaConf", None, "x", msg=True, label="setMetaConf null key")
    rec.call("setMetaConf", "hive.metastore.client.socket.timeout", "abc", msg=True,
             label="setMetaConf bad time")
    rec.call("setMetaConf", "hive.metastore.client.socket.timeout", "", msg=True,
             label="setMetaConf empty time")
    rec.call("setMetaConf", "hive.metastore.try.direct.sql", "maybe", msg=True,
             label="setMetaConf bad boolean")
    rec.call("setMetaConf", "hive.metastore.limit.partition.request", "lots", msg=True,
             label="setMetaConf bad int")
    rec.call("getMetaConf", "hive.metastore.client.socket.timeout", msg=True,
             label="getMetaConf after refused values")
    for value in ["20x", "1.5s", "99999999999999999999", "--5", "+5", "-", "5-5", "  ",
                  "5mon", "0x10", None]:
        rec.call("setMetaConf", "hive.metastore.client.socket.timeout", value, msg=True)
    rec.call("getMetaConf", "hive.metastore.client.socket.timeout", msg=True,
             label="getMetaConf after more refused values")
    # Accepted by the validator, then refused by HMS's listener: the value stays set.
    for value in ["-5s", "0", "5us", "5nsec", "-9223372036854775808s"]:
        rec.call("setMetaConf", "hive.metastore.client.socket.timeout", value, msg=True)
        rec.call("getMetaConf", "hive.metastore.client.socket.timeout", msg=True,
                 label=f"getMetaConf after {value!r}")
    for value in [" 20 s ", "20 hours", "5ms", "5l", "5L", "5", "5D", "5 minutes", "1000000ns",
                  "1000us", "9223372036854775807d", "5seconds"]:
        rec.call("setMetaConf", "hive.metastore.client.socket.timeout", value, msg=True)
    rec.call("setMetaConf", "HIVE.METASTORE.TRY.DIRECT.SQL", "false", msg=True,
             label="setMetaConf upper-case key")
    rec.call("getMetaConf", " hive.metastore.try.direct.sql", msg=True,
             label="getMetaConf key with a space")
    rec.call("setMetaConf", "hive.metastore.client.capability.check", None, msg=True,
             label="setMetaConf null boolean")
    rec.call("setMetaConf", "hive.metastore.partition.name.whitelist.pattern", "[", msg=True,
             label="setMetaConf invalid regex")
    rec.call("setMetaConf", "hive.metastore.client.socket.timeout", "20s", msg=True)
    rec.call("setMetaConf", "hive.metastore.try.direct.sql", "false", msg=True)
    rec.call("setMetaConf", "hive.metastore.partition.name.whitelist.pattern", "[a-z]*",
             msg=True)
    rec.call("setMetaConf", "hive.metastore.try.direct.sql.ddl", None, msg=True,
             label="setMetaConf null value")
    for key in META_KEYS:
        rec.call("getMetaConf", key, msg=True, label=f"getMetaConf {key} after set")
    # The whitelist HMS checks partition values against is the server's, not the session's.
    rec.call("partition_name_has_valid_characters", ["ABC-1"], True, msg=True,
             label="partition_name_has_valid_characters after setMetaConf")
    # Another connection does not see this connection's values.
    with connect(rec.proc) as other:
        rec.note("other connection: hive.metastore.client.socket.timeout",
                 other.getMetaConf("hive.metastore.client.socket.timeout"))
        rec.note("other connection: hive.metastore.try.direct.sql",
                 other.getMetaConf("hive.metastore.try.direct.sql"))
        other.setMetaConf("hive.metastore.try.direct.sql", "true")
    rec.call("getMetaConf", "hive.metastore.try.direct.sql", msg=True,
             label="getMetaConf after the other connection set it")
    # Put this connection's values back (HMS keeps them per server thread).
    rec.call("setMetaConf", "hive.metastore.client.socket.timeout", "600s")
    rec.call("setMetaConf", "hive.metastore.try.direct.sql", "true")
    rec.call("setMetaConf", "hive.metastore.partition.name.whitelist.pattern", "")
    rec.call("setMetaConf", "hive.metastore.try.direct.sql.ddl", "true")
