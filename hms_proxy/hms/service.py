"""Session and service calls: set_ugi, configuration values, fb303 status."""
from __future__ import annotations

import re
import threading
import unicodedata

from hms_proxy.hms.family import Family
from hms_proxy.thrift import dialect, errors
from hms_proxy.thrift.gen.fb303 import ttypes as fb303_types
from hms_proxy.thrift.processor import CloseConnection

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

# HiveConf 2.3 "metaVars": the only keys getMetaConf / setMetaConf accept, with the values the
# stock HMS 2.3.10 server answers when nothing is configured (capability.check is false there).
META_VARS = {
    "hive.metastore.try.direct.sql": "true",
    "hive.metastore.try.direct.sql.ddl": "true",
    "hive.metastore.client.socket.timeout": "600s",
    "hive.metastore.partition.name.whitelist.pattern": "",
    "hive.metastore.client.capability.check": "false",
}
SOCKET_TIMEOUT = "hive.metastore.client.socket.timeout"
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1

_CONFIG_KEY = re.compile(r"(hive|hdfs|mapred).*", re.S)
# Hive 3.1+ (MetastoreConf): ``metastore.*`` keys may be read too, and a key of MetastoreConf
# answers its value under either of its two names (the metastore one first), so a Trino on a
# Hive 3 metastore gets ``metastore.txn.timeout`` at once instead of retrying a refusal
_CONFIG_KEY_31 = re.compile(r"(hive|hdfs|mapred|metastore).*", re.S)
_METASTORE_NAMES = {  # MetastoreConf's name -> HiveConf's, of the keys answered above
    "metastore.warehouse.dir": "hive.metastore.warehouse.dir",
    "metastore.try.direct.sql": "hive.metastore.try.direct.sql",
    "metastore.try.direct.sql.ddl": "hive.metastore.try.direct.sql.ddl",
    "metastore.client.socket.timeout": "hive.metastore.client.socket.timeout",
    "metastore.partition.name.whitelist.pattern":
        "hive.metastore.partition.name.whitelist.pattern",
    "metastore.disallow.incompatible.col.type.changes":
        "hive.metastore.disallow.incompatible.col.type.changes",
    "metastore.batch.retrieve.max": "hive.metastore.batch.retrieve.max",
    "metastore.limit.partition.request": "hive.metastore.limit.partition.request",
    "metastore.stats.autogather": "hive.stats.autogather",
    "metastore.txn.timeout": "hive.txn.timeout",
}
_HIVE_NAMES = {hive: meta for meta, hive in _METASTORE_NAMES.items()}


class ServiceCalls(Family):
    def __init__(self, env):
        super().__init__(env)
        self._options: dict[str, str] = {}
        self._options_lock = threading.Lock()

    # --- session ------------------------------------------------------------------------
    def set_ugi(self, ctx, user_name, group_names):
        if ctx.auth in ("kerberos", "token"):
            # The stock under SASL serves set_ugi in its handler, not its processor: the
            # authenticated caller stays who it is; the answer is the groups and the name.
            return list(group_names or []) + ([user_name] if user_name is not None else [])
        if ctx.user is not None:
            # HMS's processor refuses a second set_ugi on a connection by closing it.
            raise CloseConnection("UGI is already set")
        ctx.user = user_name
        ctx.groups = list(group_names or [])
        return list(ctx.groups)

    def get_config_value(self, ctx, name, defaultValue):
        if name is None:
            return defaultValue
        hive3 = dialect.since(dialect.HIVE31)
        if not (_CONFIG_KEY_31 if hive3 else _CONFIG_KEY).fullmatch(name):
            raise errors.ConfigValSecurity(
                f"For security reasons, the config key {name} cannot be accessed")
        if hive3 and (name in _METASTORE_NAMES or name in _HIVE_NAMES):
            meta = name if name in _METASTORE_NAMES else _HIVE_NAMES[name]
            if meta in self.env.conf:
                return self.env.conf[meta]
            name = _METASTORE_NAMES[meta]
        if name in self.env.conf:
            return self.env.conf[name]
        if name == "hive.metastore.warehouse.dir":
            return self.env.warehouse.configured
        value = HIVECONF_DEFAULTS.get(name)
        return defaultValue if value is None else value

    def getMetaConf(self, ctx, key):
        if key not in META_VARS:
            raise errors.MetaError(f"Invalid configuration key {_j(key)}")
        overrides = getattr(ctx, "meta_conf", {})
        return overrides.get(key, self.env.conf.get(key, META_VARS[key]))

    def setMetaConf(self, ctx, key, value):
        """Per connection, like HMS's thread-local configuration: validated by the key's
        HiveConf validator (only the socket timeout has one), then set; a timeout that is not
        positive is refused after it was set, as HMS's SessionPropertiesListener does."""
        if key not in META_VARS:
            raise errors.MetaError(f"Invalid configuration key {_j(key)}")
        millis = None
        if key == SOCKET_TIMEOUT:
            try:
                millis = java_time_millis(value)
            except ValueError as exc:
                raise errors.MetaError(f"Invalid configuration value {_j(value)} for key "
                                       f"{key} by {exc}") from None
        if value is None:  # Hadoop's Configuration.set refuses a null value
            raise errors.InternalError("setMetaConf: null value")
        if not hasattr(ctx, "meta_conf"):
            ctx.meta_conf = {}
        ctx.meta_conf[key] = value
        if millis is not None and millis <= 0:
            raise errors.MetaError(f"The reset timeout value should be larger than 0: {millis}")

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
        # HMS counts the calls of each function since it started; no counters are kept here.
        return {}

    def getCounter(self, ctx, key):
        if key is None:  # a ConcurrentHashMap lookup of null in fb303's FacebookBase
            raise errors.InternalError("getCounter: null key")
        return 0

    def setOption(self, ctx, key, value):
        """fb303 options: a server-wide map, kept in memory like FacebookBase's."""
        if key is None or value is None:
            raise errors.InternalError("setOption: null key or value")
        with self._options_lock:
            self._options[key] = value

    def getOption(self, ctx, key):
        if key is None:
            raise errors.InternalError("getOption: null key")
        with self._options_lock:
            return self._options.get(key)  # None: the client sees MISSING_RESULT, as from HMS

    def getOptions(self, ctx):
        with self._options_lock:
            return dict(self._options)

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


def _j(value) -> str:
    """A string as Java's string concatenation prints it."""
    return "null" if value is None else value


def _java_trim(text: str) -> str:
    """String.trim(): strips characters up to U+0020 at both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


_UNIT_MILLIS = (  # HiveConf.unitFor, in its order: (exact, prefix, milliseconds per unit)
    ("d", "day", 86_400_000), ("h", "hour", 3_600_000), ("m", "min", 60_000),
    ("s", "sec", 1000), ("ms", "msec", 1), ("us", "usec", 0.001), ("ns", "nsec", 0.000001),
)


def java_time_millis(value: str | None, default_unit_millis: int = 1000) -> int:
    """HiveConf.toTime(value, SECONDS, MILLISECONDS) for a TimeValidator: the milliseconds,
    or ValueError worded as the Java exception's toString()."""
    if value is None:
        raise ValueError('java.lang.NullPointerException: Cannot invoke "String.trim()" '
                         'because "value" is null')
    text = _java_trim(value)
    i = 0
    while i < len(text) and (text[i] == "-" or unicodedata.category(text[i]) == "Nd"):
        i += 1
    number, unit = text[:i], _java_trim(text[i:]).lower()
    try:
        if not re.fullmatch(r"-?\d+", number, re.U):
            raise ValueError
        amount = int(number)
        if not _LONG_MIN <= amount <= _LONG_MAX:
            raise ValueError
    except ValueError:
        raise ValueError(f'java.lang.NumberFormatException: For input string: "{number}"') from None
    if unit in ("", "l"):
        scale = default_unit_millis
    else:
        for exact, prefix, millis in _UNIT_MILLIS:
            if unit == exact or unit.startswith(prefix):
                scale = millis
                break
        else:
            raise ValueError(f"java.lang.IllegalArgumentException: Invalid time unit {unit}")
    if scale >= 1:  # TimeUnit.convert saturates
        return max(_LONG_MIN, min(_LONG_MAX, amount * scale))
    per = round(1 / scale)
    return abs(amount) // per * (1 if amount >= 0 else -1)  # truncated toward zero
