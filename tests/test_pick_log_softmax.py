"""`_pick_log_softmax` (one op for pick(log_softmax)) and SoftmaxCrossEntropyLoss on
NDArrays, which uses it: the same values and gradients as the two ops recorded one by one."""
import numpy as np
import pytest

import jbind as mx
from jbind.gluon import loss as gloss


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
    fused = lambda d, l: mx.nd._internal._pick_log_softmax(d, l, axis=axis, keepdims=keepdims)
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
    y = mx.nd._internal._pick_log_softmax(mx.nd.array(x, dtype="float16"), mx.nd.array(label), axis=-1)
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
    real = mx.nd._internal._pick_log_softmax
    monkeypatch.setattr(mx.nd._internal, "_pick_log_softmax", lambda *a, **k: calls.append(1) or real(*a, **k))
    gloss.SoftmaxCrossEntropyLoss()(mx.nd.ones((2, 3)), mx.nd.array([0, 2]))
    gloss.SoftmaxCrossEntropyLoss(sparse_label=False)(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)) / 3)
    gloss.SoftmaxCrossEntropyLoss(from_logits=True)(mx.nd.ones((2, 3)), mx.nd.array([0, 2]))
    assert calls == [1]
