"""``hms-proxy import``: copy a running metastore's catalog into a branch (:mod:`hms_proxy.hms.importer`)."""
from __future__ import annotations

import os
import sys

from hms_proxy.hms.importer import FETCH_CONNECTIONS, ImportFailed, Progress, import_metastore
from kvmodel.hooks import HookVeto
from kvmodel.locations import open_catalog_store
from kvmodel.store import local_path
from kvmodel.store.contract import SHORT_ID
from kvmodel.store.errors import StoreError
from kvmodel.versioning import author_or_user


# --- the command ---------------------------------------------------------------------------------
def register(subparsers) -> None:
    p = subparsers.add_parser(
        "import", help="copy a running metastore's catalog into a branch, as one commit",
        description="Copy the databases, tables, partitions, functions and column statistics "
                    "of a running Hive Metastore (any HMS 2.3 Thrift server) into a branch as "
                    "one commit of what differs from the branch. Re-running it brings only "
                    "what changed upstream; nothing is committed when nothing did. Exit "
                    "status: 0 done (or nothing changed), 1 vetoed by a hook, 2 an error.")
    p.add_argument("--from", dest="source", required=True, metavar="thrift://HOST:PORT",
                   help="the upstream metastore (several, comma-separated, are tried in turn)")
    p.add_argument("--databases", default=None, metavar="A,B",
                   help="only these databases (default: all); each must exist upstream")
    p.add_argument("--branch", default="main", help="branch to import into (default main)")
    p.add_argument("--store", default=os.environ.get("HMS_STORE", "./metastore"),
                   help="store path (default ./metastore, env HMS_STORE); created when missing")
    p.add_argument("-m", "--message", default=None,
                   help="commit message (default: 'import DBS from URI (counts)')")
    p.add_argument("--author", default=None, help="commit author (default $USER)")
    p.add_argument("--connections", type=int, default=FETCH_CONNECTIONS, metavar="N",
                   help=f"partition batches read at once, each on a connection of its own "
                        f"(default {FETCH_CONNECTIONS})")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_import)


def cmd_import(args) -> int:
    import json
    import logging
    import shutil

    # TSocket logs each refused connection; the error line below says it once
    logging.getLogger("thrift.transport.TSocket").setLevel(logging.CRITICAL)
    databases = None
    if args.databases is not None:
        databases = [d.strip() for d in args.databases.split(",") if d.strip()]
        if not databases:
            print("hms-proxy: error: --databases takes a comma-separated list of names",
                  file=sys.stderr)
            return 2
    local = local_path(args.store)
    created = local is not None and not os.path.exists(local)  # removed again on failure
    try:
        store = open_catalog_store(args.store)
    except (StoreError, OSError, ValueError) as exc:
        print(f"hms-proxy: error: cannot open the store {args.store}: {exc}", file=sys.stderr)
        return 2
    progress = Progress(sys.stderr)
    status = None
    try:
        result = import_metastore(store, args.source, branch=args.branch, databases=databases,
                                  message=args.message, author=author_or_user(args.author), progress=progress,
                                  store_path=local, connections=args.connections)
    except HookVeto as veto:
        print(f"hms-proxy: error: import into {args.branch} vetoed by hooks (nothing "
              f"committed):", file=sys.stderr)
        for line in str(veto).splitlines():
            print(f"  {line}", file=sys.stderr)
        status = 1
    except (ImportFailed, StoreError, OSError, ValueError) as exc:
        text = (str(exc) or type(exc).__name__).splitlines()[0]
        print(f"hms-proxy: error: {text}", file=sys.stderr)
        status = 2
    except KeyboardInterrupt:
        print("\nhms-proxy: error: import interrupted (nothing committed)", file=sys.stderr)
        status = 130
    finally:
        store.close()
    if status is not None:
        if created:  # a store this command made, holding nothing: do not leave it behind
            shutil.rmtree(local, ignore_errors=True)
        return status
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    elif result.commit is None:
        print(f"nothing changed: branch {args.branch} already holds what {args.source} has "
              f"({result.objects:,} objects in {', '.join(result.databases) or 'no databases'})")
    else:
        print(f"[{args.branch} {result.commit.id[:SHORT_ID]}] {result.commit.message.splitlines()[0]}"
              f" ({result.changed_keys:,} keys changed, {result.timings.get('total', 0):.1f} s)")
    return 0
