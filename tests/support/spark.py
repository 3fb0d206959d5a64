"""A PySpark session in a subprocess that a test drives statement by statement
(``tests/e2e/spark/runner.py --statements -``), so that it can do other things in between
(lakeFS's commits and merges, say) without paying a JVM start for each step."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from tests.support.process import REPO_ROOT

RUNNER = REPO_ROOT / "tests" / "e2e" / "spark" / "runner.py"
START_TIMEOUT = 600.0  # a JVM start with Maven jars, on a machine running two suites
STATEMENT_TIMEOUT = 600.0


class SparkError(AssertionError):
    """A statement failed: ``error`` is Spark's error condition (or the class name)."""

    def __init__(self, result: dict, sql: str):
        self.error = result.get("error")
        self.result = result
        super().__init__(f"{sql!r} failed: {result.get('error')}: "
                         f"{str(result.get('message'))[:1500]}")


class Spark:
    """``Spark(uri, warehouse, conf, workdir)``: ``.sql(text)`` returns the rows (lists) or
    raises :class:`SparkError`; ``.try_sql(text)`` returns the result dict; ``.close()``."""

    def __init__(self, uri: str, warehouse: str, workdir: Path, conf: dict | None = None,
                 env: dict | None = None):
        workdir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, str(RUNNER), "--uri", uri, "--warehouse", warehouse,
               "--statements", "-"]
        for key, value in (conf or {}).items():
            cmd += ["--conf", f"{key}={value}"]
        self.log_path = workdir / "spark.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            cmd, cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._log, text=True, start_new_session=True,
            env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYSPARK_PYTHON=sys.executable,
                     SPARK_LOCAL_IP="127.0.0.1", **(env or {})))
        self._answer(START_TIMEOUT, "the Spark session's start")

    def _answer(self, timeout: float, what: str) -> dict:
        box: dict = {}

        def read():
            box["line"] = self.proc.stdout.readline()
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        line = box.get("line")
        if not line:
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise AssertionError(f"no answer from Spark for {what} (exit code "
                                 f"{self.proc.poll()}); log tail:\n{tail}")
        return json.loads(line)

    def try_sql(self, sql: str) -> dict:
        self.proc.stdin.write(json.dumps(sql) + "\n")
        self.proc.stdin.flush()
        return self._answer(STATEMENT_TIMEOUT, sql)["result"]

    def sql(self, sql: str) -> list:
        result = self.try_sql(sql)
        if "rows" not in result:
            raise SparkError(result, sql)
        return result["rows"]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(120)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def __enter__(self) -> "Spark":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
