"""Apache DataSketches theta sketches of Iceberg column values, as Iceberg's Puffin NDV blobs
(``apache-datasketches-theta-v1``) hold them, vectorized.

Iceberg's spec: a compact theta sketch of the Alpha family with the default seed (9001) and
nominal entries (4096), fed every value in Iceberg's single-value binary form (ints and dates
as 4 little-endian bytes, longs, times and timestamps as 8, floats and doubles by their IEEE
bits, booleans as one byte, strings as UTF-8, decimals as ``BigInteger.toByteArray()`` of the
unscaled value, UUIDs, fixed and binary as their bytes). A value's hash is the first half of
its 128-bit MurmurHash3 (x64) shifted right by one, as the library hashes; empty strings and
binaries are skipped, as the library skips them.

The sketch is built here, not by the ``datasketches`` package: its Python binding hashes only
ints (as 8 bytes), doubles and strings, so Iceberg's 4-byte ints, dates, floats, booleans,
decimals and binaries cannot be fed to it. A sketch of the distinct hashes keeps the 4096
smallest below theta (the 4097th, when there are more): what a library sketch holds once
trimmed to its nominal size, and what any theta reader (Trino, Spark's Iceberg, the library
itself) reads, estimates and unions. Tests check it byte for byte against the library where
both hash alike.
"""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

from stats.sketch import _java_bytes, _lanes, _np_rotl, _u64, byte_groups

SEED = 9001
NOMINAL = 4096  # 2**12, the library's default nominal entries
MAX_THETA = (1 << 63) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F
_BUDGET = 1 << 22  # bytes of one matrix hashed at once


def _fmix(k: np.ndarray) -> np.ndarray:
    k = k ^ (k >> np.uint64(33))
    k = k * _u64(0xFF51AFD7ED558CCD)
    k = k ^ (k >> np.uint64(33))
    k = k * _u64(0xC4CEB9FE1A85EC53)
    return k ^ (k >> np.uint64(33))


def murmur3_h1(matrix: np.ndarray, seed: int = SEED) -> np.ndarray:
    """The first 64 bits of MurmurHash3_x64_128 of each row of an (n, length) uint8 matrix."""
    n, length = matrix.shape
    h1 = np.full(n, _u64(seed))
    h2 = np.full(n, _u64(seed))
    c1, c2 = _u64(_C1), _u64(_C2)
    with np.errstate(over="ignore"):
        blocks = length // 16
        for b in range(blocks):
            k1 = _lanes(matrix, 16 * b, 8)
            k2 = _lanes(matrix, 16 * b + 8, 8)
            h1 = h1 ^ (_np_rotl(k1 * c1, 31) * c2)
            h1 = (_np_rotl(h1, 27) + h2) * _u64(5) + _u64(0x52DCE729)
            h2 = h2 ^ (_np_rotl(k2 * c2, 33) * c1)
            h2 = (_np_rotl(h2, 31) + h1) * _u64(5) + _u64(0x38495AB5)
        tail = length - 16 * blocks
        if tail:
            k1 = np.zeros(n, np.uint64)
            k2 = np.zeros(n, np.uint64)
            for i in range(tail):
                byte = matrix[:, 16 * blocks + i].astype(np.uint64)
                if i < 8:
                    k1 = k1 | (byte << np.uint64(8 * i))
                else:
                    k2 = k2 | (byte << np.uint64(8 * (i - 8)))
            if tail > 8:
                h2 = h2 ^ (_np_rotl(k2 * c2, 33) * c1)
            h1 = h1 ^ (_np_rotl(k1 * c1, 31) * c2)
        h1 = h1 ^ _u64(length)
        h2 = h2 ^ _u64(length)
        h1 = h1 + h2
        h2 = h2 + h1
        h1 = _fmix(h1)
        h2 = _fmix(h2)
        return h1 + h2


def seed_hash(seed: int = SEED) -> int:
    """The 16 bits a serialized sketch carries to name its seed."""
    matrix = np.frombuffer(struct.pack("<q", seed), np.uint8).reshape(1, 8)
    return int(murmur3_h1(matrix, 0)[0]) & 0xFFFF


def _fixed(values: np.ndarray, dtype) -> np.ndarray:
    v = np.ascontiguousarray(values.astype(dtype, copy=False))
    return v.view(np.uint8).reshape(len(v), np.dtype(dtype).itemsize)


def value_matrices(arr):
    """The non-null values of an Arrow array in Iceberg's single-value form: (n, width) uint8
    matrices, one per byte length. Nested types give nothing (Iceberg keeps no NDV of them)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    arr = arr.drop_null()
    t = arr.type
    if len(arr) == 0:
        return
    if pa.types.is_boolean(t):
        yield _fixed(np.asarray(arr.to_numpy(zero_copy_only=False)), np.uint8)
    elif pa.types.is_integer(t) and t.bit_width <= 32 or pa.types.is_date32(t):
        yield _fixed(arr.cast(pa.int32()).to_numpy(), np.int32)
    elif pa.types.is_integer(t) or pa.types.is_time(t) or pa.types.is_timestamp(t):
        if pa.types.is_time(t):
            arr = arr.cast(pa.time64("us"))
        elif pa.types.is_timestamp(t) and t.unit != "us":
            arr = arr.cast(pa.timestamp("us", t.tz))
        yield _fixed(arr.cast(pa.int64()).to_numpy(), np.int64)
    elif pa.types.is_float32(t):
        yield _fixed(arr.to_numpy(), np.float32)
    elif pa.types.is_floating(t):
        yield _fixed(arr.cast(pa.float64()).to_numpy(), np.float64)
    elif pa.types.is_decimal(t):
        raw = [_java_bytes(int(v.scaleb(t.scale))) for v in arr.to_pylist()]
        yield from _variable(pa.array(raw, pa.binary()))
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or \
            pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        yield from _variable(arr)
    elif isinstance(t, pa.ExtensionType) and pa.types.is_fixed_size_binary(t.storage_type):
        yield from _variable(arr.storage)  # pyarrow's uuid


def _variable(arr):
    for _, matrix in byte_groups(arr, _BUDGET):
        if matrix.shape[1]:  # an empty value is not fed to a sketch
            yield matrix


def theta_hashes(arr) -> np.ndarray:
    """The sorted distinct sketch hashes (63 bits) of an Arrow array's values."""
    parts = [murmur3_h1(m) >> np.uint64(1) for m in value_matrices(arr)]
    if not parts:
        return np.zeros(0, np.uint64)
    return np.unique(np.concatenate(parts))


class ThetaSketch:
    """The distinct hashes of a column, fed in pieces (a partition at a time); kept trimmed to
    the nominal entries below theta."""

    def __init__(self, nominal: int = NOMINAL):
        self.nominal = nominal
        self.theta = MAX_THETA
        self.hashes = np.zeros(0, np.uint64)

    def update(self, arr) -> None:
        new = theta_hashes(arr)
        if self.theta < MAX_THETA:
            new = new[new < np.uint64(self.theta)]
        merged = np.union1d(self.hashes, new)
        if merged.size > self.nominal:
            self.theta = int(merged[self.nominal])
            merged = merged[:self.nominal]
        self.hashes = merged

    def estimate(self) -> float:
        if self.theta == MAX_THETA:
            return float(self.hashes.size)
        return self.hashes.size / (self.theta / MAX_THETA)

    def serialize(self) -> bytes:
        """The ordered compact sketch (serial version 3), as the library writes it."""
        entries = self.hashes
        estimating = self.theta < MAX_THETA
        empty = entries.size == 0 and not estimating
        longs = 3 if estimating else (1 if empty or entries.size == 1 else 2)
        flags = (1 << 1) | (1 << 3) | (1 << 4) | ((1 << 2) if empty else 0)
        head = struct.pack("<BBBHBH", longs, 3, 3, 0, flags, seed_hash())
        if longs > 1:
            head += struct.pack("<II", entries.size, 0)
        if estimating:
            head += struct.pack("<Q", self.theta)
        return head + entries.astype("<u8").tobytes()


__all__ = ["SEED", "NOMINAL", "ThetaSketch", "murmur3_h1", "seed_hash", "theta_hashes",
           "value_matrices"]
