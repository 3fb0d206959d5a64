"""Committed snapshots: content-addressed sorted ranges under a two-level index.

After lakeFS Graveler. A commit's tree is a *metarange*: a small root listing
``(first_key, last_key, node_id, key_count, range_count)`` of its *index nodes*; an index node
lists ``(first_key, last_key, range_id, count)`` of consecutive *ranges*; a range is an
immutable sorted run of ``(key, value)`` pairs. Ranges and index nodes are stored once under
``sha256(bytes)``; only the root is written per commit.

Both levels are cut by content, so the shape of a tree is a function of its key/values alone
(equal trees share range, node and root ids, whatever history built them):

* a range ends after a key whose hash falls under a threshold proportional to the entry's size
  (``weight / TARGET_BYTES``, entries weighing at least ``ENTRY_FLOOR`` bytes), once the range
  weighs ``MIN_BYTES``; or when it reaches ``MAX_ENTRIES`` / ``MAX_BYTES``. Ranges hold about
  ``MIN_BYTES + TARGET_BYTES`` (~24 KiB) of large entries, ~190 small ones;
* an index node ends after a range whose id has ``NODE_BOUNDARY_BITS`` low zero bits, once it
  lists ``NODE_MIN_ENTRIES`` ranges, or at ``NODE_MAX_ENTRIES`` (~190 ranges per node).

A cut depends only on the entries since the range's (node's) start, so applying a change
re-chunks from the start of the range it falls in, stops as soon as a cut lands on an old
boundary again, and rewrites only the index nodes listing changed ranges, plus the root: commit
cost grows with the change, not with the store.

Diff compares ids without decoding: a node (range) id present in both trees covers the same key
interval with the same content on both sides, so only nodes, then ranges, unique to one side are
read.

Byte formats (little endian, no pickle; ``u32`` lengths stored as columns so decoding is a few
C-level array operations plus slicing)::

    range      b"KVR1" u32:n  u32[n]:key_len  u32[n]:value_len  keys...  values...
    node       b"KVN1" u32:n  u32[n]:first_len  u32[n]:last_len  u32[n]:count
                       id[32 * n]  first_keys...  last_keys...
    root       b"KVT1" u32:n  u32[n]:first_len  u32[n]:last_len  u32[n]:key_count
                       u32[n]:range_count  id[32 * n]  first_keys...  last_keys...

Stores written before the two-level index hold flat metaranges (``b"KVM1"``, the node layout
listing every range of the tree): :meth:`Metarange.decode` still reads them, chunking the list
into index nodes in memory (``Metarange.inline``); a commit on top of one writes those nodes.
"""
from __future__ import annotations

import hashlib
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate

from kvmodel.store.errors import StoreCorrupt

# Ranges: byte-bounded, content-defined.
MIN_BYTES = 8 * 1024          # no hash cut before the range weighs this much
TARGET_BYTES = 16 * 1024      # past the minimum, a cut every ~TARGET_BYTES of entries
MAX_BYTES = 64 * 1024         # hard bound (a single larger entry makes a range of its own)
ENTRY_FLOOR = 128             # small entries weigh this much: ~190 of them per range
MAX_ENTRIES = 1024
# Index nodes: content-defined on the range ids.
NODE_MIN_ENTRIES = 64
NODE_BOUNDARY_BITS = 7        # a cut every ~128 ranges past the minimum
NODE_MAX_ENTRIES = 1024
NODE_BOUNDARY_MASK = (1 << NODE_BOUNDARY_BITS) - 1

_RANGE_MAGIC = b"KVR1"
_NODE_MAGIC = b"KVN1"
_ROOT_MAGIC = b"KVT1"
_LEGACY_MAGIC = b"KVM1"
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


def _encode_index(magic: bytes, firsts: Sequence[str], lasts: Sequence[str],
                  ids: Sequence[bytes], columns: Sequence[Sequence[int]]) -> bytes:
    raw_firsts = [k.encode() for k in firsts]
    raw_lasts = [k.encode() for k in lasts]
    return b"".join((magic, _COUNT.pack(len(ids)), _u32_column([len(k) for k in raw_firsts]),
                     _u32_column([len(k) for k in raw_lasts]),
                     *(_u32_column(c) for c in columns), *ids, *raw_firsts, *raw_lasts))


def _decode_index(buf: bytes, magic: bytes, ncols: int, what: str):
    if buf[:4] != magic:
        raise StoreCorrupt(f"not {what}: bad magic")
    (n,) = _COUNT.unpack_from(buf, 4)
    flens = _read_u32_column(buf, 8, n)
    llens = _read_u32_column(buf, 8 + 4 * n, n)
    columns = [list(_read_u32_column(buf, 8 + 4 * n * (2 + c), n)) for c in range(ncols)]
    offset = 8 + 4 * n * (2 + ncols)
    ids = [buf[offset + 32 * i: offset + 32 * (i + 1)] for i in range(n)]
    firsts, offset = _slices(buf, offset + 32 * n, flens)
    lasts, offset = _slices(buf, offset, llens)
    if offset != len(buf):
        raise StoreCorrupt(f"{what} length does not match its header")
    return [k.decode() for k in firsts], [k.decode() for k in lasts], ids, columns


class _ContentAddressed:
    """A node stored once by content: its id is the sha256 of its encoding."""

    __slots__ = ()

    def encode(self) -> bytes:
        raise NotImplementedError

    @property
    def id(self) -> bytes:
        if self._id is None:
            self._id = hashlib.sha256(self.encode()).digest()
        return self._id


class IndexNode(_ContentAddressed):
    """One index node: ``(first, last, range_id, count)`` of consecutive ranges, parallel
    lists bisected on ``lasts``. Immutable once built."""

    __slots__ = ("firsts", "lasts", "ids", "counts", "_id", "_blob", "_cuts")

    def __init__(self, firsts=(), lasts=(), ids=(), counts=()):
        self.firsts: list[str] = list(firsts)
        self.lasts: list[str] = list(lasts)
        self.ids: list[bytes] = list(ids)
        self.counts: list[int] = list(counts)
        self._id: bytes | None = None
        self._blob: bytes | None = None
        self._cuts: list[int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def cuts(self) -> list[int]:
        """Positions of the range ids that may end a node (computed once: nodes are
        immutable once built)."""
        if self._cuts is None:
            self._cuts = [j for j, rid in enumerate(self.ids) if _is_node_boundary(rid)]
        return self._cuts

    def encode(self) -> bytes:
        if self._blob is None:
            self._blob = _encode_index(_NODE_MAGIC, self.firsts, self.lasts, self.ids,
                                       [self.counts])
        return self._blob

    @classmethod
    def decode(cls, buf: bytes) -> IndexNode:
        firsts, lasts, ids, (counts,) = _decode_index(buf, _NODE_MAGIC, 1, "an index node")
        node = cls(firsts, lasts, ids, counts)
        node._blob = bytes(buf)
        return node


def encode_legacy(firsts: Sequence[str], lasts: Sequence[str], ids: Sequence[bytes],
                  counts: Sequence[int]) -> bytes:
    """The flat ``KVM1`` metarange of stores written before the two-level index (tests)."""
    return _encode_index(_LEGACY_MAGIC, firsts, lasts, ids, [counts])


class Metarange(_ContentAddressed):
    """A tree's root: ``(first, last, node_id, key_count, range_count)`` of its index nodes,
    parallel lists bisected on ``lasts``. ``len()`` is the number of ranges."""

    __slots__ = ("firsts", "lasts", "ids", "counts", "nranges", "inline", "_id", "_blob")

    def __init__(self, firsts=(), lasts=(), ids=(), counts=(), nranges=()):
        self.firsts: list[str] = list(firsts)
        self.lasts: list[str] = list(lasts)
        self.ids: list[bytes] = list(ids)
        self.counts: list[int] = list(counts)
        self.nranges: list[int] = list(nranges)
        self.inline: dict[bytes, IndexNode] = {}  # nodes not in the store (a legacy tree's)
        self._id: bytes | None = None
        self._blob: bytes | None = None

    def __len__(self) -> int:
        return sum(self.nranges)

    @property
    def key_count(self) -> int:
        return sum(self.counts)

    def encode(self) -> bytes:
        if self._blob is None:
            self._blob = _encode_index(_ROOT_MAGIC, self.firsts, self.lasts, self.ids,
                                       [self.counts, self.nranges])
        return self._blob

    @classmethod
    def decode(cls, buf: bytes) -> Metarange:
        """A root, or a legacy flat metarange chunked into (inline) index nodes; either way
        ``id`` is the sha256 of ``buf``, the id its commit recorded."""
        if buf[:4] == _LEGACY_MAGIC:
            firsts, lasts, ids, (counts,) = _decode_index(buf, _LEGACY_MAGIC, 1, "a metarange")
            builder = TreeBuilder()
            builder.add_ranges(IndexNode(firsts, lasts, ids, counts), 0, len(ids))
            mr = builder.finish()
            mr.inline = {node_id: node for node_id, _, node in builder.new_nodes}
            mr._id = hashlib.sha256(buf).digest()
            return mr
        firsts, lasts, ids, (counts, nranges) = _decode_index(buf, _ROOT_MAGIC, 2, "a metarange")
        mr = cls(firsts, lasts, ids, counts, nranges)
        mr._blob = bytes(buf)
        return mr


EMPTY = Metarange()

LoadRange = Callable[[bytes], Range]
LoadNode = Callable[[bytes], IndexNode]


class Source:
    """Where a tree's ranges and index nodes are read from (by id)."""

    __slots__ = ("range", "node")

    def __init__(self, load_range: LoadRange, load_node: LoadNode):
        self.range = load_range
        self.node = load_node


class MemorySource(Source):
    """Ranges and nodes in dicts (tests, tools): ``keep`` stores what a builder wrote."""

    def __init__(self):
        self.ranges: dict[bytes, Range] = {}
        self.nodes: dict[bytes, IndexNode] = {}
        super().__init__(self.ranges.__getitem__, self.nodes.__getitem__)

    def keep(self, builder: TreeBuilder) -> TreeBuilder:
        for range_id, _, decoded in builder.new_ranges:
            self.ranges[range_id] = decoded
        for node_id, _, node in builder.new_nodes:
            self.nodes[node_id] = node
        return builder


def _node(mr: Metarange, i: int, load: Source) -> IndexNode:
    node_id = mr.ids[i]
    if mr.inline:
        node = mr.inline.get(node_id)
        if node is not None:
            return node
    return load.node(node_id)


def _is_boundary(raw_key: bytes, weight: int) -> bool:
    """True with probability ``weight / TARGET_BYTES``, as a function of the key."""
    digest = hashlib.blake2b(raw_key, digest_size=8).digest()
    return int.from_bytes(digest, "little") * TARGET_BYTES < weight << 64


def _is_node_boundary(range_id: bytes) -> bool:
    return not (int.from_bytes(range_id[:4], "little") & NODE_BOUNDARY_MASK)


class TreeBuilder:
    """Builds a tree from nodes and ranges reused as-is and entries fed in key order."""

    def __init__(self):
        self.out = Metarange()
        self.new_ranges: list[tuple[bytes, bytes, Range]] = []  # (id, blob, decoded)
        self.new_nodes: list[tuple[bytes, bytes, IndexNode]] = []  # (id, blob, node)
        self._node = IndexNode()
        self._keys: list[str] = []
        self._raw: list[bytes] = []
        self._values: list[bytes] = []
        self._bytes = 0
        self._weight = 0

    @property
    def pending(self) -> bool:
        """True while a range is open: the builder is not at a range boundary."""
        return bool(self._keys)

    @property
    def node_pending(self) -> bool:
        """True while an index node is open: the builder is not at a node boundary."""
        return bool(self._node.ids)

    def reuse_node(self, mr: Metarange, i: int) -> None:
        """Append node ``i`` of ``mr`` whole (only at a node boundary)."""
        out = self.out
        node_id = mr.ids[i]
        out.firsts.append(mr.firsts[i])
        out.lasts.append(mr.lasts[i])
        out.ids.append(node_id)
        out.counts.append(mr.counts[i])
        out.nranges.append(mr.nranges[i])
        if mr.inline and node_id in mr.inline:  # a legacy tree's node: not stored yet
            node = mr.inline[node_id]
            self.new_nodes.append((node_id, node.encode(), node))

    def add_range(self, first: str, last: str, range_id: bytes, count: int) -> None:
        """Append a range entry to the open index node (only at a range boundary)."""
        node = self._node
        node.firsts.append(first)
        node.lasts.append(last)
        node.ids.append(range_id)
        node.counts.append(count)
        n = len(node.ids)
        if n >= NODE_MAX_ENTRIES or (n >= NODE_MIN_ENTRIES and _is_node_boundary(range_id)):
            self.cut_node()

    def add_ranges(self, src: IndexNode, a: int, b: int) -> None:
        """``add_range`` of entries ``a:b`` of ``src``, by slices: same cuts, found by
        bisecting ``src``'s boundary positions instead of testing every entry."""
        cuts = src.cuts()
        while a < b:
            node = self._node
            n = len(node.ids)
            # entry k lands at count n + k - a + 1: it may cut from NODE_MIN, must at NODE_MAX
            i = bisect_left(cuts, a + max(0, NODE_MIN_ENTRIES - 1 - n))
            k = min(cuts[i] if i < len(cuts) else b, a + NODE_MAX_ENTRIES - 1 - n)
            stop = min(k + 1, b)
            node.firsts.extend(src.firsts[a:stop])
            node.lasts.extend(src.lasts[a:stop])
            node.ids.extend(src.ids[a:stop])
            node.counts.extend(src.counts[a:stop])
            if k < b:
                self.cut_node()
            a = stop

    def add(self, key: str, value: bytes) -> None:
        raw = key.encode()
        self._keys.append(key)
        self._raw.append(raw)
        self._values.append(value)
        size = len(raw) + len(value) + 8
        self._bytes += size
        weight = size if size > ENTRY_FLOOR else ENTRY_FLOOR
        self._weight += weight
        if (len(self._keys) >= MAX_ENTRIES or self._bytes >= MAX_BYTES
                or (self._weight >= MIN_BYTES and _is_boundary(raw, weight))):
            self.cut()

    def cut(self) -> None:
        if not self._keys:
            return
        blob = encode_range(self._raw, self._values)
        range_id = hashlib.sha256(blob).digest()
        self.new_ranges.append((range_id, blob, Range(self._keys, self._values, len(blob))))
        keys = self._keys
        self._keys, self._raw, self._values, self._bytes, self._weight = [], [], [], 0, 0
        self.add_range(keys[0], keys[-1], range_id, len(keys))

    def cut_node(self) -> None:
        node = self._node
        if not node.ids:
            return
        self.new_nodes.append((node.id, node.encode(), node))
        out = self.out
        out.firsts.append(node.firsts[0])
        out.lasts.append(node.lasts[-1])
        out.ids.append(node.id)
        out.counts.append(sum(node.counts))
        out.nranges.append(len(node.ids))
        self._node = IndexNode()

    def finish(self) -> Metarange:
        self.cut()
        self.cut_node()
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


def apply_changes(base: Metarange, changes: Sequence[Change], load: Source) -> TreeBuilder:
    """Apply sorted, unique-keyed ``changes`` to ``base``; returns the finished builder, whose
    ``out`` is the new root and ``new_ranges``/``new_nodes`` what it had to write.

    A change belongs to the first node (range) whose last key is >= it, or the last one.
    Nodes without changes are reused untouched (not even loaded) while the builder sits on a
    node boundary; ranges without changes are reused while it sits on a range boundary;
    otherwise ranges are decoded and fed through, until a cut coincides with an old range end,
    then node end, again.
    """
    builder = TreeBuilder()
    keys = [k for k, _ in changes]
    n, c = len(base.ids), 0
    for i in range(n):
        hi = len(keys) if i == n - 1 else bisect_right(keys, base.lasts[i], c)
        if hi == c and not builder.pending and not builder.node_pending:
            builder.reuse_node(base, i)
            continue
        node = _node(base, i, load)
        m, j = len(node.ids), 0
        while j < m:
            if not builder.pending:  # reuse the ranges up to the next one with a change
                nxt = m if c == hi else min(bisect_left(node.lasts, keys[c], j), m - 1)
                builder.add_ranges(node, j, nxt)
                j = nxt
                if j == m:
                    break
            hj = hi if j == m - 1 else bisect_right(keys, node.lasts[j], c, hi)
            for key, value in _merge(load.range(node.ids[j]), changes[c:hj]):
                builder.add(key, value)
            c = hj
            j += 1
    if n == 0:
        for key, value in changes:
            if value is not None:
                builder.add(key, value)
    builder.finish()
    return builder


def lookup(mr: Metarange, key: str, load: Source) -> bytes | None:
    """Point lookup: bisect the root, then the one index node and range that may hold it."""
    i = bisect_left(mr.lasts, key)
    if i == len(mr.lasts) or key < mr.firsts[i]:
        return None
    node = _node(mr, i, load)
    j = bisect_left(node.lasts, key)
    if j == len(node.lasts) or key < node.firsts[j]:
        return None
    rng = load.range(node.ids[j])
    k = bisect_left(rng.keys, key)
    if k < len(rng.keys) and rng.keys[k] == key:
        return rng.values[k]
    return None


def iter_tree(mr: Metarange, start: str, end: str | None, load: Source,
              ) -> Iterator[tuple[str, bytes]]:
    """Entries with ``start <= key < end``, ascending; seeking bisects the root and a node."""
    i, n = bisect_left(mr.lasts, start), len(mr.ids)
    while i < n:
        if end is not None and mr.firsts[i] >= end:
            return
        node = _node(mr, i, load)
        for j in range(bisect_left(node.lasts, start), len(node.ids)):
            if end is not None and node.firsts[j] >= end:
                return
            rng = load.range(node.ids[j])
            lo = bisect_left(rng.keys, start) if rng.keys[0] < start else 0
            hi = (len(rng.keys) if end is None or node.lasts[j] < end
                  else bisect_left(rng.keys, end))
            yield from zip(rng.keys[lo:hi], rng.values[lo:hi])
        i += 1


def _window(index: Metarange | IndexNode, start: str, end: str | None) -> tuple[int, int]:
    """The entries of ``index`` that may hold keys in ``[start, end)``."""
    lo = bisect_left(index.lasts, start)
    hi = len(index.ids) if end is None else bisect_left(index.firsts, end, lo)
    return lo, hi


def _unshared_ranges(mr: Metarange, shared: set[bytes], start: str, end: str | None,
                     load: Source) -> list[bytes]:
    """Ids of the ranges in ``[start, end)`` under the nodes of ``mr`` not in ``shared``."""
    out: list[bytes] = []
    lo, hi = _window(mr, start, end)
    for i in range(lo, hi):
        if mr.ids[i] not in shared:
            node = _node(mr, i, load)
            a, b = _window(node, start, end)
            out.extend(node.ids[a:b])
    return out


def _entries(range_ids: list[bytes], start: str, end: str | None,
             load: Source) -> Iterator[tuple[str, bytes]]:
    for range_id in range_ids:
        rng = load.range(range_id)
        lo = bisect_left(rng.keys, start)
        hi = len(rng.keys) if end is None else bisect_left(rng.keys, end)
        yield from zip(rng.keys[lo:hi], rng.values[lo:hi])


def diff_trees(left: Metarange, right: Metarange, start: str = "", end: str | None = None,
               load: Source | None = None) -> Iterator[tuple[str, bytes | None, bytes | None]]:
    """``(key, left_value, right_value)`` for keys in ``[start, end)`` that differ, ascending.

    Index nodes whose id appears in both roots are skipped without being read, then ranges
    whose id appears under both sides' remaining nodes: keys outside shared nodes and ranges
    can only fall in ranges unique to one side. The work follows the change.
    """
    if left.id == right.id:
        return
    llo, lhi = _window(left, start, end)
    rlo, rhi = _window(right, start, end)
    shared_nodes = set(left.ids[llo:lhi]).intersection(right.ids[rlo:rhi])
    lids = _unshared_ranges(left, shared_nodes, start, end, load)
    rids = _unshared_ranges(right, shared_nodes, start, end, load)
    shared = set(lids).intersection(rids)
    lit = _entries([r for r in lids if r not in shared], start, end, load)
    rit = _entries([r for r in rids if r not in shared], start, end, load)
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
