"""The typed configuration of a server: what ``hms-proxy serve`` and ``hms-proxy api`` are
asked for, checked once, independent of argparse (:mod:`hms_proxy.cli` fills it from the
command line; tests and embedders may build it directly)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


class ConfigError(ValueError):
    """A setting that cannot be used; the command ends with exit status 2 before starting."""


def key_values(pairs: list[str] | None, option: str = "--conf") -> dict[str, str]:
    """``KEY=VALUE`` arguments as a dict (the key stripped, the value as given)."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"{option} takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out


@dataclass(frozen=True)
class Bind:
    """``--bind PORT=REF[:ro]``: another listener, for one ref."""

    port: int
    ref: str
    read_only: bool = False

    @classmethod
    def parse(cls, text: str) -> "Bind":
        port, sep, ref = text.partition("=")
        ref = ref.strip()
        read_only = ref.endswith(":ro")
        ref = ref[:-3] if read_only else ref
        if not sep or not port.strip().isdigit() or not ref:
            raise ConfigError(f"--bind takes PORT=REF[:ro], got {text!r}")
        return cls(int(port), ref, read_only)


@dataclass(frozen=True)
class SecurityConfig:
    """TLS, identities, access rules, audit and the read-only switch (docs: operations)."""

    tls_cert: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None
    tls_handshake_timeout: float = 10.0
    access_rules: str | None = None
    auth_secrets: str | None = None
    audit_log: str | None = None
    read_only: bool = False
    kerberos_principal: str | None = None  # SASL GSSAPI on every Thrift listener
    kerberos_keytab: str | None = None
    rpc_protection: str = "authentication"  # hadoop.rpc.protection: a comma list
    kerberos_auth_to_local: str | None = None  # hadoop.security.auth_to_local (DEFAULT)
    sasl_timeout: float = 10.0
    # SPNEGO on the HTTP API and the Iceberg REST door (hive.server2.authentication.spnego.*)
    http_kerberos_principal: str | None = None
    http_kerberos_keytab: str | None = None  # default: kerberos_keytab

    def check(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ConfigError("--tls-cert and --tls-key go together")
        if self.kerberos_keytab and not self.kerberos_principal:
            raise ConfigError("--kerberos-keytab needs --kerberos-principal")
        if self.kerberos_principal and not self.kerberos_keytab:
            raise ConfigError("--kerberos-principal needs --kerberos-keytab")
        if self.sasl_timeout <= 0:
            raise ConfigError("--sasl-timeout must be more than 0 seconds")
        if self.tls_client_ca and not self.tls_cert:
            raise ConfigError("--tls-client-ca needs --tls-cert and --tls-key")
        if self.http_kerberos_keytab and not self.http_kerberos_principal:
            raise ConfigError("--http-kerberos-keytab needs --http-kerberos-principal")
        if self.http_kerberos_principal and not self.spnego_keytab:
            raise ConfigError("--http-kerberos-principal needs --http-kerberos-keytab "
                              "(or --kerberos-keytab)")

    @property
    def spnego_keytab(self) -> str | None:
        return self.http_kerberos_keytab or self.kerberos_keytab


@dataclass(frozen=True)
class StoreConfig:
    """The store and how a lakeFS one is served."""

    store: str = "./metastore"
    warehouse: str | None = None
    lakefs_locations: str = "s3a"   # s3a, s3, lakefs or off
    lakefs_refresh: float = 0.25
    redis: str | None = None        # locks, transactions and lakeFS commit state shared in Redis
    lakefs_hooks: str | None = None  # install the lakeFS action calling this URL at start
    lakefs_peer: str = "auto"  # HOST[:PORT] of the port taking other servers' writes, or off


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``hms-proxy serve`` runs with."""

    store: StoreConfig = field(default_factory=StoreConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    host: str = "0.0.0.0"
    port: int = 9083
    ref: str = "main"
    binds: tuple[Bind, ...] = ()
    processes: int = 1
    reuse_port: bool = False
    autocommit: bool = False
    lock_wait: float = 1.0
    min_client_generation: str | None = None  # "2.3" (None), "3.1" or "4"
    stats_properties: bool = True
    upstream: str | None = None
    upstream_writes: bool = False
    upstream_timeout: float = 10.0
    upstream_kerberos_principal: str | None = None  # the upstream's, as a Hive client names it
    transport: str = "buffered"
    max_message_size: int = 100 << 20
    max_string_length: int | None = None
    max_container_length: int = 1_000_000
    max_connections: int = 1000
    max_response_size: int = 0
    idle_timeout: float = 0.0
    max_connections_per_client: int = 0
    limit_partition_request: int | None = None
    cache_size: int = 256 << 20
    conf: dict[str, str] = field(default_factory=dict)
    pid_file: str | None = None
    log_level: str = "INFO"
    log_format: str = "text"
    metrics_port: int | None = None
    metrics_host: str | None = None
    http_port: int | None = None
    http_host: str | None = None
    rest_port: int | None = None
    rest_host: str | None = None
    # bounds of one REST request (hms_proxy.rest.limits.RestLimits; None: its default)
    rest_max_json_depth: int | None = None
    rest_max_schema_fields: int | None = None
    rest_max_updates: int | None = None
    # OAuth2 bearer tokens of the REST door (hms_proxy.rest.oauth): its own tokens' lifetime,
    # an external issuer's JWKS and checks
    rest_token_lifetime: int = 3600
    rest_key_rotation: int = 86400
    rest_jwks: str | None = None
    rest_jwt_issuer: str | None = None
    rest_jwt_audience: str | None = None
    rest_jwt_user_claim: str = "sub"

    @property
    def any_read_only(self) -> bool:
        """Some listener refuses writes (then calls go through the access guard)."""
        return self.security.read_only or any(b.read_only for b in self.binds)

    def check(self) -> None:
        """The settings that are not files (a bad security setting or file is found by
        :meth:`hms_proxy.app.compose.Security.load`, exit status 2)."""
        if self.processes < 1:
            raise ConfigError("--processes must be at least 1")
        if self.processes > 1 and self.rest_port == 0:
            raise ConfigError("--rest-port 0 with --processes: give the port the workers share")
        for name in ("max_response_size", "idle_timeout", "max_connections_per_client"):
            if (getattr(self, name) or 0) < 0:
                raise ConfigError(f"--{name.replace('_', '-')} cannot be negative")
        for name in ("rest_max_json_depth", "rest_max_schema_fields", "rest_max_updates"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
        if self.rest_token_lifetime < 1:
            raise ConfigError("--rest-token-lifetime must be at least 1 second")
        if self.rest_key_rotation < 1:
            raise ConfigError("--rest-key-rotation must be at least 1 second")
        if (self.rest_jwt_issuer or self.rest_jwt_audience) and not self.rest_jwks:
            raise ConfigError("--rest-jwt-issuer and --rest-jwt-audience need --rest-jwks")
        if not self.rest_jwt_user_claim:
            raise ConfigError("--rest-jwt-user-claim cannot be empty")


@dataclass(frozen=True)
class ApiConfig:
    """Everything ``hms-proxy api`` (the HTTP API and console alone) runs with."""

    store: StoreConfig = field(default_factory=StoreConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    host: str = "127.0.0.1"
    port: int = 8083
    ref: str = "main"
    log_level: str = "INFO"


def from_namespace(cls, namespace, **given):
    """An instance of the config dataclass ``cls`` from an object with attributes of the same
    names (an argparse namespace); nested configs are filled the same way, missing attributes
    keep their defaults."""
    values = {}
    for f in dataclasses.fields(cls):
        nested = f.default_factory if dataclasses.is_dataclass(f.default_factory) else None
        if f.name in given:
            values[f.name] = given[f.name]
        elif nested is not None:
            values[f.name] = from_namespace(nested, namespace)
        elif getattr(namespace, f.name, None) is not None:
            values[f.name] = getattr(namespace, f.name)
    return cls(**values)
