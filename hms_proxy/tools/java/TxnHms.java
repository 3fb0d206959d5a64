/*
 * The stock Hive Metastore 2.3 with its transaction/lock tables: started by
 * hms_proxy.tools.metastores.start_stock_hms(with_transactions=True) for the test oracle and the benches.
 *
 * pyiceberg's HiveCatalog takes an HMS lock around every commit. The lock tables (HIVE_LOCKS,
 * TXNS, ...) are not JDO-mapped, so DataNucleus autoCreateAll does not create them and plain
 * HiveMetaStore answers lock() with an internal error. TxnDbUtil.prepDb creates them on Derby;
 * it must run in the HMS's own JVM (embedded Derby allows one process per database).
 */
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.txn.TxnDbUtil;

public final class TxnHms {
    private TxnHms() {}

    public static void main(String[] args) throws Throwable {
        try {
            TxnDbUtil.prepDb(new HiveConf());
        } catch (Exception e) {
            System.err.println("TxnHms: prepDb failed (continuing): " + e);
        }
        HiveMetaStore.main(args);
    }
}
