"""stats/theta.py: theta sketches of Iceberg values, checked against the DataSketches library
(byte for byte where the library hashes as Iceberg does: longs and strings) and against
Iceberg's single-value forms of the other types."""
from __future__ import annotations

import datetime
import decimal
import random
import struct

import numpy as np
import pyarrow as pa
import pytest

from stats import theta

datasketches = pytest.importorskip("datasketches")


def library(values):
    sketch = datasketches.update_theta_sketch()
    for v in values:
        sketch.update(v)
    return sketch


@pytest.mark.parametrize("values", [[], [5], [1, 2, 3], list(range(-50, 3000)),
                                    [random.Random(1).getrandbits(62) for _ in range(3)]])
def test_longs_serialize_as_the_library_does(values):
    ours = theta.ThetaSketch()
    ours.update(pa.array(values, pa.int64()))
    assert ours.serialize() == library(values).compact().serialize()
    assert ours.estimate() == len(set(values))


@pytest.mark.parametrize("values", [["a", "bb", "héllo" * 7, "x" * 40, "y" * 16, "z" * 17],
                                    [f"s{i}" for i in range(3000)]])
def test_strings_serialize_as_the_library_does(values):
    for arrow_type in (pa.string(), pa.large_string()):
        ours = theta.ThetaSketch()
        ours.update(pa.array(values, arrow_type))
        assert ours.serialize() == library(values).compact().serialize()


def test_estimation_mode_is_a_sketch_the_library_reads_and_unions():
    rng = random.Random(7)
    values = [rng.getrandbits(62) for _ in range(20_000)]
    ours = theta.ThetaSketch()
    for start in range(0, len(values), 6000):  # fed in pieces, as partitions are
        ours.update(pa.array(values[start:start + 6000], pa.int64()))
    assert ours.hashes.size == theta.NOMINAL
    read = datasketches.compact_theta_sketch.deserialize(ours.serialize())
    assert read.get_estimate() == pytest.approx(ours.estimate())
    assert read.get_estimate() == pytest.approx(len(values), rel=0.05)
    union = datasketches.theta_union()
    union.update(read)
    union.update(library(values[:5000]))  # values it holds already
    assert union.get_result().get_estimate() == pytest.approx(ours.estimate(), rel=0.02)


def test_nulls_and_empty_values_are_not_counted():
    ours = theta.ThetaSketch()
    ours.update(pa.array(["a", None, "", "a", "b"]))
    assert ours.estimate() == 2
    assert ours.serialize() == library(["a", "b"]).compact().serialize()


def _hashes(matrices):
    return sorted(int(h) for m in matrices for h in theta.murmur3_h1(m) >> np.uint64(1))


def _of_bytes(raw: list[bytes]):
    return sorted(int(theta.murmur3_h1(np.frombuffer(b, np.uint8).reshape(1, len(b)))[0] >> 1)
                  for b in raw)


def test_every_type_in_icebergs_single_value_form():
    day = datetime.date(2024, 3, 1)
    ts = datetime.datetime(2024, 3, 1, 12, 30)
    cases = [
        (pa.array([1, -2], pa.int32()), [struct.pack("<i", 1), struct.pack("<i", -2)]),
        (pa.array([1, -2], pa.int16()), [struct.pack("<i", 1), struct.pack("<i", -2)]),
        (pa.array([day], pa.date32()), [struct.pack("<i", (day - datetime.date(1970, 1, 1)).days)]),
        (pa.array([7], pa.int64()), [struct.pack("<q", 7)]),
        (pa.array([ts], pa.timestamp("us")),
         [struct.pack("<q", int((ts - datetime.datetime(1970, 1, 1)).total_seconds() * 10**6))]),
        (pa.array([ts], pa.timestamp("ms")),
         [struct.pack("<q", int((ts - datetime.datetime(1970, 1, 1)).total_seconds() * 10**6))]),
        (pa.array([1.5], pa.float32()), [struct.pack("<f", 1.5)]),
        (pa.array([1.5], pa.float64()), [struct.pack("<d", 1.5)]),
        (pa.array([True, False]), [b"\x01", b"\x00"]),
        (pa.array([decimal.Decimal("1.28"), decimal.Decimal("-1.28")], pa.decimal128(10, 2)),
         [b"\x00\x80", b"\x80"]),
        (pa.array([b"\x00\x01", b"xyz"], pa.binary()), [b"\x00\x01", b"xyz"]),
        (pa.array([b"0123456789abcdef"], pa.binary(16)), [b"0123456789abcdef"]),
    ]
    for arr, raw in cases:
        assert _hashes(theta.value_matrices(arr)) == _of_bytes(raw), arr.type
    nested = pa.array([[1, 2]], pa.list_(pa.int64()))
    assert list(theta.value_matrices(nested)) == []


def test_murmur3_of_every_tail_length_matches_the_library():
    # the library hashes a str by its UTF-8 bytes: lengths 1..40 cover every block and tail
    for n in range(1, 41):
        text = "".join(chr(97 + (i * 7 + n) % 26) for i in range(n))
        sketch = theta.ThetaSketch()
        sketch.update(pa.array([text]))
        assert sketch.serialize() == library([text]).compact().serialize(), n
