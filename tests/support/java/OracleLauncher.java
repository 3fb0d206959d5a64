/*
 * Starts the stock Hive Metastore 2.3 as the conformance oracle.
 *
 * Why a launcher: HMS only creates its metadata tables lazily (DataNucleus
 * autoCreateAll), but the transaction/lock tables (TXNS, HIVE_LOCKS, ...) are
 * not JDO-mapped and are normally created by schematool.  TxnDbUtil.prepDb
 * creates them on Derby; it must run in the same JVM before HiveMetaStore.main
 * because embedded Derby allows only one process on a database directory.
 */
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.txn.TxnDbUtil;

public final class OracleLauncher {
    private OracleLauncher() {}

    public static void main(String[] args) throws Throwable {
        HiveConf conf = new HiveConf();
        try {
            TxnDbUtil.prepDb(conf);
        } catch (Exception e) {
            // Tables left over from a previous run in the same directory are fine.
            System.err.println("OracleLauncher: prepDb failed (continuing): " + e);
        }
        System.err.println("OracleLauncher: transaction tables ready, starting HiveMetaStore");
        HiveMetaStore.main(args);
    }
}
