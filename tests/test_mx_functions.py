"""MXNet's Python-level functions of mx.nd and mx.sym that are not operators (maximum,
power, concatenate, moveaxis, ...), and Symbol details MXNet code relies on."""
import numpy as np
import pytest

import jbind as mx

A = np.array([[1.0, 5.0, 0.0], [3.0, -2.0, 2.0]])
B = np.array([2.0, 1.0, 3.0])

NUMPY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
         "true_divide": np.true_divide, "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
         "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal,
         "lesser": np.less, "lesser_equal": np.less_equal, "logical_and": np.logical_and,
         "logical_or": np.logical_or, "logical_xor": np.logical_xor}


@pytest.mark.parametrize("name", sorted(NUMPY))
def test_nd_binary_functions_broadcast_and_take_numbers(name):
    f, ref = getattr(mx.nd, name), NUMPY[name]
    a, b = mx.nd.array(A), mx.nd.array(B)
    pos = np.abs(A) + 1  # positive bases for power with a scalar exponent on the left
    np.testing.assert_allclose(f(a, b).asnumpy(), ref(A, B).astype(np.float64), rtol=1e-6)
    np.testing.assert_allclose(f(a, 3).asnumpy(), ref(A, 3).astype(np.float64), rtol=1e-6)
    np.testing.assert_allclose(f(2, mx.nd.array(pos)).asnumpy(), ref(2, pos).astype(np.float64), rtol=1e-6)
    assert f(3, 2) == float(ref(3, 2))


def test_nd_modulo():
    np.testing.assert_allclose(mx.nd.modulo(mx.nd.array([5.0, 7.0]), 3).asnumpy(), [2, 1])
    np.testing.assert_allclose(mx.nd.modulo(7, mx.nd.array([4.0, 5.0])).asnumpy(), [3, 2])


def test_nd_binary_rejects_other_types():
    with pytest.raises(TypeError, match="maximum"):
        mx.nd.maximum(mx.nd.ones(2), "x")


@pytest.mark.parametrize("src,dst", [(0, -1), ([0, 1], [-1, -2]), ([2, 0], [0, 1]), (1, 1)])
def test_moveaxis_matches_numpy(src, dst):
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(mx.nd.moveaxis(mx.nd.array(x), src, dst).asnumpy(), np.moveaxis(x, src, dst))


def test_moveaxis_bad_axis():
    with pytest.raises(mx.base.MXNetError, match="moveaxis"):
        mx.nd.moveaxis(mx.nd.ones((2, 3)), 2, 0)


def test_concatenate_eye_linspace_onehot():
    x = mx.nd.array(A)
    assert mx.nd.concatenate([x, x], axis=1).shape == (2, 6)
    np.testing.assert_array_equal(mx.nd.eye(2, 3, -1).asnumpy(), np.eye(2, 3, -1))
    np.testing.assert_allclose(mx.nd.linspace(1, 2, 5).asnumpy(), np.linspace(1, 2, 5), rtol=1e-6)
    np.testing.assert_allclose(mx.nd.linspace(1, 2, 4, endpoint=False).asnumpy(), [1, 1.25, 1.5, 1.75])
    out = mx.nd.zeros((3, 4))
    mx.nd.onehot_encode(mx.nd.array([1, 3, 0]), out)
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4)[[1, 3, 0]])
    assert mx.nd.from_numpy(np.arange(3, dtype=np.int32)).dtype == np.int32


def test_contrib_isinf_isnan_isfinite():
    x = mx.nd.array([1.0, np.inf, np.nan, -np.inf])
    np.testing.assert_array_equal(mx.nd.contrib.isinf(x).asnumpy(), [0, 1, 0, 1])
    np.testing.assert_array_equal(mx.nd.contrib.isnan(x).asnumpy(), [0, 0, 1, 0])
    np.testing.assert_array_equal(mx.nd.contrib.isfinite(x).asnumpy(), [1, 0, 0, 0])


def test_sym_binary_functions():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    av, bv = np.array([[1.0, 4.0]]), np.array([[3.0, 2.0]])
    cases = [(mx.sym.maximum(a, b), np.maximum(av, bv)), (mx.sym.minimum(a, 2.5), np.minimum(av, 2.5)),
             (mx.sym.power(a, b), av ** bv), (mx.sym.pow(2, a), 2 ** av), (mx.sym.power(a, 2), av ** 2),
             (mx.sym.hypot(a, b), np.hypot(av, bv)), (mx.sym.hypot(3, a), np.hypot(3, av))]
    for s, want in cases:
        got = s.eval(a=mx.nd.array(av), b=mx.nd.array(bv))[0] if "b" in s.list_arguments() else \
            s.eval(a=mx.nd.array(av))[0]
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    assert mx.sym.maximum(2, 3) == 3 and mx.sym.pow(2, 3) == 8


def test_sym_eye_linspace():
    np.testing.assert_array_equal(mx.sym.eye(3, k=1).eval()[0].asnumpy(), np.eye(3, k=1))
    np.testing.assert_allclose(mx.sym.linspace(0, 1, 3).eval()[0].asnumpy(), [0, 0.5, 1])


def test_get_children_lists_each_node_once():
    sliced = mx.sym.SliceChannel(mx.sym.var("data"), num_outputs=3, name="s")
    assert sliced.get_children().list_outputs() == ["data"]


def test_gen_atomic_symbol():
    fc = mx.sym.FullyConnected(mx.sym.var("x") * 2, num_hidden=3, name="fc")
    atom = fc._gen_atomic_symbol()
    assert atom.list_arguments() == ["data", "weight", "bias"]
    assert atom.infer_shape(data=(2, 5))[1] == [(2, 3)]
    with pytest.raises(mx.base.MXNetError, match="Variable"):
        mx.sym.var("v")._gen_atomic_symbol()
