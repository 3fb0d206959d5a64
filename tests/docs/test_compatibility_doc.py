"""docs/compatibility.md lists exactly the HMS 2.3.10 methods the server does not serve."""
from __future__ import annotations

import re
from pathlib import Path

from hms_proxy.hms import handler
from hms_proxy.thrift.gen.fb303 import FacebookService
from hms_proxy.thrift.gen.hive_metastore import ThriftHiveMetastore
from hms_proxy.thrift.processor import service_methods

DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"


def documented_unimplemented() -> set[str]:
    text = DOC.read_text()
    block = text.split("<!-- unimplemented:start -->", 1)[1].split("<!-- unimplemented:end -->", 1)[0]
    lists = [line for line in block.splitlines() if line.startswith("`")]
    return {name for line in lists for name in re.findall(r"`([A-Za-z_0-9]+)`", line)}


def test_doc_lists_exactly_the_unimplemented_methods():
    methods = service_methods((ThriftHiveMetastore, FacebookService))
    served = {m for m in methods for family in handler.FAMILIES if hasattr(family, m)}
    missing = set(methods) - served
    documented = documented_unimplemented()
    assert documented - missing == set(), "documented as missing but served"
    assert missing - documented == set(), "not served and not documented"


def test_readme_counts_the_methods_served():
    """The README's figures (served of the whole interface, and of Hive 4.0.1's IDL) are the
    handler's."""
    from hms_proxy.thrift.generations import METHODS

    methods = service_methods((ThriftHiveMetastore,))
    served = set(handler.served_methods(methods))
    of_4 = [m for m in methods if "4.0.1" in METHODS[m]]
    readme = (DOC.parents[1] / "README.md").read_text()
    text = " ".join(readme.split())
    assert (f"{len(served)} of its {len(methods)} methods are served, "
            f"{sum(1 for m in of_4 if m in served)} of the {len(of_4)} of Hive 4.0.1's IDL") in text
