"""_foreach, _while_loop and _cond through check_op: values against a numpy loop,
gradients by finite differences (the op sweep's samples of the three ops)."""
import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op

V = mx.sym.Variable
S = mx.sym


def _foreach_rnn():
    w = V("w")

    def step(x, states):
        h = S.tanh(x * w + states[0])
        return h * 2, [h]
    outs, states = S.contrib.foreach(step, V("d"), [V("h")])
    return S.Group([outs, states[0]])


def _foreach_rnn_ref(d, h, w):
    outs = []
    for x in d:
        h = np.tanh(x * w + h)
        outs.append(h * 2)
    return [np.stack(outs), h]


def _while():
    # i counts 0, 1, 2, 3: four steps of six, the last two rows zeros
    w, x = V("w"), V("x")
    outs, (_, s) = S.contrib.while_loop(
        lambda i, s: i < 3.5,
        lambda i, s: ([s * w], [i + 1, S.tanh(s * w + x)]),
        [V("i"), V("s")], max_iterations=6)
    return S.Group([outs[0], s])


def _while_ref(i, s, w, x):
    rows = []
    for _ in range(4):
        rows.append(s * w)
        s = np.tanh(s * w + x)
    return [np.concatenate([np.stack(rows), np.zeros((2,) + s.shape)]), s]


def _cond():
    (out,) = S.contrib.cond(V("p") > 0, lambda: [V("a") * V("b") + 1], lambda: [V("b") - V("a")])
    return out


CASES = [
    Case("foreach_rnn", _foreach_rnn, _foreach_rnn_ref, {"d": (4, 2, 3), "h": (2, 3), "w": (2, 3)}),
    Case("while_loop_masked_steps", _while, _while_ref, {"i": (1,), "s": (2,), "w": (2,), "x": (2,)},
         inputs={"i": np.zeros(1)}, no_grad=("i",)),
    Case("cond_then", _cond, lambda p, a, b: [a * b + 1], {"p": (1,), "a": (2, 3), "b": (2, 3)},
         inputs={"p": np.ones(1)}, no_grad=("p",)),
    Case("cond_else", _cond, lambda p, a, b: [b - a], {"p": (1,), "a": (2, 3), "b": (2, 3)},
         inputs={"p": -np.ones(1)}, no_grad=("p",)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)
