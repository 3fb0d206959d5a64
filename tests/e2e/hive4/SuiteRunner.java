import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.internal.runners.statements.FailOnTimeout;
import org.junit.runner.Description;
import org.junit.runner.notification.Failure;
import org.junit.runner.notification.RunListener;
import org.junit.runner.notification.RunNotifier;
import org.junit.runners.Parameterized;
import org.junit.runners.model.FrameworkMethod;
import org.junit.runners.model.InitializationError;
import org.junit.runners.model.Statement;
import org.junit.runners.model.TestClass;
import org.junit.runners.parameterized.BlockJUnit4ClassRunnerWithParameters;
import org.junit.runners.parameterized.TestWithParameters;

/**
 * Hive 4.0.1's own metastore client tests (org.apache.hadoop.hive.metastore.client.Test*, from
 * hive-standalone-metastore-server-4.0.1-tests.jar) against a metastore that is already running,
 * for tests/e2e/hive4/test_hive4_suite.py.
 *
 * Those classes are JUnit Parameterized tests over MetaStoreFactoryForTests.getMetaStores():
 * with -Dtest.hms.client.configs=SITE.xml set, that list starts with a "Cluster" MiniHMS, a
 * client of the metastore SITE.xml names, followed by the "Embedded" and "Remote" ones that
 * start a metastore inside this JVM. Only the Cluster one is run here, and the static list of
 * services the classes' @BeforeClass starts is replaced by it alone.
 *
 * One JVM runs the classes one after the other, as told on its standard input, one line each:
 * CLASS TAB SITE.xml (CLASS a simple name; SITE.xml, read afresh for each class, names the
 * metastore to use: the caller may start a fresh one per class). An empty line or the end of the
 * input ends the run. After each class the runner answers one line on its standard output:
 * "@@done CLASS PASSED FAILED IGNORED SKIPPED" (everything else the JVM prints goes to its
 * standard error).
 *
 * Each test gives one line of OUT.txt (the first argument):
 * CLASS TAB TEST TAB PASS|FAIL|IGNORED|SKIPPED TAB START_MS TAB END_MS TAB MESSAGE
 * with TEST "(class)" for a failure outside a test (@BeforeClass, @AfterClass, the class itself).
 * Each test fails after -Dsuite.test.timeout seconds (180 by default).
 */
public class SuiteRunner {
  static final long TEST_TIMEOUT_S = Long.getLong("suite.test.timeout", 180);
  static final String PKG = "org.apache.hadoop.hive.metastore.client.";

  /** One parameter of a Parameterized class, with the class's @BeforeClass/@AfterClass. */
  static class OneParameterRunner extends BlockJUnit4ClassRunnerWithParameters {
    OneParameterRunner(TestWithParameters t) throws InitializationError { super(t); }

    // Parameterized itself runs @BeforeClass/@AfterClass around all its parameters; here
    // there is one parameter, so they go around it.
    @Override
    protected Statement classBlock(RunNotifier notifier) {
      return withAfterClasses(withBeforeClasses(super.classBlock(notifier)));
    }

    @Override
    protected Statement methodInvoker(FrameworkMethod method, Object test) {
      return FailOnTimeout.builder().withTimeout(TEST_TIMEOUT_S, TimeUnit.SECONDS)
          .build(super.methodInvoker(method, test));
    }
  }

  /** A failure on one line: the exception, where the test class saw it, and its cause. */
  static String oneLine(Throwable t) {
    String s = String.valueOf(t).replace('\n', ' ').replace('\r', ' ').replace('\t', ' ');
    if (s.length() > 6000) s = s.substring(0, 6000) + "...";
    for (StackTraceElement e : t.getStackTrace()) {
      if (e.getClassName().startsWith(PKG + "Test")) {
        s += " @" + e.getClassName().substring(PKG.length()) + ":" + e.getLineNumber();
        break;
      }
    }
    Throwable c = t.getCause();
    if (c != null && c != t) {
      String cs = String.valueOf(c).replace('\n', ' ').replace('\r', ' ').replace('\t', ' ');
      if (cs.length() > 300) cs = cs.substring(0, 300) + "...";
      s += " | cause: " + cs;
    }
    return s;
  }

  /**
   * Each class starts as in a JVM of its own: the processor capabilities and identifier that
   * HiveMetaStoreClient keeps in static fields (TestDatabases and TestGetTableMeta set them) go
   * back to none. Left set, the stock 4.0.1 answers later classes' tables differently (its
   * metadata transformer fills in accessType for a client that declares capabilities).
   */
  static void resetClientStatics() throws Exception {
    Class<?> client = Class.forName("org.apache.hadoop.hive.metastore.HiveMetaStoreClient");
    client.getMethod("setProcessorCapabilities", String[].class).invoke(null, (Object) null);
    client.getMethod("setProcessorIdentifier", String.class).invoke(null, (Object) null);
  }

  /** Runs the Cluster parameter of one class; returns the counts pass, fail, ignored, skipped. */
  static int[] runClass(String simple, String site, PrintWriter out) {
    int[] counts = new int[4];
    long classStart = System.currentTimeMillis();
    try {
      resetClientStatics();
      System.setProperty("test.hms.client.configs", site);
      Class<?> cls = Class.forName(PKG + simple);
      Method params = null;  // MetaStoreClientTest.getMetaStoreToTest: the @Parameters method
      for (Method m : cls.getMethods()) {
        if (m.isAnnotationPresent(Parameterized.Parameters.class)) { params = m; break; }
      }
      if (params == null) throw new IllegalStateException("no @Parameters method in " + simple);
      @SuppressWarnings("unchecked")
      List<Object[]> all = (List<Object[]>) params.invoke(null);
      Object[] cluster = null;
      for (Object[] p : all) if ("Cluster".equals(p[0])) cluster = p;
      if (cluster == null) throw new IllegalStateException("no Cluster parameter in " + simple);
      List<Object> services = new ArrayList<>();
      services.add(cluster[1]);
      for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
        try {
          Field f = c.getDeclaredField("metaStoreServices");
          f.setAccessible(true);
          f.set(null, services);
        } catch (NoSuchFieldException ignored) {
          // declared by a superclass, or not at all
        }
      }
      List<Object> parameters = new ArrayList<>();
      for (Object o : cluster) parameters.add(o);
      OneParameterRunner runner = new OneParameterRunner(
          new TestWithParameters("[Cluster]", new TestClass(cls), parameters));
      RunNotifier notifier = new RunNotifier();
      notifier.addListener(new RunListener() {
        final Map<Description, Long> started = new HashMap<>();
        final java.util.Set<Description> failed = new java.util.HashSet<>();

        void line(Description d, String status, String msg) {
          String name = d.getMethodName() == null ? "(class)"
              : d.getMethodName().replace("[Cluster]", "");
          Long from = started.get(d);
          long now = System.currentTimeMillis();
          out.println(simple + "\t" + name + "\t" + status + "\t"
              + (from == null ? classStart : from) + "\t" + now + "\t" + msg);
          out.flush();
        }
        @Override public void testStarted(Description d) {
          started.put(d, System.currentTimeMillis());
        }
        @Override public void testFailure(Failure f) {
          failed.add(f.getDescription());
          line(f.getDescription(), "FAIL", oneLine(f.getException()));
          if (f.getDescription().getMethodName() != null) counts[1]++;
        }
        @Override public void testAssumptionFailure(Failure f) {
          failed.add(f.getDescription());
          line(f.getDescription(), "SKIPPED", oneLine(f.getException()));
          counts[3]++;
        }
        @Override public void testIgnored(Description d) {
          line(d, "IGNORED", "");
          counts[2]++;
        }
        @Override public void testFinished(Description d) {
          if (!failed.contains(d)) { line(d, "PASS", ""); counts[0]++; }
        }
      });
      runner.run(notifier);
    } catch (Throwable t) {
      Throwable shown = t instanceof java.lang.reflect.InvocationTargetException
          && t.getCause() != null ? t.getCause() : t;
      out.println(simple + "\t(class)\tFAIL\t" + classStart + "\t" + System.currentTimeMillis()
          + "\t" + oneLine(shown));
      out.flush();
      counts[1]++;
    }
    return counts;
  }

  public static void main(String[] args) throws Exception {
    // The protocol's stream: whatever Hive and its logging print goes to the standard error.
    PrintStream protocol = new PrintStream(System.out, true, "UTF-8");
    System.setOut(System.err);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (PrintWriter out = new PrintWriter(args[0], "UTF-8")) {
      String command;
      while ((command = in.readLine()) != null && !command.isEmpty()) {
        String[] parts = command.split("\t", 2);
        long started = System.currentTimeMillis();
        int[] c = runClass(parts[0], parts[1], out);
        System.err.printf("%s: %d pass, %d fail, %d ignored, %d skipped (%.1fs)%n", parts[0],
            c[0], c[1], c[2], c[3], (System.currentTimeMillis() - started) / 1000.0);
        protocol.println("@@done " + parts[0] + " " + c[0] + " " + c[1] + " " + c[2] + " " + c[3]);
      }
    }
    // the clients' threads (and a test stuck past its timeout) must not keep the JVM alive
    System.exit(0);
  }
}
