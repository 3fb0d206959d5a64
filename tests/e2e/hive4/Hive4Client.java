/*
 * Hive 4's own metastore client (HiveMetaStoreClient of hive-standalone-metastore-common 4.0.1,
 * as Hive 4, Impala, Flink and Kyuubi embed it) driving one metastore through databases, tables,
 * partitions, column statistics, constraints and transactions; run by
 * tests/e2e/hive4/test_hive4_client.py against the stock HMS 4.0.1 and against hms-proxy, whose
 * outputs must be equal.
 *
 * Usage: java -cp <the 4.0.1 jars>:. Hive4Client thrift://HOST:PORT
 * Output: one line a step, "step: result" or "step: ERROR <exception class>: <message>";
 * only what does not depend on the server's clock or directories is printed.
 */
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.common.ValidTxnList;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Catalog;
import org.apache.hadoop.hive.metastore.api.NotNullConstraintsRequest;
import org.apache.hadoop.hive.metastore.api.SQLNotNullConstraint;
import org.apache.hadoop.hive.metastore.api.SQLUniqueConstraint;
import org.apache.hadoop.hive.metastore.api.UniqueConstraintsRequest;
import org.apache.hadoop.hive.metastore.api.AllTableConstraintsRequest;
import org.apache.hadoop.hive.metastore.api.SQLAllTableConstraints;
import org.apache.hadoop.hive.metastore.api.ColumnStatistics;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsData;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsDesc;
import org.apache.hadoop.hive.metastore.api.ColumnStatisticsObj;
import org.apache.hadoop.hive.metastore.api.DataOperationType;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.LockComponent;
import org.apache.hadoop.hive.metastore.api.LockLevel;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockResponse;
import org.apache.hadoop.hive.metastore.api.LockType;
import org.apache.hadoop.hive.metastore.api.LongColumnStatsData;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.PrimaryKeysRequest;
import org.apache.hadoop.hive.metastore.api.SQLPrimaryKey;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.TableValidWriteIds;
import org.apache.hadoop.hive.metastore.api.TxnInfo;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;

public final class Hive4Client {
    private Hive4Client() {}

    static final String DB = "h4db";

    static void step(String name, Callable<Object> body) {
        String out;
        try {
            out = String.valueOf(body.call());
        } catch (Exception e) {
            out = "ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        System.out.println(name + ": " + out);
    }

    static Table table(String name, boolean partitioned, String type) {
        StorageDescriptor sd = new StorageDescriptor();
        sd.setCols(new ArrayList<>(Arrays.asList(new FieldSchema("id", "bigint", null),
                new FieldSchema("v", "string", null))));
        sd.setInputFormat("org.apache.hadoop.mapred.TextInputFormat");
        sd.setOutputFormat("org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat");
        sd.setSerdeInfo(new SerDeInfo(null, "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                new HashMap<>()));
        Table t = new Table();
        t.setDbName(DB);
        t.setTableName(name);
        t.setOwner("ann");
        t.setSd(sd);
        t.setPartitionKeys(partitioned ? new ArrayList<>(Collections.singletonList(
                new FieldSchema("ds", "string", null))) : new ArrayList<>());
        Map<String, String> params = new HashMap<>();
        if (type.equals("EXTERNAL_TABLE")) params.put("EXTERNAL", "TRUE");
        t.setParameters(params);
        t.setTableType(type);
        return t;
    }

    static String describe(Table t) {
        Map<String, String> params = new TreeMap<>(t.getParameters());
        params.remove("transient_lastDdlTime");
        return t.getDbName() + "." + t.getTableName() + " " + t.getTableType() + " cols="
                + t.getSd().getCols() + " keys=" + t.getPartitionKeys() + " params=" + params;
    }

    static String values(List<Partition> parts) {
        List<String> out = new ArrayList<>();
        for (Partition p : parts) out.add(p.getDbName() + "." + p.getTableName() + p.getValues());
        Collections.sort(out);
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        Configuration conf = MetastoreConf.newMetastoreConf();
        MetastoreConf.setVar(conf, MetastoreConf.ConfVars.THRIFT_URIS, args[0]);
        MetastoreConf.setLongVar(conf, MetastoreConf.ConfVars.THRIFT_CONNECTION_RETRIES, 1);
        HiveMetaStoreClient c = new HiveMetaStoreClient(conf);
        try {
            run(c);
        } finally {
            c.close();
        }
    }

    static void run(HiveMetaStoreClient c) {
        // catalogs and databases
        step("catalogs", () -> c.getCatalogs());
        step("catalog hive", () -> c.getCatalog("hive").getName());
        step("create database", () -> {
            Database db = new Database(DB, "made by Hive 4", null, new HashMap<>());
            db.setOwnerName("ann");
            c.createDatabase(db);
            return "ok";
        });
        step("create database again", () -> {
            Database db = new Database(DB, "again", null, new HashMap<>());
            db.setOwnerName("ann");
            c.createDatabase(db);
            return "ok";
        });
        step("get database", () -> {
            Database db = c.getDatabase(DB);
            return db.getName() + " " + db.getDescription() + " " + db.getOwnerName() + " "
                    + db.getCatalogName() + " " + db.getParameters();
        });
        step("missing database", () -> c.getDatabase("h4_missing").getName());
        step("all databases", () -> {
            List<String> dbs = new ArrayList<>(c.getAllDatabases());
            Collections.sort(dbs);
            return dbs;
        });
        step("alter database", () -> {
            Database db = c.getDatabase(DB);
            db.putToParameters("team", "data");
            c.alterDatabase(DB, db);
            return c.getDatabase(DB).getParameters();
        });
        // tables
        step("create external table", () -> { c.createTable(table("events", true, "EXTERNAL_TABLE")); return "ok"; });
        step("create managed table", () -> { c.createTable(table("managed", false, "MANAGED_TABLE")); return "ok"; });
        step("create table again", () -> { c.createTable(table("events", true, "EXTERNAL_TABLE")); return "ok"; });
        step("get table", () -> describe(c.getTable(DB, "events")));
        step("get managed table", () -> describe(c.getTable(DB, "managed")));
        step("missing table", () -> describe(c.getTable(DB, "missing")));
        step("all tables", () -> {
            List<String> names = new ArrayList<>(c.getAllTables(DB));
            Collections.sort(names);
            return names;
        });
        step("tables by name", () -> {
            List<String> out = new ArrayList<>();
            for (Table t : c.getTableObjectsByName(DB, Arrays.asList("events", "missing", "managed"))) {
                out.add(t.getTableName());
            }
            Collections.sort(out);
            return out;
        });
        step("table exists", () -> c.tableExists(DB, "events") + " " + c.tableExists(DB, "nope"));
        step("alter table", () -> {
            Table t = c.getTable(DB, "events");
            t.putToParameters("k", "v2");
            c.alter_table(DB, "events", t);
            return c.getTable(DB, "events").getParameters().get("k");
        });
        step("fields", () -> c.getFields(DB, "events"));
        step("schema", () -> c.getSchema(DB, "events"));
        // partitions
        step("add partitions", () -> {
            Table t = c.getTable(DB, "events");
            List<Partition> parts = new ArrayList<>();
            for (String ds : Arrays.asList("2024-01-01", "2024-01-02", "2024-01-03")) {
                Partition p = new Partition();
                p.setDbName(DB);
                p.setTableName("events");
                p.setValues(new ArrayList<>(Collections.singletonList(ds)));
                StorageDescriptor sd = new StorageDescriptor(t.getSd());
                sd.setLocation(null);
                p.setSd(sd);
                p.setParameters(new HashMap<>());
                parts.add(p);
            }
            return c.add_partitions(parts);
        });
        step("partition names", () -> c.listPartitionNames(DB, "events", (short) -1));
        step("partitions", () -> values(c.listPartitions(DB, "events", (short) -1)));
        step("partitions by names", () -> values(c.getPartitionsByNames(DB, "events",
                Arrays.asList("ds=2024-01-02", "ds=1999-01-01"))));
        step("partitions by filter", () -> values(c.listPartitionsByFilter(DB, "events",
                "ds > \"2024-01-01\"", (short) -1)));
        step("partition", () -> values(Collections.singletonList(
                c.getPartition(DB, "events", Collections.singletonList("2024-01-03")))));
        step("missing partition", () -> values(Collections.singletonList(
                c.getPartition(DB, "events", Collections.singletonList("1999-01-01")))));
        step("append partition", () -> values(Collections.singletonList(
                c.appendPartition(DB, "events", Collections.singletonList("2024-01-04")))));
        step("drop partition", () -> c.dropPartition(DB, "events",
                Collections.singletonList("2024-01-04"), true));
        step("partition names after", () -> c.listPartitionNames(DB, "events", (short) -1));
        // column statistics
        step("update table statistics", () -> {
            ColumnStatisticsDesc desc = new ColumnStatisticsDesc(true, DB, "events");
            LongColumnStatsData data = new LongColumnStatsData(3, 42);
            data.setLowValue(1);
            data.setHighValue(42);
            ColumnStatisticsObj obj = new ColumnStatisticsObj("id", "bigint",
                    ColumnStatisticsData.longStats(data));
            ColumnStatistics stats = new ColumnStatistics(desc, new ArrayList<>(
                    Collections.singletonList(obj)));
            stats.setEngine("hive");
            return c.updateTableColumnStatistics(stats);
        });
        step("table statistics", () -> {
            List<String> out = new ArrayList<>();
            for (ColumnStatisticsObj o : c.getTableColumnStatistics(DB, "events",
                    Collections.singletonList("id"), "hive")) {
                LongColumnStatsData l = o.getStatsData().getLongStats();
                out.add(o.getColName() + " " + l.getNumNulls() + " " + l.getNumDVs() + " "
                        + l.getLowValue() + " " + l.getHighValue());
            }
            return out;
        });
        // constraints
        step("create table with a primary key", () -> {
            SQLPrimaryKey pk = new SQLPrimaryKey(DB, "keyed", "id", 1, "keyed_pk", false, false, true);
            pk.setCatName("hive");
            c.createTableWithConstraints(table("keyed", false, "EXTERNAL_TABLE"),
                    Collections.singletonList(pk), null, null, null, null, null);
            return "ok";
        });
        step("primary keys", () -> {
            List<String> out = new ArrayList<>();
            for (SQLPrimaryKey k : c.getPrimaryKeys(new PrimaryKeysRequest(DB, "keyed"))) {
                out.add(k.getTable_db() + "." + k.getTable_name() + "." + k.getColumn_name() + " "
                        + k.getKey_seq() + " " + k.getPk_name());
            }
            return out;
        });
        step("not-null and unique constraints", () -> {
            c.addNotNullConstraint(Collections.singletonList(new SQLNotNullConstraint(
                    "hive", DB, "keyed", "V", "Keyed_NN", true, false, false)));
            c.addUniqueConstraint(Collections.singletonList(new SQLUniqueConstraint(
                    "hive", DB, "keyed", "v", 1, null, true, false, true)));
            List<String> out = new ArrayList<>();
            for (SQLNotNullConstraint k : c.getNotNullConstraints(
                    new NotNullConstraintsRequest("hive", DB, "keyed"))) {
                out.add(k.getCatName() + "." + k.getTable_db() + "." + k.getTable_name() + "."
                        + k.getColumn_name() + " " + k.getNn_name());
            }
            for (SQLUniqueConstraint k : c.getUniqueConstraints(
                    new UniqueConstraintsRequest("hive", DB, "keyed"))) {
                out.add(k.getColumn_name() + " " + k.getKey_seq() + " "
                        + k.getUk_name().startsWith("uk_"));
            }
            return out;
        });
        step("a taken constraint name", () -> {
            c.addNotNullConstraint(Collections.singletonList(new SQLNotNullConstraint(
                    "hive", DB, "keyed", "id", "keyed_pk", true, false, false)));
            return "ok";
        });
        step("all the table's constraints", () -> {
            SQLAllTableConstraints all = c.getAllTableConstraints(
                    new AllTableConstraintsRequest(DB, "keyed", "hive"));
            return all.getPrimaryKeys().size() + " " + all.getForeignKeys().size() + " "
                    + all.getUniqueConstraints().size() + " " + all.getNotNullConstraints().size()
                    + " " + all.getDefaultConstraints().size() + " "
                    + all.getCheckConstraints().size();
        });
        // a second catalog
        step("create a catalog", () -> {
            c.createCatalog(new Catalog("h4_cat",
                    Files.createTempDirectory("h4-cat").toUri().toString()));
            return c.getCatalogs();
        });
        step("a database, a table and a key in it", () -> {
            Database db = new Database("h4_cat_db", "in a catalog", null, new HashMap<>());
            db.setCatalogName("h4_cat");
            c.createDatabase(db);
            Table t = table("in_cat", false, "EXTERNAL_TABLE");
            t.setDbName("h4_cat_db");
            t.setCatName("h4_cat");
            c.createTable(t);
            c.addNotNullConstraint(Collections.singletonList(new SQLNotNullConstraint(
                    "h4_cat", "h4_cat_db", "in_cat", "id", "in_cat_nn", true, false, false)));
            Table got = c.getTable("h4_cat", "h4_cat_db", "in_cat");
            List<String> dbs = new ArrayList<>(c.getAllDatabases("h4_cat"));
            Collections.sort(dbs);
            return got.getCatName() + "." + got.getDbName() + "." + got.getTableName() + " "
                    + dbs + " " + c.getDatabase("h4_cat", "h4_cat_db").getCatalogName() + " "
                    + c.getNotNullConstraints(new NotNullConstraintsRequest(
                            "h4_cat", "h4_cat_db", "in_cat")).get(0).getCatName()
                    + " hive's: " + c.getAllDatabases().contains("h4_cat_db");
        });
        step("drop a catalog in use", () -> {
            c.dropCatalog("h4_cat");
            return "ok";
        });
        step("drop the catalog", () -> {
            c.dropDatabase("h4_cat", "h4_cat_db", true, false, true);
            c.dropCatalog("h4_cat");
            return c.getCatalogs();
        });
        // transactions
        step("open, commit and abort transactions", () -> {
            long a = c.openTxn("ann");
            long b = c.openTxn("ann");
            c.commitTxn(a);
            c.abortTxns(Collections.singletonList(b));
            return (b - a);
        });
        step("a snapshot of the transactions", () -> {
            long a = c.openTxn("ann");
            long b = c.openTxn("ann");
            c.abortTxns(Collections.singletonList(b));
            long d = c.openTxn("ann");
            c.commitTxn(d);
            ValidTxnList v = c.getValidTxns();
            String out = "open " + v.isTxnValid(a) + " aborted " + v.isTxnValid(b) + "/"
                    + v.isTxnAborted(b) + " committed " + v.isTxnValid(d)
                    + " newer " + v.isTxnValid(d + 1);
            c.commitTxn(a);
            return out;
        });
        step("transactions listed", () -> {
            long a = c.openTxn("bob");
            List<String> out = new ArrayList<>();
            for (TxnInfo t : c.showTxns().getOpen_txns()) {
                if (t.getId() == a) out.add(t.getState() + " " + t.getUser());
            }
            c.abortTxns(Collections.singletonList(a));
            return out;
        });
        step("a lock in a transaction", () -> {
            long a = c.openTxn("ann");
            LockComponent comp = new LockComponent(LockType.SHARED_READ, LockLevel.TABLE, DB);
            comp.setTablename("events");
            comp.setOperationType(DataOperationType.SELECT);
            LockRequest req = new LockRequest(Collections.singletonList(comp), "ann", "localhost");
            req.setTxnid(a);
            LockResponse r = c.lock(req);
            String out = r.getState().toString();
            c.commitTxn(a);
            return out;
        });
        step("write ids of a table", () -> {
            long a = c.openTxn("ann");
            long b = c.openTxn("ann");
            long wa = c.allocateTableWriteId(a, DB, "events");
            long wb = c.allocateTableWriteId(b, DB, "events");
            long again = c.allocateTableWriteId(a, DB, "events");
            c.commitTxn(a);
            c.abortTxns(Collections.singletonList(b));
            ValidTxnList v = c.getValidTxns();
            TableValidWriteIds t = c.getValidWriteIds(
                    Collections.singletonList(DB + ".events"), v.writeToString()).get(0);
            return "first " + wa + " next " + (wb - wa) + " again " + (again - wa)
                    + " hwm " + t.getWriteIdHighWaterMark() + " invalid " + t.getInvalidWriteIds()
                    + " aborted " + Arrays.toString(t.getAbortedBits());
        });
        step("commit an aborted transaction", () -> {
            long a = c.openTxn("ann");
            c.abortTxns(Collections.singletonList(a));
            c.commitTxn(a);
            return "committed";
        });
        // drops
        step("drop table", () -> { c.dropTable(DB, "managed", true, false); return c.tableExists(DB, "managed"); });
        step("drop database not empty", () -> { c.dropDatabase(DB, true, false, false); return "ok"; });
        step("drop database cascade", () -> { c.dropDatabase(DB, true, false, true); return "ok"; });
        step("databases after", () -> c.getAllDatabases().contains(DB));
    }
}
