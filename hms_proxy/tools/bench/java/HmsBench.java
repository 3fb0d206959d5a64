/*
 * The JVM side of `hms-proxy bench`: times metastore calls the way Spark and Trino make them.
 *
 * It uses the generated ThriftHiveMetastore.Client from hive-metastore-2.3.10.jar over
 * libthrift's TSocket (which buffers, like HMS's default unframed transport) and
 * TBinaryProtocol, so the figures are not capped by a slow client-side decoder.
 *
 * Protocol: one command per line on stdin, tab-separated; one JSON object per line on
 * stdout (System.out is redirected to stderr so that library logging cannot corrupt it).
 *
 *   connect  NAME HOST PORT DB TABLE NPARTS   -> {"ok":true}
 *   create   NAME EXTRA_TABLES                -> {"ok":true,"ms":...}  (db, table, extra tables)
 *   addchunk NAME START COUNT                 -> {"ok":true,"ms":...}  (one add_partitions call)
 *   bench    OP WARMUP ITERS NAME...          -> {"ok":true,"samples":{NAME:[ms...]},"errors":{NAME:"..."}}
 *                                                rounds alternate over the NAMEs
 *   throughput SECONDS CLIENTS NAME           -> {"ok":true,"calls":N,"seconds":S,"per_second":R}
 *   cleanup  NAME                             -> {"ok":true}  (drop_database cascade)
 *   quit
 *
 * With the system property hmsbench.kerberos.service (e.g. "hive/localhost") every
 * connection is Kerberized as a Hive client with hive.metastore.sasl.enabled makes it: libthrift's
 * TSaslClientTransport with the JDK's GSSAPI, the quality of protection of hmsbench.qop (auth,
 * auth-int or auth-conf: hadoop.rpc.protection's authentication, integrity, privacy) and the
 * ticket of the user's cache (KRB5CCNAME, with -Djavax.security.auth.useSubjectCredsOnly=false).
 *
 * Partition i of a table of N has ds = 2024-01-01 + (i / H) days and hr = i % H, where
 * H = ceil(N / 100): 100 distinct ds values, so `ds = "..."` selects 1% of the partitions.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.thrift.TConfiguration;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.transport.TSaslClientTransport;
import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransport;

public final class HmsBench {
    static final int SOCKET_TIMEOUT_MS = 600_000;
    static final LocalDate DAY0 = LocalDate.of(2024, 1, 1);

    /** One metastore under test, with the table the benchmark uses on it. */
    static final class Endpoint {
        final String name, host, db, table;
        final int port, nparts, hours;
        TTransport socket;
        ThriftHiveMetastore.Client client;
        Table tableObj;       // as the server answered get_table after create
        Partition altered;    // the partition alter_partition rewrites
        long alterCount;

        Endpoint(String name, String host, int port, String db, String table, int nparts) {
            this.name = name; this.host = host; this.port = port;
            this.db = db; this.table = table; this.nparts = nparts;
            this.hours = Math.max(1, (nparts + 99) / 100);
        }

        void open() throws Exception {
            close();
            socket = openSocket(host, port);
            client = new ThriftHiveMetastore.Client(new TBinaryProtocol(socket));
        }

        void close() {
            if (socket != null) socket.close();
            socket = null;
            client = null;
        }

        String ds(int i) { return DAY0.plusDays(i / hours).toString(); }
        String hr(int i) { return Integer.toString(i % hours); }
        List<String> values(int i) { return Arrays.asList(ds(i), hr(i)); }
        String partName(int i) { return "ds=" + ds(i) + "/hr=" + hr(i); }
    }

    static TTransport openSocket(String host, int port) throws Exception {
        TConfiguration conf = new TConfiguration(Integer.MAX_VALUE, TConfiguration.DEFAULT_MAX_FRAME_SIZE,
                                                 TConfiguration.DEFAULT_RECURSION_DEPTH);
        TSocket s = new TSocket(conf, host, port, SOCKET_TIMEOUT_MS);
        String service = System.getProperty("hmsbench.kerberos.service");
        if (service == null) {
            s.open();
            return s;
        }
        String[] parts = service.split("/", 2);  // "hive/localhost": protocol, then server host
        Map<String, String> props = new HashMap<>();
        props.put("javax.security.sasl.qop", System.getProperty("hmsbench.qop", "auth"));
        props.put("javax.security.sasl.server.authentication", "true");
        TTransport sasl = new TSaslClientTransport("GSSAPI", null, parts[0], parts[1], props, null, s);
        sasl.open();
        return sasl;
    }

    final Map<String, Endpoint> endpoints = new HashMap<>();
    final PrintStream out;

    HmsBench(PrintStream out) { this.out = out; }

    public static void main(String[] args) throws Exception {
        PrintStream protocolOut = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);  // anything else that prints goes to stderr
        HmsBench bench = new HmsBench(protocolOut);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.strip();
            if (line.isEmpty()) continue;
            String[] cmd = line.split("\t");
            if (cmd[0].equals("quit")) break;
            String reply;
            try {
                reply = bench.handle(cmd);
            } catch (Throwable e) {
                reply = "{\"ok\":false,\"error\":" + json(describe(e)) + "}";
            }
            protocolOut.println(reply);
        }
        for (Endpoint e : bench.endpoints.values()) e.close();
    }

    String handle(String[] c) throws Exception {
        switch (c[0]) {
            case "connect": {
                Endpoint e = new Endpoint(c[1], c[2], Integer.parseInt(c[3]), c[4], c[5], Integer.parseInt(c[6]));
                e.open();
                endpoints.put(e.name, e);
                return "{\"ok\":true}";
            }
            case "create": {
                Endpoint e = endpoints.get(c[1]);
                long t0 = System.nanoTime();
                create(e, Integer.parseInt(c[2]));
                return "{\"ok\":true,\"ms\":" + ms(System.nanoTime() - t0) + "}";
            }
            case "addchunk": {
                Endpoint e = endpoints.get(c[1]);
                int start = Integer.parseInt(c[2]), count = Integer.parseInt(c[3]);
                List<Partition> parts = new ArrayList<>(count);
                for (int i = start; i < start + count; i++) parts.add(partition(e, i));
                long t0 = System.nanoTime();
                int added = e.client.add_partitions(parts);
                double took = ms(System.nanoTime() - t0);
                if (added != count) throw new IllegalStateException("add_partitions added " + added + " of " + count);
                return "{\"ok\":true,\"ms\":" + took + "}";
            }
            case "bench":
                return bench(c[1], Integer.parseInt(c[2]), Integer.parseInt(c[3]),
                             Arrays.copyOfRange(c, 4, c.length));
            case "throughput":
                return throughput(Double.parseDouble(c[1]), Integer.parseInt(c[2]), endpoints.get(c[3]));
            case "cleanup": {
                Endpoint e = endpoints.get(c[1]);
                try {
                    e.client.drop_database(e.db, true, true);
                } catch (NoSuchObjectException ignored) {
                    // nothing to clean
                }
                return "{\"ok\":true}";
            }
            default:
                throw new IllegalArgumentException("unknown command " + c[0]);
        }
    }

    // --- the objects -----------------------------------------------------------------

    static List<FieldSchema> columns() {
        String[][] cols = {
            {"event_id", "bigint", "unique id of the event"},
            {"user_id", "bigint", "the user who caused it"},
            {"event_type", "string", "click, view, purchase..."},
            {"event_ts", "timestamp", "when it happened (UTC)"},
            {"amount", "decimal(18,2)", "purchase amount, if any"},
            {"currency", "string", "ISO 4217 code"},
            {"country", "string", "ISO 3166 code"},
            {"device", "struct<os:string,model:string,app_version:string>", "client device"},
            {"properties", "map<string,string>", "free-form attributes"},
            {"tags", "array<string>", "labels attached upstream"},
        };
        List<FieldSchema> out = new ArrayList<>();
        for (String[] col : cols) out.add(new FieldSchema(col[0], col[1], col[2]));
        return out;
    }

    static String sparkSchemaJson() {
        return "{\"type\":\"struct\",\"fields\":["
            + "{\"name\":\"event_id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{\"comment\":\"unique id of the event\"}},"
            + "{\"name\":\"user_id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{\"comment\":\"the user who caused it\"}},"
            + "{\"name\":\"event_type\",\"type\":\"string\",\"nullable\":true,\"metadata\":{\"comment\":\"click, view, purchase...\"}},"
            + "{\"name\":\"event_ts\",\"type\":\"timestamp\",\"nullable\":true,\"metadata\":{\"comment\":\"when it happened (UTC)\"}},"
            + "{\"name\":\"amount\",\"type\":\"decimal(18,2)\",\"nullable\":true,\"metadata\":{\"comment\":\"purchase amount, if any\"}},"
            + "{\"name\":\"currency\",\"type\":\"string\",\"nullable\":true,\"metadata\":{\"comment\":\"ISO 4217 code\"}},"
            + "{\"name\":\"country\",\"type\":\"string\",\"nullable\":true,\"metadata\":{\"comment\":\"ISO 3166 code\"}},"
            + "{\"name\":\"device\",\"type\":{\"type\":\"struct\",\"fields\":[{\"name\":\"os\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}},{\"name\":\"model\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}},{\"name\":\"app_version\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]},\"nullable\":true,\"metadata\":{\"comment\":\"client device\"}},"
            + "{\"name\":\"properties\",\"type\":{\"type\":\"map\",\"keyType\":\"string\",\"valueType\":\"string\",\"valueContainsNull\":true},\"nullable\":true,\"metadata\":{\"comment\":\"free-form attributes\"}},"
            + "{\"name\":\"tags\",\"type\":{\"type\":\"array\",\"elementType\":\"string\",\"containsNull\":true},\"nullable\":true,\"metadata\":{\"comment\":\"labels attached upstream\"}},"
            + "{\"name\":\"ds\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}},"
            + "{\"name\":\"hr\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]}";
    }

    static StorageDescriptor sd(String location) {
        Map<String, String> serdeParams = new HashMap<>();
        serdeParams.put("serialization.format", "1");
        if (location != null) serdeParams.put("path", location);
        SerDeInfo serde = new SerDeInfo(null, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", serdeParams);
        StorageDescriptor sd = new StorageDescriptor();
        sd.setCols(columns());
        sd.setLocation(location);
        sd.setInputFormat("org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat");
        sd.setOutputFormat("org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat");
        sd.setCompressed(false);
        sd.setNumBuckets(-1);
        sd.setSerdeInfo(serde);
        sd.setBucketCols(new ArrayList<>());
        sd.setSortCols(new ArrayList<>());
        sd.setParameters(new HashMap<>());
        sd.setStoredAsSubDirectories(false);
        return sd;
    }

    static Table table(String db, String name) {
        Table t = new Table();
        t.setDbName(db);
        t.setTableName(name);
        t.setOwner("bench");
        t.setCreateTime((int) (System.currentTimeMillis() / 1000));
        t.setLastAccessTime(0);
        t.setRetention(0);
        t.setSd(sd(null));
        t.setPartitionKeys(Arrays.asList(new FieldSchema("ds", "string", null), new FieldSchema("hr", "int", null)));
        Map<String, String> p = new HashMap<>();
        p.put("spark.sql.sources.provider", "parquet");
        p.put("spark.sql.partitionProvider", "catalog");
        p.put("spark.sql.create.version", "3.5.1");
        p.put("spark.sql.sources.schema.numParts", "1");
        p.put("spark.sql.sources.schema.part.0", sparkSchemaJson());
        p.put("spark.sql.sources.schema.numPartCols", "2");
        p.put("spark.sql.sources.schema.partCol.0", "ds");
        p.put("spark.sql.sources.schema.partCol.1", "hr");
        p.put("comment", "events, partitioned by day and hour");
        t.setParameters(p);
        t.setTableType("MANAGED_TABLE");
        return t;
    }

    static Partition partition(Endpoint e, int i) {
        String location = e.tableObj.getSd().getLocation() + "/" + e.partName(i);
        Partition p = new Partition();
        p.setDbName(e.db);
        p.setTableName(e.table);
        p.setValues(e.values(i));
        p.setSd(sd(location));
        p.setCreateTime((int) (System.currentTimeMillis() / 1000));
        p.setLastAccessTime(0);
        Map<String, String> params = new HashMap<>();
        long size = 10_000_000L + (i * 7919L) % 5_000_000L;
        params.put("spark.sql.statistics.totalSize", Long.toString(size));
        params.put("spark.sql.statistics.numRows", Long.toString(size / 100));
        params.put("numFiles", "4");
        params.put("totalSize", Long.toString(size));
        params.put("rawDataSize", "-1");
        params.put("numRows", "-1");
        params.put("COLUMN_STATS_ACCURATE", "false");
        p.setParameters(params);
        return p;
    }

    void create(Endpoint e, int extraTables) throws Exception {
        Database d = new Database(e.db, "hms-proxy bench database", null, new HashMap<>());
        d.setOwnerName("bench");
        e.client.create_database(d);
        e.client.create_table(table(e.db, e.table));
        for (int k = 0; k < extraTables; k++) e.client.create_table(table(e.db, String.format("other_%03d", k)));
        e.tableObj = e.client.get_table(e.db, e.table);
    }

    // --- the timed operations ----------------------------------------------------------

    interface Op { void run(Endpoint e, int iteration) throws Exception; }

    Op op(String name) {
        switch (name) {
            case "get_table": return (e, i) -> e.client.get_table(e.db, e.table);
            case "get_database": return (e, i) -> e.client.get_database(e.db);
            case "get_partition": return (e, i) -> {
                int k = new Random(1000L + i).nextInt(e.nparts);
                e.client.get_partition(e.db, e.table, e.values(k));
            };
            case "get_partition_names": return (e, i) -> check(e.client.get_partition_names(e.db, e.table, (short) -1).size(), e.nparts, name);
            case "get_partitions": return (e, i) -> check(e.client.get_partitions(e.db, e.table, (short) -1).size(), e.nparts, name);
            // The same listing, each time right after a write to the table (made untimed in
            // prepare): no server-side cache of the previous answer can serve it.
            case "get_partitions_after_write": return (e, i) -> check(e.client.get_partitions(e.db, e.table, (short) -1).size(), e.nparts, name);
            case "get_partitions_by_filter_1pct": return (e, i) -> {
                int day = new Random(2000L + i).nextInt(Math.max(1, (e.nparts + e.hours - 1) / e.hours));
                String ds = DAY0.plusDays(day).toString();
                int expect = Math.min(e.hours, e.nparts - day * e.hours);
                check(e.client.get_partitions_by_filter(e.db, e.table, "ds = \"" + ds + "\"", (short) -1).size(), expect, name);
            };
            case "get_partitions_by_filter_range": return (e, i) -> {
                // ten days of the hundred: 10% of the partitions
                int days = Math.max(1, (e.nparts + e.hours - 1) / e.hours);
                int first = new Random(3000L + i).nextInt(Math.max(1, days - 10));
                String lo = DAY0.plusDays(first).toString(), hi = DAY0.plusDays(first + 10).toString();
                int expect = Math.max(0, Math.min(e.nparts, (first + 10) * e.hours) - first * e.hours);
                check(e.client.get_partitions_by_filter(e.db, e.table,
                        "ds >= \"" + lo + "\" and ds < \"" + hi + "\"", (short) -1).size(), expect, name);
            };
            case "get_partitions_by_names": return (e, i) -> {
                Random r = new Random(4000L + i);
                int n = Math.min(100, e.nparts);
                List<String> names = new ArrayList<>(n);
                java.util.Set<Integer> picked = new java.util.HashSet<>();
                while (picked.size() < n) picked.add(r.nextInt(e.nparts));
                for (int k : picked) names.add(e.partName(k));
                check(e.client.get_partitions_by_names(e.db, e.table, names).size(), n, name);
            };
            case "alter_partition": return (e, i) -> {
                Partition p = e.altered;  // fetched once, outside the timing (see prepare)
                p.getParameters().put("bench.touched", Long.toString(++e.alterCount));
                e.client.alter_partition(e.db, e.table, p);
            };
            case "get_all_tables": return (e, i) -> e.client.get_all_tables(e.db);
            default: throw new IllegalArgumentException("unknown operation " + name);
        }
    }

    static void check(int got, int expected, String op) {
        if (got != expected) throw new IllegalStateException(op + " returned " + got + " items, expected " + expected);
    }

    void prepare(String op, Endpoint e) throws Exception {
        if ((op.equals("alter_partition") || op.equals("get_partitions_after_write")) && e.altered == null) {
            e.altered = e.client.get_partition(e.db, e.table, e.values(e.nparts / 2));
        }
        if (op.equals("get_partitions_after_write")) {
            e.altered.getParameters().put("bench.touched", Long.toString(++e.alterCount));
            e.client.alter_partition(e.db, e.table, e.altered);
        }
    }

    String bench(String opName, int warmup, int iters, String[] names) {
        Op op = op(opName);
        Map<String, List<Double>> samples = new LinkedHashMap<>();
        Map<String, String> errors = new LinkedHashMap<>();
        for (String n : names) samples.put(n, new ArrayList<>());
        for (int round = -warmup; round < iters; round++) {
            for (String n : names) {
                if (errors.containsKey(n)) continue;
                Endpoint e = endpoints.get(n);
                try {
                    prepare(opName, e);
                    long t0 = System.nanoTime();
                    op.run(e, round);
                    long dt = System.nanoTime() - t0;
                    if (round >= 0) samples.get(n).add(ms(dt));
                } catch (Throwable ex) {
                    errors.put(n, describe(ex));
                    try { e.open(); } catch (Exception ignored) { /* reported on next use */ }
                }
            }
        }
        StringBuilder sb = new StringBuilder("{\"ok\":true,\"samples\":{");
        boolean first = true;
        for (Map.Entry<String, List<Double>> en : samples.entrySet()) {
            if (!first) sb.append(',');
            first = false;
            sb.append(json(en.getKey())).append(":[");
            for (int k = 0; k < en.getValue().size(); k++) {
                if (k > 0) sb.append(',');
                sb.append(en.getValue().get(k));
            }
            sb.append(']');
        }
        sb.append("},\"errors\":{");
        first = true;
        for (Map.Entry<String, String> en : errors.entrySet()) {
            if (!first) sb.append(',');
            first = false;
            sb.append(json(en.getKey())).append(':').append(json(en.getValue()));
        }
        return sb.append("}}").toString();
    }

    String throughput(double seconds, int clients, Endpoint e) throws Exception {
        List<TTransport> sockets = new ArrayList<>();
        List<ThriftHiveMetastore.Client> cs = new ArrayList<>();
        try {
            for (int k = 0; k < clients; k++) {
                TTransport s = openSocket(e.host, e.port);
                sockets.add(s);
                ThriftHiveMetastore.Client c = new ThriftHiveMetastore.Client(new TBinaryProtocol(s));
                c.get_table(e.db, e.table);  // warm the connection
                cs.add(c);
            }
            AtomicLong calls = new AtomicLong();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            CountDownLatch start = new CountDownLatch(1);
            long[] window = new long[2];
            List<Thread> threads = new ArrayList<>();
            for (ThriftHiveMetastore.Client c : cs) {
                Thread t = new Thread(() -> {
                    try {
                        start.await();
                        long end = window[1];
                        long n = 0;
                        while (System.nanoTime() < end) {
                            c.get_table(e.db, e.table);
                            n++;
                        }
                        calls.addAndGet(n);
                    } catch (Throwable ex) {
                        failure.compareAndSet(null, ex);
                    }
                }, "bench-client");
                threads.add(t);
                t.start();
            }
            window[0] = System.nanoTime();
            window[1] = window[0] + (long) (seconds * 1e9);
            start.countDown();
            for (Thread t : threads) t.join();
            double took = (System.nanoTime() - window[0]) / 1e9;  // includes the last call in flight
            if (failure.get() != null) throw new RuntimeException("a client failed: " + describe(failure.get()), failure.get());
            return "{\"ok\":true,\"calls\":" + calls.get() + ",\"seconds\":" + took
                + ",\"per_second\":" + (calls.get() / took) + "}";
        } finally {
            for (TTransport s : sockets) s.close();
        }
    }

    // --- helpers -----------------------------------------------------------------------

    static double ms(long nanos) { return Math.round(nanos / 1000.0) / 1000.0; }

    static String describe(Throwable e) {
        String msg = e.getMessage();
        return e.getClass().getSimpleName() + (msg == null ? "" : ": " + msg);
    }

    static String json(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
                    else sb.append(ch);
            }
        }
        return sb.append('"').toString();
    }
}
