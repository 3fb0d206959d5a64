"""Session and service calls: set_ugi, configuration values, fb303 status."""
from __future__ import annotations

import re

from hms_proxy import errors
from hms_proxy.family import Family
from hms_proxy.processor import CloseConnection
from hms_proxy.gen.fb303 import ttypes as fb303_types

HMS_VERSION = "2.3.10"

# Values HMS 2.3 answers from its HiveConf defaults for the keys clients ask for; anything
# else comes from ``serve --conf KEY=VALUE`` or the caller's default.
HIVECONF_DEFAULTS = {
    "hive.metastore.warehouse.dir": None,  # filled from the server's warehouse
    "hive.exec.dynamic.partition": "true",
    "hive.exec.dynamic.partition.mode": "strict",
    "hive.metastore.try.direct.sql": "true",
    "hive.metastore.try.direct.sql.ddl": "true",
    "hive.metastore.client.socket.timeout": "600s",
    "hive.metastore.partition.name.whitelist.pattern": "",
    "hive.metastore.disallow.incompatible.col.type.changes": "true",
    "hive.metastore.batch.retrieve.max": "300",
    "hive.metastore.limit.partition.request": "-1",
    "hive.stats.autogather": "true",
    "hive.default.fileformat": "TextFile",
    "hive.txn.timeout": "300s",
    "hive.support.concurrency": "false",
}

# HiveConf "metaVars": the only keys getMetaConf / setMetaConf accept.
META_VARS = {
    "hive.metastore.try.direct.sql": "true",
    "hive.metastore.try.direct.sql.ddl": "true",
    "hive.metastore.client.socket.timeout": "600s",
    "hive.metastore.partition.name.whitelist.pattern": "",
    "hive.metastore.client.capability.check": "true",
    "hive.metastore.limit.partition.request": "-1",
}

_CONFIG_KEY = re.compile(r"(hive|hdfs|mapred).*", re.S)


class ServiceCalls(Family):
    # --- session ------------------------------------------------------------------------
    def set_ugi(self, ctx, user_name, group_names):
        if ctx.user is not None:
            # HMS's processor refuses a second set_ugi on a connection by closing it.
            raise CloseConnection("UGI is already set")
        ctx.user = user_name
        ctx.groups = list(group_names or [])
        return list(ctx.groups)

    def get_config_value(self, ctx, name, defaultValue):
        if name is None:
            return defaultValue
        if not _CONFIG_KEY.fullmatch(name):
            raise errors.ConfigValSecurity(
                f"For security reasons, the config key {name} cannot be accessed")
        if name in self.env.conf:
            return self.env.conf[name]
        if name == "hive.metastore.warehouse.dir":
            return self.env.warehouse.configured
        value = HIVECONF_DEFAULTS.get(name)
        return defaultValue if value is None else value

    def getMetaConf(self, ctx, key):
        if key not in META_VARS:
            raise errors.MetaError(f"Invalid configuration key {key}")
        overrides = getattr(ctx, "meta_conf", {})
        return overrides.get(key, self.env.conf.get(key, META_VARS[key]))

    def setMetaConf(self, ctx, key, value):
        if key not in META_VARS:
            raise errors.MetaError(f"Invalid configuration key {key}")
        if not hasattr(ctx, "meta_conf"):
            ctx.meta_conf = {}
        ctx.meta_conf[key] = value

    def partition_name_has_valid_characters(self, ctx, part_vals, throw_exception):
        pattern = self.env.conf.get("hive.metastore.partition.name.whitelist.pattern", "")
        if not pattern:
            return True
        bad = [v for v in part_vals or [] if not re.fullmatch(pattern, v or "")]
        if bad and throw_exception:
            raise errors.MetaError(
                f"Partition value '{bad[0]}' contains a character not matched by whitelist "
                f"pattern '{pattern}'.  (configure with hive.metastore.partition.name.whitelist.pattern)")
        return not bad

    def flushCache(self, ctx):
        return None

    # --- fb303 --------------------------------------------------------------------------
    def getName(self, ctx):
        return "new db based metaserver"  # what HMS 2.3.10 answers

    def getVersion(self, ctx):
        return "3.0"  # HMS 2.3.10 answers its fb303 version, not Hive's

    def getStatus(self, ctx):
        return fb303_types.fb_status.ALIVE

    def getStatusDetails(self, ctx):
        return ""

    def getCounters(self, ctx):
        return {}

    def getCounter(self, ctx, key):
        return 0

    def setOption(self, ctx, key, value):
        return None

    def getOption(self, ctx, key):
        return ""

    def getOptions(self, ctx):
        return {}

    def getCpuProfile(self, ctx, profileDurationInSec):
        return ""

    def aliveSince(self, ctx):
        return int(self.env.started)

    def reinitialize(self, ctx):
        return None

    def shutdown(self, ctx):
        # A client must not be able to stop a shared server; HMS's own shutdown only
        # releases the calling thread's resources.
        return None
