-- Run on branch dev (the `shop@dev` database name picks the branch: docs/branching.md "Choosing a ref").
CREATE DATABASE IF NOT EXISTS `shop@dev`;
CREATE TABLE IF NOT EXISTS `shop@dev`.orders (id BIGINT, amount DOUBLE, country STRING)
  PARTITIONED BY (ds STRING) STORED AS PARQUET;
INSERT INTO `shop@dev`.orders PARTITION (ds = '2024-01-01')
  SELECT id, id * 1.5, CASE WHEN id % 2 = 0 THEN 'fr' ELSE 'de' END FROM range(1000);
INSERT INTO `shop@dev`.orders PARTITION (ds = '2024-01-02')
  SELECT id, id * 2.5, 'it' FROM range(500);
SELECT ds, count(*) FROM `shop@dev`.orders GROUP BY ds ORDER BY ds;
