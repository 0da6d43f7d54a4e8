"""Executor.debug_str reports memory for every kind of bound program."""
import numpy as np
import pytest

import jbind as mx


def _net():
    with mx.AttrScope(ctx_group="a"):
        x = mx.sym.Variable("x") * 2
    with mx.AttrScope(ctx_group="b"):
        y = x + mx.sym.Variable("y")
    return y


@pytest.mark.filterwarnings("ignore:group2ctx")
@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_debug_str_with_ctx_groups_and_gradients(grad_req):
    net = _net()
    args = [mx.nd.ones((2, 3)), mx.nd.ones((2, 3))]
    grads = [mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3))]
    exe = net.bind(mx.cpu(0), args=args, args_grad=grads, grad_req=grad_req,
                   group2ctx={"a": mx.cpu(0), "b": mx.cpu(1)})
    text = exe.debug_str()
    assert text.rstrip().endswith("MB allocated") and "Total" in text
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.full((2, 3), 3.0, np.float32))
