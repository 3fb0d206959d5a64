"""The ``hms-proxy`` command line."""
from __future__ import annotations

import argparse
import dataclasses
import logging
import threading
import os
import sys

from hms_proxy import server as srv

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
    serve.add_argument("--bind", action="append", default=[], metavar="PORT=REF",
                       help="also listen on PORT for REF (a branch, tag or commit; repeatable), "
                            "e.g. --bind 9084=dev --bind 9085=v1.0")
    serve.add_argument("--autocommit", action="store_true",
                       help="commit every Thrift write at once (author: the set_ugi user; "
                            "message: the call and its object); default: writes stay staged on "
                            "the branch until 'hms-proxy commit', as in lakeFS")
    serve.add_argument("--redis", default=None, metavar="URL",
                       help="keep locks and transactions in Redis (redis://host:port/db or "
                            "unix:///path/to/redis.sock) so that several "
                            "servers over one store share them; default: in process")
    serve.add_argument("--warehouse", default=None,
                       help="warehouse root for default locations (default <store>/warehouse; "
                            "with a lakeFS store, the repository's warehouse/ at the ref served)")
    serve.add_argument("--lakefs-locations", choices=("s3a", "s3", "lakefs", "off"),
                       default="s3a",
                       help="lakeFS store: render table and partition locations under the "
                            "repository for the ref served, as s3a://REPO/REF/... (lakeFS's S3 "
                            "gateway; default), s3://..., or lakefs://... (lakeFS's Hadoop file "
                            "system); off: serve them as stored")
    serve.add_argument("--lakefs-cache-ttl", type=float, default=0.0, metavar="SECONDS",
                       help="lakeFS store: trust a branch's last known state this long before "
                            "asking lakeFS again (default 0: ask at every call; this server's "
                            "own writes are seen at once)")
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
    serve.add_argument("--cache-size", type=_size, default=256 << 20,
                       help="memory for cached listings (default 256m; 0 disables)")
    serve.add_argument("--conf", action="append", metavar="KEY=VALUE",
                       help="a configuration value answered by get_config_value (repeatable)")
    serve.add_argument("--pid-file", default=None, help="write the server's pid here")
    serve.add_argument("--log-level", default=os.environ.get("HMS_LOG_LEVEL", "INFO"),
                       help="DEBUG, INFO, WARNING... (default INFO)")
    serve.set_defaults(func=cmd_serve)

    from hms_proxy import bench
    from hms_proxy import importer
    from hms_proxy import refs_cli

    bench.register(sub)
    importer.register(sub)
    refs_cli.register(sub)

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


def _binds(pairs: list[str]) -> list[tuple[int, str]]:
    out = []
    for pair in pairs or []:
        port, sep, ref = pair.partition("=")
        if not sep or not port.strip().isdigit() or not ref.strip():
            raise SystemExit(f"--bind takes PORT=REF, got {pair!r}")
        out.append((int(port), ref.strip()))
    return out


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

    store = open_store(args.store)
    warehouse_root = args.warehouse or os.path.join(os.path.abspath(args.store), "warehouse")
    if getattr(store, "repository", None) is not None and hasattr(store, "cache_ttl"):
        from kvmodel.locations import RefLocations, RenderedStore

        store.cache_ttl = getattr(args, "lakefs_cache_ttl", 0.0)
        if getattr(args, "redis", None):  # what is read at commits, shared by the servers
            store.use_redis(args.redis)
        if not args.warehouse:  # the repository's own, at whatever ref is served
            warehouse_root = RefLocations(store.repository).canonical_prefix + "warehouse"
        scheme = getattr(args, "lakefs_locations", "s3a")
        if scheme != "off":
            store = RenderedStore(store, RefLocations(store.repository, scheme))
    env = Env(store=store, warehouse=Warehouse(warehouse_root), ref=args.ref,
              conf=_conf(args.conf), cache=LRUCache(args.cache_size),
              autocommit=args.autocommit, redis_url=getattr(args, "redis", None) or None)
    binds = _binds(args.bind)
    for _, ref in binds:
        store.resolve(ref)  # fail at start, not at the first call, on an unknown ref
    services = (ThriftHiveMetastore, FacebookService)
    processor = Processor(None, services, ttypes)
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
    )
    server = srv.MetastoreServer(processor, config, on_stop=store.close,
                                 on_connection_end=store.release_thread)
    server.bind()
    server.extra_listeners = []
    for port, ref in binds:
        extra = srv.MetastoreServer(processor, dataclasses.replace(config, port=port),
                                    on_connection_end=store.release_thread, ref=ref)
        extra.bind()
        server.extra_listeners.append(extra)
    return server


def cmd_serve(args) -> int:
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = make_server(args)
    extras = server.extra_listeners
    close_store, server.on_stop = server.on_stop, None  # closed once every listener is done
    server.install_signal_handlers()
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
    server.serve_forever()
    for extra in extras:
        extra.stop()
    for t in threads:
        t.join(timeout=15)
    close_store()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
