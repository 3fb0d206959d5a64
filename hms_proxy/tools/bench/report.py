"""What every benchmark prints: its progress lines on stderr and its figures, one way."""
from __future__ import annotations

import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def logger(label: str) -> Callable[[str], None]:
    """``log(msg)`` printing ``[LABEL HH:MM:SS] msg`` on stderr (progress, never figures)."""
    def log(msg: str) -> None:
        print(f"[{label} {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
    return log


def write_outputs(args, result: dict, markdown: str | Callable[[], str] | None = None,
                  log: Callable[[str], None] | None = None) -> None:
    """Write a mode's figures where its ``--json`` and ``--markdown`` options say (either may
    be absent or empty); ``markdown`` is the text or a function making it."""
    if getattr(args, "json", None):
        Path(args.json).write_text(json.dumps(result, indent=2, default=str) + "\n")
        if log:
            log(f"wrote {args.json}")
    if getattr(args, "markdown", None) and markdown is not None:
        Path(args.markdown).write_text(markdown() if callable(markdown) else markdown)
        if log:
            log(f"wrote {args.markdown}")


def counts(text: str, option: str, example: str) -> list[int]:
    """A comma-separated list of counts of at least 1 (``--processes 1,2,3``); SystemExit
    naming ``option`` otherwise."""
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"{option} takes numbers like {example}, not {text!r}") from None
    if not out or min(out) < 1:
        raise SystemExit(f"{option} takes counts of at least 1")
    return out


def figure(value: float | None, unit: str = "ms") -> str:
    """A measured value as the benchmark pages show it: ``—`` for none; milliseconds with the
    digits that matter (``1,234 ms``, ``12.3 ms``, ``1.23 ms``, ``0.123 ms``); a ratio
    (``2.50x``); a rate (``1,234 calls/s``)."""
    if value is None:
        return "—"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "calls/s":
        return f"{value:,.0f} calls/s"
    if value >= 100:
        return f"{value:,.0f} {unit}"
    if value >= 10:
        return f"{value:.1f} {unit}"
    if value >= 1:
        return f"{value:.2f} {unit}"
    return f"{value:.3f} {unit}"


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine_info(java: bool = False) -> dict:
    """What the figures were measured on: cores, memory, CPU model, Python, SQLite, the load
    average now, and the JVM's version when ``java`` (the benchmarks with a JVM client)."""
    info = {"nproc": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "sqlite": sqlite3.sqlite_version,
            "load_average": load_average()}
    try:
        with open("/proc/meminfo") as f:
            info["ram_gb"] = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if java:
        try:
            out = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
            info["java"] = out.strip().splitlines()[0] if out.strip() else "?"
        except OSError:
            info["java"] = "?"
    return info
