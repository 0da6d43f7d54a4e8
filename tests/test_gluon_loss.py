"""gluon.loss: each loss against its formula in numpy, with weight and sample_weight,
hybridized and not."""
import numpy as np
import pytest

import jbind as mx
from jbind.gluon import loss as gloss

RNG = np.random.RandomState(0)
PRED = RNG.randn(3, 4).astype(np.float32)
LABEL = RNG.randn(3, 4).astype(np.float32)
SIGNS = np.sign(RNG.randn(3, 4)).astype(np.float32)
PROB = RNG.uniform(0.05, 0.95, (3, 4)).astype(np.float32)
BITS = (RNG.rand(3, 4) > 0.5).astype(np.float32)
SW = RNG.uniform(0.5, 2, (3, 1)).astype(np.float32)


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def _log_softmax(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


# (loss, inputs, elementwise numpy loss before weighting; the per-sample mean follows)
CASES = [
    (lambda: gloss.L2Loss(weight=3.0), (PRED, LABEL), lambda p, l: 1.5 * (p - l) ** 2),
    (lambda: gloss.L1Loss(weight=2.0), (PRED, LABEL), lambda p, l: 2.0 * np.abs(p - l)),
    (lambda: gloss.SigmoidBCELoss(weight=0.5), (PRED, BITS),
     lambda p, l: 0.5 * (_softplus(p) - p * l)),
    (lambda: gloss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=True), (PROB, BITS),
     lambda p, l: -(np.log(p) * l + np.log(1 - p) * (1 - l))),
    (lambda: gloss.HuberLoss(rho=0.7), (PRED, LABEL),
     lambda p, l: np.where(np.abs(p - l) > 0.7, np.abs(p - l) - 0.35, (p - l) ** 2 / 1.4)),
    (lambda: gloss.HingeLoss(margin=0.5), (PRED, SIGNS), lambda p, l: np.maximum(0, 0.5 - p * l)),
    (lambda: gloss.SquaredHingeLoss(), (PRED, SIGNS), lambda p, l: np.maximum(0, 1 - p * l) ** 2),
    (lambda: gloss.LogisticLoss(), (PRED, SIGNS), lambda p, l: np.log1p(np.exp(-p * l))),
    (lambda: gloss.LogisticLoss(label_format="binary"), (PRED, BITS), lambda p, l: np.log1p(np.exp(-p * (2 * l - 1)))),
    (lambda: gloss.KLDivLoss(), (np.log(PROB), PROB[::-1].copy()), lambda p, l: l * (np.log(l) - p)),
    (lambda: gloss.KLDivLoss(from_logits=False, axis=1), (PRED, PROB),
     lambda p, l: l * (np.log(l) - _log_softmax(p, 1))),
    (lambda: gloss.SoftmaxCELoss(sparse_label=False), (PRED, PROB),
     lambda p, l: -(_log_softmax(p) * l).sum(-1, keepdims=True)),
]


@pytest.mark.parametrize("make, inputs, formula", CASES)
@pytest.mark.parametrize("hybrid", [False, True])
def test_loss_matches_its_formula_with_sample_weight(make, inputs, formula, hybrid):
    fn, fw = make(), make()               # a hybridized block keeps the argument structure it was traced with
    if hybrid:
        fn.hybridize()
        fw.hybridize()
    want = formula(*inputs)
    nd = [mx.nd.array(a) for a in inputs]
    np.testing.assert_allclose(fn(*nd).asnumpy(), want.mean(1), rtol=1e-5, atol=1e-6)
    got = fw(*nd, mx.nd.array(SW)).asnumpy()
    np.testing.assert_allclose(got, (want * SW).mean(1), rtol=1e-5, atol=1e-6)


def test_softmax_ce_with_class_indices_and_batch_axis():
    idx = np.array([0, 3, 1], np.float32)
    fn = gloss.SoftmaxCrossEntropyLoss(weight=2.0)
    want = -2.0 * _log_softmax(PRED)[np.arange(3), idx.astype(int)]
    np.testing.assert_allclose(fn(mx.nd.array(PRED), mx.nd.array(idx)).asnumpy(), want, rtol=1e-5)
    x = PRED.T.copy()                          # classes on axis 0, the batch on axis 1
    fn = gloss.SoftmaxCELoss(axis=0, batch_axis=1)
    got = fn(mx.nd.array(x), mx.nd.array(idx)).asnumpy()
    np.testing.assert_allclose(got, -_log_softmax(PRED)[np.arange(3), idx.astype(int)], rtol=1e-5)


def test_sigmoid_bce_pos_weight():
    pw = np.array([1.0, 2.0, 3.0, 0.5], np.float32)
    for from_sigmoid, p in ((False, PRED), (True, PROB)):
        s = 1 / (1 + np.exp(-p)) if not from_sigmoid else p
        want = -(pw * BITS * np.log(s) + (1 - BITS) * np.log(1 - s))
        got = gloss.SigmoidBCELoss(from_sigmoid=from_sigmoid)(mx.nd.array(p), mx.nd.array(BITS), None,
                                                             mx.nd.array(pw)).asnumpy()
        np.testing.assert_allclose(got, want.mean(1), rtol=1e-4, atol=1e-6)


def test_triplet_cosine_poisson_sdml():
    pos, neg = LABEL, PROB
    want = np.maximum(0, ((pos - PRED) ** 2 - (neg - PRED) ** 2).sum(1) + 0.3)
    got = gloss.TripletLoss(margin=0.3)(*(mx.nd.array(a) for a in (PRED, pos, neg))).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    lab = np.array([1, -1, -1], np.float32)
    cos = (PRED * LABEL).sum(1) / np.linalg.norm(PRED, axis=1) / np.linalg.norm(LABEL, axis=1)
    want = np.where(lab == 1, 1 - cos, np.maximum(0, cos - 0.1)).reshape(3, 1)
    got = gloss.CosineEmbeddingLoss(margin=0.1)(*(mx.nd.array(a) for a in (PRED, LABEL, lab))).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

    target = np.array([[0, 1, 2, 5]] * 3, np.float32)
    want = np.exp(PRED) - target * PRED
    st = target * np.log(np.maximum(target, 1e-30)) - target + 0.5 * np.log(2 * np.pi * np.maximum(target, 1e-30))
    full = want + np.where(target > 1, st, 0)
    np.testing.assert_allclose(gloss.PoissonNLLLoss()(mx.nd.array(PRED), mx.nd.array(target)).asnumpy(),
                               [want.mean()], rtol=1e-5)
    f = gloss.PoissonNLLLoss(compute_full=True)
    f.hybridize()
    np.testing.assert_allclose(f(mx.nd.array(PRED), mx.nd.array(target)).asnumpy(), [full.mean()], rtol=1e-5)

    d = ((PRED[:, None] - LABEL[None]) ** 2).sum(-1)
    lab = np.eye(3) * 0.7 + (1 - np.eye(3)) * 0.15
    want = 3 * (lab * (np.log(lab) - _log_softmax(-d, 1))).mean(1)
    got = gloss.SDMLLoss()(mx.nd.array(PRED), mx.nd.array(LABEL)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_ctc_loss_of_a_single_step():
    # one time step, one label: the loss is -log softmax(pred)[label]
    pred = RNG.randn(2, 1, 3).astype(np.float32)
    label = np.array([[0], [1]], np.float32)
    want = -_log_softmax(pred[:, 0])[np.arange(2), [0, 1]]
    for hybrid in (False, True):
        fn = gloss.CTCLoss()
        if hybrid:
            fn.hybridize()
        np.testing.assert_allclose(fn(mx.nd.array(pred), mx.nd.array(label)).asnumpy(), want, rtol=1e-5)
    with pytest.raises(mx.MXNetError, match="layout"):
        gloss.CTCLoss(layout="CTN")


def test_bad_label_format_and_weight():
    with pytest.raises(ValueError, match="label_format"):
        gloss.LogisticLoss(label_format="zero_one")
    with pytest.raises(mx.MXNetError, match="weight"):
        gloss.L1Loss(weight="big")(mx.nd.array(PRED), mx.nd.array(LABEL))


def test_softmax_ce_takes_labels_with_a_trailing_axis_of_one():
    # MXNet's pick accepts an index of data's rank whose `axis` is 1 (the "kept" form), so a
    # column of class labels works like a flat vector, imperatively, hybridized and symbolically.
    logits = RNG.randn(5, 3).astype(np.float32)
    classes = np.array([0, 2, 1, 1, 0], np.float32)
    want = -_log_softmax(logits)[np.arange(5), classes.astype(int)]
    for hybrid in (False, True):
        ce = gloss.SoftmaxCELoss()
        if hybrid:
            ce.hybridize()
        got = ce(mx.nd.array(logits), mx.nd.array(classes[:, None])).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    picked = mx.nd.pick(mx.nd.array(logits), mx.nd.array(classes[:, None]), axis=1)
    np.testing.assert_allclose(picked.asnumpy(), logits[np.arange(5), classes.astype(int)])
    s = mx.sym.pick(mx.sym.Variable("x"), mx.sym.Variable("i"), axis=-1, keepdims=True)
    arg_shapes, out_shapes, _ = s.infer_shape(x=(5, 3), i=(5, 1))
    assert arg_shapes == [(5, 3), (5, 1)] and out_shapes == [(5, 1)]
    _, out_shapes, _ = s.infer_shape(x=(5, 3), i=(5,))
    assert out_shapes == [(5, 1)]
