"""Inference BatchNorm folded into the preceding Convolution (jbind/symbol/_bnfold.py):
which pairs fold, and that the folded program computes what the unfolded lowering does."""
import numpy as np
import pytest

import jbind as mx
from jbind.symbol import _bnfold
from jbind.symbol.graph import graph_of
from jbind.symbol.infer import SHAPE, entry_values
from jbind.symbol.rolled import cache_suffix


@pytest.fixture
def fold_switch():
    old = _bnfold.set_bn_fold(True)
    yield _bnfold.set_bn_fold
    _bnfold.set_bn_fold(old)


def _net(no_bias=False, fix_gamma=False, layout=None, groups=1, extra_reader=False, mean_var=False, axis=1):
    data = mx.sym.Variable("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, num_group=groups, no_bias=no_bias,
                              layout=layout, name="conv")
    bn = mx.sym.BatchNorm(conv, fix_gamma=fix_gamma, eps=1e-3, axis=axis, output_mean_var=mean_var, name="bn")
    out = mx.sym.Activation(bn[0] if mean_var else bn, act_type="relu", name="relu")
    return mx.sym.Group([out, conv]) if extra_reader else out


def _pairs(sym, **shapes):
    g = graph_of(sym)
    plan = _bnfold.plan(g, entry_values(sym, SHAPE, shapes))
    return {g.nodes[b].name: g.nodes[c].name for b, c in plan.items()}


def test_plan_folds_only_a_sole_reader_on_the_channel_axis(fold_switch):
    x = (2, 4, 6, 6)
    assert _pairs(_net(), data=x) == {"bn": "conv"}
    assert _pairs(_net(layout="NHWC", axis=3), data=(2, 6, 6, 4)) == {"bn": "conv"}
    assert _pairs(_net(extra_reader=True), data=x) == {}          # the conv output is also a graph output
    assert _pairs(_net(mean_var=True), data=x) == {}               # output_mean_var keeps the BatchNorm
    assert _pairs(_net(layout="NHWC", axis=1), data=(2, 6, 6, 4)) == {}   # normalises another axis
    assert _pairs(_net(), data=(1, 4, 2, 2)) == {}                 # output (16) smaller than the weight (144)
    assert "+bnfold" in cache_suffix()
    fold_switch(False)
    assert _pairs(_net(), data=x) == {} and "bnfold" not in cache_suffix()


def _run(sym, data_shape, fold, is_train=False, seed=0):
    rng = np.random.default_rng(seed)
    old = _bnfold.set_bn_fold(fold)
    try:
        exe = sym.simple_bind(mx.cpu(), data=data_shape, grad_req="null")
        for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
            value = rng.uniform(-1, 1, arr.shape)
            arr[:] = np.abs(value) + 0.1 if name.endswith("moving_var") else value
        exe.forward(is_train=is_train)
        return [o.asnumpy() for o in exe.outputs]
    finally:
        _bnfold.set_bn_fold(old)


@pytest.mark.parametrize("kw", [{}, {"no_bias": True}, {"fix_gamma": True}, {"groups": 2},
                                {"layout": "NHWC", "axis": 3}])
def test_folded_inference_matches_the_unfolded_lowering(kw, monkeypatch):
    calls = []
    real = _bnfold.lower
    monkeypatch.setattr(_bnfold, "lower", lambda *a: calls.append(1) or real(*a))
    shape = (2, 6, 6, 4) if kw.get("layout") else (2, 4, 6, 6)
    sym = _net(**kw)
    folded, plain = _run(sym, shape, True), _run(sym, shape, False)
    assert calls, "the pair was not folded"
    np.testing.assert_allclose(folded[0], plain[0], rtol=1e-5, atol=1e-5)


def test_training_forward_is_not_folded(monkeypatch):
    monkeypatch.setattr(_bnfold, "lower", lambda *a: pytest.fail("folded in training"))
    a = _run(_net(), (2, 4, 6, 6), True, is_train=True)
    b = _run(_net(), (2, 4, 6, 6), False, is_train=True)
    np.testing.assert_array_equal(a[0], b[0])


def test_float16_data_keeps_the_batchnorm(monkeypatch, fold_switch):
    """BatchNorm normalises float16 data in float32 (its parameters' dtype): no fold, same values."""
    calls = []
    real = _bnfold.lower
    monkeypatch.setattr(_bnfold, "lower", lambda *a: calls.append(real(*a)) or calls[-1])
    sym = _net()
    exe = sym.simple_bind(mx.cpu(), data=(2, 4, 6, 6), type_dict={"data": np.float16}, grad_req="null")
    exe.forward(is_train=False)
    assert calls == [None] and exe.outputs[0].dtype == np.float16



def test_folding_is_off_unless_asked():
    """A fresh process folds nothing unless JBIND_BN_FOLD=1 is set."""
    import os
    import subprocess
    import sys
    code = "from jbind.symbol import _bnfold; print(_bnfold._state['on'])"
    env = {k: v for k, v in os.environ.items() if k != "JBIND_BN_FOLD"}
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    on = subprocess.run([sys.executable, "-c", code], env={**env, "JBIND_BN_FOLD": "1"}, capture_output=True,
                        text=True, check=True)
    assert (off.stdout.strip(), on.stdout.strip()) == ("False", "True")
