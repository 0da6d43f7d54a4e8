"""jbind.recordio against MXNet 1.9.1's files (tests/golden/io/, made by make_io_golden.py)."""
import json
import os
import pickle
import struct
import subprocess
import sys

import numpy as np
import pytest

from jbind import recordio
from jbind.base import MXNetError
from jbind.recordio import IRHeader, MXIndexedRecordIO, MXRecordIO, RecordIOFileNotFound

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
IO = os.path.join(GOLDEN, "io")
sys.path.insert(0, GOLDEN)
import make_io_golden as mg  # noqa: E402

with open(os.path.join(IO, "recordio.json")) as _f:
    EXPECTED = json.load(_f)
PAYLOADS = [bytes.fromhex(p) for p in EXPECTED["payloads"]]
M = struct.pack("<I", 0xCED7230A)


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def test_payloads_are_the_generators():
    assert PAYLOADS == mg.record_payloads()


def test_reads_files_mxnet_wrote():
    r = MXRecordIO(os.path.join(IO, "records.rec"), "r")
    assert [r.read() for _ in PAYLOADS] == PAYLOADS
    assert r.read() is None and r.read() is None
    r.reset()
    assert r.read() == PAYLOADS[0]
    r.close()
    r = MXIndexedRecordIO(os.path.join(IO, "indexed.idx"), os.path.join(IO, "indexed.rec"), "r")
    assert r.keys == [10 * i for i in range(len(PAYLOADS))]
    assert [r.read_idx(k) for k in reversed(r.keys)] == PAYLOADS[::-1]
    r.seek(20)
    assert r.read() == PAYLOADS[2] and r.read() == PAYLOADS[3]
    with pytest.raises(KeyError):
        r.read_idx(5)
    r.close()
    r = MXIndexedRecordIO(os.path.join(IO, "strkeys.idx"), os.path.join(IO, "strkeys.rec"), "r", key_type=str)
    assert r.keys == ["key_3", "key_2", "key_1", "key_0"]
    assert r.read_idx("key_0") == PAYLOADS[3]
    r.close()


def test_writes_mxnets_bytes(tmp_path):
    """The .rec and .idx jbind writes are MXNet's, byte for byte (so MXNet reads them)."""
    w = MXRecordIO(str(tmp_path / "records.rec"), "w")
    for p in PAYLOADS:
        w.write(p)
    w.close()
    assert _bytes(tmp_path / "records.rec") == _bytes(os.path.join(IO, "records.rec"))
    w = MXIndexedRecordIO(tmp_path / "indexed.idx", tmp_path / "indexed.rec", "w")
    tells = [w.tell()]
    for i, p in enumerate(PAYLOADS):
        w.write_idx(i * 10, p)
        tells.append(w.tell())
    w.close()
    assert tells == EXPECTED["tells"]
    for name in ("indexed.rec", "indexed.idx"):
        assert _bytes(tmp_path / name) == _bytes(os.path.join(IO, name)), name
    w = MXIndexedRecordIO(str(tmp_path / "strkeys.idx"), str(tmp_path / "strkeys.rec"), "w", key_type=str)
    for i, p in enumerate(PAYLOADS[:4]):
        w.write_idx("key_%d" % (3 - i), p)
    w.close()
    for name in ("strkeys.rec", "strkeys.idx"):
        assert _bytes(tmp_path / name) == _bytes(os.path.join(IO, name)), name


def test_magic_in_a_payload_splits_the_record(tmp_path):
    """dmlc cuts a payload at each 4-aligned magic number: parts flagged 1, 2, 3 (flag << 29 | length)."""
    w = MXRecordIO(str(tmp_path / "m.rec"), "w")
    w.write(b"abcd" + M + b"efgh" + M + M)
    w.write(b"xy" + M)  # not aligned: one part, padded
    w.close()
    raw = _bytes(tmp_path / "m.rec")
    parts = [M + struct.pack("<I", 1 << 29 | 4) + b"abcd", M + struct.pack("<I", 2 << 29 | 4) + b"efgh",
             M + struct.pack("<I", 2 << 29 | 0), M + struct.pack("<I", 3 << 29 | 0),
             M + struct.pack("<I", 6) + b"xy" + M + b"\0\0"]
    assert raw == b"".join(parts)
    r = MXRecordIO(str(tmp_path / "m.rec"), "r")
    assert r.read() == b"abcd" + M + b"efgh" + M + M and r.read() == b"xy" + M and r.read() is None
    r.close()


def test_large_record_round_trip(tmp_path):
    rng = np.random.RandomState(0)
    big = bytearray(rng.randint(0, 256, 1 << 20).astype(np.uint8).tobytes())
    for at in (0, 4096, 4097, (1 << 20) - 4):
        big[at:at + 4] = M
    w = MXRecordIO(str(tmp_path / "big.rec"), "w")
    w.write(bytes(big))
    w.write(b"tail")
    w.close()
    r = MXRecordIO(str(tmp_path / "big.rec"), "r")
    assert r.read() == bytes(big) and r.read() == b"tail"
    r.close()


@pytest.mark.parametrize("i", range(len(mg.PACK_CASES)))
def test_pack_unpack_match_mxnet(i):
    case = EXPECTED["pack"][i]
    header, payload = mg.PACK_CASES[i]
    packed = recordio.pack(IRHeader(*header), payload)
    assert packed.hex() == case["packed"]
    h, rest = recordio.unpack(packed)
    assert rest.hex() == case["rest"]
    flag, label, id_, id2 = case["unpacked"]
    assert (h.flag, h.id, h.id2) == (flag, id_, id2)
    if isinstance(label, list):
        assert h.label.dtype == np.float32 and h.label.tolist() == label
    else:
        assert isinstance(h.label, float) and h.label == label
    assert type(h).__name__ == "HEADER" and h._fields == ("flag", "label", "id", "id2")


def test_pack_takes_numpy_labels_as_mxnet():
    s = recordio.pack((5, np.float32(2), 1, 2), b"p")  # a numpy scalar is a Number: flag 0
    assert recordio.unpack(s)[0] == IRHeader(0, 2.0, 1, 2)
    h, rest = recordio.unpack(recordio.pack((5, np.array([4.0]), 1, 2), b"p"))
    assert h.flag == 1 and h.label.tolist() == [4.0] and rest == b"p"


# --- bad input -------------------------------------------------------------------------

def _write(path, data):
    path.write_bytes(data)
    return str(path)


def test_missing_files(tmp_path):
    with pytest.raises(RecordIOFileNotFound, match=r"'.*nope\.rec': no such file") as e:
        MXRecordIO(str(tmp_path / "nope.rec"), "r")
    assert isinstance(e.value, MXNetError) and isinstance(e.value, FileNotFoundError)
    rec = _write(tmp_path / "a.rec", b"")
    with pytest.raises(FileNotFoundError, match=r"index '.*nope\.idx': no such file"):
        MXIndexedRecordIO(str(tmp_path / "nope.idx"), rec, "r")
    with pytest.raises(ValueError, match="Invalid flag a"):
        MXRecordIO(rec, "a")


def test_wrong_magic(tmp_path):
    good = _bytes(os.path.join(IO, "records.rec"))
    bad = _write(tmp_path / "bad.rec", good[:20] + b"\0" * 8 + good[28:])
    r = MXRecordIO(bad, "r")
    assert r.read() == PAYLOADS[0] and r.read() == PAYLOADS[1]
    with pytest.raises(MXNetError, match=r"'.*bad\.rec' is not a RecordIO file or is damaged: offset 20 holds "
                                         r"0x00000000, not the magic number 0xced7230a"):
        r.read()
    r.close()


def test_truncated_files(tmp_path):
    good = _bytes(os.path.join(IO, "records.rec"))
    r = MXRecordIO(_write(tmp_path / "t1.rec", good[:24]), "r")
    r.read(), r.read()
    with pytest.raises(MXNetError, match=r"'.*t1\.rec' is truncated at offset 20: a part header is cut after 4 bytes"):
        r.read()
    r.close()
    r = MXRecordIO(_write(tmp_path / "t2.rec", good[:30]), "r")
    r.read(), r.read()
    with pytest.raises(MXNetError, match=r"truncated: the part at offset 20 holds 3 bytes, the file ends 2 bytes"):
        r.read()
    r.close()
    split = M + struct.pack("<I", 1 << 29 | 4) + b"abcd"  # a first part, and no more
    r = MXRecordIO(_write(tmp_path / "t3.rec", split), "r")
    with pytest.raises(MXNetError, match=r"truncated at offset 12: a record's continuation is missing"):
        r.read()
    r.close()


def test_index_into_a_continuation_is_an_error(tmp_path):
    rec, idx = str(tmp_path / "s.rec"), str(tmp_path / "s.idx")
    w = MXRecordIO(rec, "w")
    w.write(b"abcd" + M + b"efgh")
    w.close()
    with open(idx, "w") as f:
        f.write("0\t0\n1\t12\n")
    r = MXIndexedRecordIO(idx, rec, "r")
    assert r.read_idx(0) == b"abcd" + M + b"efgh"
    with pytest.raises(MXNetError, match=r"damaged: the part at offset 12 has continuation flag 3, expected 0 or 1"):
        r.read_idx(1)
    r.close()


def test_bad_index_line(tmp_path):
    rec = _write(tmp_path / "a.rec", b"")
    idx = _write(tmp_path / "a.idx", b"0\t0\n\n")
    with pytest.raises(MXNetError, match=r"index '.*a\.idx' line 2 is '', not '<key>\\t<offset>' with a int key"):
        MXIndexedRecordIO(idx, rec, "r")


def test_misuse(tmp_path, monkeypatch):
    path = str(tmp_path / "a.rec")
    w = MXRecordIO(path, "w")
    with pytest.raises(TypeError, match="a record is bytes, got str"):
        w.write("text")
    with pytest.raises(MXNetError, match="read\\(\\) needs flag 'r'"):
        w.read()
    monkeypatch.setattr(recordio, "MAX_RECORD", 8)
    with pytest.raises(MXNetError, match="shorter than 2\\*\\*29 bytes; this one is 8"):
        w.write(b"12345678")
    w.write(bytearray(b"abc"))
    w.close()
    with pytest.raises(MXNetError, match="is closed"):
        w.write(b"x")
    r = MXRecordIO(path, "r")
    with pytest.raises(MXNetError, match="write\\(\\) needs flag 'w'"):
        r.write(b"x")
    assert r.read() == b"abc"
    r.close()
    with pytest.raises(MXNetError, match="is closed"):
        r.read()
    r.open()
    assert r.read() == b"abc"
    r.close()


def test_writer_reset_truncates(tmp_path):
    w = MXRecordIO(str(tmp_path / "a.rec"), "w")
    w.write(b"abc")
    w.reset()
    w.write(b"zz")
    w.close()
    assert _bytes(tmp_path / "a.rec") == M + struct.pack("<I", 2) + b"zz\0\0"


def test_other_process_must_reset(tmp_path):
    """As MXNet: a record opened by another process (after fork) may not read; seek() reopens it."""
    rec, idx = str(tmp_path / "a.rec"), str(tmp_path / "a.idx")
    w = MXIndexedRecordIO(idx, rec, "w")
    w.write_idx(0, b"zero")
    w.write_idx(1, b"one")
    w.close()
    r = MXIndexedRecordIO(idx, rec, "r")
    r.pid = -1
    with pytest.raises(MXNetError, match="was opened in process -1"):
        r.read()
    assert r.read_idx(1) == b"one" and r.pid == os.getpid()
    r.close()


def test_pickle_reader_and_refuse_writer(tmp_path):
    rec, idx = str(tmp_path / "a.rec"), str(tmp_path / "a.idx")
    w = MXIndexedRecordIO(idx, rec, "w")
    with pytest.raises(MXNetError, match="cannot pickle"):
        pickle.dumps(w)
    w.write_idx(7, b"seven")
    w.close()
    r = MXIndexedRecordIO(idx, rec, "r")
    copy = pickle.loads(pickle.dumps(r))
    assert copy.read_idx(7) == b"seven" and copy.keys == [7]
    assert r.is_open and r.read() == b"seven"
    copy.close()
    r.close()


def test_index_is_written_whole_at_close(tmp_path):
    """Until close() the old .rec and .idx stand as they were; then both are the new ones."""
    rec, idx = tmp_path / "a.rec", tmp_path / "a.idx"
    w = MXIndexedRecordIO(str(idx), str(rec), "w")
    w.write_idx(0, b"old")
    w.close()
    old_rec, old_idx = rec.read_bytes(), idx.read_text()
    w = MXIndexedRecordIO(str(idx), str(rec), "w")
    w.write_idx(0, b"first")
    w.write_idx(1, b"second")
    assert rec.read_bytes() == old_rec and idx.read_text() == old_idx
    w.close()
    assert idx.read_text() == "0\t0\n1\t16\n"
    assert sorted(os.listdir(tmp_path)) == ["a.idx", "a.rec"]  # no temp file left


def test_a_writer_killed_midway_leaves_the_old_files(tmp_path):
    rec, idx = str(tmp_path / "a.rec"), str(tmp_path / "a.idx")
    w = MXIndexedRecordIO(idx, rec, "w")
    w.write_idx(5, b"kept")
    w.close()
    code = ("import os, sys\nfrom jbind.recordio import MXIndexedRecordIO\n"
            "w = MXIndexedRecordIO(sys.argv[1], sys.argv[2], 'w')\n"
            "w.write_idx(0, b'lost' * 1000)\nos._exit(1)\n")
    subprocess.run([sys.executable, "-c", code, idx, rec], check=False)
    r = MXIndexedRecordIO(idx, rec, "r")
    assert r.keys == [5] and r.read_idx(5) == b"kept"
    r.close()


def test_image_helpers_fall_back_to_pillow(monkeypatch):
    pytest.importorskip("PIL")
    monkeypatch.setitem(sys.modules, "cv2", None)
    bgr = np.zeros((4, 5, 3), np.uint8)
    bgr[..., 0] = 200  # blue, in OpenCV's order
    header, img = recordio.unpack_img(recordio.pack_img(IRHeader(0, 1, 2, 0), bgr, img_fmt=".png"))
    assert header.label == 1 and header.id == 2
    np.testing.assert_array_equal(img, bgr)  # BGR back, as cv2.imdecode gives
    _, gray = recordio.unpack_img(recordio.pack_img(IRHeader(0, 1, 2, 0), bgr, img_fmt=".png"), iscolor=0)
    assert gray.shape == (4, 5)


def test_image_helpers_without_opencv_or_pillow(monkeypatch):
    monkeypatch.setitem(sys.modules, "cv2", None)
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(MXNetError, match="Pillow.*pip install pillow"):
        recordio.pack_img(IRHeader(0, 1, 2, 0), np.zeros((2, 2, 3), np.uint8))


def test_mx_recordio_is_the_module():
    import jbind as mx
    import jbind.recordio
    assert mx.recordio is jbind.recordio
