#!/bin/sh
# branch -> Spark write -> diff -> merge, on the stack of docker-compose.yml (already up).
set -eu
cd "$(dirname "$0")"
dc() { docker compose -f docker-compose.yml "$@"; }
hms() { dc exec -T hms-proxy hms-proxy "$@" --store lakefs://lake; }

echo "== a branch for the change (catalog and data branch together)"
hms branch create dev --from main
echo "== Spark writes a partitioned table on dev: catalog through hms-proxy, files into dev"
dc exec -T spark /opt/spark/bin/spark-sql -f /demo/demo.sql
echo "== commit dev: one lakeFS commit holds the new table, its partitions and their files"
hms commit dev -m "shop.orders with two days of orders"
echo "== what dev changed, as a catalog diff"
hms diff main dev
echo "== merge dev into main: one lakeFS merge publishes catalog and data"
hms merge dev main
echo "== main now has the table, its locations rendered for main (s3a://lake/main/...)"
dc exec -T spark /opt/spark/bin/spark-sql -e \
  "DESCRIBE FORMATTED shop.orders; SELECT ds, count(*) FROM shop.orders GROUP BY ds ORDER BY ds;"
