# The two commands a user needs: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HMS_PORT  ?= 9083
HMS_STORE ?= ./metastore
PYTEST_ARGS ?=

.PHONY: run test compiled java-downloads layers venv test-deps browser-deps thrift-deps kerberos-deps check-java lakefs-build trino-download iceberg-rest-download spark-iceberg-download docs demo regen bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

test-deps: $(VENV)/.test-installed

run: venv
	$(BIN)/hms-proxy serve --store $(HMS_STORE) --port $(HMS_PORT)

check-java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "Java 17 is needed (PySpark and the stock HMS oracle run on it) and none was found."; \
	  echo "Install it with:  apt-get install -y openjdk-17-jdk-headless   (or set JAVA_HOME to a JDK 17)"; \
	  exit 1; }
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then \
	  echo "Java 17 is needed (found: $$(java -version 2>&1 | head -1))."; \
	  echo "Install it with:  apt-get install -y openjdk-17-jdk-headless   (or set JAVA_HOME to a JDK 17)"; \
	  exit 1; fi
	@command -v javac >/dev/null 2>&1 || { \
	  echo "javac (JDK 17) is needed to compile the test launchers; install openjdk-17-jdk-headless."; exit 1; }

# The console's browser tests drive Debian's chromium (never a downloaded browser): install it
# when missing and apt-get is usable as root; otherwise those tests skip, saying why.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's chromium for the console's browser tests"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	      || echo "chromium could not be installed: the console's browser tests will be skipped"; \
	  else echo "no chromium (and no apt-get as root): the console's browser tests will be skipped"; fi; }

# A real lakeFS, built once from its Go module and cached in ~/.cache/hms-proxy/lakefs/ (the
# lakeFS suites start it; a first build takes several minutes, later ones nothing).
lakefs-build: test-deps
	$(BIN)/python -m hms_proxy.tools.lakefs_local --build-only

# A real Trino (tests/e2e/trino): the server tarball from Maven Central, downloaded and unpacked
# once into ~/.cache/hms-proxy/trino/. Trino 476 needs a Java 24+ JDK: without one the Trino
# tests skip, saying so.
trino-download: test-deps
	@$(BIN)/python -m hms_proxy.tools.trino_local --download-only || \
	  echo "no real Trino: the Trino tests will be skipped (see the line above)"

# The Thrift compiler proves hms_proxy/gen is what thrift/generate.sh makes of the IDL
# (tests/thrift/test_thrift_idl.py): Debian's thrift-compiler, installed when missing and
# apt-get is usable as root; otherwise that test skips, saying why.
thrift-deps:
	@command -v thrift >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's thrift-compiler for the generated-code test"; \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq thrift-compiler >/dev/null 2>&1 || \
	      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq thrift-compiler >/dev/null; }; } \
	      || echo "thrift-compiler could not be installed: the generated-code test will be skipped"; \
	  else echo "no thrift compiler (and no apt-get as root): the generated-code test will be skipped"; fi; }

# Kerberos (tests/security/test_kerberos.py, serve --kerberos-*): MIT Kerberos' KDC, client
# programs and headers from Debian, installed when missing and apt-get is usable as root; then
# the Python modules built against them: gssapi (the server's, the kerberos extra), pure-sasl
# and kerberos (the tests' SASL client). Otherwise those tests skip, saying why.
KRB_DEBS := krb5-kdc krb5-admin-server krb5-user libkrb5-dev
KRB_PY   := 'gssapi>=1.8' 'pure-sasl>=0.6' 'kerberos>=1.3'
kerberos-deps: test-deps
	@if ! { [ -x /usr/sbin/krb5kdc ] && command -v krb5-config >/dev/null 2>&1; }; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing MIT Kerberos from Debian for the Kerberos tests"; \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(KRB_DEBS) >/dev/null 2>&1 || \
	      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(KRB_DEBS) >/dev/null; }; } \
	      || echo "MIT Kerberos could not be installed: the Kerberos tests will be skipped"; \
	  else echo "no MIT Kerberos (and no apt-get as root): the Kerberos tests will be skipped"; fi; fi
	@$(BIN)/python -c "import gssapi, puresasl, kerberos" 2>/dev/null || \
	  { command -v krb5-config >/dev/null 2>&1 && $(BIN)/pip install -q $(KRB_PY); } || \
	  echo "gssapi, pure-sasl or kerberos could not be installed: the Kerberos tests will be skipped"

# The documentation site (mkdocs.yml; docs/, the CLI and HTTP API reference generated by
# docs_hooks/reference.py) into build/site; --strict: a broken link or anchor fails it.
docs: test-deps
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# Iceberg's REST reference server and compatibility kit (tests/e2e/rest/test_rest_kit.py, hms-proxy
# bench rest): iceberg-open-api 1.10.0's test jars and their class path from Maven Central,
# resolved once into ~/.cache/hms-proxy/iceberg-rest/.
iceberg-rest-download: test-deps
	@$(BIN)/python -m hms_proxy.tools.iceberg_rest_local --download-only || \
	  echo "no Iceberg REST jars: the kit and the REST bench's reference side will be skipped"

# Spark with Iceberg's runtime (tests/e2e/rest/test_rest_spark.py): Iceberg publishes its Spark
# runtime for Spark 4.1 at the latest, so a PySpark 4.1.4 environment of its own and the runtime
# jar from Maven Central, made once in ~/.cache/hms-proxy/spark-iceberg/.
spark-iceberg-download: test-deps
	@$(BIN)/python -m hms_proxy.tools.spark_iceberg --download-only || \
	  echo "no Spark with Iceberg's runtime: its tests will be skipped"

# The suite runs on TEST_WORKERS pytest-xdist workers (0: in this process), each test file on
# one worker (the files that share a Trino on one; tests/support/schedule.py), longest first.
# At the end: the 30 slowest tests and the wall time of each phase (build/test-phases.txt).
TEST_WORKERS ?= 2
PHASES := build/test-phases.txt
TIMED  := bash tests/timed.sh $(PHASES)
SUITE  := -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=30 -rfEs

# The stock HMS 3.1.3 and 4.0.1 (the newer oracles, with the 4.0.1's schema scripts),
# hadoop-aws for Spark's s3a:// and the jars of Hive 4.0.1's metastore client tests (its tests
# jar, JUnit, Mockito; tests/e2e/hive4/test_hive4_suite.py, whose runner is compiled here too),
# from Maven Central, resolved once into ~/.cache/hms-proxy/
# (else the first test that needs one waits for it, and the others for that test's file lock).
java-downloads: test-deps
	@$(BIN)/python -c "from hms_proxy.tools import hive31_local as a, hive4_local as b, \
	  spark_s3 as c; print('Hive 3.1.3:', a.ensure_hive31()); print('Hive 4.0.1:', \
	  b.ensure_hive4(), b.ensure_schema_scripts()); print('hadoop-aws:', len(c.s3a_jars()), 'jars')"
	@$(BIN)/python -m tests.e2e.hive4.test_hive4_suite --download

test:
	@mkdir -p build && rm -f $(PHASES)
	@$(TIMED) set-up $(MAKE) --no-print-directory check-java test-deps compiled docs layers \
	  browser-deps thrift-deps kerberos-deps
	@$(TIMED) downloads $(MAKE) --no-print-directory lakefs-build trino-download \
	  iceberg-rest-download spark-iceberg-download java-downloads
	@$(TIMED) suite $(BIN)/python -m pytest $(SUITE) $(PYTEST_ARGS); rc=$$?; \
	  echo "make test, wall time of each phase:"; cat $(PHASES); exit $$rc

# Byte code of the project's own modules, written once: where PYTHONDONTWRITEBYTECODE is set,
# every server, CLI and Spark runner process the tests start would otherwise compile the 3.6 MB
# of generated Thrift code again (0.85 s each).
compiled: test-deps
	@$(BIN)/python -m compileall -q hms_proxy kvmodel stats tests >/dev/null

# The whole stack without Docker: a real lakeFS (built from its Go module), hms-proxy over it,
# Spark writing through lakeFS's S3 gateway on a branch, diff, merge, read back; then up until
# Ctrl-C (hms_proxy/tools/demo.py).
$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[lakefs,stats]'
	touch $@

demo: check-java $(VENV)/.demo-installed
	$(BIN)/python -m hms_proxy.tools.demo --port $(HMS_PORT)

# The layers of the code (pyproject.toml [tool.importlinter]): no import cycles, no import upward.
layers: test-deps
	$(BIN)/lint-imports

regen:
	bash thrift/generate.sh

bench: test-deps
	$(BIN)/hms-proxy bench --help

clean:
	rm -rf $(VENV) build *.egg-info
