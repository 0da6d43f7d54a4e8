"""MXNet's deprecated Python operators (`mx.operator.NumpyOp`, `NDArrayOp`), run as Custom ops."""
import numpy as np
import pytest

import jbind as mx


def _run(sym, x, head=None):
    grad = mx.nd.zeros(x.shape)
    exe = sym.bind(mx.cpu(), args=[mx.nd.array(x)], args_grad={sym.list_arguments()[0]: grad})
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward(None if head is None else mx.nd.array(head))
    return out, grad.asnumpy()


def test_numpy_op_default_is_identity():
    with pytest.warns(UserWarning, match="deprecated"):
        op = mx.operator.NumpyOp()
    sym = op.get_symbol(mx.sym.Variable("X"), name="copy")
    assert sym.list_arguments() == ["X"] and sym.list_outputs() == ["copy_output"]
    out, grad = _run(sym, np.full(4, 10.0), head=np.arange(4.0))
    np.testing.assert_array_equal(out, np.full(4, 10.0))
    np.testing.assert_array_equal(grad, np.arange(4.0))


class _Square(mx.operator.NumpyOp):
    def forward(self, in_data, out_data):
        assert isinstance(in_data[0], np.ndarray) and in_data[0].dtype == np.float32
        out_data[0][:] = in_data[0] ** 2

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 2 * in_data[0] * out_grad[0]


def test_numpy_op_subclass_forward_and_backward():
    with pytest.warns(UserWarning):
        sym = _Square()(mx.sym.Variable("x"), name="sq")
    x = np.array([[1.0, -2.0], [3.0, 0.5]])
    out, grad = _run(sym, x, head=np.full((2, 2), 3.0))
    np.testing.assert_allclose(out, x ** 2)
    np.testing.assert_allclose(grad, 6 * x)


class _L2Loss(mx.operator.NDArrayOp):
    """A loss head: no head gradient, gradient (data - label)."""

    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        return [in_shape[0], in_shape[0]], [in_shape[0]]

    def forward(self, in_data, out_data):
        assert isinstance(in_data[0], mx.nd.NDArray)
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = in_data[0] - in_data[1]


def test_ndarray_op_loss_head_with_shape_rule():
    with pytest.warns(UserWarning):
        sym = _L2Loss().get_symbol(mx.sym.Variable("d"), mx.sym.Variable("l"), name="loss")
    assert sym.list_arguments() == ["d", "l"]
    assert sym.infer_shape(d=(2, 3))[0] == [(2, 3), (2, 3)]
    d, l = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    grad = mx.nd.zeros((2, 3))
    exe = sym.bind(mx.cpu(), args=[mx.nd.array(d), mx.nd.array(l)], args_grad={"d": grad}, grad_req={"d": "write", "l": "null"})
    exe.forward(is_train=True)
    exe.backward()  # a loss head needs no head gradient
    np.testing.assert_allclose(grad.asnumpy(), d - l)
