"""GetOpenTxnsResponse.open_txns is a set in HMS 2.3 and a list from 3.0 on (same id): the
answer a newer client gets carries both, and each generation's reader takes its own
(hms_proxy/hms/txn/transactions.py, open_txns_in_both_forms). Hive 4's own client reading it
against the stock 4.0.1 is in tests/e2e/hive4."""
from __future__ import annotations

import pytest
from thrift.protocol import TBinaryProtocol, fastbinary
from thrift.Thrift import TType
from thrift.transport import TTransport

from hms_proxy.hms.txn.transactions import aborted_bits, open_txns_in_both_forms
from hms_proxy.thrift.gen.hive_metastore import ttypes as T
from tests.support.client import connect


class Hive3Response:
    """GetOpenTxnsResponse as the 3.x/4.x IDL declares it (open_txns a list)."""
    thrift_spec = (None, (1, TType.I64, "txn_high_water_mark", None, None),
                   (2, TType.LIST, "open_txns", (TType.I64, None, False), None),
                   (3, TType.I64, "min_open_txn", None, None),
                   (4, TType.STRING, "abortedBits", "BINARY", None))

    def __init__(self):
        self.txn_high_water_mark = self.open_txns = self.min_open_txn = self.abortedBits = None


def _read_c(cls, data: bytes):
    """Thrift's C decoder (what the accelerated protocol uses)."""
    obj = cls()
    proto = TBinaryProtocol.TBinaryProtocolAccelerated(TTransport.TMemoryBuffer(data))
    fastbinary.decode_binary(obj, proto, [cls, cls.thrift_spec])
    return obj


def _read_pure_python(cls, data: bytes):
    """The generated pure-Python reading (field by field, skipping a field of another type)."""
    obj = cls()
    proto = TBinaryProtocol.TBinaryProtocol(TTransport.TMemoryBuffer(data))
    proto.readStructBegin()
    while True:
        _, ftype, fid = proto.readFieldBegin()
        if ftype == TType.STOP:
            break
        spec = cls.thrift_spec[fid] if fid < len(cls.thrift_spec) else None
        if spec is None or spec[1] != ftype:
            proto.skip(ftype)
        elif ftype in (TType.SET, TType.LIST):
            _, size = proto.readSetBegin() if ftype == TType.SET else proto.readListBegin()
            items = [proto.readI64() for _ in range(size)]
            setattr(obj, spec[2], set(items) if ftype == TType.SET else items)
        elif ftype == TType.I64:
            setattr(obj, spec[2], proto.readI64())
        else:
            setattr(obj, spec[2], proto.readBinary())
    return obj


@pytest.mark.parametrize("reader", ["c", "python"])
def test_each_generation_reads_its_own_form(reader):
    data = open_txns_in_both_forms(9, {7, 3, 5, 9}, 3, {5, 9}).data
    decode = (lambda cls: _read_c(cls, data)) if reader == "c" else \
        (lambda cls: _read_pure_python(cls, data))
    old, new = decode(T.GetOpenTxnsResponse), decode(Hive3Response)
    assert old.open_txns == {3, 5, 7, 9} and old.txn_high_water_mark == 9
    assert new.open_txns == [3, 5, 7, 9] and new.min_open_txn == 3
    assert new.abortedBits == bytes([0b1010])  # positions 1 and 3: txns 5 and 9


def test_aborted_bits_as_javas_bitset():
    assert aborted_bits([], set()) == b""
    assert aborted_bits([1, 2], set()) == b""
    assert aborted_bits(list(range(1, 11)), {10}) == bytes([0, 0b10])


def test_a_2_3_connection_gets_2_3s_answer(proxy):
    """No 3.x/4.x call on the connection: get_open_txns as HMS 2.3 answers, no abortedBits."""
    with connect(proxy) as c:
        txn = c.open_txns(T.OpenTxnRequest(1, "ann", "host")).txn_ids[0]
        got = c.get_open_txns()
        assert txn in got.open_txns and got.abortedBits is None
        c.get_open_txns_req(T.GetOpenTxnsRequest())  # a 4.x call: the connection speaks 4.x
        assert c.get_open_txns().abortedBits is not None
        c.abort_txns(T.AbortTxnsRequest([txn]))
