"""Spark's ``xxhash64`` (seed 42) and the HyperLogLog sketches built on it, vectorized.

A statistics set's ``sketches.parquet`` holds, per column, 2**HLL_PRECISION one-byte registers
over Spark's ``xxhash64`` of each value (:mod:`stats.layout`), so sets computed anywhere (the
Spark job, the Arrow tasks, the pyiceberg/deltalake path) merge into one table-level sketch.
Everything here hashes exactly as Spark's ``XxHash64`` expression does: ints, dates and
booleans by ``hashInt``, bigints and timestamps (microseconds) by ``hashLong``, floats and
doubles by their bits (``-0.0`` as ``0.0``, every NaN as Java's canonical NaN), decimals of at
most 18 digits by their unscaled long and wider ones by the bytes of
``BigInteger.toByteArray()``, strings by their UTF-8 bytes and binaries by their bytes
(``hashUnsafeBytes``: plain XXH64). The byte hash runs over whole arrays at once: the values
are grouped by length, and every value of one length takes the same path through XXH64.
"""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from stats import layout

_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5
_M64 = (1 << 64) - 1
SEED = 42
_CHUNK = 1 << 20  # values hashed per step: numpy's temporaries stay in the cache


# --- one value at a time (the reference the vectorized code is tested against) ------------------
def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def _avalanche(h: int) -> int:
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    return h ^ (h >> 32)


def xxhash64_bytes(data: bytes, seed: int = SEED) -> int:
    """XXH64 of ``data`` (Spark's ``hashUnsafeBytes``: strings as UTF-8), unsigned."""
    n, i, seed = len(data), 0, seed & _M64
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed, (seed - _P1) & _M64]
        while i <= n - 32:
            for j in range(4):
                v[j] = _round(v[j], int.from_bytes(data[i + 8 * j:i + 8 * j + 8], "little"))
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for lane in v:
            h = ((h ^ _round(0, lane)) * _P1 + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h ^= _round(0, int.from_bytes(data[i:i + 8], "little"))
        h = (_rotl(h, 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * _P1) & _M64
        h = (_rotl(h, 23) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        i += 1
    return _avalanche(h)


# --- vectorized ------------------------------------------------------------------------------------
def _u64(x) -> np.uint64:
    return np.uint64(x & _M64)


def _np_rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _np_avalanche(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h = h * _u64(_P2)
    h = h ^ (h >> np.uint64(29))
    h = h * _u64(_P3)
    return h ^ (h >> np.uint64(32))


def _np_round(acc, lane: np.ndarray) -> np.ndarray:
    return _np_rotl(acc + lane * _u64(_P2), 31) * _u64(_P1)


def _chunked(fn, values: np.ndarray) -> np.ndarray:
    if values.size <= _CHUNK:
        return fn(values)
    out = np.empty(values.size, dtype=np.uint64)
    for start in range(0, values.size, _CHUNK):
        out[start:start + _CHUNK] = fn(values[start:start + _CHUNK])
    return out


def xxhash64_long(values: np.ndarray, seed: int = SEED) -> np.ndarray:
    """Spark's ``XXH64.hashLong`` of each 64-bit value (uint64 results)."""
    def run(v):
        with np.errstate(over="ignore"):
            h = _u64(seed + _P5 + 8) ^ _np_round(np.uint64(0), v)
            return _np_avalanche(_np_rotl(h, 27) * _u64(_P1) + _u64(_P4))
    return _chunked(run, np.ascontiguousarray(np.asarray(values).astype(np.int64, copy=False))
                    .view(np.uint64))


def xxhash64_int(values: np.ndarray, seed=SEED) -> np.ndarray:
    """Spark's ``XXH64.hashInt`` of each 32-bit value (uint64 results). ``seed``: one seed, or
    one per value (Spark hashes a row's fields in a chain)."""
    def run(v, s):
        with np.errstate(over="ignore"):
            h = (s + _u64(_P5 + 4)) ^ (v * _u64(_P1))
            return _np_avalanche(_np_rotl(h, 23) * _u64(_P2) + _u64(_P3))
    v = np.asarray(values).astype(np.int64).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    if np.ndim(seed):
        return run(v, np.asarray(seed, dtype=np.uint64))
    return _chunked(lambda part: run(part, _u64(seed)), v)


def xxhash64_binary(arr, seed: int = SEED) -> np.ndarray:
    """XXH64 of every value of a string or binary array (no nulls), as Spark's
    ``hashUnsafeBytes`` gives it. Values are grouped by byte length; each group is a matrix
    of bytes hashed column block by column block."""
    out = np.empty(len(arr), dtype=np.uint64)
    for rows, matrix in byte_groups(arr, _CHUNK):
        out[rows] = _hash_matrix(matrix, seed) if matrix.shape[1] else xxhash64_bytes(b"", seed)
    return out


def byte_groups(arr, budget: int = _CHUNK):
    """The values of a string or binary array (no nulls) as (row indices, an (n, length)
    uint8 matrix of their bytes), one group per byte length and at most about ``budget``
    bytes a matrix: what the vectorized hashes run over."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n == 0:
        return
    if pa.types.is_fixed_size_binary(arr.type):
        width = arr.type.byte_width
        data = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
        matrix = data[arr.offset * width:(arr.offset + n) * width].reshape(n, width)
        yield np.arange(n), matrix
        return
    if pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type):
        offsets_type = np.int64
    else:
        offsets_type = np.int32
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=offsets_type)[arr.offset:arr.offset + n + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else \
        np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    order = np.argsort(lengths, kind="stable")
    sorted_lengths = lengths[order]
    bounds = np.flatnonzero(np.diff(sorted_lengths)) + 1
    for group in np.split(order, bounds):
        length = int(lengths[group[0]])
        if length == 0:
            yield group, np.zeros((group.size, 0), np.uint8)
            continue
        step = max(1, budget // max(length, 8))
        for start in range(0, group.size, step):
            rows = group[start:start + step]
            yield rows, data[offsets[rows][:, None] + np.arange(length)]


def _lanes(matrix: np.ndarray, start: int, width: int) -> np.ndarray:
    """Little-endian integers of ``width`` bytes at byte ``start`` of every row."""
    block = np.ascontiguousarray(matrix[:, start:start + width])
    return block.view({8: np.uint64, 4: np.uint32}[width]).reshape(-1).astype(np.uint64)


def _hash_matrix(matrix: np.ndarray, seed: int) -> np.ndarray:
    """XXH64 of each row of an (n, length) byte matrix."""
    n, length = matrix.shape
    i = 0
    with np.errstate(over="ignore"):
        if length >= 32:
            v = [np.full(n, _u64(seed + _P1 + _P2)), np.full(n, _u64(seed + _P2)),
                 np.full(n, _u64(seed)), np.full(n, _u64(seed - _P1))]
            while i <= length - 32:
                for j in range(4):
                    v[j] = _np_round(v[j], _lanes(matrix, i + 8 * j, 8))
                i += 32
            h = _np_rotl(v[0], 1) + _np_rotl(v[1], 7) + _np_rotl(v[2], 12) + _np_rotl(v[3], 18)
            for lane in v:
                h = (h ^ _np_round(np.uint64(0), lane)) * _u64(_P1) + _u64(_P4)
        else:
            h = np.full(n, _u64(seed + _P5))
        h = h + np.uint64(length)
        while i + 8 <= length:
            h = h ^ _np_round(np.uint64(0), _lanes(matrix, i, 8))
            h = _np_rotl(h, 27) * _u64(_P1) + _u64(_P4)
            i += 8
        if i + 4 <= length:
            h = h ^ (_lanes(matrix, i, 4) * _u64(_P1))
            h = _np_rotl(h, 23) * _u64(_P2) + _u64(_P3)
            i += 4
        while i < length:
            h = h ^ (matrix[:, i].astype(np.uint64) * _u64(_P5))
            h = _np_rotl(h, 11) * _u64(_P1)
            i += 1
        return _np_avalanche(h)


def _java_bytes(unscaled: int) -> bytes:
    """``BigInteger.toByteArray()``: the shortest two's complement, big-endian."""
    magnitude = ~unscaled if unscaled < 0 else unscaled
    return unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)


def decimal_unscaled(arr) -> np.ndarray:
    """The unscaled values of a decimal128 array of at most 18 digits (no nulls), as int64."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64)
    return words[2 * arr.offset:2 * (arr.offset + len(arr))][0::2].copy()


def canonical_doubles(values: np.ndarray) -> np.ndarray:
    """Doubles as Spark hashes and compares them: ``-0.0`` as ``0.0``, one NaN."""
    f = np.asarray(values, dtype=np.float64) + 0.0
    nan = np.isnan(f)
    if nan.any():
        f = np.where(nan, np.float64("nan"), f)
    return f


def spark_xxhash64(values, hive_type: str, seed: int = SEED) -> np.ndarray:
    """What Spark's ``xxhash64(col)`` gives for the non-null ``values`` of a column of
    ``hive_type`` (as uint64)."""
    base = layout.base_type(hive_type)
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    arr = arr.drop_null()
    if base in ("tinyint", "smallint", "int", "date", "boolean"):
        if pa.types.is_date(arr.type):
            arr = arr.cast(pa.date32()).cast(pa.int32())
        elif pa.types.is_boolean(arr.type):
            arr = arr.cast(pa.int8())
        return xxhash64_int(np.asarray(arr), seed)
    if base in ("bigint", "timestamp"):
        if pa.types.is_timestamp(arr.type):
            arr = arr.cast(pa.timestamp("us", tz=arr.type.tz)).cast(pa.int64())
        return xxhash64_long(np.asarray(arr), seed)
    if base == "float":
        f = np.asarray(arr, dtype=np.float32) + np.float32(0.0)
        bits = np.where(np.isnan(f), np.int32(0x7FC00000), f.view(np.int32))
        return xxhash64_int(bits, seed)
    if base == "double":
        return xxhash64_long(canonical_doubles(np.asarray(arr, dtype=np.float64))
                             .view(np.int64), seed)
    if base == "decimal" and pa.types.is_decimal(arr.type):
        if arr.type.precision <= 18:
            return xxhash64_long(decimal_unscaled(arr), seed)
        scale = arr.type.scale
        return np.array([xxhash64_bytes(_java_bytes(int(d.scaleb(scale))), seed)
                         for d in arr.to_pylist()], dtype=np.uint64)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) or \
            pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        return xxhash64_binary(arr, seed)
    return xxhash64_binary(pa.array([str(v) for v in arr.to_pylist()], pa.string()), seed)


# --- HyperLogLog -----------------------------------------------------------------------------------
def hll_registers(hashes: np.ndarray, precision: int = layout.HLL_PRECISION) -> np.ndarray:
    """A sketch per :mod:`stats.layout`: register = top ``precision`` bits of the hash,
    rank = leading zeros of the remaining bits + 1 (at most 64 - precision + 1)."""
    h = np.asarray(hashes, dtype=np.uint64)
    size = 1 << precision
    if h.size == 0:
        return np.zeros(size, dtype=np.uint8)
    seen = np.zeros(size * 64, dtype=bool)
    for start in range(0, h.size, _CHUNK):
        part = h[start:start + _CHUNK]
        idx = (part >> np.uint64(64 - precision)).astype(np.int64)
        w = part << np.uint64(precision)  # the remaining 64 - precision bits, at the top
        high = (w >> np.uint64(32)).astype(np.uint32)
        low = (w & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        # bit lengths from float exponents (exact for 32-bit integers)
        high_len = np.frexp(high.astype(np.float64))[1]
        low_len = np.frexp(low.astype(np.float64))[1]
        zeros = np.where(high != 0, 32 - high_len, 64 - low_len)
        rank = np.minimum(zeros, 64 - precision) + 1
        seen[idx * 64 + rank] = True
    ranks = seen.reshape(size, 64)
    # the highest rank seen per register (0 where none)
    top = 63 - np.argmax(ranks[:, ::-1], axis=1)
    return np.where(ranks.any(axis=1), top, 0).astype(np.uint8)


def hll_merge(*sketches) -> np.ndarray:
    """Register-wise maximum of sketches (bytes or uint8 arrays of one size)."""
    arrays = [np.frombuffer(s, dtype=np.uint8) if isinstance(s, (bytes, bytearray, memoryview))
              else np.asarray(s, dtype=np.uint8) for s in sketches]
    if not arrays:
        return np.zeros(1 << layout.HLL_PRECISION, dtype=np.uint8)
    if len({a.size for a in arrays}) != 1:
        raise ValueError("HyperLogLog sketches of different precisions cannot be merged")
    return np.maximum.reduce(arrays) if len(arrays) > 1 else arrays[0].copy()


def hll_estimate(registers) -> int:
    """The HyperLogLog estimate (Flajolet et al.) with its standard corrections: linear
    counting while the raw estimate is at most 2.5 m and some register is still zero; the
    large-range correction for a 64-bit hash (``-2^64 ln(1 - E / 2^64)`` above 2^64 / 30)."""
    regs = (np.frombuffer(registers, dtype=np.uint8)
            if isinstance(registers, (bytes, bytearray, memoryview))
            else np.asarray(registers, dtype=np.uint8))
    m = regs.size
    if m < 16 or m & (m - 1):
        raise ValueError(f"a HyperLogLog has a power of two (>= 16) registers, not {m}")
    alpha = {16: 0.673, 32: 0.697, 64: 0.709}.get(m, 0.7213 / (1 + 1.079 / m))
    estimate = alpha * m * m / float(np.sum(np.ldexp(1.0, -regs.astype(np.int64))))
    if estimate <= 2.5 * m:
        zeros = int(np.count_nonzero(regs == 0))
        if zeros:
            estimate = m * math.log(m / zeros)
    elif estimate > 2.0 ** 64 / 30:
        estimate = -(2.0 ** 64) * math.log1p(-estimate / 2.0 ** 64)
    return int(round(estimate))
