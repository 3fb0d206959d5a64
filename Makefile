# The two commands a user needs: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HMS_PORT  ?= 9083
HMS_STORE ?= ./metastore
PYTEST_ARGS ?=

.PHONY: run test venv test-deps browser-deps thrift-deps check-java lakefs-build trino-download demo regen bench clean

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
	$(BIN)/python -m hms_proxy.lakefs_local --build-only

# A real Trino (tests/trino): the server tarball from Maven Central, downloaded and unpacked
# once into ~/.cache/hms-proxy/trino/. Trino 476 needs a Java 24+ JDK: without one the Trino
# tests skip, saying so.
trino-download: test-deps
	@$(BIN)/python -m hms_proxy.trino_local --download-only || \
	  echo "no real Trino: the Trino tests will be skipped (see the line above)"

# The Thrift compiler proves hms_proxy/gen is what thrift/generate.sh makes of the IDL
# (tests/unit/test_thrift_idl.py): Debian's thrift-compiler, installed when missing and
# apt-get is usable as root; otherwise that test skips, saying why.
thrift-deps:
	@command -v thrift >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's thrift-compiler for the generated-code test"; \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq thrift-compiler >/dev/null 2>&1 || \
	      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq thrift-compiler >/dev/null; }; } \
	      || echo "thrift-compiler could not be installed: the generated-code test will be skipped"; \
	  else echo "no thrift compiler (and no apt-get as root): the generated-code test will be skipped"; fi; }

test: check-java test-deps browser-deps thrift-deps lakefs-build trino-download
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The whole stack without Docker: a real lakeFS (built from its Go module), hms-proxy over it,
# Spark writing through lakeFS's S3 gateway on a branch, diff, merge, read back; then up until
# Ctrl-C (hms_proxy/demo.py).
$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[lakefs,stats]'
	touch $@

demo: check-java $(VENV)/.demo-installed
	$(BIN)/python -m hms_proxy.demo --port $(HMS_PORT)

regen:
	bash thrift/generate.sh

bench: test-deps
	$(BIN)/hms-proxy bench --help

clean:
	rm -rf $(VENV) build *.egg-info
