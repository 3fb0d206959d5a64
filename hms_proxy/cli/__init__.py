"""The ``hms-proxy`` command line."""
from __future__ import annotations

import argparse
import os
import sys

from hms_proxy.app import compose
from hms_proxy.app.config import (
    ApiConfig,
    Bind,
    ConfigError,
    ServeConfig,
    from_namespace,
    key_values,
)
from hms_proxy.cli import doctor, importer, stats
from hms_proxy.cli import refs as refs_cli
from hms_proxy.extras import install_hint
from hms_proxy.thrift import limits
from hms_proxy.thrift import server as srv
from hms_proxy.tools import bench
from kvmodel.store.errors import StoreError

DEFAULT_STORE = "./metastore"


def _size(text: str) -> int:
    """``100m``, ``1g``, ``4096`` -> bytes."""
    text = text.strip().lower()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:], 1)
    return int(text[:-1] if mult != 1 else text) * mult



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
    serve.add_argument("--min-client-generation", choices=("2.3", "3.1", "4"), default=None,
                       help="serve every connection as a client of at least this Hive "
                            "generation (default 2.3: a connection speaks the newest generation "
                            "of the calls it has made); 3.1 serves Hive 3's transactions and ACID "
                            "tables to clients that open a connection per call, as Trino does "
                            "(docs/compatibility.md)")
    serve.add_argument("--no-stats-properties", dest="stats_properties",
                       action="store_false",
                       help="do not add computed statistics (hms-proxy stats compute) to the "
                            "parameters of the tables and partitions answered "
                            "(spark.sql.statistics.*, which Spark's optimizer reads, and Hive's "
                            "numRows); the statistics calls still serve them")
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
    serve.add_argument("--upstream-kerberos-principal", default=None, metavar="PRINCIPAL",
                       help="the upstream is Kerberized with this principal (hive/_HOST@REALM: "
                            "_HOST is the upstream's host); this server authenticates to it "
                            "with --kerberos-principal and --kerberos-keytab, as a Hive client "
                            "does")
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
    limits.add_serve_arguments(serve, _size)
    serve.add_argument("--cache-size", type=_size, default=256 << 20,
                       help="memory for cached listings (default 256m; 0 disables)")
    tls_group = serve.add_argument_group("TLS")
    tls_group.add_argument("--tls-cert", default=None, metavar="CERT.pem",
                           help="serve TLS with this certificate (PEM, chain included), like HMS "
                                "with hive.metastore.use.SSL=true; needs --tls-key")
    tls_group.add_argument("--tls-key", default=None, metavar="KEY.pem",
                           help="the certificate's private key (PEM, not encrypted)")
    tls_group.add_argument("--tls-client-ca", default=None, metavar="CA.pem",
                           help="require client certificates signed by this CA (mutual TLS); "
                                "a certificate's subject CN is its client's identity")
    tls_group.add_argument("--tls-handshake-timeout", type=float, default=10.0,
                           metavar="SECONDS",
                           help="a client must complete the TLS handshake within this "
                                "(default 10)")
    krb = serve.add_argument_group("Kerberos (SASL on the Thrift listeners)")
    krb.add_argument("--kerberos-principal", default=None, metavar="PRINCIPAL",
                     help="serve SASL GSSAPI as this principal on every Thrift listener, like "
                          "HMS with hive.metastore.sasl.enabled=true and "
                          "hive.metastore.kerberos.principal (hive/_HOST@REALM: _HOST is this "
                          "machine's name); needs --kerberos-keytab")
    krb.add_argument("--kerberos-keytab", default=None, metavar="FILE",
                     help="the keytab holding the principal's key "
                          "(hive.metastore.kerberos.keytab.file)")
    krb.add_argument("--rpc-protection", default=None, metavar="QOP[,QOP]",
                     help="the qualities of protection clients may choose, as "
                          "hadoop.rpc.protection: authentication (default), integrity, privacy")
    krb.add_argument("--sasl-timeout", type=float, default=None, metavar="SECONDS",
                     help="a client must complete its SASL negotiation within this "
                          "(default 10)")
    add_spnego_arguments(krb, "the HTTP API and the Iceberg REST door",
                         "(default: --kerberos-keytab)")
    add_access_arguments(serve)
    serve.add_argument("--conf", action="append", metavar="KEY=VALUE",
                       help="a configuration value answered by get_config_value, and used "
                            "where the server has the setting (e.g. "
                            "metastore.warehouse.external.dir, "
                            "metastore.runtime.stats.max.age; repeatable)")
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
    serve.add_argument("--http-port", type=int, default=None, metavar="PORT",
                       help="also serve the HTTP API (/api/v1, OpenAPI at /api/openapi.json) "
                            "and the web console (/) on this port, with the same access rules "
                            "(default: off; 0 picks a free port)")
    serve.add_argument("--http-host", default=None, metavar="ADDR",
                       help="address of the HTTP API and console (default: --host)")
    serve.add_argument("--rest-port", type=int, default=None, metavar="PORT",
                       help="also serve the Iceberg REST catalog on http://HOST:PORT/v1 over "
                            "the same catalog: its prefix (warehouse) names a branch, tag or "
                            "commit; same locks, access rules and audit as Thrift calls "
                            "(default: off; 0 picks a free port; needs hms-proxy[rest])")
    serve.add_argument("--rest-host", default=None, metavar="ADDR",
                       help="address of the Iceberg REST catalog (default: --host)")
    serve.add_argument("--rest-max-json-depth", type=int, default=None, metavar="N",
                       help="REST: a request body nested deeper than this is refused (400; "
                            "default 128)")
    serve.add_argument("--rest-max-schema-fields", type=int, default=None, metavar="N",
                       help="REST: fields of the schemas of one request, nested ones included "
                            "(default 20000)")
    serve.add_argument("--rest-max-updates", type=int, default=None, metavar="N",
                       help="REST: updates of one table or view change (default 10000)")
    serve.add_argument("--rest-token-lifetime", type=int, default=None, metavar="SECONDS",
                       help="REST: how long a token of the door's OAuth2 endpoint "
                            "(/v1/oauth/tokens, Iceberg clients' credential) is valid "
                            "(default 3600)")
    serve.add_argument("--rest-key-rotation", type=int, default=None, metavar="SECONDS",
                       help="REST: a new key signs the door's OAuth2 tokens once the last is "
                            "this old; the one replaced still verifies its tokens while they "
                            "may be valid (default 86400)")
    serve.add_argument("--rest-jwks", default=None, metavar="URL|FILE",
                       help="REST: also take bearer JWTs of an external issuer (RS256, "
                            "ES256) signed by a key of this JWKS (a file, or an https URL "
                            "re-read every 5 minutes)")
    serve.add_argument("--rest-jwt-issuer", default=None, metavar="ISS",
                       help="REST: the iss an external JWT must carry")
    serve.add_argument("--rest-jwt-audience", default=None, metavar="AUD",
                       help="REST: the aud an external JWT must carry")
    serve.add_argument("--rest-jwt-user-claim", default=None, metavar="CLAIM",
                       help="REST: the claim of an external JWT naming the user (default sub)")
    serve.set_defaults(func=cmd_serve)

    bench.register(sub)
    importer.register(sub)
    refs_cli.register(sub)
    doctor.register(sub)
    register_api(sub)  # hms-proxy api: the HTTP API and console alone over a store
    stats.register(sub)  # hms-proxy stats compute|reduce|show|expire
    return parser


def add_lakefs_arguments(parser) -> None:
    """``--lakefs-locations`` and ``--lakefs-refresh``, of ``serve`` and ``api``."""
    parser.add_argument("--lakefs-locations", choices=("s3a", "s3", "lakefs", "off"),
                        default="s3a",
                        help="lakeFS store: render table and partition locations under the "
                             "repository for the ref served, as s3a://REPO/REF/... (lakeFS's S3 "
                             "gateway; default), s3://..., or lakefs://... (lakeFS's Hadoop file "
                             "system); off: serve them as stored")
    parser.add_argument("--lakefs-refresh", type=float, default=0.25, metavar="SECONDS",
                        help="lakeFS store: refresh the state of the branches being read in "
                             "the background this often (default 0.25); a read never uses a "
                             "state older than max(1, 4 x SECONDS) seconds, so another server's "
                             "writes are seen within that; this server's own at once. 0: ask "
                             "lakeFS at every read")
    parser.add_argument("--lakefs-cache-ttl", type=float, dest="lakefs_refresh",
                        help=argparse.SUPPRESS)  # the name before --lakefs-refresh
    parser.add_argument("--lakefs-hooks", default=None, metavar="URL",
                        help="lakeFS store: at start, install the lakeFS action whose hooks "
                             "keep the catalog with the data when lakectl, the UI or the API "
                             "commits or merges (hms-proxy lakefs-hooks install): URL is this "
                             "server's HTTP API as lakeFS reaches it (needs --http-port; 'self':"
                             " the HTTP API's own address, for a lakeFS on this machine)")
    parser.add_argument("--lakefs-peer", default="auto", metavar="HOST[:PORT]",
                        help="lakeFS store: where this server takes the writes that other "
                             "servers of the repository hand it while it writes a branch (one "
                             "server writes a branch's log, the others hand their writes to it; "
                             "authenticated with the lakeFS secret key). auto (default): every "
                             "interface, a free port, advertised as this machine's address; "
                             "HOST:PORT/ADVERTISED: listen there, be reached at ADVERTISED; "
                             "off: write the log directly, taking turns with the others")


def add_access_arguments(parser) -> None:
    """Access rules, secrets, audit log and the read-only switch: one declaration for ``serve``
    (Thrift and its HTTP API) and ``api``."""
    group = parser.add_argument_group("access control and audit")
    group.add_argument("--access-rules", default=None, metavar="FILE.json",
                       help="per-branch rules: who may read and write which branches")
    group.add_argument("--auth-secrets", default=None, metavar="FILE.json",
                       help="shared secrets of users ({\"alice\": \"s3cret\"}): a listed user "
                            "is believed only with its secret (Thrift: 'secret:<its secret>' "
                            "in set_ugi's groups; HTTP: its Basic password)")
    group.add_argument("--audit-log", default=None, metavar="FILE",
                       help="append one JSON line per write call and per refused call")
    group.add_argument("--read-only", action="store_true",
                       help="refuse every write (with serve: on every listener)")


def serve_config(args) -> ServeConfig:
    """The typed configuration of parsed ``serve`` arguments."""
    try:
        binds = tuple(Bind.parse(pair) for pair in args.bind or [])
        conf = key_values(args.conf)
    except ConfigError as exc:
        raise SystemExit(str(exc)) from None
    return from_namespace(ServeConfig, args, binds=binds, conf=conf)


def cmd_serve(args) -> int:
    return compose.run_serve(serve_config(args), getattr(args, "argv", None) or sys.argv[1:])


def add_spnego_arguments(group, doors: str, keytab_default: str) -> None:
    """Kerberos SPNEGO on HTTP ``doors`` (serve's and api's), and how principals map to users
    (serve's Thrift listeners map them alike)."""
    group.add_argument("--http-kerberos-principal", default=None, metavar="PRINCIPAL",
                       help="take Kerberos SPNEGO (Authorization: Negotiate, curl --negotiate) "
                            f"on {doors} as this principal, like "
                            "hive.server2.authentication.spnego.principal (HTTP/_HOST@REALM: "
                            "_HOST is the door's host name); mapped by "
                            "--kerberos-auth-to-local")
    group.add_argument("--http-kerberos-keytab", default=None, metavar="FILE",
                       help=f"the keytab holding the HTTP principal's key {keytab_default}")
    group.add_argument("--kerberos-auth-to-local", default=None, metavar="RULES",
                       help="map principals to user names with Hadoop's "
                            "hadoop.security.auth_to_local rules (default: DEFAULT, the first "
                            "component of a principal of the default realm)")


# --- hms-proxy api ------------------------------------------------------------------------------
def register_api(subparsers) -> None:
    p = subparsers.add_parser(
        "api", help="serve the HTTP API and the web console over a store",
        description="Serve the HTTP API (/api/v1, its OpenAPI document at /api/openapi.json) "
                    "and the web console (/) over a store, without Thrift. The same access "
                    "rules, secrets and audit log as 'serve' apply.")
    p.add_argument("--store", default=os.environ.get("HMS_STORE", DEFAULT_STORE),
                   help="store path or lakefs://REPO (default ./metastore, env HMS_STORE); "
                        "it must exist")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=ApiConfig.port,
                   help=f"port to listen on (default {ApiConfig.port}; 0 picks a free one)")
    p.add_argument("--ref", default="main",
                   help="the ref pages and calls default to (default main)")
    add_access_arguments(p)
    add_spnego_arguments(p.add_argument_group("Kerberos (SPNEGO on the HTTP API)"),
                         "the HTTP API", "(needed with --http-kerberos-principal)")
    add_lakefs_arguments(p)
    p.add_argument("--log-level", default=os.environ.get("HMS_LOG_LEVEL", "INFO"),
                   help="DEBUG, INFO, WARNING... (default INFO)")
    p.set_defaults(func=cmd_api)


def cmd_api(args) -> int:
    return compose.run_api(from_namespace(ApiConfig, args))


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
