"""Zero-gradient propagation (arguments behind BlockGrad get no backward) and
Executor.debug_str's `Total N MB allocated`."""
import re

import numpy as np

import jbind as mx


def _mb(exe):
    return int(re.search(r"Total (\d+) MB allocated", exe.debug_str()).group(1))


def test_an_argument_behind_blockgrad_is_not_differentiated_and_gets_zeros():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    y = mx.sym.sum(x * 3, axis=1) + mx.sym.BlockGrad(mx.sym.sum(mx.sym.exp(w), axis=1))
    exe = y.simple_bind(mx.cpu(), x=(2, 3), w=(2, 3), grad_req={"x": "write", "w": "write"})
    assert exe._plan.diff == (True, False) and exe._plan.zero_write == (False, True)
    exe.grad_dict["w"][:] = 7.0  # 'write' replaces it, as MXNet's zero gradient does
    exe.forward(is_train=True, x=np.ones((2, 3)), w=np.ones((2, 3)))
    exe.backward(mx.nd.ones((2,)))
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(exe.grad_dict["w"].asnumpy(), np.zeros((2, 3)))
    add = y.simple_bind(mx.cpu(), x=(2, 3), w=(2, 3), grad_req="add")
    add.grad_dict["w"][:] = 7.0
    add.forward(is_train=True)
    add.backward(mx.nd.ones((2,)))
    np.testing.assert_array_equal(add.grad_dict["w"].asnumpy(), np.full((2, 3), 7.0))  # 'add' adds nothing


def test_only_blockgrad_outputs_make_backward_a_no_op():
    x = mx.sym.Variable("x")
    exe = mx.sym.BlockGrad(x * x).simple_bind(mx.cpu(), x=(3,))
    exe.grad_dict["x"][:] = 1.0
    exe.forward(is_train=True, x=np.arange(3))
    exe.backward()
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.zeros(3))


def test_debug_str_counts_what_the_step_allocates():
    x = mx.sym.Variable("x")
    y = x
    for _ in range(3):
        y = y * y
    shape = (1024, 1024)  # 4 MB of float32
    train = y.simple_bind(mx.cpu(), x=shape)
    infer = y.simple_bind(mx.cpu(), x=shape, grad_req="null")
    blocked = mx.sym.BlockGrad(y).simple_bind(mx.cpu(), x=shape)
    assert train.debug_str().startswith(y.debug_str())
    assert _mb(train) == 8  # the output and x's gradient
    assert _mb(infer) == _mb(blocked) == 4  # the output only: BlockGrad leaves nothing to differentiate
