"""Pointwise graphs on small arrays run flat, padded to a power of two: one compiled program
serves every shape of the same size bucket, with the numbers of the plain lowering."""
import numpy as np
import pytest

import jbind as mx
from jbind.executor import _flat


def _graph():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    return mx.sym.exp(a * 0.5) / (b + 2) - mx.sym.sqrt(b) + (a > b)


def _reference(a, b):
    return np.exp(a * 0.5) / (b + 2) - np.sqrt(b) + (a > b)


def _run(sym, shape, seed, req="write"):
    rng = np.random.RandomState(seed)
    a, b = rng.uniform(0.1, 2, shape), rng.uniform(0.1, 2, shape)
    ga, gb = mx.nd.ones(shape), mx.nd.ones(shape)
    ex = sym.bind(mx.cpu(), args={"a": mx.nd.array(a), "b": mx.nd.array(b)}, args_grad={"a": ga, "b": gb},
                  grad_req=req)
    out = ex.forward(is_train=True)[0]
    head = rng.uniform(-1, 1, shape)
    ex.backward([mx.nd.array(head)])
    return a, b, head, out.asnumpy(), ga.asnumpy(), gb.asnumpy()


@pytest.mark.parametrize("shape", [(3, 1, 5, 2), (7,), (2, 3, 4, 2, 1), (1,)])
def test_values_and_gradients_are_the_plain_lowerings(shape):
    a, b, head, out, ga, gb = _run(_graph(), shape, 0)
    assert out.shape == shape and ga.shape == shape
    np.testing.assert_allclose(out, _reference(a, b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ga, head * 0.5 * np.exp(a * 0.5) / (b + 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb, head * (-np.exp(a * 0.5) / (b + 2) ** 2 - 0.5 / np.sqrt(b)),
                               rtol=1e-5, atol=1e-6)


def test_shapes_of_one_bucket_share_one_compile():
    sym = _graph()
    _run(sym, (3, 11), 1)  # 33 elements: the 64 bucket
    before = mx.compile.stats()["misses"]
    for k, shape in enumerate([(2, 3, 7), (61,), (5, 2, 5), (8, 8)]):
        a, b, _, out, _, _ = _run(sym, shape, k)
        np.testing.assert_allclose(out, _reference(a, b), rtol=1e-5, atol=1e-6)
    assert mx.compile.stats()["misses"] == before


def test_grad_req_add_sums_into_the_buffers():
    sym = _graph()
    _, _, _, _, ga_w, gb_w = _run(sym, (4, 3), 2)
    _, _, _, _, ga, gb = _run(sym, (4, 3), 2, req="add")
    np.testing.assert_allclose(ga, 1 + ga_w, rtol=1e-5)
    np.testing.assert_allclose(gb, 1 + gb_w, rtol=1e-5)


def test_integer_arrays_pad_without_dividing_by_zero():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    sym = mx.sym.elemwise_div(a, b) + a % b
    x = np.arange(1, 16).reshape(3, 5).astype(np.int32)
    y = np.full((3, 5), 4, np.int32)
    ex = sym.bind(mx.cpu(), args={"a": mx.nd.array(x, dtype="int32"), "b": mx.nd.array(y, dtype="int32")})
    out = ex.forward()[0]
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.asnumpy(), x // y + x % y)


def test_only_pointwise_graphs_of_one_small_shape_run_flat():
    x = mx.sym.Variable("x")
    cases = [(mx.sym.sin(x) + 1, (3, 5), True),
             (mx.sym.sum(x, axis=1), (3, 5), False),          # a reduction mixes elements
             (mx.sym.softmax(x), (3, 5), False),               # one shape, not pointwise
             (mx.sym.Dropout(x, p=0.5), (3, 5), False),
             (mx.sym.sin(x), (_flat.MAX_ELEMENTS + 1,), False),
             (mx.sym.sin(x), (64,), False)]                    # already flat at its bucket
    for sym, shape, flat in cases:
        ex = sym.bind(mx.cpu(), args={"x": mx.nd.ones(shape)})
        ex.forward()
        assert (_flat.eligible(ex) is not None) == flat, (sym.list_outputs(), shape)


def test_broadcasting_graphs_keep_their_shapes():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    ex = mx.sym.broadcast_add(a, b).bind(mx.cpu(), args={"a": mx.nd.ones((3, 1)), "b": mx.nd.ones((1, 4))})
    assert _flat.eligible(ex) is None
    assert ex.forward()[0].shape == (3, 4)


def test_casts_and_activations_run_flat_with_their_dtypes():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    sym = mx.sym.Activation(mx.sym.cast(a, dtype="float64") % mx.sym.cast(b, dtype="float64"), act_type="tanh")
    x = np.linspace(0.5, 3, 21).reshape(3, 7)
    y = np.full((3, 7), 0.75)
    ex = sym.bind(mx.cpu(), args={"a": mx.nd.array(x), "b": mx.nd.array(y)})
    assert _flat.eligible(ex) is not None
    out = ex.forward()[0]
    assert out.dtype == np.float64 and out.shape == (3, 7)
    want = np.tanh(np.float32(x).astype(np.float64) % np.float32(y).astype(np.float64))
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-12)


@pytest.mark.parametrize("make", [
    lambda s: mx.sym.random.normal(loc=10, scale=0.5, shape=s),
    lambda s: mx.sym.random.uniform_like(data=mx.sym.ones(s), low=9.5, high=10.5),
    lambda s: mx.sym.ones(s) * 10,
])
def test_samplers_and_constants_of_the_graph_shape_run_flat(make):
    x = mx.sym.Variable("x")
    before = None
    for shape in [(30, 31), (33, 31), (7, 9, 11)]:   # one bucket: 1024
        ex = (make(shape) + x).bind(mx.cpu(), {"x": mx.nd.ones(shape)}, {"x": mx.nd.zeros(shape)})
        mx.random.seed(5)
        ex.forward(is_train=True)
        ex.backward(mx.nd.ones(shape))
        first = ex.outputs[0].asnumpy()
        mx.random.seed(5)
        again = ex.forward()[0].asnumpy()
        assert ex._flat[0] and first.shape == shape
        np.testing.assert_array_equal(first, again)          # same seed, same numbers
        assert abs(first.mean() - 11) < 0.1 and first.min() > 8   # the law, plus x
        np.testing.assert_array_equal(ex.grad_dict["x"].asnumpy(), np.ones(shape))
        if before is None:
            before = mx.compile.stats()["misses"]
    assert mx.compile.stats()["misses"] == before             # later shapes compiled nothing


def test_samplers_of_another_shape_keep_the_graph_shaped():
    x = mx.sym.Variable("x")
    ex = mx.sym.broadcast_add(mx.sym.random.normal(shape=(1, 6)), x).bind(mx.cpu(), {"x": mx.nd.ones((5, 6))})
    out = ex.forward()[0].asnumpy()
    assert out.shape == (5, 6) and not ex._flat[0]   # not one shape: runs as bound
    np.testing.assert_array_equal(out, np.broadcast_to(out[:1], (5, 6)))
