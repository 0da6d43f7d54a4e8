"""mx.io.CSVIter and mx.io.MNISTIter against MXNet 1.9.1 (tests/golden/io/, make_io_golden.py)."""
import gzip
import hashlib
import json
import os
import struct
import sys

import jax
import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError
from jbind.io_mnist import mxnet_shuffle_order

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
IO = os.path.join(GOLDEN, "io")
sys.path.insert(0, GOLDEN)
import make_io_golden as mg  # noqa: E402

with open(os.path.join(IO, "iters.json")) as _f:
    EXPECTED = json.load(_f)


def _as(values, dtype):
    """Golden values as the array jbind holds (int64 narrows to int32 only under JBIND_X64=0)."""
    a = np.array(values, dtype=np.dtype(dtype))
    return a.astype(jax.dtypes.canonicalize_dtype(a.dtype))


def _same(got, want, rows=None):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if rows is not None:
        got, want = got[:rows], want[:rows]
    if got.dtype == np.float32:  # bit for bit: -0.0, nan and dmlc's roundings included
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    else:
        np.testing.assert_array_equal(got, want)


def _check_against_golden(name, make, epochs, unwritten_pad=False):
    exp = EXPECTED[name]
    if "epochs" not in exp:
        with pytest.raises(MXNetError):
            make()
        return
    it = make()
    assert [[d.name, list(d.shape), np.dtype(d.dtype).name] for d in it.provide_data] == exp["provide_data"]
    assert [[d.name, list(d.shape), np.dtype(d.dtype).name] for d in it.provide_label] == exp["provide_label"]
    ddt, ldt = exp["provide_data"][0][2], exp["provide_label"][0][2]
    for e in range(epochs):
        want_epoch = exp["epochs"][e] if e < len(exp["epochs"]) else None
        if want_epoch is None:
            break
        if "error" in exp and e == len(exp["epochs"]) - 1:
            got = []
            with pytest.raises(MXNetError):
                for b in it:
                    got.append(b)
            assert len(got) == len(want_epoch)
        else:
            got = list(it)
            assert len(got) == len(want_epoch), (e, len(got), len(want_epoch))
        for b, w in zip(got, want_epoch):
            rows = it.batch_size - w["pad"] if unwritten_pad else None
            assert b.pad == w["pad"]
            assert b.index.dtype == np.uint64 and b.index.tolist() == w["index"]
            _same(b.data[0].asnumpy(), _as(w["data"], ddt), rows)
            _same(b.label[0].asnumpy(), _as(w["label"], ldt), rows)
        it.reset()


@pytest.fixture
def in_io(monkeypatch):
    monkeypatch.chdir(IO)


@pytest.mark.parametrize("name", sorted(mg.CSV_CASES))
def test_csv_matches_mxnet(name, in_io):
    kwargs, epochs = mg.CSV_CASES[name]
    _check_against_golden(name, lambda: mx.io.CSVIter(**kwargs), epochs, name in mg.CSV_UNWRITTEN_PAD)


@pytest.mark.parametrize("name", sorted(mg.MNIST_CASES))
def test_mnist_matches_mxnet(name, in_io):
    kwargs, epochs = mg.MNIST_CASES[name]
    _check_against_golden(name, lambda: mx.io.MNISTIter(**kwargs), epochs)


def test_mnist_shuffle_is_mxnets_on_70000_images(tmp_path):
    """libstdc++'s shuffle bit for bit: at this size other uniform_int algorithms part ways."""
    image, label = mg.big_mnist(str(tmp_path))
    for seed in mg.BIG_SEEDS:
        it = mx.io.MNISTIter(image=image, label=label, batch_size=70000, shuffle=True, seed=seed, flat=True,
                             silent=True)
        b = it.next()
        order = mg.big_order(b.data[0].asnumpy())
        want = EXPECTED["mnist_big_shuffle"][str(seed)]
        assert order[:20].tolist() == want["head"]
        assert hashlib.sha256(order.astype("<i8").tobytes()).hexdigest() == want["sha256"]
        np.testing.assert_array_equal(b.label[0].asnumpy(), order % 10)


def test_shuffle_order_is_a_permutation():
    for n in (0, 1, 2, 7):
        assert sorted(mxnet_shuffle_order(n, 3).tolist()) == list(range(n))


def test_iter_next_protocol_and_string_params(in_io):
    """MXNet's other loop (iter_next / getdata / getpad), and parameters given as strings."""
    it = mx.io.CSVIter(data_csv="data.csv", data_shape="(6,)", batch_size="2", round_batch="False",
                       prefetch_buffer=2, ctx="cpu", unknown_param=1)
    it.reset()
    seen = []
    while it.iter_next():
        seen.append((it.getpad(), it.getindex().tolist()))
    assert seen == [(0, [0, 1]), (0, [2, 3]), (1, [4, 3])]
    with pytest.raises(StopIteration):
        it.next()
    it.reset()
    assert it.next().index.tolist() == [0, 1]
    assert isinstance(it, mx.io.MXDataIter) and isinstance(it, mx.io.DataIter)
    with pytest.raises(TypeError):
        mx.io.CSVIter("data.csv", data_shape=(6,), batch_size=2)


def test_iter_next_after_construction_moves_on(in_io):
    """Deliberate: MXNet's iter_next() returns True forever on the first batch until reset()."""
    it = mx.io.CSVIter(data_csv="data.csv", data_shape=(6,), batch_size=2, round_batch=False)
    seen = []
    while it.iter_next():
        seen.append(it.getindex().tolist())
    assert seen == [[0, 1], [2, 3], [4, 3]]


def test_reset_right_after_construction_skips_a_wrapped_first_batch(in_io):
    """As MXNet: the first batch is read at construction, and reset() after a wrap goes on from there."""
    it = mx.io.CSVIter(data_csv="data.csv", data_shape=(6,), batch_size=7)
    it.reset()
    assert [b.index.tolist() for b in it] == [[2, 3, 4, 0, 1, 2, 3]]


def test_csv_in_module_fit(in_io):
    data = mx.sym.Variable("data")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(data, num_hidden=1, name="fc"), name="lro")
    mod = mx.mod.Module(net, label_names=["lro_label"])
    it = mx.io.CSVIter(data_csv="data.csv", data_shape=(6,), label_csv="label.csv", batch_size=2,
                       label_name="lro_label")
    mod.fit(it, num_epoch=2, optimizer_params={"learning_rate": 1e-4})
    assert mod.score(it, "mse")[0][0] == "mse"


# --- bad input: a clear MXNetError naming the file and what is wrong ---------------------

def _write(path, text):
    path.write_text(text)
    return str(path)


def test_csv_missing_file(tmp_path):
    with pytest.raises(MXNetError, match=r"data_csv '.*nope\.csv': no such file"):
        mx.io.CSVIter(data_csv=str(tmp_path / "nope.csv"), data_shape=(3,), batch_size=1)
    d = _write(tmp_path / "d.csv", "1,2,3\n")
    with pytest.raises(MXNetError, match=r"label_csv '.*nolab\.csv': no such file"):
        mx.io.CSVIter(data_csv=d, data_shape=(3,), label_csv=str(tmp_path / "nolab.csv"), batch_size=1)


def test_csv_row_length_names_the_line(tmp_path):
    d = _write(tmp_path / "d.csv", "1,2,3\n\n4,5\n")
    with pytest.raises(MXNetError, match=r"data_csv '.*d\.csv' line 3 has 2 values, but its shape \(3,\) needs 3"):
        mx.io.CSVIter(data_csv=d, data_shape=(3,), batch_size=1)


def test_csv_bad_row_fails_at_construction(tmp_path):
    """Deliberate: the whole file is read and checked at construction (MXNet: when a batch reaches the row)."""
    d = _write(tmp_path / "d.csv", "1,2,3\n" * 50 + "1,2\n")
    with pytest.raises(MXNetError, match="line 51"):
        mx.io.CSVIter(data_csv=d, data_shape=(3,), batch_size=1)


def test_csv_field_not_a_number_is_an_error(tmp_path):
    """Deliberate: MXNet drops a field it cannot parse (the row comes up short or shifted)."""
    d = _write(tmp_path / "d.csv", "1,2,3\n4,x5,6\n")
    with pytest.raises(MXNetError, match=r"data_csv '.*d\.csv' line 2, column 2: 'x5' is not a number"):
        mx.io.CSVIter(data_csv=d, data_shape=(3,), batch_size=1)
    with pytest.raises(MXNetError, match=r"line 1, column 1: '' is not an integer"):
        mx.io.CSVIter(data_csv=_write(tmp_path / "f.csv", ",1,2\n"), data_shape=(3,), batch_size=1, dtype="int32")


def test_csv_label_errors(tmp_path):
    d = _write(tmp_path / "d.csv", "1,2,3\n4,5,6\n7,8,9\n")
    short = _write(tmp_path / "l.csv", "1\n2\n")
    with pytest.raises(MXNetError, match=r"label_csv '.*l\.csv' has 2 rows, fewer than the 3 of data_csv"):
        mx.io.CSVIter(data_csv=d, data_shape=(3,), label_csv=short, batch_size=1)


def test_csv_label_shape_with_leading_one_is_refused(in_io):
    """Deliberate: MXNet gives label_shape (1, k) labels the shape (batch,), filled from the wrong rows."""
    with pytest.raises(MXNetError, match=r"label_shape \(1, 6\) is not supported.*use \(6,\)"):
        mx.io.CSVIter(data_csv="data.csv", data_shape=(6,), label_csv="label6.csv", label_shape=(1, 6),
                      batch_size=2)


def test_csv_bad_params(in_io):
    with pytest.raises(MXNetError, match="required parameter data_shape"):
        mx.io.CSVIter(data_csv="data.csv", batch_size=2)
    with pytest.raises(MXNetError, match="float16 is not supported for CSVIter"):
        mx.io.CSVIter(data_csv="data.csv", data_shape=(6,), batch_size=2, dtype="float16")
    with pytest.raises(MXNetError, match="batch_size should be greater equal to 1"):
        mx.io.CSVIter(data_csv="data.csv", data_shape=(6,), batch_size=0)


def _mnist(tmp_path, n=4, rows=2, cols=2, labels=None):
    img, lab = str(tmp_path / "img"), str(tmp_path / "lab")
    mg.write_idx_images(img, np.arange(n * rows * cols, dtype=np.uint8).reshape(n, rows, cols))
    mg.write_idx_labels(lab, np.arange(n) if labels is None else labels)
    return img, lab


def test_mnist_bad_files(tmp_path):
    img, lab = _mnist(tmp_path)
    with pytest.raises(MXNetError, match=r"image file '.*missing': no such file"):
        mx.io.MNISTIter(image=str(tmp_path / "missing"), label=lab, batch_size=1)
    with pytest.raises(MXNetError, match=r"image file '.*lab' has magic number 2049, expected 2051"):
        mx.io.MNISTIter(image=lab, label=lab, batch_size=1)
    raw = (tmp_path / "img").read_bytes()
    (tmp_path / "trunc").write_bytes(raw[:-1])
    with pytest.raises(MXNetError, match=r"'.*trunc' is truncated: its header \(4, 2, 2\) needs 32 bytes, it has 31"):
        mx.io.MNISTIter(image=str(tmp_path / "trunc"), label=lab, batch_size=1)
    (tmp_path / "short").write_bytes(raw[:10])
    with pytest.raises(MXNetError, match="too short for its header"):
        mx.io.MNISTIter(image=str(tmp_path / "short"), label=lab, batch_size=1)
    (tmp_path / "img.gz").write_bytes(gzip.compress(raw))
    with pytest.raises(MXNetError, match="gzip-compressed"):
        mx.io.MNISTIter(image=str(tmp_path / "img.gz"), label=lab, batch_size=1)
    (tmp_path / "three").mkdir()
    _, lab3 = _mnist(tmp_path / "three", n=3)
    with pytest.raises(MXNetError, match="has 3 labels but image file .* has 4 images"):
        mx.io.MNISTIter(image=img, label=lab3, batch_size=1)


def test_mnist_batch_larger_than_data_is_an_error(tmp_path):
    """Deliberate: MXNet raises a bare StopIteration from the constructor."""
    img, lab = _mnist(tmp_path)
    with pytest.raises(MXNetError, match="batch_size 5 is more than the 4 images"):
        mx.io.MNISTIter(image=img, label=lab, batch_size=5)
    with pytest.raises(MXNetError, match="part_index must be in 0..1"):
        mx.io.MNISTIter(image=img, label=lab, batch_size=1, num_parts=2, part_index=2)
    with pytest.raises(MXNetError, match="dtype='float16' is not supported"):
        mx.io.MNISTIter(image=img, label=lab, batch_size=1, dtype="float16")


def test_mnist_logs_unless_silent(tmp_path, caplog):
    img, lab = _mnist(tmp_path)
    with caplog.at_level("INFO", logger="jbind.io_mnist"):
        mx.io.MNISTIter(image=img, label=lab, batch_size=2, shuffle=False)
        mx.io.MNISTIter(image=img, label=lab, batch_size=2, silent=True)
    assert [r.getMessage() for r in caplog.records] == ["MNISTIter: load 4 images, shuffle=0, shape=(2, 1, 2, 2)"]


def test_idx_header_is_big_endian(tmp_path):
    img, lab = _mnist(tmp_path, n=2, rows=1, cols=3)
    assert struct.unpack(">iiii", (tmp_path / "img").read_bytes()[:16]) == (2051, 2, 1, 3)
    it = mx.io.MNISTIter(image=img, label=lab, batch_size=2, shuffle=False, flat=True)
    np.testing.assert_array_equal(it.next().data[0].asnumpy() * 256, np.arange(6).reshape(2, 3))
