"""The ``hms-proxy`` command line."""
from __future__ import annotations

import argparse
import dataclasses
import logging
import threading
import os
import sys

from hms_proxy import server as srv
from hms_proxy.extras import install_hint
from kvmodel.errors import StoreError

DEFAULT_STORE = "./metastore"


def _size(text: str) -> int:
    """``100m``, ``1g``, ``4096`` -> bytes."""
    text = text.strip().lower()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:], 1)
    return int(text[:-1] if mult != 1 else text) * mult


def _conf(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--conf takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hms-proxy",
        description="A versioned Hive Metastore: an HMS 2.3 compatible Thrift server over a "
                    "versioned key-value store.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the metastore over Thrift",
                           description="Serve an HMS 2.3 compatible metastore over Thrift.")
    serve.add_argument("--store", default=os.environ.get("HMS_STORE", DEFAULT_STORE),
                       help="store path (default ./metastore, env HMS_STORE)")
    serve.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    serve.add_argument("--port", type=int, default=int(os.environ.get("HMS_PORT", "9083")),
                       help="port to listen on (default 9083, env HMS_PORT; 0 picks a free one)")
    serve.add_argument("--ref", default="main", help="branch or ref served (default main)")
    serve.add_argument("--bind", action="append", default=[], metavar="PORT=REF[:ro]",
                       help="also listen on PORT for REF (a branch, tag or commit; repeatable), "
                            "e.g. --bind 9084=dev --bind 9085=v1.0; ':ro': a read-only "
                            "listener (every write refused)")
    serve.add_argument("--processes", type=int, default=1, metavar="N",
                       help="serve from N processes sharing the port (SO_REUSEPORT) and the "
                            "store, supervised (restarted if they die); locks and transactions "
                            "through --redis (default: an embedded Redis); default 1")
    serve.add_argument("--reuse-port", action="store_true", help=argparse.SUPPRESS)
    serve.add_argument("--autocommit", action="store_true",
                       help="commit every Thrift write at once (author: the caller's "
                            "identity: set_ugi user or TLS client CN; "
                            "message: the call and its object); default: writes stay staged on "
                            "the branch until 'hms-proxy commit', as in lakeFS")
    serve.add_argument("--lock-wait", type=float, default=1.0, metavar="SECONDS",
                       help="how long lock and check_lock hold back a WAITING answer, granting "
                            "the lock the moment its holder releases it (default 1.0; 0 "
                            "answers WAITING at once, as the stock HMS does)")
    serve.add_argument("--redis", default=None, metavar="URL",
                       help="keep locks and transactions in Redis (redis://host:port/db or "
                            "unix:///path/to/redis.sock) so that several "
                            "servers over one store share them; default: in process")
    serve.add_argument("--warehouse", default=None,
                       help="warehouse root for default locations (default <store>/warehouse; "
                            "with a lakeFS store, the repository's warehouse/ at the ref served)")
    add_lakefs_arguments(serve)
    serve.add_argument("--upstream", default=None, metavar="thrift://HOST:PORT",
                       help="federation: databases not in this catalog are served by this "
                            "metastore (read-through; see --upstream-writes)")
    serve.add_argument("--upstream-writes", action="store_true",
                       help="forward writes to upstream databases too (default: refused)")
    serve.add_argument("--upstream-timeout", type=float, default=10.0, metavar="SECONDS",
                       help="how long a forwarded call waits for the upstream (default 10; "
                            "connecting takes at most 2)")
    serve.add_argument("--transport", choices=("buffered", "framed"), default="buffered",
                       help="Thrift transport (default buffered, as HMS)")
    serve.add_argument("--max-message-size", type=_size, default=srv.DEFAULT_MAX_MESSAGE_SIZE,
                       help="largest message a client may send (default 100m, like "
                            "hive.metastore.server.max.message.size)")
    serve.add_argument("--max-string-length", type=_size, default=None,
                       help="longest string in a message (default: the message size)")
    serve.add_argument("--max-container-length", type=int, default=srv.DEFAULT_MAX_CONTAINER_LENGTH,
                       help="most elements in one list, set or map (default 1000000)")
    serve.add_argument("--max-connections", type=int, default=1000,
                       help="connections served at once; more are refused (default 1000)")
    from hms_proxy import limits

    limits.add_serve_arguments(serve, _size)
    serve.add_argument("--cache-size", type=_size, default=256 << 20,
                       help="memory for cached listings (default 256m; 0 disables)")
    security = serve.add_argument_group("TLS and access control (README 'Security')")
    security.add_argument("--tls-cert", default=None, metavar="CERT.pem",
                          help="serve TLS with this certificate (PEM, chain included), like HMS "
                               "with hive.metastore.use.SSL=true; needs --tls-key")
    security.add_argument("--tls-key", default=None, metavar="KEY.pem",
                          help="the certificate's private key (PEM, not encrypted)")
    security.add_argument("--tls-client-ca", default=None, metavar="CA.pem",
                          help="require client certificates signed by this CA (mutual TLS); "
                               "a certificate's subject CN is its client's identity")
    security.add_argument("--tls-handshake-timeout", type=float, default=10.0,
                          metavar="SECONDS",
                          help="a client must complete the TLS handshake within this (default 10)")
    security.add_argument("--access-rules", default=None, metavar="FILE.json",
                          help="per-branch rules: who may read and write which branches")
    security.add_argument("--auth-secrets", default=None, metavar="FILE.json",
                          help="shared secrets of users ({\"alice\": \"s3cret\"}): a listed user "
                               "is believed only with 'secret:<its secret>' in set_ugi's groups")
    security.add_argument("--audit-log", default=None, metavar="FILE",
                          help="append one JSON line per write call and per refused call")
    security.add_argument("--read-only", action="store_true",
                          help="every listener read-only: all writes refused")
    serve.add_argument("--conf", action="append", metavar="KEY=VALUE",
                       help="a configuration value answered by get_config_value (repeatable)")
    serve.add_argument("--pid-file", default=None, help="write the server's pid here")
    serve.add_argument("--log-level", default=os.environ.get("HMS_LOG_LEVEL", "INFO"),
                       help="DEBUG, INFO, WARNING... (default INFO)")
    serve.add_argument("--log-format", choices=("text", "json"),
                       default=os.environ.get("HMS_LOG_FORMAT", "text"),
                       help="text (default) or json: one JSON object per line; each call is "
                            "logged at DEBUG, each catalog write at INFO")
    serve.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                       help="serve Prometheus metrics on http://HOST:PORT/metrics and a "
                            "health check on /healthz (default: off; 0 picks a free port)")
    serve.add_argument("--metrics-host", default=None, metavar="ADDR",
                       help="address of the metrics endpoint (default: --host)")
    from hms_proxy import api as http_api

    http_api.add_serve_arguments(serve)  # --http-port: the HTTP API and console (issue 8)
    serve.set_defaults(func=cmd_serve)

    from hms_proxy import bench
    from hms_proxy import importer
    from hms_proxy import refs_cli

    bench.register(sub)
    importer.register(sub)
    refs_cli.register(sub)
    from hms_proxy import doctor

    doctor.register(sub)
    http_api.register(sub)  # hms-proxy api: the HTTP API and console alone over a store

    # stats: partition statistics (issue 5); each action registers itself in this group
    from stats import compute as stats_compute

    stats_group = sub.add_parser("stats", help="computed column statistics: compute, reduce, show, expire",
                                 description="Partition statistics kept as versioned parquet "
                                             "sets beside the data (see README 'Statistics').")
    stats_actions = stats_group.add_subparsers(dest="stats_command", required=True,
                                               metavar="ACTION")
    stats_compute.register(stats_actions)
    stats_compute.register_reduce(stats_actions)
    from stats import expire as stats_expire

    stats_expire.register(stats_actions)
    from stats import query as stats_query

    stats_query.register(stats_actions)
    return parser


def add_lakefs_arguments(parser) -> None:
    """``--lakefs-locations`` and ``--lakefs-cache-ttl``, of ``serve`` and ``api``."""
    parser.add_argument("--lakefs-locations", choices=("s3a", "s3", "lakefs", "off"),
                        default="s3a",
                        help="lakeFS store: render table and partition locations under the "
                             "repository for the ref served, as s3a://REPO/REF/... (lakeFS's S3 "
                             "gateway; default), s3://..., or lakefs://... (lakeFS's Hadoop file "
                             "system); off: serve them as stored")
    parser.add_argument("--lakefs-cache-ttl", type=float, default=0.0, metavar="SECONDS",
                        help="lakeFS store: trust a branch's last known state this long before "
                             "asking lakeFS again (default 0: ask at every call; this server's "
                             "own writes are seen at once)")


def _is_lakefs(store) -> bool:
    return getattr(store, "repository", None) is not None and hasattr(store, "cache_ttl")


def served_store(store, args):
    """``store`` as a server shows it to clients: a lakeFS store configured by
    ``--lakefs-cache-ttl`` (and ``--redis``) and seen through ``--lakefs-locations``; any
    other store as it is."""
    if not _is_lakefs(store):
        return store
    from kvmodel.locations import RefLocations, RenderedStore

    store.cache_ttl = getattr(args, "lakefs_cache_ttl", 0.0)
    if getattr(args, "redis", None):  # what is read at commits, shared by the servers
        store.use_redis(args.redis)
    from hms_proxy import warehouse

    # managed tables' objects move on rename and go on drop, as HMS does on its file systems
    warehouse.register(warehouse.LakeFSFiles(store))
    scheme = getattr(args, "lakefs_locations", "s3a")
    if scheme == "off":
        return store
    return RenderedStore(store, RefLocations(store.repository, scheme))


def _binds(pairs: list[str]) -> list[tuple[int, str, bool]]:
    """(port, ref, read-only) of each ``--bind PORT=REF[:ro]``."""
    out = []
    for pair in pairs or []:
        port, sep, ref = pair.partition("=")
        ref = ref.strip()
        read_only = ref.endswith(":ro")
        ref = ref[:-3] if read_only else ref
        if not sep or not port.strip().isdigit() or not ref:
            raise SystemExit(f"--bind takes PORT=REF[:ro], got {pair!r}")
        out.append((int(port), ref, read_only))
    return out


def _security(args):
    """(TLS or None, access Guard or None) for ``serve``'s options; a file that cannot be
    used ends the command with exit status 2 before anything starts."""
    from hms_proxy import access, tls

    try:
        if bool(args.tls_cert) != bool(args.tls_key):
            raise access.ConfigError("--tls-cert and --tls-key go together")
        if args.tls_client_ca and not args.tls_cert:
            raise access.ConfigError("--tls-client-ca needs --tls-cert and --tls-key")
        context = tls.TLS.load(args.tls_cert, args.tls_key, args.tls_client_ca,
                               args.tls_handshake_timeout) if args.tls_cert else None
        read_only = args.read_only or any(ro for _, _, ro in _binds(args.bind))
        return context, access.from_args(args, default_ref=args.ref, read_only=read_only)
    except access.ConfigError as exc:
        print(f"hms-proxy: error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


def make_server(args) -> srv.MetastoreServer:
    """The server for parsed ``serve`` arguments (bound, not yet serving); listeners of
    ``--bind`` are in its ``extra_listeners``."""
    from hms_proxy.family import Env
    from hms_proxy.gen.fb303 import FacebookService
    from hms_proxy.gen.hive_metastore import ThriftHiveMetastore, ttypes
    from hms_proxy.handler import Handler
    from hms_proxy.processor import Processor
    from hms_proxy.warehouse import Warehouse
    from kvmodel.cache import LRUCache
    from kvmodel.store import open_store

    tls_context, guard = _security(args)
    store = open_store(args.store)
    warehouse_root = args.warehouse or os.path.join(os.path.abspath(args.store), "warehouse")
    if _is_lakefs(store) and not args.warehouse:  # the repository's own, at the ref served
        from kvmodel.locations import RefLocations

        warehouse_root = RefLocations(store.repository).canonical_prefix + "warehouse"
    store = served_store(store, args)
    env = Env(store=store, warehouse=Warehouse(warehouse_root), ref=args.ref,
              conf=_conf(args.conf), cache=LRUCache(args.cache_size),
              autocommit=args.autocommit, redis_url=getattr(args, "redis", None) or None,
              lock_wait=getattr(args, "lock_wait", 1.0))
    env.access = guard
    from hms_proxy import limits

    limits.configure(args, env.conf)  # --limit-partition-request into the configuration
    binds = _binds(args.bind)
    for _, ref, _ in binds:
        store.resolve(ref)  # fail at start, not at the first call, on an unknown ref
    services = (ThriftHiveMetastore, FacebookService)
    from hms_proxy.metrics import ServerMetrics

    metrics = ServerMetrics(env)  # call metrics and log lines; /metrics with --metrics-port
    metrics.instrument_store(store)
    processor = Processor(None, services, ttypes, metrics=metrics)
    federation = None
    if getattr(args, "upstream", None):
        from hms_proxy.federation import Federation

        try:
            federation = Federation(store, args.ref, args.upstream,
                                    writes=args.upstream_writes, timeout=args.upstream_timeout)
        except ValueError as exc:
            raise SystemExit(f"--upstream: {exc}") from None
    handler = Handler(env, processor.methods, federation=federation)
    handler.start()
    processor.handler = handler
    config = srv.ServerConfig(
        host=args.host, port=args.port, transport=args.transport,
        max_message_size=args.max_message_size,
        max_string_length=args.max_string_length or args.max_message_size,
        max_container_length=args.max_container_length,
        max_connections=args.max_connections,
        reuse_port=getattr(args, "reuse_port", False),
        tls=tls_context, read_only=args.read_only,
        idle_timeout=getattr(args, "idle_timeout", 0.0),
        max_connections_per_client=getattr(args, "max_connections_per_client", 0),
    )
    processor.max_response_size = getattr(args, "max_response_size", 0)
    server = srv.MetastoreServer(processor, config, on_stop=store.close,
                                 on_connection_end=store.release_thread)
    server.bind()
    server.extra_listeners = []
    for port, ref, read_only in binds:
        extra = srv.MetastoreServer(processor, dataclasses.replace(
                                        config, port=port, read_only=args.read_only or read_only),
                                    on_connection_end=store.release_thread, ref=ref)
        extra.clients = server.clients  # one count per client address, whatever the port
        extra.bind()
        server.extra_listeners.append(extra)
    return server


def cmd_serve(args) -> int:
    from hms_proxy import logs

    logs.configure(args.log_level, getattr(args, "log_format", "text"))
    if getattr(args, "processes", 1) > 1:  # a supervisor of worker processes
        from hms_proxy import supervisor

        _security(args)  # a bad rules, secrets or TLS file: exit 2 here, not in each worker
        return supervisor.run(args, getattr(args, "argv", None) or sys.argv[1:])
    if getattr(args, "processes", 1) < 1:
        raise SystemExit("hms-proxy serve: --processes must be at least 1")
    server = make_server(args)
    extras = server.extra_listeners
    close_store, server.on_stop = server.on_stop, None  # closed once every listener is done
    signals = server.install_signal_handlers()
    srv.pid_file_write(args.pid_file)
    log = logging.getLogger("hms_proxy")
    log.info("serving %s (ref %s) on %s:%d", args.store, args.ref, args.host, server.port)
    print(f"hms-proxy listening on {args.host}:{server.port}", flush=True)
    threads = []
    for extra in extras:
        log.info("serving ref %s on %s:%d", extra.ref, args.host, extra.port)
        print(f"hms-proxy listening on {args.host}:{extra.port} for ref {extra.ref}", flush=True)
        t = threading.Thread(target=extra.serve_forever, name=f"listener-{extra.port}", daemon=True)
        t.start()
        threads.append(t)
    metrics_http = None
    if getattr(args, "metrics_port", None) is not None:
        from hms_proxy.metrics import MetricsServer

        host = args.metrics_host or args.host
        metrics_http = MetricsServer(server.processor.metrics, host, args.metrics_port).start()
        log.info("metrics on http://%s:%d/metrics", host, metrics_http.port)
        print(f"hms-proxy metrics on http://{host}:{metrics_http.port}/metrics", flush=True)
    http = None
    if getattr(args, "http_port", None) is not None:  # the HTTP API and console
        from hms_proxy import api as http_api

        http = http_api.start_for_serve(args, server)
    server.serve_forever()
    if http is not None:
        http.stop()
    if metrics_http is not None:
        metrics_http.stop()
    for extra in extras:
        extra.stop()
    for t in threads:
        t.join(timeout=15)
    close_store()
    signals.finish()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:  # a run-to-completion command (bench, stats, import) stopped
        print("hms-proxy: interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as exc:  # an optional part not installed: one line, no traceback
        hint = install_hint(exc.name, args.command)
        if hint is None:
            raise
        print(hint, file=sys.stderr)
        return 2
    except StoreError as exc:  # a store that cannot be opened (lakeFS unconfigured, unreachable)
        print(f"hms-proxy {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
