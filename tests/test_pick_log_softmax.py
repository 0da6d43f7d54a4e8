"""`_pick_log_softmax` (one op for pick(log_softmax)) and SoftmaxCrossEntropyLoss on
NDArrays, which uses it: the same values and gradients as the two ops recorded one by one."""
import numpy as np
import pytest

import jbind as mx
from jbind.gluon import loss as gloss
from jbind.ndarray import imperative


def _fused(data, label, **params):
    return imperative.invoke("_pick_log_softmax", [data, label], params)


def _grads(fn, x, label, head):
    x = mx.nd.array(x)
    x.attach_grad()
    with mx.autograd.record():
        y = fn(x, mx.nd.array(label))
    y.backward(mx.nd.array(head))
    return y.asnumpy(), x.grad.asnumpy()


@pytest.mark.parametrize("shape,axis,keepdims,label_shape", [
    ((6, 11), -1, True, (6,)), ((6, 11), -1, False, (6,)), ((6, 11), 1, True, (6, 1)),
    ((3, 7, 4), 1, True, (3, 4)), ((3, 4, 7), 2, False, (3, 4))])
def test_matches_pick_of_log_softmax(shape, axis, keepdims, label_shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape) * 3
    n = shape[axis]
    label = rng.integers(-2, n + 3, label_shape).astype(np.float32)  # out of range: clipped, as pick
    fused = lambda d, l: _fused(d, l, axis=axis, keepdims=keepdims)
    plain = lambda d, l: mx.nd.pick(mx.nd.log_softmax(d, axis=axis), l, axis=axis, keepdims=keepdims)
    out_shape = mx.nd.pick(mx.nd.array(x), mx.nd.array(label), axis=axis, keepdims=keepdims).shape
    head = rng.standard_normal(out_shape)
    (y1, g1), (y2, g2) = _grads(fused, x, label, head), _grads(plain, x, label, head)
    assert y1.shape == y2.shape == out_shape
    np.testing.assert_allclose(y1, y2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g1, g2, rtol=1e-5, atol=1e-6)


def test_float16_is_computed_in_float32():
    x = (np.arange(40, dtype=np.float32).reshape(4, 10) / 7).astype(np.float16)
    label = np.array([0, 3, 9, 5], np.float32)
    y = _fused(mx.nd.array(x, dtype="float16"), mx.nd.array(label), axis=-1)
    assert y.dtype == np.float16
    xf = x.astype(np.float32)
    want = xf[np.arange(4), label.astype(int)] - np.log(np.exp(xf).sum(-1))
    np.testing.assert_allclose(y.asnumpy().astype(np.float32), want, rtol=2e-3)


@pytest.mark.parametrize("weighted", [False, True])
def test_softmax_ce_loss_eager_equals_hybridized(weighted):
    rng = np.random.default_rng(1)
    pred, label = rng.standard_normal((5, 9)), rng.integers(0, 9, (5,))
    sw = rng.uniform(0.5, 2, (5, 1)) if weighted else None
    results = []
    for hybrid in (False, True):
        loss = gloss.SoftmaxCrossEntropyLoss(weight=0.7 if weighted else None)
        if hybrid:
            loss.hybridize()
        args = [mx.nd.array(label)] + ([mx.nd.array(sw)] if weighted else [])
        results.append(_grads(lambda p, l: loss(p, *args), pred, label, np.ones(5)))
    (y1, g1), (y2, g2) = results
    np.testing.assert_allclose(y1, y2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g1, g2, rtol=1e-5, atol=1e-6)


def test_softmax_ce_loss_on_ndarrays_records_one_op(monkeypatch):
    """The eager loss goes through the fused op (and so needs no (rows x classes) log_softmax)."""
    calls = []
    real = imperative.invoke
    monkeypatch.setattr(imperative, "invoke", lambda name, *a: calls.append(name) or real(name, *a))
    gloss.SoftmaxCrossEntropyLoss()(mx.nd.ones((2, 3)), mx.nd.array([0, 2]))
    gloss.SoftmaxCrossEntropyLoss(sparse_label=False)(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)) / 3)
    gloss.SoftmaxCrossEntropyLoss(from_logits=True)(mx.nd.ones((2, 3)), mx.nd.array([0, 2]))
    assert calls.count("_pick_log_softmax") == 1


def test_the_fused_op_is_jbinds_own_and_never_in_a_graph():
    """Not an MXNet op: absent from mx.nd / mx.sym and from the op registry that graphs and
    JSON use (a hybridized loss keeps MXNet's log_softmax + pick)."""
    from jbind.ops import REGISTRY
    from jbind.ops._base import PRIVATE
    assert "_pick_log_softmax" in PRIVATE and "_pick_log_softmax" not in REGISTRY
    assert not hasattr(mx.nd._internal, "_pick_log_softmax") and not hasattr(mx.sym._internal, "_pick_log_softmax")
    loss = gloss.SoftmaxCrossEntropyLoss()
    loss.hybridize()
    loss(mx.nd.ones((2, 3)), mx.nd.array([0, 2]))
    sym = loss(mx.sym.var("pred"), mx.sym.var("label"))
    ops = {n["op"] for n in __import__("json").loads(sym.tojson())["nodes"]}
    assert "log_softmax" in ops and "pick" in ops and "_pick_log_softmax" not in ops
    with pytest.raises(mx.base.MXNetError, match="unknown operator"):
        mx.sym.load_json(sym.tojson().replace('"pick"', '"_pick_log_softmax"'))
