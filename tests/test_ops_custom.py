"""`Custom` (operators written in Python, `mx.operator`) in the op sweep: forward and gradient
of registered ops against numpy. The ops are registered when this module is imported
(tests/golden/custom_cases.py's, and a two-in, two-out one here). MXNet 1.9.1's own
numbers, the API and the errors are in test_custom_op.py."""
import os
import sys

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden"))
import custom_cases  # noqa: E402

custom_cases.define(mx)
V = mx.sym.Variable


class _MulAdd(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data
        self.assign(out_data[0], req[0], a * b)
        self.assign(out_data[1], req[1], a + b.sum(axis=1, keepdims=True))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data
        gp, gs = out_grad
        self.assign(in_grad[0], req[0], gp * b + gs)
        self.assign(in_grad[1], req[1], gp * a + gs.sum(axis=1, keepdims=True))


@mx.operator.register("sweep_mul_add")
class _MulAddProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["a", "b"]

    def list_outputs(self):
        return ["product", "shifted"]

    def infer_shape(self, in_shape):
        return [in_shape[0], in_shape[0]], [in_shape[0], in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _MulAdd()


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_grad(data, label):
    y = _softmax(data)
    y[np.arange(len(label)), label.astype(int)] -= 1.0
    return {"data": y}


CASES = [
    Case("custom_scaled_square", lambda: mx.sym.Custom(V("data"), op_type="golden_scaled_square", scale=1.5,
                                                       name="sq"),
         lambda data: [1.5 * data ** 2], {"data": (3, 4)}),
    Case("custom_softmax_loss", lambda: mx.sym.Custom(V("data"), V("label"), op_type="golden_softmax", name="sm"),
         lambda data, label: [_softmax(data)], {"data": (4, 3), "label": (4,)},
         inputs={"label": ("int", 0, 3)}, no_grad=("label",), ref_grad=_softmax_grad),
    Case("custom_running_mean",  # the aux state starts at zero: the output is the data
         lambda: mx.sym.Custom(V("data"), op_type="golden_running_mean", name="rm"),
         lambda data: [data], {"data": (3, 2)}),
    Case("custom_two_outputs", lambda: mx.sym.Custom(V("a"), V("b"), op_type="sweep_mul_add", name="ma"),
         lambda a, b: [a * b, a + b.sum(axis=1, keepdims=True)], {"a": (2, 3), "b": (2, 3)}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_custom(case):
    check_op(case)
