"""Listing a table directory's children on lakeFS (``data_children``, which tells a write
which partition directories exist): every child in the range, with pages sized to what is
expected, against the real lakeFS of the session."""
from __future__ import annotations

import pytest

pytest.importorskip("lakefs_sdk")

from kvmodel.store.lakefs import LakeFSStore  # noqa: E402
from tests.support.lakefs import new_repository, real_lakefs  # noqa: E402


@pytest.fixture(scope="module")
def lake():
    store = LakeFSStore(new_repository("children"), real_lakefs().config())
    for i in range(60):
        store.api.upload("main", f"warehouse/t/p={i:03d}/part-0", b"x")
    store.api.upload("main", "warehouse/t/p=010x", b"a file beside the directories")
    yield store
    store.close()


def _children(lake, first: int, last: int, expect: int) -> tuple[list[str], int]:
    calls = lake.api.calls
    got = list(lake.data_children("main", "warehouse/t", f"warehouse/t/p={first:03d}",
                                  f"warehouse/t/p={last:03d}", expect=expect))
    return got, lake.api.calls - calls


def test_every_child_in_the_range_whatever_is_expected(lake):
    want = [f"warehouse/t/p={i:03d}" for i in range(5, 11)] + ["warehouse/t/p=010x"] + \
        [f"warehouse/t/p={i:03d}" for i in range(11, 46)]
    for expect in (1, 3, 42, 1000):
        got, _ = _children(lake, 5, 45, expect)
        # (the listing starts at the first name less its last character: p=000 to p=004
        # may come before it; the caller looks up its own names in the answer)
        assert [p for p in got if p >= "warehouse/t/p=005"] == want, expect


def test_one_expected_child_is_one_small_page(lake):
    got, calls = _children(lake, 33, 33, expect=1)
    assert "warehouse/t/p=033" in got and calls == 1
    assert len(got) <= 1 + 16  # not a page of 1,000 directories for one
    got, calls = _children(lake, 0, 59, expect=1)  # more than expected: pages grow
    assert len([p for p in got if "x" not in p]) == 60 and calls == 2


def test_whether_a_directory_has_anything_is_one_listing_of_one(lake):
    calls = lake.api.calls
    assert lake.data_exists("main", "warehouse/t")
    assert lake.data_exists("main", "warehouse/t/p=007")
    assert not lake.data_exists("main", "warehouse/t/p=0")  # a prefix of names, no directory
    assert not lake.data_exists("main", "warehouse/elsewhere")
    assert lake.api.calls - calls == 4
