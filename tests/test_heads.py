"""FullyConnected + SoftmaxOutput lowered as one loss head (jbind/symbol/_heads.py)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbind as mx
from jbind.symbol import _heads, lower
from jbind.symbol.graph import graph_of
from jbind.symbol.infer import SHAPE, entry_values


def _train(sym, shapes, label, fused):
    """(outputs, gradients of every argument) of one training pass, fused or node by node."""
    old = _heads.set_head_fusion(fused)
    try:
        g = graph_of(sym)
        sh = entry_values(sym, SHAPE, shapes)
        n = len(g.arg_names)
        train = lower.make_train(g, (True,) * n, (False,) * n, (True,) * len(g.heads), sh)
        rng = np.random.default_rng(0)
        args = tuple(jnp.asarray(label) if name.endswith("label") else
                     jnp.asarray(rng.standard_normal(sh[g.offsets[vi]]).astype(np.float32))
                     for name, vi in zip(g.arg_names, g.arg_index))
        outs, grads, _ = jax.jit(lambda a: train(a, (), jax.random.key(0), (), ()))(args)
        return outs, dict(zip(g.arg_names, grads)), _heads.plan(g) if fused else None
    finally:
        _heads.set_head_fusion(old)


LABEL = np.array([0, 2, 6, 7, -1, 3], np.float32)  # 7 and -1 are outside the 7 classes


@pytest.mark.parametrize("kw", [{}, dict(use_ignore=True, ignore_label=2, normalization="valid", grad_scale=0.5),
                                dict(normalization="batch"), dict(grad_scale=3.0, use_ignore=True, ignore_label=0)])
@pytest.mark.parametrize("fc_kw, shape", [({}, (6, 3, 2)), (dict(no_bias=True), (6, 4)),
                                          (dict(flatten=False), (6, 5))])
def test_fused_head_equals_the_two_nodes(kw, fc_kw, shape):
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=7, name="fc", **fc_kw)
    sym = mx.sym.SoftmaxOutput(fc, name="sm", **kw)
    outs, grads, plan = _train(sym, {"data": shape}, LABEL, True)
    assert len(plan) == 1
    want_outs, want, _ = _train(sym, {"data": shape}, LABEL, False)
    np.testing.assert_allclose(outs[0], want_outs[0], rtol=1e-6, atol=1e-7)
    assert sorted(grads) == sorted(want)
    for name in want:
        np.testing.assert_allclose(grads[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert not np.any(grads["sm_label"])


def test_probability_labels_and_other_heads_are_lowered_node_by_node():
    x = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(x, num_hidden=7, name="fc")
    soft = mx.sym.SoftmaxOutput(fc, name="sm")
    probs = np.full((6, 7), 1 / 7, np.float32)  # label shaped as the data: probabilities
    outs, grads, plan = _train(soft, {"data": (6, 4), "sm_label": (6, 7)}, probs, True)
    want_outs, want, _ = _train(soft, {"data": (6, 4), "sm_label": (6, 7)}, probs, False)
    assert plan and all(np.array_equal(grads[k], want[k]) for k in want)
    # The FC output read elsewhere, multi_output, label smoothing: no fusion.
    for sym in (mx.sym.Group([soft, fc]), mx.sym.SoftmaxOutput(fc, multi_output=True),
                mx.sym.SoftmaxOutput(fc, smooth_alpha=0.1), mx.sym.SoftmaxOutput(fc, out_grad=True),
                mx.sym.SoftmaxOutput(mx.sym.Activation(fc, act_type="relu"))):
        assert _heads.plan(graph_of(sym)) == {}


def test_the_language_model_head_fuses_and_can_be_switched_off():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(num_hidden=8, prefix="l0_"))
    embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=20, output_dim=8, name="embed")
    out, _ = stack.unroll(5, inputs=embed, merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(out, shape=(-1, 8)), num_hidden=20, name="pred")
    sym = mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,)),
                               name="softmax")
    g = graph_of(sym)
    (sm, fc), = _heads.plan(g).items()
    assert g.nodes[sm].name == "softmax" and g.nodes[fc].name == "pred"
    old = _heads.set_head_fusion(False)
    try:
        assert _heads.plan(g) == {} and _heads.cache_suffix() == "+nohead"
    finally:
        _heads.set_head_fusion(old)
    label = np.random.default_rng(1).integers(0, 20, (3, 5)).astype(np.float32)
    outs, grads, _ = _train(sym, {"data": (3, 5), "softmax_label": (3, 5)}, label, True)
    want_outs, want, _ = _train(sym, {"data": (3, 5), "softmax_label": (3, 5)}, label, False)
    np.testing.assert_allclose(outs[0], want_outs[0], rtol=1e-6, atol=1e-7)
    for name in want:
        np.testing.assert_allclose(grads[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
