import numpy as np
import pytest

import jbind as mx


def test_creation_and_properties():
    a = mx.nd.array([[1, 2], [3, 4]])
    assert a.shape == (2, 2) and a.dtype == np.float32 and a.size == 4 and a.ndim == 2
    assert a.context == mx.cpu(0)
    assert mx.nd.zeros((2, 3)).asnumpy().sum() == 0
    assert mx.nd.ones(3, dtype="int32").dtype == np.int32
    np.testing.assert_array_equal(mx.nd.full((2,), 7).asnumpy(), [7, 7])
    np.testing.assert_array_equal(mx.nd.arange(0, 3).asnumpy(), [0, 1, 2])
    assert mx.nd.empty((1, 2)).shape == (1, 2)
    assert mx.nd.array([5.0]).asscalar() == 5.0
    with pytest.raises(ValueError, match="not a scalar"):
        mx.nd.ones((2,)).asscalar()


def test_assignment_is_seen_by_every_holder():
    a = mx.nd.zeros((2, 3))
    alias = a
    a[:] = 1.5
    np.testing.assert_array_equal(alias.asnumpy(), np.full((2, 3), 1.5))
    a[:] = np.arange(3)  # broadcast along rows
    np.testing.assert_array_equal(a.asnumpy()[1], [0, 1, 2])
    a[0] = 9
    np.testing.assert_array_equal(a.asnumpy()[0], [9, 9, 9])
    a[1, 2] = -1
    assert a.asnumpy()[1, 2] == -1
    with pytest.raises(mx.base.MXNetError, match=r"cannot assign an array of shape \(4,\)"):
        a[:] = np.ones(4)


def test_arithmetic_and_inplace():
    a = mx.nd.array([1.0, 2.0, 3.0])
    b = mx.nd.array([4.0, 5.0, 6.0])
    np.testing.assert_allclose((a + b).asnumpy(), [5, 7, 9])
    np.testing.assert_allclose((2 - a).asnumpy(), [1, 0, -1])
    np.testing.assert_allclose((a * 2 / b).asnumpy(), [0.5, 0.8, 1.0])
    np.testing.assert_allclose((a ** 2).asnumpy(), [1, 4, 9])
    np.testing.assert_allclose((-a).asnumpy(), [-1, -2, -3])
    np.testing.assert_allclose((a > 1.5).asnumpy(), [0, 1, 1])
    same = a
    a += 1
    assert same is a
    np.testing.assert_allclose(same.asnumpy(), [2, 3, 4])


def test_copies_contexts_reshape_astype():
    a = mx.nd.array(np.arange(6).reshape(2, 3))
    c = a.copy()
    a[:] = 0
    assert c.asnumpy().sum() == 15
    b = mx.nd.zeros((2, 3))
    a.copyto(b)
    assert b.asnumpy().sum() == 0
    on1 = c.as_in_context(mx.cpu(1))
    assert on1.context == mx.cpu(1) and c.as_in_context(mx.cpu(0)) is c
    assert c.reshape((3, 2)).shape == (3, 2)
    assert c.reshape(-1).shape == (6,)
    assert c.reshape((0, -1)).shape == (2, 3)
    assert c.astype("int32").dtype == np.int32
    assert c.T.shape == (3, 2)
    assert "<NDArray 2x3 @cpu(0)>" in repr(c)


def test_imperative_ops():
    x = mx.nd.array([[1.0, 2.0, 3.0]])
    p = mx.nd.softmax(x).asnumpy()
    np.testing.assert_allclose(p.sum(), 1.0, rtol=1e-6)
    y = mx.nd.FullyConnected(x, mx.nd.ones((2, 3)), mx.nd.zeros((2,)), num_hidden=2)
    np.testing.assert_allclose(y.asnumpy(), [[6, 6]])
    with pytest.raises(mx.base.MXNetError, match="expected 3 input arrays"):
        mx.nd.FullyConnected(x, num_hidden=2)


def test_imperative_keyword_inputs_go_by_name():
    """MXNet's generated functions take input arrays by keyword, in any order."""
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    w = mx.nd.array(np.arange(12, dtype=np.float32).reshape(4, 3))
    b = mx.nd.array(np.arange(4, dtype=np.float32))
    want = x.asnumpy() @ w.asnumpy().T + b.asnumpy()
    np.testing.assert_allclose(mx.nd.FullyConnected(bias=b, weight=w, data=x, num_hidden=4).asnumpy(), want)
    np.testing.assert_allclose(mx.nd.FullyConnected(x, bias=b, weight=w, num_hidden=4).asnumpy(), want)
    with pytest.raises(mx.MXNetError, match="unknown input 'wieght'"):
        mx.nd.FullyConnected(x, wieght=w, bias=b, num_hidden=4)
    with pytest.raises(mx.MXNetError, match="input 'data' given twice"):
        mx.nd.FullyConnected(x, w, b, data=x, num_hidden=4)
    with pytest.raises(mx.MXNetError, match=r"expected 3 input arrays"):
        mx.nd.FullyConnected(x, w, num_hidden=4)


def test_imperative_bad_shapes_and_dtypes_are_named_errors():
    """mx.nd runs the op's shape and dtype rules, so bad input names the op and its inputs."""
    x = mx.nd.ones((2, 3))
    with pytest.raises(mx.base.ShapeError, match=r"FullyConnected .*weight.*\(4, 5\).*\n  inputs: data=\(2, 3\)"):
        mx.nd.FullyConnected(x, mx.nd.ones((4, 5)), mx.nd.zeros((4,)), num_hidden=4)
    with pytest.raises(mx.base.ShapeError, match=r"broadcast_add .*\(2, 3\) \(4, 3\)"):
        mx.nd.broadcast_add(x, mx.nd.ones((4, 3)))
    with pytest.raises(mx.base.DTypeError, match="broadcast_add"):
        mx.nd.broadcast_add(x, mx.nd.ones((2, 3), dtype="int32"))
    stats = [mx.nd.ones((3,)), mx.nd.zeros((3,)), mx.nd.zeros((3,)), mx.nd.ones((3,))]
    assert mx.nd.BatchNorm(x, *stats).shape == (2, 3)  # aux states last, positionally
    assert mx.nd.BatchNorm(x, *stats[:2], moving_var=stats[3], moving_mean=stats[2]).shape == (2, 3)


def test_operator_namespaces_as_mxnet():
    """mx.sym.contrib / mx.nd.linalg ...: the `_contrib_` / `_linalg_` ops without the prefix."""
    from jbind.symbol import contrib
    assert contrib is mx.sym.contrib
    data, label = mx.sym.Variable("data"), mx.sym.Variable("label")
    loss = mx.sym.contrib.ctc_loss(data, label, name="ctc")
    assert loss.tojson() == mx.sym.CTCLoss(data, label, name="ctc").tojson()  # the op's own name, as MXNet writes
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((3, 4))
    np.testing.assert_allclose(mx.nd.linalg.gemm2(a, b).asnumpy(), np.full((2, 4), 3.0))
    assert callable(mx.sym.linalg.gemm) and not hasattr(mx.nd.contrib, "gemm")


def test_namespace_symbols_are_named_after_the_short_name_as_mxnet():
    """MXNet 1.9.1 names `mx.sym.linalg.gemm2(a, b)` gemm20 and `mx.sym.linalg_gemm2(a, b)`
    linalg_gemm20; `mx.sym.random.uniform` (a Python wrapper there) _random_uniform0."""
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    with mx.name.NameManager():
        names = [mx.sym.linalg.gemm2(a, b).name, mx.sym.linalg_gemm2(a, b).name, mx.sym.contrib.ctc_loss(a, b).name,
                 mx.sym.contrib.CTCLoss(a, b).name, mx.sym.random.uniform(shape=(2,)).name,
                 mx.sym.sample_uniform(a, b).name]
    assert names == ["gemm20", "linalg_gemm20", "ctc_loss0", "ctcloss0", "_random_uniform0", "sample_uniform0"]
    assert mx.sym.contrib.ctc_loss(a, b, name="c").list_arguments() == ["a", "b"]


def test_parameters_may_follow_the_inputs_positionally_as_mxnet():
    """MXNet's generated functions take parameters after the inputs in declared order:
    `mx.nd.clip(x, 0, 1)`, `mx.sym.reshape(s, (3, 2))`, `Convolution(x, kernel, stride, ...)`."""
    x = mx.nd.array(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(mx.nd.clip(x, 1, 3).asnumpy(), [[1, 1, 2], [3, 3, 3]])
    np.testing.assert_array_equal(mx.nd.sum(x, 1).asnumpy(), [3, 12])
    assert mx.nd.reshape(x, (3, 2)).shape == (3, 2) and mx.nd.transpose(x, (1, 0)).shape == (3, 2)
    np.testing.assert_array_equal(mx.nd.one_hot(mx.nd.array([0, 2]), 3).asnumpy(), [[1, 0, 0], [0, 0, 1]])
    a = mx.sym.Variable("a")
    assert mx.sym.reshape(a, (3, 2)).infer_shape(a=(2, 3))[1] == [(3, 2)]
    conv = mx.sym.Convolution(a, None, None, (3, 3), (2, 2), (1, 1), (1, 1), 4, name="c")  # MXNet's order
    assert conv.infer_shape(a=(1, 2, 8, 8))[1] == [(1, 4, 4, 4)]
    with pytest.raises(mx.MXNetError, match="3 positional parameters after the inputs, but the op has 2"):
        mx.nd.clip(x, 1, 3, 4)
    with pytest.raises(mx.MXNetError, match="parameter 'a_min' given twice"):
        mx.nd.clip(x, 1, a_min=0)
    with pytest.raises(mx.MXNetError, match="an input after positional parameters"):
        mx.sym.FullyConnected(a, 4, mx.sym.Variable("w"))


def test_integer_index_out_of_bounds_is_an_index_error():
    """JAX clamps an out-of-range integer index; NDArray raises IndexError as MXNet and numpy do
    (so iterating a Dataset over an NDArray stops at its end)."""
    x = mx.nd.array(np.arange(12).reshape(4, 3))
    for key in (4, -5, (1, 3), (2, -4)):
        with pytest.raises(IndexError, match="out of bounds"):
            x[key]
    assert x[-4].asnumpy().tolist() == [0, 1, 2] and x[3, -1].asscalar() == 11
    assert len(list(iter(mx.gluon.data.ArrayDataset(x)))) == 4

def test_creation_writes_into_out():
    """zeros / ones / full with `out=` write into `out` and return it, as MXNet's."""
    o = mx.nd.zeros((2, 2))
    assert mx.nd.ones((2, 2), out=o) is o and o.asnumpy().tolist() == [[1, 1], [1, 1]]
    mx.nd.full((2, 2), 2, out=o)
    assert o.asnumpy().sum() == 8
    mx.nd.zeros((2, 2), out=o)
    assert o.asnumpy().sum() == 0


def test_bad_reshape_and_moveaxis_raise_value_error():
    """An NDArray reshape to another size and moveaxis out of bounds raise ValueError (also
    an MXNetError), as MXNet's Python front end does."""
    x = mx.nd.zeros((1, 2, 3))
    for bad in [lambda: x.reshape((2, 2)), lambda: mx.nd.moveaxis(x, 3, 0), lambda: mx.nd.moveaxis(x, 0, [0, 1]),
                lambda: mx.nd.moveaxis(x, [0, 0], [0, 1])]:
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(mx.base.MXNetError):
        x.reshape((5,))

def test_contrib_boolean_mask_keeps_rows_and_scatters_the_gradient():
    data = mx.nd.array([[1, 2], [3, 4], [5, 6]])
    data.attach_grad()
    with mx.autograd.record():
        out = mx.nd.contrib.boolean_mask(data, mx.nd.array([1, 0, 1]))
        (out * 2).sum().backward()
    np.testing.assert_array_equal(out.asnumpy(), [[1, 2], [5, 6]])
    np.testing.assert_array_equal(data.grad.asnumpy(), [[2, 2], [0, 0], [2, 2]])
    with mx.util.np_shape(True):
        assert mx.nd.contrib.boolean_mask(data, mx.nd.zeros((3,))).shape == (0, 2)
    with pytest.raises(mx.base.MXNetError, match="boolean_mask"):
        mx.nd.contrib.boolean_mask(data, mx.nd.ones((2,)))
