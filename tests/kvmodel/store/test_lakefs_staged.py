"""A branch state's staged changes (:mod:`kvmodel.store.lakefs.staged`): read as the plain
sorted dict they replace, after any sequence of writes, and extended without copying what a
large branch staged before."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel.store.lakefs import staged as staged_mod
from kvmodel.store.lakefs.staged import EMPTY_STAGED, Staged

KEYS = st.text(alphabet="abcd/=", min_size=1, max_size=5)
VALUES = st.one_of(st.none(), st.binary(max_size=3))
WRITES = st.lists(st.dictionaries(KEYS, VALUES, max_size=6), max_size=40)


def _reads_as(staged: Staged, model: dict, probes) -> None:
    assert len(staged) == len(model) and bool(staged) == bool(model)
    assert list(staged) == sorted(model)
    assert staged.items() == sorted(model.items())
    for key in probes:
        assert (key in staged) == (key in model)
        assert staged.get(key, "absent") == model.get(key, "absent")
    for start, end in [("", None), ("b", None), ("a", "c"), ("c", "b"), ("b/", "b=")]:
        want = sorted((k, v) for k, v in model.items()
                      if k >= start and (end is None or k < end))
        assert staged.items_between(start, end) == want
        assert staged.keys_between(start, end) == [k for k, _ in want]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=30), WRITES, st.lists(KEYS, max_size=10))
def test_reads_as_a_sorted_dict_after_any_writes(initial, writes, probes):
    model = dict(initial)
    staged = Staged(initial)
    states = [(staged, dict(model))]
    for i, changes in enumerate(writes):
        # a small top now and then, so that merging it into the base is tried as well
        saved, staged_mod.TOP_MIN = staged_mod.TOP_MIN, (2 if i % 3 else staged_mod.TOP_MIN)
        try:
            staged = staged.with_changes(changes)
        finally:
            staged_mod.TOP_MIN = saved
        model.update(changes)
        states.append((staged, dict(model)))
    for state, seen in states:  # every earlier state still reads as it did
        _reads_as(state, seen, [*probes, *seen])


@given(WRITES)
def test_from_empty(writes):
    staged, model = EMPTY_STAGED, {}
    for changes in writes:
        staged = staged.with_changes(changes)
        model.update(changes)
    _reads_as(staged, model, list(model))
    assert len(EMPTY_STAGED) == 0 and list(EMPTY_STAGED) == []


def test_a_write_on_a_large_branch_does_not_copy_it():
    """300,000 staged keys: a write shares them (the base), copies only the small top; the top
    is merged into a new base once it outgrows twice the base's square root."""
    big = Staged({f"db/d/table/t/part/p={i:07d}": b"v" for i in range(300_000)})
    limit = max(staged_mod.TOP_MIN, 2 * 547)
    state, merged_at = big, None
    for i in range(limit + 1):
        before = state
        state = state.with_changes({f"db/d/table/u/part/p={i:07d}": b"w"})
        if state._base is not before._base:
            merged_at = i
            break
        assert len(state._top) == i + 1
    assert merged_at == limit  # the top's (limit + 1)th key merged it
    assert len(state) == 300_000 + limit + 1 and not state._top
    assert state.get("db/d/table/u/part/p=0000000") == b"w"
    assert big.get("db/d/table/u/part/p=0000000") is None and len(big) == 300_000
