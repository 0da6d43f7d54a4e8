"""mx.nd.CachedOp: a Symbol called on NDArrays, with out= and autograd."""
import numpy as np
import pytest

import jbind as mx


def _fc():
    x = mx.sym.Variable("x")
    return mx.sym.FullyConnected(x, num_hidden=2, name="fc") * 3


def test_inputs_in_list_inputs_order_and_out():
    op = mx.nd.CachedOp(_fc())
    x, w, b = mx.nd.array([[1.0, 2.0]]), mx.nd.array([[1.0, 0.0], [0.0, 1.0]]), mx.nd.array([0.5, -0.5])
    assert _fc().list_inputs() == ["x", "fc_weight", "fc_bias"]
    assert op(x, w, b).asnumpy().tolist() == [[4.5, 4.5]]
    b[:] = 0                                    # a new call reads the arrays' current values
    out = mx.nd.zeros((1, 2))
    assert op(x, w, b, out=out) is out and out.asnumpy().tolist() == [[3, 6]]


def test_several_outputs_and_gradients_under_record():
    x = mx.sym.Variable("x")
    op = mx.nd.CachedOp(mx.sym.Group([x * x, mx.sym.sum(x)]))
    a = mx.nd.array([1.0, 2.0, 3.0])
    a.attach_grad()
    with mx.autograd.record():
        sq, total = op(a)
        y = sq.sum() + total
    y.backward()
    assert total.asnumpy().tolist() == [6] and a.grad.asnumpy().tolist() == [3, 5, 7]


def test_wrong_inputs_are_named():
    op = mx.nd.CachedOp(_fc())
    with pytest.raises(mx.base.MXNetError, match=r"3 inputs \['x', 'fc_weight', 'fc_bias'\], got 1"):
        op(mx.nd.ones((1, 2)))
    with pytest.raises(mx.base.MXNetError, match="must be NDArrays"):
        op(mx.nd.ones((1, 2)), np.ones((2, 2)), mx.nd.ones((2,)))
