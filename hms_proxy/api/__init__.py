"""The HTTP API and the web console (README "HTTP API and console").

``hms-proxy serve --http-port 8083`` serves them beside Thrift, in the same process, on a
daemon thread; ``hms-proxy api --store STORE`` serves them alone over a store. Both apply the
access rules, secrets, audit log and read-only switch of the Thrift side
(:mod:`hms_proxy.api.auth`).

* :mod:`~hms_proxy.api.app` -- the route table and the dispatch to JSON answers;
* :mod:`~hms_proxy.api.refs`, :mod:`~hms_proxy.api.diffs`, :mod:`~hms_proxy.api.catalog`,
  :mod:`~hms_proxy.api.stats` -- the operations;
* :mod:`~hms_proxy.api.openapi` -- the OpenAPI 3 document, as data;
* :mod:`~hms_proxy.api.server` -- HTTP (stdlib ``http.server``), static console files;
* ``hms_proxy/console/`` -- the console: HTML, ES modules and CSS, no build step.

Nothing here is imported by ``serve`` unless ``--http-port`` is given, and the statistics
lookups import pyarrow at their first request.
"""
from __future__ import annotations

import os
import sys

from hms_proxy.shutdown import StopRequest

DEFAULT_PORT = 8083


def add_serve_arguments(serve) -> None:
    """``serve``'s ``--http-port`` and ``--http-host``."""
    serve.add_argument("--http-port", type=int, default=None, metavar="PORT",
                       help="also serve the HTTP API (/api/v1, OpenAPI at /api/openapi.json) "
                            "and the web console (/) on this port, with the same access rules "
                            "(default: off; 0 picks a free port)")
    serve.add_argument("--http-host", default=None, metavar="ADDR",
                       help="address of the HTTP API and console (default: --host)")


def start_for_serve(args, server):
    """Start the HTTP listener of ``serve`` over the running server's store and access
    guard; returns it (``stop()`` at the end)."""
    from hms_proxy import refs_cli
    from hms_proxy.api.app import App
    from hms_proxy.api.auth import Policy
    from hms_proxy.api.server import ApiServer

    env = server.processor.handler.env
    guard = getattr(env, "access", None)
    policy = Policy(getattr(guard, "rules", None), getattr(guard, "secrets", None),
                    getattr(guard, "audit", None), read_only=bool(args.read_only))
    app = App(env.store, policy, default_ref=args.ref, store_path=refs_cli._local_path(args.store))
    host = args.http_host or args.host
    try:
        http = ApiServer(app, host, args.http_port, reuse_port=getattr(args, "reuse_port", False))
    except OSError as exc:  # a port taken: one line and exit 2, like the Thrift listener's
        print(f"hms-proxy: error: --http-port {args.http_port}: {exc.strerror or exc}",
              file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    http.start()
    _announce(host, http.port)
    return http


def _announce(host: str, port: int) -> None:
    import logging

    shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
    logging.getLogger("hms_proxy").info("HTTP API and console on http://%s:%d/", shown, port)
    print(f"hms-proxy HTTP API and console on http://{shown}:{port}/", flush=True)


# --- hms-proxy api ------------------------------------------------------------------------------
def register(subparsers) -> None:
    p = subparsers.add_parser(
        "api", help="serve the HTTP API and the web console over a store",
        description="Serve the HTTP API (/api/v1, its OpenAPI document at /api/openapi.json) "
                    "and the web console (/) over a store, without Thrift. The same access "
                    "rules, secrets and audit log as 'serve' apply (README 'HTTP API and "
                    "console').")
    p.add_argument("--store", default=os.environ.get("HMS_STORE", "./metastore"),
                   help="store path or lakefs://REPO (default ./metastore, env HMS_STORE); "
                        "it must exist")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port to listen on (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--ref", default="main",
                   help="the ref pages and calls default to (default main)")
    p.add_argument("--access-rules", default=None, metavar="FILE.json",
                   help="per-branch rules: who may read and write which branches")
    p.add_argument("--auth-secrets", default=None, metavar="FILE.json",
                   help="users' shared secrets: a listed user is believed only with its secret "
                        "as its HTTP Basic password")
    p.add_argument("--audit-log", default=None, metavar="FILE",
                   help="append one JSON line per write (branch, tag, merge) and refusal")
    p.add_argument("--read-only", action="store_true",
                   help="refuse every write (branches, tags, protection, merges)")
    from hms_proxy.cli import add_lakefs_arguments

    add_lakefs_arguments(p)
    p.add_argument("--log-level", default=os.environ.get("HMS_LOG_LEVEL", "INFO"),
                   help="DEBUG, INFO, WARNING... (default INFO)")
    p.set_defaults(func=cmd_api)


def cmd_api(args) -> int:
    import logging

    from hms_proxy import access, refs_cli
    from hms_proxy.api.app import App
    from hms_proxy.cli import served_store
    from hms_proxy.api.auth import Policy
    from hms_proxy.api.server import ApiServer
    from kvmodel.store import open_store

    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    local = refs_cli._local_path(args.store)
    if local is not None and not os.path.exists(os.path.join(local, "store.db")):
        print(f"hms-proxy: error: no store at {args.store} (hms-proxy serve creates one)",
              file=sys.stderr)
        return 2
    try:
        policy = Policy.from_args(args, read_only=args.read_only)
    except access.ConfigError as exc:
        print(f"hms-proxy: error: {exc}", file=sys.stderr)
        return 2
    store = served_store(open_store(args.store), args)  # lakeFS locations at the ref, as serve
    try:
        store.resolve(args.ref)
        http = ApiServer(App(store, policy, default_ref=args.ref, store_path=local),
                         args.host, args.port)
    except Exception as exc:  # noqa: BLE001 - a port taken, an unknown ref: one line, exit 2
        store.close()
        print(f"hms-proxy: error: {str(exc).splitlines()[0] if str(exc) else exc!r}",
              file=sys.stderr)
        return 2
    stop = StopRequest().install()  # a handler that takes no lock (hms_proxy.shutdown)
    http.start()
    _announce(args.host, http.port)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        http.stop()
        store.close()
        if policy.audit is not None:
            policy.audit.close()
        stop.finish()
    return 0
