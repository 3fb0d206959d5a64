"""What every benchmark prints: its progress lines on stderr and its figures, one way."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable


def logger(label: str) -> Callable[[str], None]:
    """``log(msg)`` printing ``[LABEL HH:MM:SS] msg`` on stderr (progress, never figures)."""
    def log(msg: str) -> None:
        print(f"[{label} {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
    return log


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
