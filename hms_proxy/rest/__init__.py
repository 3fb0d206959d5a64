"""The Iceberg REST catalog (``hms-proxy serve --rest-port``): a second door to the catalog the
Thrift server serves, not a second catalog.

``/v1/{prefix}/...`` names a ref (branch, tag or commit: read-only) as ``/v1/config?warehouse=``
answers it; every call runs as the Thrift call a Hive-catalog client would make (the same
handler, locks, access rules, audit, metrics and cascades), so an Iceberg table is one HMS table
whose ``metadata_location`` either protocol reads and commits. Modules: :mod:`.errors` (the
Iceberg error model), :mod:`.metadata` (metadata files), :mod:`.hive_form` (an Iceberg table as
an HMS table), :mod:`.catalog` (the operations), :mod:`.limits` (what one request may ask),
:mod:`.app` (routes), :mod:`.oauth` (the OAuth2 token endpoint and bearer tokens),
:mod:`.openapi` (the routes' OpenAPI document), :mod:`.server` (HTTP).
"""
