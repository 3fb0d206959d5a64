"""The composition root: a running server from a typed configuration.

Everything that decides which object gets which collaborator is here, in the order a call
meets them: the store (and how a lakeFS one is shown), the security (TLS, rules, secrets,
audit), the families behind the handler, the federation, the processor and its metrics, the
listeners, the HTTP API. Nothing is patched after construction elsewhere; the CLI only
turns arguments into :mod:`hms_proxy.app.config` and prints.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass

from hms_proxy.api.app import App
from hms_proxy.api.auth import Policy
from hms_proxy.api.server import ApiServer
from hms_proxy.app import supervisor
from hms_proxy.app.config import ApiConfig, ConfigError, SecurityConfig, ServeConfig, StoreConfig
from hms_proxy.app.listeners import Listeners
from hms_proxy.extras import require
from hms_proxy.hms import warehouse
from hms_proxy.hms.family import Env
from hms_proxy.hms.handler import Handler
from hms_proxy.ops import logs, memory
from hms_proxy.ops.metrics import MetricsServer, ServerMetrics
from hms_proxy.ops.shutdown import StopRequest
from hms_proxy.security import access, audit, tls
from hms_proxy.thrift import dialect, limits
from hms_proxy.thrift import server as srv
from hms_proxy.thrift.federation import Federation
from hms_proxy.thrift.gen.fb303 import FacebookService
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore, ttypes
from hms_proxy.thrift.processor import Processor, service_methods
from kvmodel.locations import RefLocations, RenderedStore, open_catalog_store
from kvmodel.store import local_path
from kvmodel.store.cache import LRUCache

log = logging.getLogger("hms_proxy")


# --- the store ---------------------------------------------------------------------------------
def _is_lakefs(store) -> bool:
    return getattr(store, "repository", None) is not None and hasattr(store, "refresh_interval")


def served_store(store, config: StoreConfig):
    """``store`` as a server shows it to clients: a lakeFS store with its refresh interval
    (and Redis), seen through its rendered locations; any other store as it is."""
    if not _is_lakefs(store):
        return store
    store.refresh_interval = config.lakefs_refresh
    if config.redis:  # what is read at commits, shared by the servers
        store.use_redis(config.redis)
    if config.lakefs_peer != "off":  # one server writes a branch's log; the others hand over
        host, port, advertise = peer_address(config.lakefs_peer)
        name = store.serve_peers(host, port, advertise)
        log.info("lakeFS peer %s (writes of a branch handed between servers)", name)
    # managed tables' objects move on rename and go on drop, as HMS does on its file systems
    warehouse.register(warehouse.LakeFSFiles(store))
    if config.lakefs_locations == "off":
        return store
    return RenderedStore(store, RefLocations(store.repository, config.lakefs_locations))


def peer_address(text: str) -> tuple[str, int, str | None]:
    """(host to listen on, port, address advertised or None) of ``--lakefs-peer``: ``auto``
    (every interface, a free port, this machine's address), HOST, HOST:PORT, or
    HOST:PORT/ADVERTISED (listen there, be reached at ADVERTISED)."""
    if text == "auto":
        return "0.0.0.0", 0, None
    address, _, advertise = text.partition("/")
    host, colon, port = address.rpartition(":")
    if not colon:
        host, port = address, "0"
    if not port.isdigit() or not host:
        raise ConfigError(f"--lakefs-peer takes auto, off, HOST, HOST:PORT or "
                          f"HOST:PORT/ADVERTISED, not {text!r}")
    return host.strip("[]"), int(port), advertise or None


# --- security ----------------------------------------------------------------------------------
@dataclass
class Security:
    """The loaded security settings: TLS context, rules, secrets and audit log (each or None)."""

    tls: tls.TLS | None
    rules: access.Rules | None
    secrets: access.Secrets | None
    audit: audit.AuditLog | None
    sasl: object | None = None  # hms_proxy.security.sasl.Sasl: Kerberos on the listeners
    kerberos: object | None = None  # hms_proxy.security.kerberos.Kerberos, with sasl

    @classmethod
    def load(cls, config: SecurityConfig, tls_allowed: bool = True) -> "Security":
        """Raises ConfigError (access.ConfigError too) on a file it cannot use."""
        config.check()
        context = tls.TLS.load(config.tls_cert, config.tls_key, config.tls_client_ca,
                               config.tls_handshake_timeout) \
            if tls_allowed and config.tls_cert else None
        rules = access.Rules.load(config.access_rules) if config.access_rules else None
        secrets = access.Secrets.load(config.auth_secrets) if config.auth_secrets else None
        log_file = audit.AuditLog.open(config.audit_log) if config.audit_log else None
        sasl = krb = None
        if config.kerberos_principal:
            from hms_proxy.security import kerberos, sasl as sasl_transport
            krb = kerberos.Kerberos.load(config.kerberos_principal, config.kerberos_keytab,
                                         config.rpc_protection, config.kerberos_auth_to_local)
            # DIGEST-MD5 (delegation tokens) joins once the store is open: enable_tokens
            sasl = sasl_transport.Sasl({"GSSAPI": krb.mechanism}, config.sasl_timeout)
        return cls(context, rules, secrets, log_file, sasl, krb)

    def enable_tokens(self, store, ref: str, conf: dict):
        """On a Kerberized server: the delegation token manager over ``store`` at ``ref``
        (for the handler's Env) and SASL DIGEST-MD5 with its tokens beside GSSAPI; None
        without Kerberos."""
        if self.sasl is None:
            return None
        from functools import partial

        from hms_proxy.hms.tokens import Delegation
        from hms_proxy.security import delegation, digest, kerberos
        from hms_proxy.security.proxyusers import ProxyUsers
        manager = Delegation(store, ref, delegation.Lifetimes.of(conf),
                             self.kerberos.auth_to_local, ProxyUsers.of(conf))
        protection = self.kerberos.protection
        if protection & kerberos.AUTH_CONF and not digest.can_encrypt():
            protection &= ~kerberos.AUTH_CONF
            log.warning(
                "DIGEST-MD5 (delegation tokens) cannot offer privacy without the cryptography "
                "module: pip install 'hms-proxy[kerberos]'")
        self.sasl.mechanisms[digest.DigestServer.name] = partial(
            digest.DigestServer, manager.lookup, manager.short_name, protection)
        return manager

    def guard(self, default_ref: str, read_only: bool) -> access.Guard | None:
        """The Thrift calls' guard, or None when nothing is asked (then calls pay nothing)."""
        if self.rules is None and self.secrets is None and self.audit is None and not read_only:
            return None
        return access.Guard(self.rules, self.secrets, self.audit, default_ref)


def load_security(config: SecurityConfig, **kwargs) -> Security:
    """:meth:`Security.load`, ending the command with exit status 2 and one line on a setting
    or file it cannot use, before anything starts."""
    try:
        return Security.load(config, **kwargs)
    except (ConfigError, access.ConfigError) as exc:
        print(f"hms-proxy: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def _upstream_sasl(config: ServeConfig):
    """The Kerberos client of a Kerberized upstream (``--upstream-kerberos-principal``), this
    server's own principal and keytab its credentials; None for a plain one. Ends the command
    in one line on settings it cannot use."""
    if not config.upstream_kerberos_principal:
        return None
    security = config.security
    try:
        if not (security.kerberos_principal and security.kerberos_keytab):
            raise ConfigError("--upstream-kerberos-principal needs --kerberos-principal and "
                              "--kerberos-keytab (this server's own, which it authenticates "
                              "with)")
        from hms_proxy.security import kerberos, sasl_client
        own = kerberos.server_principal(security.kerberos_principal)
        if "@" not in own and kerberos.default_realm():
            own = f"{own}@{kerberos.default_realm()}"
        return sasl_client.GssapiClient(own, security.kerberos_keytab,
                                        config.upstream_kerberos_principal,
                                        kerberos.parse_protection(security.rpc_protection))
    except (ConfigError, access.ConfigError) as exc:
        print(f"hms-proxy: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


# --- the Thrift server -------------------------------------------------------------------------
def build_server(config: ServeConfig) -> srv.MetastoreServer:
    """The server (bound, not yet serving); the listeners of ``config.binds`` are in its
    ``extra_listeners``. Its store (``server.processor.handler.env.store``) is the caller's
    to close once every listener has stopped."""
    security = load_security(config.security)
    store = open_catalog_store(config.store.store)
    warehouse_root = config.store.warehouse or \
        os.path.join(os.path.abspath(config.store.store), "warehouse")
    if _is_lakefs(store) and not config.store.warehouse:  # the repository's, at the ref served
        warehouse_root = RefLocations(store.repository).canonical_prefix + "warehouse"
    store = served_store(store, config.store)
    conf = dict(config.conf)
    if config.limit_partition_request is not None:  # answered by get_config_value, as in HMS
        conf[limits.PARTITION_REQUEST_KEY] = str(config.limit_partition_request)
    try:
        limits.partition_request_limit(conf)
    except ValueError as exc:
        raise SystemExit(f"hms-proxy serve: {exc}") from None
    for bind in config.binds:
        store.resolve(bind.ref)  # fail at start, not at the first call, on an unknown ref
    cache = LRUCache(config.cache_size)
    # call metrics and log lines, commits counted; /metrics with --metrics-port
    metrics = ServerMetrics(default_ref=config.ref, cache=cache)
    store = metrics.counted(store)
    env = Env(store=store, warehouse=warehouse.Warehouse(warehouse_root), ref=config.ref,
              conf=conf, cache=cache, autocommit=config.autocommit,
              redis_url=config.store.redis or None, lock_wait=config.lock_wait,
              stats_properties=config.stats_properties,
              access=security.guard(config.ref, config.any_read_only),
              delegation=security.enable_tokens(store, config.ref, conf))
    services = (ThriftHiveMetastore, FacebookService)
    federation = None
    if config.upstream:
        try:
            federation = Federation(store, config.ref, config.upstream,
                                    writes=config.upstream_writes,
                                    timeout=config.upstream_timeout,
                                    sasl=_upstream_sasl(config))
        except ValueError as exc:
            raise SystemExit(f"--upstream: {exc}") from None
    handler = Handler(env, service_methods(services), federation=federation)
    handler.start()
    processor = Processor(handler, services, ttypes, metrics=metrics,
                          max_response_size=config.max_response_size)
    listener = srv.ServerConfig(
        host=config.host, port=config.port, transport=config.transport,
        max_message_size=config.max_message_size,
        max_string_length=config.max_string_length or config.max_message_size,
        max_container_length=config.max_container_length,
        max_connections=config.max_connections, reuse_port=config.reuse_port,
        tls=security.tls, sasl=security.sasl, read_only=config.security.read_only,
        idle_timeout=config.idle_timeout,
        max_connections_per_client=config.max_connections_per_client,
        min_generation=dialect.named(config.min_client_generation))
    server = srv.MetastoreServer(processor, listener, on_connection_end=store.release_thread)
    _listen(f"--port {config.port}", server.bind)
    for bind in config.binds:
        extra = srv.MetastoreServer(
            processor, dataclasses.replace(listener, port=bind.port,
                                           read_only=config.security.read_only or bind.read_only),
            on_connection_end=store.release_thread, ref=bind.ref,
            clients=server.clients)  # one count per client address, whatever the port
        _listen(f"--bind {bind.port}={bind.ref}", extra.bind)
        server.extra_listeners.append(extra)
    return server


def _listen(option: str, bind) -> None:
    """``bind()``, or one line naming the option and exit 2 when the port cannot be had (taken
    by another process, or not ours to bind)."""
    try:
        bind()
    except OSError as exc:
        print(f"hms-proxy: error: {option}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def load_spnego(config: SecurityConfig, host: str | None = None):
    """The SPNEGO acceptor of the HTTP doors (``--http-kerberos-principal``; ``host``: the
    door's address, for ``_HOST``), or None; ends the command in one line, exit 2, on a keytab
    it cannot use."""
    if not config.http_kerberos_principal:
        return None
    from hms_proxy.security.spnego import Spnego
    try:
        return Spnego.load(config.http_kerberos_principal, config.spnego_keytab,
                           config.kerberos_auth_to_local, host,
                           "--http-kerberos-keytab" if config.http_kerberos_keytab
                           else "--kerberos-keytab")
    except (ConfigError, access.ConfigError) as exc:
        print(f"hms-proxy: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def start_http(config: ServeConfig, server: srv.MetastoreServer,
               listeners: Listeners | None = None) -> ApiServer:
    """The HTTP API and console of ``serve --http-port``, over the running server's store and
    security (``listeners``: the Thrift listeners it may open); ``stop()`` it at the end."""
    env = server.processor.handler.env
    guard = env.access
    host = config.http_host or config.host
    policy = Policy(getattr(guard, "rules", None), getattr(guard, "secrets", None),
                    getattr(guard, "audit", None), read_only=config.security.read_only,
                    spnego=load_spnego(config.security, host))
    app = App(env.store, policy, default_ref=config.ref, store_path=local_path(config.store.store),
              listeners=listeners, thrift_host=_shown(config.host), warehouse=env.warehouse.root)
    try:
        http = ApiServer(app, host, config.http_port, reuse_port=config.reuse_port)
    except OSError as exc:  # a port taken: one line and exit 2, like the Thrift listener's
        print(f"hms-proxy: error: --http-port {config.http_port}: {exc.strerror or exc}",
              file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    http.start()
    announce_http(host, http.port)
    return http


def start_rest(config: ServeConfig, server: srv.MetastoreServer):
    """The Iceberg REST catalog of ``serve --rest-port`` over the running server's handler
    (the same locks, access rules, audit and cascades as its Thrift calls); ``stop()`` it."""
    from hms_proxy.rest import limits
    from hms_proxy.rest.app import RestApp
    from hms_proxy.rest.catalog import RestCatalog
    from hms_proxy.rest.metadata import MetadataFiles
    from hms_proxy.rest.oauth import Tokens
    from hms_proxy.rest.server import RestServer
    from kvmodel.iceberg_paths import RefPaths, gateway_io_properties

    handler = server.processor.handler
    env = handler.env
    host = config.rest_host or config.host
    io_properties, defaults, paths = {}, {}, None
    if _is_lakefs(env.store):  # metadata files through lakeFS's S3 gateway, as the data goes
        io_properties = gateway_io_properties(env.store.config)
        gateway = io_properties["s3.endpoint"]
        # clients are told where the gateway is (path-style), never the server's keys
        # (client.region for Iceberg's Java S3FileIO, which reads no s3.region; its AWS SDK's
        # chunked uploads are refused by the gateway: plain ones)
        defaults = {"s3.endpoint": gateway, "s3.path-style-access": "true",
                    "s3.region": "us-east-1", "client.region": "us-east-1",
                    "s3.chunked-encoding-enabled": "false"}
        paths = RefPaths(env.store.repository)  # a table's new files under the ref written
    catalog = RestCatalog(handler, MetadataFiles(io_properties, paths=paths))
    try:
        rest = RestServer(None, host, config.rest_port, reuse_port=config.reuse_port)
    except OSError as exc:
        print(f"hms-proxy: error: --rest-port {config.rest_port}: {exc.strerror or exc}",
              file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    # reads on the event loop only where the catalog is a local file and no upstream
    # metastore is asked (hms_proxy.rest.app: a loadTable twice as fast)
    inline = not _is_lakefs(env.store) and not config.upstream
    app = RestApp(catalog, env.store, default_ref=config.ref, guard=env.access,
                  read_only=config.security.read_only, listener=f"rest {host}:{rest.port}",
                  defaults=defaults, inline_reads=inline,
                  bounds=limits.RestLimits.of(depth=config.rest_max_json_depth,
                                              fields=config.rest_max_schema_fields,
                                              updates=config.rest_max_updates),
                  spnego=load_spnego(config.security, host),
                  tokens=Tokens(env.store, config.ref, config.rest_token_lifetime,
                                load_jwt_issuer(config), config.rest_key_rotation))
    rest.server.config.app = app.asgi
    rest.start()
    log.info("Iceberg REST catalog on http://%s:%d/v1", _shown(host), rest.port)
    print(f"hms-proxy Iceberg REST catalog on http://{_shown(host)}:{rest.port}", flush=True)
    return rest


def load_jwt_issuer(config: ServeConfig):
    """The external issuer of ``--rest-jwks`` (its keys read now), or None; ends the command in
    one line, exit 2, on a JWKS it cannot read or use."""
    if not config.rest_jwks:
        return None
    from hms_proxy.security import jwt
    try:
        jwks = jwt.Jwks(config.rest_jwks).load()
    except jwt.JwksError as exc:
        print(f"hms-proxy: error: --rest-jwks {config.rest_jwks}: {exc}", file=sys.stderr,
              flush=True)
        raise SystemExit(2) from None
    return jwt.Issuer(jwks, config.rest_jwt_issuer, config.rest_jwt_audience,
                      config.rest_jwt_user_claim)


def _shown(host: str) -> str:
    """A host to connect to: the loopback for a wildcard address, an IPv6 one bracketed."""
    return "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)


def announce_http(host: str, port: int) -> None:
    shown = _shown(host)
    log.info("HTTP API and console on http://%s:%d/", shown, port)
    print(f"hms-proxy HTTP API and console on http://{shown}:{port}/", flush=True)


def run_serve(config: ServeConfig, argv: list[str]) -> int:
    """``hms-proxy serve``: serve until SIGTERM or SIGINT (``argv``: the command line, which a
    supervisor gives its workers)."""
    logs.configure(config.log_level, config.log_format)
    memory.configure()
    try:
        config.check()
    except ConfigError as exc:
        raise SystemExit(f"hms-proxy serve: {exc}") from None
    if config.http_port is not None or config.rest_port is not None:
        # a keytab without the HTTP principal's key: exit 2 before anything starts
        load_spnego(config.security, (config.http_host if config.http_port is not None
                                      else config.rest_host) or config.host)
    if config.rest_port is not None:
        load_jwt_issuer(config)  # a JWKS it cannot use: exit 2 before anything starts
    if config.processes > 1:  # a supervisor of worker processes
        load_security(config.security)  # a bad file: exit 2 here, not in each worker
        return supervisor.run(config, argv)
    if config.rest_port is not None:  # before anything starts: one line naming the extra
        require("starlette", "uvicorn", "pyiceberg")
    server = build_server(config)
    extras = server.extra_listeners
    signals = server.install_signal_handlers()
    srv.pid_file_write(config.pid_file)
    log.info("serving %s (ref %s) on %s:%d", config.store.store, config.ref, config.host,
             server.port)
    print(f"hms-proxy listening on {config.host}:{server.port}", flush=True)
    threads = []
    for extra in extras:
        log.info("serving ref %s on %s:%d", extra.ref, config.host, extra.port)
        print(f"hms-proxy listening on {config.host}:{extra.port} for ref {extra.ref}",
              flush=True)
        t = threading.Thread(target=extra.serve_forever, name=f"listener-{extra.port}",
                             daemon=True)
        t.start()
        threads.append(t)
    metrics_http = None
    if config.metrics_port is not None:
        host = config.metrics_host or config.host
        metrics_http = None

        def start_metrics():
            nonlocal metrics_http
            metrics_http = MetricsServer(server.processor.metrics, host,
                                         config.metrics_port).start()
        _listen(f"--metrics-port {config.metrics_port}", start_metrics)
        log.info("metrics on http://%s:%d/metrics", host, metrics_http.port)
        print(f"hms-proxy metrics on http://{host}:{metrics_http.port}/metrics", flush=True)
    # ports bound to a ref through the HTTP API: a worker of several (HMS_WORKER) has none,
    # since the next request may reach another worker
    listeners = None if os.environ.get("HMS_WORKER") else \
        Listeners(server, server.processor.handler.env.store)
    http = start_http(config, server, listeners) if config.http_port is not None else None
    rest = start_rest(config, server) if config.rest_port is not None else None
    if config.store.lakefs_hooks:
        install_lakefs_hooks(server.processor.handler.env.store, config.store.lakefs_hooks,
                             config.ref, http and (config.http_host or config.host, http.port))
    server.serve_forever()
    if http is not None:
        http.stop()
    if rest is not None:
        rest.stop()
    if listeners is not None:
        listeners.close_all()
    if metrics_http is not None:
        metrics_http.stop()
    for extra in extras:
        extra.stop()
    for t in threads:
        t.join(timeout=15)
    server.processor.handler.env.store.close()  # once every listener is done
    signals.finish()
    return 0


# --- the HTTP API alone ------------------------------------------------------------------------
HOOKS_SETTLE = 10.0  # seconds a branch may stay dirty from other servers' start-up writes
def install_lakefs_hooks(store, url: str, branch: str, http) -> None:
    """``--lakefs-hooks URL``: the lakeFS action on ``branch``, installed once the HTTP API
    (``http``: its host and port, or None) answers, since lakeFS runs the action on its own
    commit; ``self`` is that address as this machine reaches it. A failure is one line, the
    server goes on."""
    from kvmodel import lakefs_actions

    serving_http = bool(http)
    if serving_http and url == "self":
        host, port = http
        host = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
        url = f"http://{host}:{port}"

    if not hasattr(store, "fold_for_commit"):
        print("hms-proxy: warning: --lakefs-hooks: the store is not a lakeFS repository; "
              "ignored", file=sys.stderr, flush=True)
        return
    if not serving_http:
        print("hms-proxy: warning: --lakefs-hooks needs --http-port (lakeFS calls the HTTP "
              "API); not installed", file=sys.stderr, flush=True)
        return
    def attempt() -> bool:
        """One try; False when only the branch's uncommitted changes stood in the way."""
        try:
            done = lakefs_actions.install(store, url, branch)
        except lakefs_actions.BranchNotClean:
            return False
        except Exception as exc:  # noqa: BLE001 - lakeFS's refusal: said, not fatal
            warn(exc)
            return True
        log.info("%s", done)
        print(f"hms-proxy lakeFS hooks: {done}", flush=True)
        return True

    def warn(exc) -> None:
        print(f"hms-proxy: warning: --lakefs-hooks: not installed: "
              f"{str(exc).splitlines()[0] if str(exc) else exc!r}", file=sys.stderr, flush=True)

    def settle() -> None:
        # servers started together: another's start-up writes (the default database, its
        # marker) are uncommitted for a moment before its own commit; a branch still dirty
        # after HOOKS_SETTLE seconds is the user's
        deadline = time.monotonic() + HOOKS_SETTLE
        while time.monotonic() < deadline:
            time.sleep(0.25)
            if attempt():
                return
        try:
            lakefs_actions.install(store, url, branch)
        except Exception as exc:  # noqa: BLE001 - said, not fatal
            warn(exc)

    if not attempt():  # the server starts serving meanwhile
        threading.Thread(target=settle, name="lakefs-hooks", daemon=True).start()


def run_api(config: ApiConfig) -> int:
    """``hms-proxy api``: the HTTP API and console over a store, until SIGTERM or SIGINT."""
    memory.configure()
    logging.basicConfig(level=getattr(logging, str(config.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    local = local_path(config.store.store)
    if local is not None and not os.path.exists(os.path.join(local, "store.db")):
        print(f"hms-proxy: error: no store at {config.store.store} (hms-proxy serve creates one)",
              file=sys.stderr)
        return 2
    security = load_security(config.security, tls_allowed=False)
    policy = Policy(security.rules, security.secrets, security.audit,
                    read_only=config.security.read_only,
                    spnego=load_spnego(config.security, config.host))
    store = served_store(open_catalog_store(config.store.store), config.store)  # as serve shows it
    try:
        store.resolve(config.ref)
        http = ApiServer(App(store, policy, default_ref=config.ref, store_path=local),
                         config.host, config.port)
    except Exception as exc:  # noqa: BLE001 - a port taken, an unknown ref: one line, exit 2
        store.close()
        print(f"hms-proxy: error: {str(exc).splitlines()[0] if str(exc) else exc!r}",
              file=sys.stderr)
        return 2
    stop = StopRequest().install()  # a handler that takes no lock (hms_proxy.ops.shutdown)
    http.start()
    announce_http(config.host, http.port)
    if config.store.lakefs_hooks:
        install_lakefs_hooks(store, config.store.lakefs_hooks, config.ref,
                             (config.host, http.port))
    try:
        while not stop.wait(0.5):
            pass
    finally:
        http.stop()
        store.close()
        if policy.audit is not None:
            policy.audit.close()
    return 0
