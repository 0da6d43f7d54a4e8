"""Cast's gradient through integers, as MXNet 1.9.1: an integer argument read by Cast gets the
head gradient truncated to its dtype; a Cast to an integer output takes an integer head
gradient and hands it on; integers that reach other ops still get no gradient."""
import numpy as np
import pytest

import jbind as mx

X = np.array([[-9.7, -0.5, 0.4], [2.6, 7.99, -3.2]])


def _run(src, dst, grad_req="write"):
    x = mx.sym.Variable("x", dtype=src)
    exe = mx.sym.Cast(x, dtype=dst).simple_bind(mx.cpu(), x=X.shape, grad_req=grad_req)
    exe.arg_arrays[0][:] = X
    exe.forward(is_train=True)
    exe.backward(mx.nd.array(X * 1.5, dtype=dst))
    return exe


@pytest.mark.parametrize("src,dst", [(np.int32, np.float32), (np.int32, np.int32), (np.float32, np.int32),
                                     (np.float16, np.int32), (np.int32, np.float16), (np.int64, np.float64)])
def test_cast_gradient_crosses_integers(src, dst):
    exe = _run(src, dst)
    assert exe.outputs[0].dtype == dst and exe.grad_arrays[0].dtype == src
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), X.astype(src).astype(dst))
    # the head gradient in the output's dtype, cast (truncated) to the input's
    np.testing.assert_allclose(exe.grad_arrays[0].asnumpy(), (X * 1.5).astype(dst).astype(src), rtol=1e-3)


def test_integer_gradient_adds_with_grad_req_add():
    exe = _run(np.int32, np.float32, grad_req="add")
    exe.forward(is_train=True)
    exe.backward(mx.nd.array(X * 1.5))
    np.testing.assert_array_equal(exe.grad_arrays[0].asnumpy(), 2 * (X * 1.5).astype(np.int32))


def test_cast_chain_through_an_integer():
    # float -> int32 -> float: the truncated head gradient comes back to the float input
    x = mx.sym.Variable("x")
    y = mx.sym.Cast(mx.sym.Cast(x, dtype="int32"), dtype="float32") * 2
    exe = y.simple_bind(mx.cpu(), x=X.shape)
    exe.arg_arrays[0][:] = X
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), 2 * X.astype(np.int32))
    exe.backward(mx.nd.array(np.full(X.shape, 0.8)))
    np.testing.assert_array_equal(exe.grad_arrays[0].asnumpy(), np.ones(X.shape))  # trunc(1.6)


def test_integers_read_by_other_ops_get_no_gradient():
    data = mx.sym.Variable("data")
    idx = mx.sym.Variable("idx", dtype="int32")
    y = mx.sym.broadcast_add(mx.sym.take(data, idx), mx.sym.Cast(idx, dtype="float32").reshape((-1, 1)))
    exe = y.simple_bind(mx.cpu(), data=(4, 2), idx=(3,))
    exe.arg_dict["data"][:] = np.arange(8).reshape(4, 2)
    exe.arg_dict["idx"][:] = np.array([3, 0, 1])
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((3, 2)))
    assert not exe.grad_dict["idx"].asnumpy().any()  # also read by take: no gradient, as before
    np.testing.assert_array_equal(exe.grad_dict["data"].asnumpy(), [[1, 1], [1, 1], [0, 0], [1, 1]])
