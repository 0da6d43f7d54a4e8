"""mx.nd op calls run as one compiled program each (jbind/ndarray/_dispatch.py): traced
once per op, mode and input signature, and giving what the op's own lowering gives when
run op by op (aux updates, random keys, devices, custom ops, errors)."""
import jax
import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError
from jbind.ndarray import _dispatch
from jbind.ops._base import Op, frozen, get_op


def _traces():
    return _dispatch.info()["traces"]


def _lowered(name, arrays, is_train=False, key=None, **params):
    """The op's lowering run op by op on the arrays' values (the reference)."""
    op = get_op(name).from_attrs(params)
    nargs = len(op.arguments())
    datas = [a._data for a in arrays]
    return op.lower(datas[:nargs], datas[nargs:], is_train, key)


def test_second_call_traces_nothing_and_new_shape_adds_an_entry():
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    mx.nd.softmax(x, axis=1, temperature=1.25)
    before, entries = _traces(), _dispatch.info()["entries"]
    for _ in range(3):
        y = mx.nd.softmax(x, axis=1, temperature=1.25)
    assert _traces() == before
    assert _dispatch.info()["entries"] == entries
    np.testing.assert_allclose(y.asnumpy(), np.asarray(_lowered("softmax", [x], axis=1, temperature=1.25)[0][0]),
                               rtol=1e-6)
    mx.nd.softmax(mx.nd.ones((2, 4)), axis=1, temperature=1.25)  # another shape: one more trace and entry
    assert _traces() == before + 1
    assert _dispatch.info()["entries"] == min(entries + 1, _dispatch.LIMIT)
    mx.nd.softmax(x, axis=0, temperature=1.25)  # another parameter value: another program
    assert _traces() == before + 2


def test_fully_connected_and_layernorm_match_the_plain_lowering():
    rng = np.random.default_rng(0)
    x, w, b = (mx.nd.array(rng.standard_normal(s).astype(np.float32)) for s in ((5, 6), (3, 6), (3,)))
    y = mx.nd.FullyConnected(x, w, b, num_hidden=3)
    np.testing.assert_allclose(y.asnumpy(), np.asarray(_lowered("FullyConnected", [x, w, b], num_hidden=3)[0][0]),
                               rtol=1e-5, atol=1e-6)
    g, beta = mx.nd.ones((6,)) * 1.5, mx.nd.ones((6,)) * 0.25
    y = mx.nd.LayerNorm(x, g, beta, eps=1e-3)
    np.testing.assert_allclose(y.asnumpy(), np.asarray(_lowered("LayerNorm", [x, g, beta], eps=1e-3)[0][0]),
                               rtol=1e-5, atol=1e-6)


def test_batchnorm_training_writes_moving_stats_as_the_lowering_does():
    rng = np.random.default_rng(1)
    x = mx.nd.array(rng.standard_normal((4, 3, 2, 2)).astype(np.float32))
    g, b = mx.nd.array([1.0, 2.0, 0.5]), mx.nd.array([0.0, 0.1, -0.1])
    mean, var = mx.nd.zeros((3,)), mx.nd.ones((3,))
    (want,), (want_mean, want_var) = _lowered("BatchNorm", [x, g, b, mean, var], is_train=True, fix_gamma=False,
                                              momentum=0.8)
    with mx.autograd.train_mode():
        y = mx.nd.BatchNorm(x, g, b, mean, var, fix_gamma=False, momentum=0.8)
    np.testing.assert_allclose(y.asnumpy(), np.asarray(want), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mean.asnumpy(), np.asarray(want_mean), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(var.asnumpy(), np.asarray(want_var), rtol=1e-6, atol=1e-7)
    assert not np.allclose(mean.asnumpy(), 0)
    held = mean._data
    mx.nd.BatchNorm(x, g, b, mean, var, fix_gamma=False, momentum=0.8)  # inference: stats untouched
    assert mean._data is held


def test_batchnorm_under_record_still_differentiates():
    x = mx.nd.array(np.random.default_rng(2).standard_normal((4, 2)).astype(np.float32))
    g, b = mx.nd.ones((2,)), mx.nd.zeros((2,))
    mean, var = mx.nd.zeros((2,)), mx.nd.ones((2,))
    for a in (x, g, b):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.BatchNorm(x, g, b, mean, var, fix_gamma=False)
        loss = (y * mx.nd.array([[1.0, 2.0]])).sum()
    loss.backward()
    np.testing.assert_allclose(b.grad.asnumpy(), [4.0, 8.0], rtol=1e-6)
    assert abs(x.grad.asnumpy().sum()) < 1e-4  # normalized: the gradient sums to zero per channel
    assert not np.allclose(mean.asnumpy(), 0)  # training mode under record: stats updated


def test_dropout_key_is_an_argument_not_a_constant():
    x = mx.nd.ones((64,))
    with mx.autograd.train_mode():
        mx.random.seed(11)
        a = mx.nd.Dropout(x, p=0.5).asnumpy()
        traces = _traces()
        b = mx.nd.Dropout(x, p=0.5).asnumpy()
        mx.random.seed(11)
        c = mx.nd.Dropout(x, p=0.5).asnumpy()
    assert _traces() == traces
    assert not np.array_equal(a, b)  # a new draw each call from one program
    np.testing.assert_array_equal(a, c)  # the seed reproduces it
    mx.random.seed(11)
    op = get_op("Dropout").from_attrs({"p": 0.5})
    (ref,), _, _ = _dispatch._eager(op, [x._data], 1, True, None, None)
    np.testing.assert_array_equal(a, np.asarray(ref))


def test_sampler_without_inputs_lands_on_its_ctx():
    mx.random.seed(5)
    a = mx.nd.random.uniform(shape=(2, 3), ctx=mx.cpu(1))
    mx.random.seed(5)
    b = mx.nd.random.uniform(shape=(2, 3), ctx=mx.cpu(0))
    assert a.context == mx.cpu(1) and b.context == mx.cpu(0)
    assert a._data.devices() == {jax.devices("cpu")[1]}
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    z = mx.nd.zeros((2,), ctx=mx.cpu(1))
    assert z._data.devices() == {jax.devices("cpu")[1]}


class _CountingOp(mx.operator.CustomOp):
    made = 0

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 3)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 3)


@mx.operator.register("dispatch_times_three")
class _CountingProp(mx.operator.CustomOpProp):
    def infer_shape(self, in_shape):
        return in_shape, in_shape, []

    def create_operator(self, ctx, shapes, dtypes):
        _CountingOp.made += 1
        return _CountingOp()


def test_custom_op_runs_its_python_and_makes_its_operator_per_call():
    x = mx.nd.array([1.0, 2.0])
    before = _CountingOp.made
    for _ in range(2):
        np.testing.assert_allclose(mx.nd.Custom(x, op_type="dispatch_times_three").asnumpy(), [3.0, 6.0])
    assert _CountingOp.made == before + 2  # as MXNet: a new operator for each imperative call


@frozen
class _Picky(Op):
    """A test op (not registered) whose lowering refuses more than `limit` rows."""
    limit: int = 2
    name = "_test_picky"

    def lower(self, ins, aux, is_train, key):
        if ins[0].shape[0] > self.limit:
            raise MXNetError(f"_test_picky: {ins[0].shape[0]} rows, at most {self.limit}")
        return [ins[0] * 2], aux


@frozen
class _NeedsValues(Op):
    """A test op whose lowering reads its input's value on the host."""
    name = "_test_needs_values"

    def lower(self, ins, aux, is_train, key):
        return [ins[0] * float(ins[0].sum())], aux


def test_errors_from_the_lowering_reach_the_caller_unchanged():
    op = _Picky()
    for _ in range(2):  # a failed trace leaves nothing broken behind
        with pytest.raises(MXNetError, match="3 rows, at most 2"):
            _dispatch.call(op, [jax.numpy.ones((3,))], 1, False, None)
    (y,), _, _ = _dispatch.call(op, [jax.numpy.ones((2,))], 1, False, None)
    np.testing.assert_array_equal(np.asarray(y), [2.0, 2.0])


def test_lowering_that_needs_values_runs_op_by_op():
    x = jax.numpy.asarray([1.0, 2.0])
    for _ in range(2):
        (y,), _, _ = _dispatch.call(_NeedsValues(), [x], 1, False, None)
        np.testing.assert_array_equal(np.asarray(y), [3.0, 6.0])


def test_nd_errors_unchanged():
    with pytest.raises(IndexError, match="out of bounds"):  # gather_nd checks concrete indices in mx.nd
        mx.nd.gather_nd(mx.nd.ones((2, 3)), mx.nd.array([[5]]))
    with pytest.raises(MXNetError, match="FullyConnected"):
        mx.nd.FullyConnected(mx.nd.ones((2, 3)), mx.nd.ones((4, 5)), mx.nd.ones((4,)), num_hidden=4)


def test_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(_dispatch, "LIMIT", 3)
    for n in range(1, 7):
        mx.nd.relu(mx.nd.ones((n, 7)))
    assert _dispatch.info()["entries"] <= 3
    traces = _traces()
    mx.nd.relu(mx.nd.ones((6, 7)))  # the newest stays
    assert _traces() == traces
    mx.nd.relu(mx.nd.ones((1, 7)))  # the oldest went: traced again
    assert _traces() == traces + 1


def test_matmul_precision_is_part_of_the_key():
    x = mx.nd.ones((2, 3))
    w = mx.nd.ones((4, 3))
    mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=4)
    traces = _traces()
    with jax.default_matmul_precision("bfloat16"):
        y = mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=4)
    assert _traces() == traces + 1
    np.testing.assert_allclose(y.asnumpy(), 3.0)
