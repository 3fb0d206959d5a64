/*
 * The JVM side of `hms-proxy bench hive4`: times metastore operations through Hive 4's own client
 * library (HiveMetaStoreClient of hive-standalone-metastore-common 4.0.1, default settings, as
 * Hive 4, Impala, Flink and Kyuubi embed it), on two metastores in alternating rounds.
 *
 * Usage: java -cp <the 4.0.1 jars>:. Hive4Bench NAME=thrift://HOST:PORT NAME=... -- NPARTS SCALE CHUNK
 * Output (stdout): one JSON object {"ops": {OP: {NAME: [ms, ...]}}, "errors": {...}}; progress on
 * stderr. SCALE multiplies the default iteration counts (1.0: 100 single-object calls, 20
 * listings, 5 full listings a side); CHUNK: partitions per add_partitions call.
 *
 * Partition i of the table has ds = 2024-01-01 + (i / H) days and hr = i % H, H = ceil(N / 100):
 * 100 distinct ds values, so `ds = "..."` selects 1% of the partitions, as in HmsBench.java.
 */
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;

public final class Hive4Bench {
    private Hive4Bench() {}

    static final LocalDate DAY0 = LocalDate.of(2024, 1, 1);
    static final String DB = "hms_bench_hive4";
    static final String TABLE = "events";

    interface Op { void run(Side s, int i) throws Exception; }

    static final class Side {
        final String name;
        final HiveMetaStoreClient client;
        final int nparts, hours;
        Partition altered;

        Side(String name, String uri, int nparts) throws Exception {
            Configuration conf = MetastoreConf.newMetastoreConf();
            MetastoreConf.setVar(conf, MetastoreConf.ConfVars.THRIFT_URIS, uri);
            this.client = new HiveMetaStoreClient(conf);
            this.name = name;
            this.nparts = nparts;
            this.hours = Math.max(1, (nparts + 99) / 100);
        }

        String ds(int i) { return DAY0.plusDays(i / hours).toString(); }
        List<String> values(int i) { return Arrays.asList(ds(i), Integer.toString(i % hours)); }
        String partName(int i) { return "ds=" + ds(i) + "/hr=" + (i % hours); }
    }

    static StorageDescriptor sd(String location) {
        StorageDescriptor sd = new StorageDescriptor();
        List<FieldSchema> cols = new ArrayList<>();
        String[][] spec = {{"event_id", "bigint"}, {"user_id", "bigint"}, {"event_type", "string"},
            {"event_ts", "timestamp"}, {"amount", "decimal(18,2)"}, {"country", "string"},
            {"properties", "map<string,string>"}, {"tags", "array<string>"}};
        for (String[] c : spec) cols.add(new FieldSchema(c[0], c[1], null));
        sd.setCols(cols);
        sd.setLocation(location);
        sd.setInputFormat("org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat");
        sd.setOutputFormat("org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat");
        Map<String, String> serde = new HashMap<>();
        serde.put("serialization.format", "1");
        sd.setSerdeInfo(new SerDeInfo(null, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", serde));
        sd.setBucketCols(new ArrayList<>());
        sd.setSortCols(new ArrayList<>());
        sd.setParameters(new HashMap<>());
        return sd;
    }

    static void setUp(Side s) throws Exception {
        try {
            s.client.dropDatabase(DB, true, true, true);
        } catch (Exception ignored) {
            // nothing left from an earlier run
        }
        Database d = new Database(DB, "hms-proxy bench database", null, new HashMap<>());
        d.setOwnerName("bench");
        s.client.createDatabase(d);
        Table t = new Table();
        t.setDbName(DB);
        t.setTableName(TABLE);
        t.setOwner("bench");
        t.setSd(sd(null));
        t.setPartitionKeys(Arrays.asList(new FieldSchema("ds", "string", null),
                new FieldSchema("hr", "int", null)));
        Map<String, String> params = new HashMap<>();
        params.put("EXTERNAL", "TRUE");
        t.setParameters(params);
        t.setTableType("EXTERNAL_TABLE");
        s.client.createTable(t);
    }

    static List<Partition> chunk(Side s, String location, int start, int count) {
        List<Partition> out = new ArrayList<>();
        for (int i = start; i < Math.min(s.nparts, start + count); i++) {
            Partition p = new Partition();
            p.setDbName(DB);
            p.setTableName(TABLE);
            p.setValues(s.values(i));
            p.setSd(sd(location + "/" + s.partName(i)));
            Map<String, String> params = new HashMap<>();
            params.put("numFiles", "4");
            params.put("totalSize", Long.toString(10_000_000L + (i * 7919L) % 5_000_000L));
            p.setParameters(params);
            out.add(p);
        }
        return out;
    }

    static Op op(String name) {
        switch (name) {
            case "get_table": return (s, i) -> s.client.getTable(DB, TABLE);
            case "get_database": return (s, i) -> s.client.getDatabase(DB);
            case "get_partition": return (s, i) -> s.client.getPartition(DB, TABLE,
                    s.values(new Random(1000L + i).nextInt(s.nparts)));
            case "get_partition_names": return (s, i) -> check(
                    s.client.listPartitionNames(DB, TABLE, (short) -1).size(), s.nparts);
            case "get_partitions": return (s, i) -> check(
                    s.client.listPartitions(DB, TABLE, (short) -1).size(), s.nparts);
            case "get_partitions_by_filter_1pct": return (s, i) -> {
                String ds = DAY0.plusDays(new Random(2000L + i).nextInt(100)).toString();
                s.client.listPartitionsByFilter(DB, TABLE, "ds = \"" + ds + "\"", (short) -1);
            };
            case "get_partitions_by_names": return (s, i) -> {
                Random r = new Random(3000L + i);
                List<String> names = new ArrayList<>();
                for (int k = 0; k < 100; k++) names.add(s.partName(r.nextInt(s.nparts)));
                s.client.getPartitionsByNames(DB, TABLE, names);
            };
            case "alter_partition": return (s, i) -> {
                s.altered.putToParameters("bench.round", Integer.toString(i));
                s.client.alter_partition(DB, TABLE, s.altered);
            };
            case "get_all_tables": return (s, i) -> s.client.getAllTables(DB);
            default: throw new IllegalArgumentException("unknown operation " + name);
        }
    }

    static void check(int got, int expected) {
        if (got != expected) throw new IllegalStateException("got " + got + " of " + expected);
    }

    public static void main(String[] args) throws Exception {
        int at = Arrays.asList(args).indexOf("--");
        int nparts = Integer.parseInt(args[at + 1]);
        double scale = Double.parseDouble(args[at + 2]);
        int chunkSize = Integer.parseInt(args[at + 3]);
        List<Side> sides = new ArrayList<>();
        for (int k = 0; k < at; k++) {
            String[] kv = args[k].split("=", 2);
            sides.add(new Side(kv[0], kv[1], nparts));
        }

        Map<String, Map<String, List<Double>>> ops = new LinkedHashMap<>();
        Map<String, String> errors = new LinkedHashMap<>();
        // add_partitions: the table filled in chunks of 1000, each chunk timed, sides alternating
        Map<String, List<Double>> adds = new LinkedHashMap<>();
        for (Side s : sides) {
            setUp(s);
            adds.put(s.name, new ArrayList<>());
        }
        Map<String, String> locations = new HashMap<>();
        for (Side s : sides) locations.put(s.name, s.client.getTable(DB, TABLE).getSd().getLocation());
        for (int start = 0; start < nparts; start += chunkSize) {
            for (Side s : sides) {
                List<Partition> parts = chunk(s, locations.get(s.name), start, chunkSize);
                long t0 = System.nanoTime();
                s.client.add_partitions(parts);
                adds.get(s.name).add((System.nanoTime() - t0) / 1e6);
            }
        }
        ops.put("add_partitions", adds);
        for (Side s : sides) s.altered = s.client.getPartition(DB, TABLE, s.values(0));
        String[][] plan = {
            {"get_table", "100"}, {"get_database", "100"}, {"get_partition", "100"},
            {"get_all_tables", "100"}, {"get_partitions_by_names", "50"},
            {"get_partitions_by_filter_1pct", "50"}, {"alter_partition", "50"},
            {"get_partition_names", "20"}, {"get_partitions", "5"}};
        for (String[] p : plan) {
            String name = p[0];
            int iters = Math.max(1, (int) Math.round(Integer.parseInt(p[1]) * scale));
            int warmup = Math.max(1, iters / 2);
            Op op = op(name);
            Map<String, List<Double>> samples = new LinkedHashMap<>();
            for (Side s : sides) samples.put(s.name, new ArrayList<>());
            System.err.println("bench " + name + ": " + iters + " calls a side");
            try {
                for (int i = 0; i < warmup; i++) for (Side s : sides) op.run(s, -1 - i);
                for (int i = 0; i < iters; i++) {
                    for (int k = 0; k < sides.size(); k++) {
                        Side s = sides.get((i + k) % sides.size());  // alternate who goes first
                        long t0 = System.nanoTime();
                        op.run(s, i);
                        samples.get(s.name).add((System.nanoTime() - t0) / 1e6);
                    }
                }
                ops.put(name, samples);
            } catch (Exception e) {
                errors.put(name, e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
        for (Side s : sides) {
            try {
                s.client.dropDatabase(DB, true, true, true);
            } catch (Exception ignored) {
                // left for the server's own cleanup
            }
            s.client.close();
        }
        StringBuilder out = new StringBuilder("{\"ops\":{");
        boolean firstOp = true;
        for (Map.Entry<String, Map<String, List<Double>>> e : ops.entrySet()) {
            if (!firstOp) out.append(',');
            firstOp = false;
            out.append(json(e.getKey())).append(":{");
            boolean firstSide = true;
            for (Map.Entry<String, List<Double>> side : e.getValue().entrySet()) {
                if (!firstSide) out.append(',');
                firstSide = false;
                out.append(json(side.getKey())).append(":").append(side.getValue());
            }
            out.append('}');
        }
        out.append("},\"errors\":{");
        boolean firstErr = true;
        for (Map.Entry<String, String> e : errors.entrySet()) {
            if (!firstErr) out.append(',');
            firstErr = false;
            out.append(json(e.getKey())).append(':').append(json(e.getValue()));
        }
        System.out.println(out.append("}}"));
    }

    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') b.append('\\').append(ch);
            else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
        }
        return b.append('"').toString();
    }
}
