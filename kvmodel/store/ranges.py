"""Committed snapshots: content-addressed sorted ranges and a range index (metarange).

After lakeFS Graveler. A commit's tree is a *metarange*: the ordered list of
``(first_key, last_key, range_id, count)`` of its *ranges*, each an immutable sorted run of
``(key, value)`` pairs stored once under ``sha256(bytes)``.

Range boundaries are content-defined: a range ends after a key whose hash has
``BOUNDARY_BITS`` low zero bits (once it holds ``MIN_ENTRIES``), or when it reaches
``MAX_ENTRIES`` / ``MAX_BYTES``. A cut depends only on the entries since the range's start, so

* the chunking of a key set is a function of its content alone (equal trees share range ids,
  whatever history built them), and
* applying a change re-chunks from the start of the range it falls in and stops as soon as a cut
  lands on an old boundary again: commit cost grows with the change, not with the store.

Diff compares range ids without decoding: a range id present in both trees covers the same key
interval with the same content on both sides, so only ranges unique to one side are read.

Byte formats (little endian, no pickle; ``u32`` lengths stored as columns so decoding is a few
C-level array operations plus slicing)::

    range      b"KVR1" u32:n  u32[n]:key_len  u32[n]:value_len  keys...  values...
    metarange  b"KVM1" u32:n  u32[n]:first_len  u32[n]:last_len  u32[n]:count
                       id[32 * n]  first_keys...  last_keys...
"""
from __future__ import annotations


import hashlib
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate

from kvmodel.errors import StoreCorrupt

MIN_ENTRIES = 32
BOUNDARY_BITS = 7  # a cut every ~128 keys past the minimum: ranges average ~160 entries
MAX_ENTRIES = 1024
MAX_BYTES = 512 * 1024
_BOUNDARY_MASK = (1 << BOUNDARY_BITS) - 1

_RANGE_MAGIC = b"KVR1"
_META_MAGIC = b"KVM1"
_U32 = "I" if array("I").itemsize == 4 else "L"
_SWAP = sys.byteorder != "little"
_COUNT = struct.Struct("<I")

Change = tuple[str, "bytes | None"]


class Range:
    """A decoded range: parallel sorted lists, ready for bisection."""

    __slots__ = ("keys", "values", "size")

    def __init__(self, keys: list[str], values: list[bytes], size: int):
        self.keys = keys
        self.values = values
        self.size = size  # encoded bytes, the cache's weight


def _u32_column(values: Sequence[int]) -> bytes:
    col = array(_U32, values)
    if _SWAP:
        col.byteswap()
    return col.tobytes()


def _read_u32_column(buf: bytes, offset: int, n: int) -> array:
    col = array(_U32)
    col.frombytes(buf[offset:offset + 4 * n])
    if _SWAP:
        col.byteswap()
    return col


def _slices(buf: bytes, offset: int, lengths: array) -> tuple[list[bytes], int]:
    ends = list(accumulate(lengths, initial=offset))
    return [buf[a:b] for a, b in zip(ends, ends[1:])], ends[-1]


def encode_range(keys: Sequence[bytes], values: Sequence[bytes]) -> bytes:
    """Serialise a sorted run of UTF-8 keys and values."""
    return b"".join((_RANGE_MAGIC, _COUNT.pack(len(keys)), _u32_column([len(k) for k in keys]),
                     _u32_column([len(v) for v in values]), *keys, *values))


def decode_range(buf: bytes) -> Range:
    if buf[:4] != _RANGE_MAGIC:
        raise StoreCorrupt("not a range: bad magic")
    (n,) = _COUNT.unpack_from(buf, 4)
    klens = _read_u32_column(buf, 8, n)
    vlens = _read_u32_column(buf, 8 + 4 * n, n)
    raw_keys, offset = _slices(buf, 8 + 8 * n, klens)
    values, offset = _slices(buf, offset, vlens)
    if offset != len(buf):
        raise StoreCorrupt("range length does not match its header")
    return Range([k.decode() for k in raw_keys], values, len(buf))


class Metarange:
    """The range index of one tree: parallel lists, bisected on ``lasts``."""

    __slots__ = ("firsts", "lasts", "ids", "counts", "_id", "_blob")

    def __init__(self, firsts=(), lasts=(), ids=(), counts=()):
        self.firsts: list[str] = list(firsts)
        self.lasts: list[str] = list(lasts)
        self.ids: list[bytes] = list(ids)
        self.counts: list[int] = list(counts)
        self._id: bytes | None = None
        self._blob: bytes | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def key_count(self) -> int:
        return sum(self.counts)

    def encode(self) -> bytes:
        if self._blob is None:
            firsts = [k.encode() for k in self.firsts]
            lasts = [k.encode() for k in self.lasts]
            self._blob = b"".join((
                _META_MAGIC, _COUNT.pack(len(self)), _u32_column([len(k) for k in firsts]),
                _u32_column([len(k) for k in lasts]), _u32_column(self.counts),
                *self.ids, *firsts, *lasts))
        return self._blob

    @property
    def id(self) -> bytes:
        if self._id is None:
            self._id = hashlib.sha256(self.encode()).digest()
        return self._id

    @classmethod
    def decode(cls, buf: bytes) -> Metarange:
        if buf[:4] != _META_MAGIC:
            raise StoreCorrupt("not a metarange: bad magic")
        (n,) = _COUNT.unpack_from(buf, 4)
        flens = _read_u32_column(buf, 8, n)
        llens = _read_u32_column(buf, 8 + 4 * n, n)
        counts = _read_u32_column(buf, 8 + 8 * n, n)
        offset = 8 + 12 * n
        ids = [buf[offset + 32 * i: offset + 32 * (i + 1)] for i in range(n)]
        firsts, offset = _slices(buf, offset + 32 * n, flens)
        lasts, offset = _slices(buf, offset, llens)
        if offset != len(buf):
            raise StoreCorrupt("metarange length does not match its header")
        mr = cls([k.decode() for k in firsts], [k.decode() for k in lasts], ids, counts)
        mr._blob = bytes(buf)
        return mr


EMPTY = Metarange()

LoadRange = Callable[[bytes], Range]


def _is_boundary(raw_key: bytes) -> bool:
    digest = hashlib.blake2b(raw_key, digest_size=8).digest()
    return not (int.from_bytes(digest, "little") & _BOUNDARY_MASK)


class TreeBuilder:
    """Builds a metarange from ranges reused as-is and entries fed in key order."""

    def __init__(self):
        self.out = Metarange()
        self.new_ranges: list[tuple[bytes, bytes, Range]] = []  # (id, blob, decoded)
        self._keys: list[str] = []
        self._raw: list[bytes] = []
        self._values: list[bytes] = []
        self._bytes = 0

    @property
    def pending(self) -> bool:
        """True while a range is open: the builder is not at a boundary."""
        return bool(self._keys)

    def reuse(self, mr: Metarange, i: int) -> None:
        out = self.out
        out.firsts.append(mr.firsts[i])
        out.lasts.append(mr.lasts[i])
        out.ids.append(mr.ids[i])
        out.counts.append(mr.counts[i])

    def add(self, key: str, value: bytes) -> None:
        raw = key.encode()
        self._keys.append(key)
        self._raw.append(raw)
        self._values.append(value)
        self._bytes += len(raw) + len(value) + 8
        n = len(self._keys)
        if (n >= MAX_ENTRIES or self._bytes >= MAX_BYTES
                or (n >= MIN_ENTRIES and _is_boundary(raw))):
            self.cut()

    def cut(self) -> None:
        if not self._keys:
            return
        blob = encode_range(self._raw, self._values)
        range_id = hashlib.sha256(blob).digest()
        self.new_ranges.append((range_id, blob, Range(self._keys, self._values, len(blob))))
        out = self.out
        out.firsts.append(self._keys[0])
        out.lasts.append(self._keys[-1])
        out.ids.append(range_id)
        out.counts.append(len(self._keys))
        self._keys, self._raw, self._values, self._bytes = [], [], [], 0

    def finish(self) -> Metarange:
        self.cut()
        return self.out


def _merge(rng: Range, changes: Sequence[Change]) -> Iterator[tuple[str, bytes]]:
    """A range's entries with sorted changes applied (None deletes)."""
    keys, values = rng.keys, rng.values
    i, n = 0, len(keys)
    for key, value in changes:
        j = bisect_left(keys, key, i)
        yield from zip(keys[i:j], values[i:j])
        i = j + 1 if j < n and keys[j] == key else j
        if value is not None:
            yield key, value
    yield from zip(keys[i:], values[i:])


def apply_changes(base: Metarange, changes: Sequence[Change], load: LoadRange) -> TreeBuilder:
    """Apply sorted, unique-keyed ``changes`` to ``base``; returns the finished builder, whose
    ``out`` is the new metarange and ``new_ranges`` the ranges it had to write.

    A change belongs to the first range whose last key is >= it (or the last range). Ranges
    without changes are reused untouched while the builder sits on a boundary; otherwise they are
    decoded and fed through, until a cut coincides with an old range end again.
    """
    builder = TreeBuilder()
    keys = [k for k, _ in changes]
    n, c = len(base), 0
    for i in range(n):
        hi = len(keys) if i == n - 1 else bisect_right(keys, base.lasts[i], c)
        if hi == c and not builder.pending:
            builder.reuse(base, i)
            continue
        for key, value in _merge(load(base.ids[i]), changes[c:hi]):
            builder.add(key, value)
        c = hi
    if n == 0:
        for key, value in changes:
            if value is not None:
                builder.add(key, value)
    builder.finish()
    return builder


def lookup(mr: Metarange, key: str, load: LoadRange) -> bytes | None:
    """Point lookup: bisect the index, then the one range that may hold ``key``."""
    i = bisect_left(mr.lasts, key)
    if i == len(mr.lasts) or key < mr.firsts[i]:
        return None
    rng = load(mr.ids[i])
    j = bisect_left(rng.keys, key)
    if j < len(rng.keys) and rng.keys[j] == key:
        return rng.values[j]
    return None


def iter_tree(mr: Metarange, start: str, end: str | None, load: LoadRange,
              ) -> Iterator[tuple[str, bytes]]:
    """Entries with ``start <= key < end``, ascending; seeking is a bisection of the index."""
    i = bisect_left(mr.lasts, start)
    n = len(mr.ids)
    while i < n:
        if end is not None and mr.firsts[i] >= end:
            return
        rng = load(mr.ids[i])
        lo = bisect_left(rng.keys, start) if rng.keys[0] < start else 0
        hi = len(rng.keys) if end is None or mr.lasts[i] < end else bisect_left(rng.keys, end)
        yield from zip(rng.keys[lo:hi], rng.values[lo:hi])
        i += 1


def _unique_entries(mr: Metarange, shared: set[bytes], start: str, end: str | None,
                    load: LoadRange) -> Iterator[tuple[str, bytes]]:
    i, n = bisect_left(mr.lasts, start), len(mr.ids)
    while i < n and (end is None or mr.firsts[i] < end):
        if mr.ids[i] not in shared:
            rng = load(mr.ids[i])
            lo = bisect_left(rng.keys, start)
            hi = len(rng.keys) if end is None else bisect_left(rng.keys, end)
            yield from zip(rng.keys[lo:hi], rng.values[lo:hi])
        i += 1


def diff_trees(left: Metarange, right: Metarange, start: str = "", end: str | None = None,
               load: LoadRange | None = None) -> Iterator[tuple[str, bytes | None, bytes | None]]:
    """``(key, left_value, right_value)`` for keys in ``[start, end)`` that differ, ascending.

    Ranges whose id appears in both trees are skipped without being read: keys outside shared
    ranges can only fall in ranges unique to one side.
    """
    if left.id == right.id:
        return
    shared = set(left.ids) & set(right.ids)
    lit = _unique_entries(left, shared, start, end, load)
    rit = _unique_entries(right, shared, start, end, load)
    lcur, rcur = next(lit, None), next(rit, None)
    while lcur is not None or rcur is not None:
        if rcur is None or (lcur is not None and lcur[0] < rcur[0]):
            yield lcur[0], lcur[1], None
            lcur = next(lit, None)
        elif lcur is None or rcur[0] < lcur[0]:
            yield rcur[0], None, rcur[1]
            rcur = next(rit, None)
        else:
            if lcur[1] != rcur[1]:
                yield lcur[0], lcur[1], rcur[1]
            lcur, rcur = next(lit, None), next(rit, None)
