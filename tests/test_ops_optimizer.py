"""MXNet's optimizer update operators (jbind/ops/optimizer_ops.py) called through `mx.nd`.

Values are MXNet 1.9.1's: tests/golden/make_optimizer_ops_golden.py ran every op in MXNet
on fixed inputs with two parameter sets and recorded the returned weight and every state
after the call (tests/golden/optimizer_ops/). The states change in place, as MXNet's do.
The CASES samples (forward only: these ops have no gradient) run them in a graph, where
the states are aux states that start at zero.
"""
import json
import os

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, raises_naming
from jbind.base import DTypeError, ShapeError
from jbind.ops import REGISTRY

V = mx.sym.Variable
HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = np.load(os.path.join(HERE, "golden", "optimizer_ops", "optimizer_ops.npz"))
GOLDEN_CASES = json.loads(str(GOLDEN["cases"]))
OPS = sorted({op for _, op, *_ in GOLDEN_CASES})


@pytest.mark.parametrize("cid,op,params,names,states", GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_matches_mxnet_and_updates_the_states_in_place(cid, op, params, names, states):
    given = {n: GOLDEN[f"{cid}/in/{n}"] for n in names}
    nd = {n: mx.nd.array(v, dtype=v.dtype) for n, v in given.items()}
    out = getattr(mx.nd, op)(*[nd[n] for n in names], **params)
    want = GOLDEN[f"{cid}/out"]
    assert out.dtype == want.dtype and out.shape == want.shape
    # float32 elementwise: equal to MXNet's but for rounding (ftrl's z cancels, hence atol)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6, atol=1e-6, err_msg=f"{cid}: weight")
    for s in states:
        np.testing.assert_allclose(nd[s].asnumpy(), GOLDEN[f"{cid}/state/{s}"], rtol=1e-6, atol=1e-6,
                                   err_msg=f"{cid}: state {s}")
    # without out= the weight and the gradient stay as they were (MXNet 1.9.1)
    np.testing.assert_array_equal(nd["weight"].asnumpy(), given["weight"])
    np.testing.assert_array_equal(nd["grad"].asnumpy(), given["grad"])


def test_every_op_is_checked_against_mxnet():
    assert OPS == sorted(n for n in REGISTRY if REGISTRY[n].__module__ == "jbind.ops.optimizer_ops")
    assert len(OPS) == 13


def test_sgd_mom_update_example_from_mxnet():
    """MXNet 1.9.1: returns [1.039, 2.278], leaves w alone, mom becomes [0.039, 0.278]."""
    w, g, m = mx.nd.array([1, 2]), mx.nd.array([.5, -1]), mx.nd.array([.1, .2])
    r = mx.nd.sgd_mom_update(w, g, m, lr=.1, momentum=.9, wd=.01)
    np.testing.assert_allclose(r.asnumpy(), [1.039, 2.278], rtol=1e-6)
    np.testing.assert_allclose(m.asnumpy(), [0.039, 0.278], rtol=1e-6)
    np.testing.assert_array_equal(w.asnumpy(), [1, 2])


def test_out_weight_returns_the_weight_with_new_data():
    w, g = mx.nd.array([1, 2]), mx.nd.array([.5, -1])
    mean, var = mx.nd.zeros((2,)), mx.nd.zeros((2,))
    r = mx.nd.adam_update(w, g, mean, var, out=w, lr=.1)
    assert r is w
    step = 0.1 * 0.1 / np.sqrt(0.001)  # lr * (1-beta1) / sqrt(1-beta2): no bias correction in the op
    np.testing.assert_allclose(w.asnumpy(), [1 - step, 2 + step], rtol=1e-5)  # float32 betas
    np.testing.assert_allclose(mean.asnumpy(), [0.05, -0.1], rtol=1e-6)
    # a training loop: the states carry over from call to call
    mx.nd.adam_update(w, g, mean, var, out=w, lr=.1)
    np.testing.assert_allclose(mean.asnumpy(), [0.095, -0.19], rtol=1e-6)


def test_states_by_keyword_and_parameters_positionally():
    w, g, m = mx.nd.array([1, 2]), mx.nd.array([.5, -1]), mx.nd.array([.1, .2])
    r = mx.nd.sgd_mom_update(weight=w, grad=g, mom=m, lr=.1, momentum=.9, wd=.01)
    np.testing.assert_allclose(r.asnumpy(), [1.039, 2.278], rtol=1e-6)
    r = mx.nd.ftml_update(w, g, mx.nd.zeros((2,)), mx.nd.zeros((2,)), mx.nd.zeros((2,)), 0.1, 0.6, 0.999, 1e-8, 1)
    assert r.shape == (2,)


def test_mixed_precision_keeps_a_float32_master_weight():
    w = mx.nd.array([1, 2], dtype="float16")
    g = mx.nd.array([1e-4, -1e-4], dtype="float16")
    w32 = w.astype("float32")
    for _ in range(10):  # steps too small for float16 add up in weight32
        w = mx.nd.mp_sgd_update(w, g, w32, out=w, lr=.1)
    assert w.dtype == np.float16 and w32.dtype == np.float32
    np.testing.assert_allclose(w32.asnumpy(), [1 - 1e-4, 2 + 1e-4], rtol=1e-6)
    raises_naming(lambda: mx.nd.mp_sgd_update(w, g, w32.astype("float16"), lr=.1), "mp_sgd_update", cls=DTypeError)


def test_a_missing_state_is_an_error_naming_it():
    w, g = mx.nd.array([1, 2]), mx.nd.array([.5, -1])
    raises_naming(lambda: mx.nd.sgd_mom_update(w, g, lr=.1), "sgd_mom_update", "'mom'")
    raises_naming(lambda: mx.nd.adam_update(w, g, mx.nd.zeros((2,)), lr=.1), "adam_update", "'var'")
    raises_naming(lambda: mx.nd.sgd_update(w, g), "sgd_update", "lr")


def test_a_wrong_shape_is_a_shape_error_naming_the_op_and_inputs():
    w, g = mx.nd.ones((2, 3)), mx.nd.ones((2, 3))
    raises_naming(lambda: mx.nd.sgd_update(w, mx.nd.ones((3, 2)), lr=.1), "sgd_update", "(2, 3)", "(3, 2)",
                  "the weight's shape",
                  cls=ShapeError)
    raises_naming(lambda: mx.nd.sgd_mom_update(w, g, mx.nd.ones((2, 4)), lr=.1), "sgd_mom_update", "mom",
                  "(2, 4)", cls=ShapeError)
    raises_naming(lambda: mx.nd.ftrl_update(w, g, mx.nd.ones((2, 3)), mx.nd.ones((3,)), lr=.1), "ftrl_update",
                  "n", "(3,)", cls=ShapeError)


def test_states_are_aux_states_of_a_symbol():
    s = mx.sym.rmspropalex_update(V("w"), V("g"), lr=.1, name="upd")
    assert s.list_arguments() == ["w", "g"]
    assert s.list_auxiliary_states() == ["upd_n", "upd_g", "upd_delta"]
    args, outs, aux = s.infer_shape(w=(2, 3))
    assert args == [(2, 3), (2, 3)] and outs == [(2, 3)] and aux == [(2, 3)] * 3
    _, _, aux_t = mx.sym.mp_sgd_mom_update(V("w"), V("g"), lr=.1).infer_type(w=np.float16)
    assert aux_t == [np.float32, np.float32]


def test_parameters_are_mxnets():
    with open(os.path.join(HERE, "golden", "op_params.json")) as f:
        declared = json.load(f)
    for op in OPS:
        assert list(REGISTRY[op].declared_params()) == declared[op], op
    assert REGISTRY["ftml_update"](lr=.1, t=1).clip_grad == -1.0
    assert REGISTRY["adam_update"](lr=.1).epsilon == 1e-8


# ------------------------------------------------------------------ check_op samples: zero states
def _sign(x):
    return np.sign(x)


LR, MO, WD = 0.1, 0.9, 0.01


def _case(op, ref, **params):
    return Case(f"{op}", lambda: getattr(mx.sym, op)(V("weight"), V("grad"), lr=LR, **params),
                lambda weight, grad: [ref(weight, grad)], {"weight": (3, 4), "grad": (3, 4)}, grad=False)


def _ftrl(w, g, l1=0.01, beta=1.0):
    z = g - np.abs(g) * w / LR
    return np.where(np.abs(z) > l1, (_sign(z) * l1 - z) / ((beta + np.abs(g)) / LR + WD), 0.0)


def _ftml(w, g, b1=0.6, eps=1e-8):
    d = (1 - b1) / LR * (np.abs(g) + eps)
    return -((1 - b1) * g - d * w) / d


CASES = [
    _case("sgd_update", lambda w, g: (1 - LR * WD) * w - LR * g, wd=WD),
    _case("sgd_mom_update", lambda w, g: w - LR * WD * w - LR * g, momentum=MO, wd=WD),
    _case("nag_mom_update", lambda w, g: w - (1 + MO) * LR * (g + WD * w), momentum=MO, wd=WD),
    _case("adam_update", lambda w, g: w - LR * 0.1 * g / (np.sqrt(0.001) * np.abs(g) + 1e-8)),
    _case("rmsprop_update", lambda w, g: w - LR * g / np.sqrt(0.05 * g * g + 1e-8)),
    _case("rmspropalex_update", lambda w, g: w - LR * g / np.sqrt(0.05 * g * g - 0.0025 * g * g + 1e-8)),
    _case("signsgd_update", lambda w, g: (1 - LR * WD) * w - LR * _sign(g), wd=WD),
    _case("signum_update", lambda w, g: (1 - LR * WD) * w + LR * _sign(-(1 - MO) * (WD * w + g)),
          momentum=MO, wd_lh=WD, wd=WD),
    _case("ftrl_update", _ftrl, wd=WD),
    _case("ftml_update", _ftml, t=1),
    _case("mp_sgd_update", lambda w, g: -LR * g, wd=WD),  # weight32 starts at zero
    _case("mp_sgd_mom_update", lambda w, g: -LR * g, momentum=MO, wd=WD),
    _case("mp_nag_mom_update", lambda w, g: -(1 + MO) * LR * g, momentum=MO),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)
