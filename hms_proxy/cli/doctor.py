"""``hms-proxy doctor``: check a deployment (:mod:`hms_proxy.app.doctor`) and print one line per check."""
from __future__ import annotations

import argparse
import json
import logging
import os
from dataclasses import asdict

from hms_proxy.app.doctor import (
    FAIL,
    check_metastore,
    check_metrics,
    check_redis,
    check_store,
    check_versions,
)


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "doctor", help="check a deployment: store, refs, metastore, metrics, versions",
        description="Check a deployment and print one line per check (OK, WARN or FAIL); "
                    "exit 1 when a check fails. With no target named, checks the store of "
                    "HMS_STORE (or ./metastore) and the metastore on localhost:$HMS_PORT.")
    p.add_argument("--store", default=None, metavar="STORE",
                   help="a store directory or lakefs://REPO (lakeFS: endpoint and keys from "
                        "LAKEFS_* or ~/.lakectl.yaml)")
    p.add_argument("--metastore", default=None, metavar="thrift://HOST:PORT",
                   help="a metastore to call (ours or any HMS)")
    p.add_argument("--transport", choices=("buffered", "framed"), default="buffered",
                   help="the metastore's Thrift transport (default buffered)")
    p.add_argument("--metrics", default=None, metavar="http://HOST:PORT",
                   help="a metrics endpoint (serve --metrics-port)")
    p.add_argument("--redis", default=None, metavar="URL",
                   help="a Redis the servers share (serve --redis)")
    p.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                   help="how long a check waits for an answer (default 5)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_doctor)
    return p


def cmd_doctor(args) -> int:
    logging.getLogger("thrift").setLevel(logging.CRITICAL)  # failures are reported here
    store, metastore = args.store, args.metastore
    if not any((store, metastore, args.metrics, args.redis)):
        store = os.environ.get("HMS_STORE", "./metastore")
        metastore = f"thrift://localhost:{os.environ.get('HMS_PORT', '9083')}"
    checks = [check_versions()]
    if store:
        checks += check_store(store)
    if metastore:
        checks.append(check_metastore(metastore, args.transport, args.timeout))
    if args.metrics:
        checks.append(check_metrics(args.metrics, args.timeout))
    if args.redis:
        checks.append(check_redis(args.redis, args.timeout))
    failed = [c.check for c in checks if c.status == FAIL]
    if args.json:
        print(json.dumps({"ok": not failed, "failed": failed,
                          "checks": [asdict(c) for c in checks]}, indent=2, default=str))
    else:
        for c in checks:
            print(f"{c.status:<4}  {c.check:<9}  {c.detail}")
            for item in c.items:
                print(f"{'':17}{item}")
        print(f"{len(checks)} checks: " + (f"{len(failed)} failed ({', '.join(failed)})"
                                            if failed else "all passed"))
    return 1 if failed else 0
