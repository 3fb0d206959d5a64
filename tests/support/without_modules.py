"""``python -m tests.support.without_modules MOD[,MOD...] ARGS...``: the hms-proxy command line
with those modules made uninstallable, as on a machine where only ``pip install hms-proxy``
ran (``make run``). A test double for "not installed", which a machine that has the test extras
cannot otherwise show without a second environment."""
from __future__ import annotations

import importlib.abc
import sys


class _Absent(importlib.abc.MetaPathFinder):
    def __init__(self, names: set[str]):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def main() -> int:
    blocked = {m for m in sys.argv[1].split(",") if m}
    sys.meta_path.insert(0, _Absent(blocked))
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def find_spec(name, package=None):  # what extras.require asks
        if name.split(".")[0] in blocked:
            return None
        return real_find_spec(name, package)

    importlib.util.find_spec = find_spec
    from hms_proxy.cli import main as cli_main

    return cli_main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
