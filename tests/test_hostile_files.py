"""Malformed RecordIO indexes, CSV numbers and symbol hints, and custom ops failing on
many threads (issue 20, part 7): each is an MXNetError naming what was wrong (or the
user's own KeyboardInterrupt / SystemExit), never another exception; the fuzzers draw
such inputs with hypothesis (`fuzz_settings`: more examples under HYPOTHESIS_PROFILE=long)."""
import json
import os
import threading

import numpy as np
import pytest
from hypothesis import given, strategies as st

import jbind as mx
from helpers import fuzz_settings, raises_naming
from jbind.recordio import MXIndexedRecordIO, MXRecordIO


# --- RecordIO indexes ------------------------------------------------------------------------------
def _records(tmp_path, n=3):
    rec, idx = str(tmp_path / "a.rec"), str(tmp_path / "a.idx")
    w = MXIndexedRecordIO(idx, rec, "w")
    for k in range(n):
        w.write_idx(k, b"record %d" % k)
    w.close()
    return rec, idx


def _open_fds(path):
    """How many of this process's file descriptors are open on `path` (Linux)."""
    real = os.path.realpath(path)
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}") == real
        except OSError:
            pass
    return n


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")


@needs_proc
@pytest.mark.parametrize("line, needles", [
    (b"0\t-16\n", ["offset -16", "outside"]),
    (b"0\t" + b"9" * 30 + b"\n", ["9" * 30, "outside"]),
    (b"0\t4096\n", ["offset 4096", "outside"]),
    (b"0\t\xff\xfe\n", ["not UTF-8"]),
    (b"0\t" + b"7" * 5000 + b"\n", ["line 1", "<offset>"]),
])
def test_a_bad_index_is_an_error_naming_it_and_leaves_no_rec_open(tmp_path, line, needles):
    rec, idx = _records(tmp_path)
    with open(idx, "wb") as f:
        f.write(line)
    raises_naming(lambda: MXIndexedRecordIO(idx, rec, "r"), "a.idx", *needles)
    assert _open_fds(rec) == 0


def test_a_read_past_the_end_is_an_error_not_none(tmp_path):
    rec, idx = _records(tmp_path)
    r = MXIndexedRecordIO(idx, rec, "r")
    assert r.read_idx(2) == b"record 2"
    size = os.path.getsize(rec)
    with open(rec, "r+b") as f:
        f.truncate(r.idx[2])  # the file shrinks under an open reader
    assert os.path.getsize(rec) < size
    raises_naming(lambda: r.read_idx(2), "key 2", "past the end")
    r.close()


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    return _records(tmp_path_factory.mktemp("rec"))


@needs_proc
@fuzz_settings(60)
@given(lines=st.lists(st.tuples(st.one_of(st.integers(-3, 5), st.text(max_size=3)),
                                st.one_of(st.integers(-10, 80), st.integers(-2 ** 70, 2 ** 70),
                                          st.text(max_size=4))), max_size=6),
       junk=st.binary(max_size=6))
def test_fuzzed_indexes_load_and_read_or_raise_mxnet_error(written, lines, junk):
    rec, idx = written
    idx = idx + ".fuzz"
    with open(idx, "wb") as f:
        f.write(b"".join(f"{k}\t{v}\n".encode("utf-8", "surrogatepass") for k, v in lines) + junk)
    try:
        r = MXIndexedRecordIO(idx, rec, "r")
    except mx.base.MXNetError as e:
        assert str(e) and _open_fds(rec) == 0
        return
    for key in r.keys:
        try:
            assert isinstance(r.read_idx(key), bytes)
        except mx.base.MXNetError as e:  # an offset inside a record: no magic number there
            assert "a.rec" in str(e)
    r.close()
    assert _open_fds(rec) == 0


# --- CSV numbers -------------------------------------------------------------------------------------
def test_csv_numbers_of_thousands_of_digits_parse_as_mxnets_parser(tmp_path):
    huge = "9" * 5000
    path = tmp_path / "big.csv"
    path.write_text(f"{huge},1.5,-{huge}\n1{'0' * 4999}.25,2,3e{huge}\n")
    data = mx.io.CSVIter(data_csv=str(path), data_shape=(3,), batch_size=2).next().data[0].asnumpy()
    # dmlc's strtof wraps the digits before the point to a uint64 (10**5000 wraps to 0) and
    # clips the exponent: 9...9 (5000 nines) mod 2**64, 0.25 after 10**4999, 3e+huge = 3 * 1e38
    wrapped = np.float32((10 ** 5000 - 1) % 2 ** 64)
    np.testing.assert_array_equal(data[0], [wrapped, 1.5, -wrapped])
    assert data[1][0] == np.float32(0.25) and data[1][2] == pytest.approx(3e38, rel=1e-6)
    ints = mx.io.CSVIter(data_csv=str(tmp_path / "big.csv"), data_shape=(3,), batch_size=1, dtype="int32")
    row = ints.next().data[0].asnumpy()[0]
    # strtoll clamps to int64 (2**63 - 1, -2**63); C's cast to int32 keeps the low 32 bits
    assert row.tolist() == [-1, 1, 0]


# --- symbol hints (fuzz) --------------------------------------------------------------------------
_HINT = st.one_of(st.text(max_size=12),
                  st.lists(st.integers(-3, 10 ** 12), max_size=4).map(str),
                  st.lists(st.integers(0, 9), max_size=4).map(lambda d: str(tuple(d))),
                  st.integers(-2, 12).map(str))


@fuzz_settings(150)
@given(shape=st.one_of(st.none(), _HINT), dtype=st.one_of(st.none(), _HINT),
       given_shape=st.one_of(st.none(), st.lists(st.integers(0, 6), min_size=1, max_size=3).map(tuple)))
def test_fuzzed_shape_and_dtype_hints_infer_or_raise_mxnet_error(shape, dtype, given_shape):
    attrs = {k: v for k, v in (("__shape__", shape), ("__dtype__", dtype)) if v is not None}
    doc = {"nodes": [{"op": "null", "name": "w", "attrs": attrs, "inputs": []},
                     {"op": "null", "name": "b", "inputs": []},
                     {"op": "elemwise_add", "name": "s", "inputs": [[0, 0, 0], [1, 0, 0]]}],
           "arg_nodes": [0, 1], "heads": [[2, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}}
    sym = mx.sym.load_json(json.dumps(doc))
    kw = {"b": given_shape} if given_shape else {}
    for call in (lambda: sym.infer_shape_partial(**kw), sym.infer_type_partial):
        try:
            call()
        except mx.base.MXNetError as e:
            assert str(e)


# --- custom ops failing on many threads -----------------------------------------------------------
class _Failing(mx.operator.CustomOp):
    def __init__(self, how):
        self.how = how

    def forward(self, is_train, req, in_data, out_data, aux):
        v = float(in_data[0].asnumpy().ravel()[0])
        if self.how == "interrupt":
            raise KeyboardInterrupt
        if self.how == "exit":
            raise SystemExit(3)
        if self.how == "fail" or v < 0:
            raise ValueError(f"bad value {v}")
        self.assign(out_data[0], req[0], in_data[0] * 2)


@mx.operator.register("test_hostile_failing")
class _FailingProp(mx.operator.CustomOpProp):
    def __init__(self, how="value"):
        super().__init__()
        self.how = how

    def create_operator(self, ctx, shapes, dtypes):
        return _Failing(self.how)


def _failing(how="value"):
    return mx.sym.Custom(mx.sym.Variable("x"), op_type="test_hostile_failing", how=how, name="f")


def _hammer(values, threads):
    """Run the op once per value, split over `threads` threads, each with its own executor;
    -> {value: the result or the exception}."""
    got = {}

    def work(vs):
        exe = _failing().simple_bind(mx.cpu(), x=(1,), grad_req="null")
        for v in vs:
            try:
                got[v] = float(exe.forward(x=mx.nd.array([v]))[0].asnumpy()[0])
            except BaseException as e:  # noqa: BLE001 -- recorded and checked by the caller
                got[v] = e
    ts = [threading.Thread(target=work, args=(values[k::threads],)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return got


def _check_each_call_got_its_own_outcome(got):
    for v, r in got.items():
        if v < 0:
            assert isinstance(r, mx.base.MXNetError), f"{v}: {type(r).__name__}: {r}"
            assert f"bad value {v}" in str(r) and "test_hostile_failing" in str(r)
        else:
            assert r == 2 * v


def test_errors_from_eight_threads_at_once_each_reach_their_caller():
    values = [-float(k + 1) for k in range(200)]
    got = _hammer(values, 8)
    assert len(got) == 200
    _check_each_call_got_its_own_outcome(got)


@fuzz_settings(8, deadline=None)
@given(values=st.lists(st.integers(-500, 500).map(float), min_size=1, max_size=24, unique=True),
       threads=st.integers(1, 8))
def test_fuzzed_threaded_custom_op_failures_reach_their_callers(values, threads):
    _check_each_call_got_its_own_outcome(_hammer(values, threads))


@pytest.mark.parametrize("how, cls", [("interrupt", KeyboardInterrupt), ("exit", SystemExit)])
def test_keyboard_interrupt_and_system_exit_in_a_callback_propagate_as_themselves(how, cls):
    exe = _failing(how).simple_bind(mx.cpu(), x=(1,), grad_req="null")
    with pytest.raises(cls):
        exe.forward(x=mx.nd.array([1.0]))
    with pytest.raises(cls):
        mx.nd.Custom(mx.nd.array([1.0]), op_type="test_hostile_failing", how=how)
    ok = _failing("value").simple_bind(mx.cpu(), x=(1,), grad_req="null")
    assert ok.forward(x=mx.nd.array([1.5]))[0].asnumpy()[0] == 3.0  # and the next call works
