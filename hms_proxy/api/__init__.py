"""The HTTP API and the web console (docs/console.md).

``hms-proxy serve --http-port 8083`` serves them beside Thrift, in the same process, on a
daemon thread; ``hms-proxy api --store STORE`` serves them alone over a store (both composed
in :mod:`hms_proxy.app.compose`). Both apply the access rules, secrets, audit log and
read-only switch of the Thrift side (:mod:`hms_proxy.api.auth`).

* :mod:`~hms_proxy.api.app` -- the route table and the dispatch to JSON answers;
* :mod:`~hms_proxy.api.refs`, :mod:`~hms_proxy.api.diffs`, :mod:`~hms_proxy.api.catalog`,
  :mod:`~hms_proxy.api.stats` -- the operations;
* :mod:`~hms_proxy.api.openapi` -- the OpenAPI 3 document, as data;
* :mod:`~hms_proxy.api.server` -- HTTP (stdlib ``http.server``), static console files;
* ``hms_proxy/console/`` -- the console: HTML, ES modules and CSS, no build step.

The statistics lookups import pyarrow at their first request.
"""
from __future__ import annotations
