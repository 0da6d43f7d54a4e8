"""LAMB and SGLD, against the rules MXNet 1.9.1 documents, written out in numpy."""
import numpy as np
import pytest

import jbind as mx


def _lamb_numpy(w, g, lr, wd, t, b1=0.9, b2=0.999, eps=1e-6, rescale=1.0, clip=None, lower=None, upper=None,
                bias_correction=True):
    g = g * rescale
    if clip is not None:
        g = np.clip(g, -clip, clip)
    m = (1 - b1) * g
    v = (1 - b2) * g * g
    if bias_correction:
        m, v = m / (1 - b1 ** t), v / (1 - b2 ** t)
    step = m / (np.sqrt(v) + eps) + wd * w
    r1 = np.linalg.norm(w)
    if lower:
        r1 = max(r1, lower)
    if upper:
        r1 = min(r1, upper)
    r2 = np.linalg.norm(step)
    ratio = 1.0 if r1 == 0 or r2 == 0 else r1 / r2
    return w - lr * ratio * step


@pytest.mark.parametrize("kw", [{}, {"wd": 0.05, "clip_gradient": 0.3, "rescale_grad": 0.5},
                                {"bias_correction": False, "upper_bound": 0.5},
                                {"lower_bound": 100.0}])
def test_lamb_first_update(kw):
    rng = np.random.default_rng(0)
    w, g = rng.uniform(-1, 1, (4, 6)).astype(np.float32), rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    opt = mx.optimizer.create("lamb", learning_rate=0.01, **kw)
    weight = mx.nd.array(w)
    state = opt.create_state(0, weight)
    assert len(state) == 2 and all(s.shape == w.shape for s in state)
    opt.update(0, weight, mx.nd.array(g), state)
    want = _lamb_numpy(w.astype(np.float64), g.astype(np.float64), 0.01, kw.get("wd", 0.0), 1,
                       rescale=kw.get("rescale_grad", 1.0), clip=kw.get("clip_gradient"),
                       lower=kw.get("lower_bound"), upper=kw.get("upper_bound"),
                       bias_correction=kw.get("bias_correction", True))
    np.testing.assert_allclose(weight.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_lamb_zero_weight_uses_ratio_one():
    opt = mx.optimizer.LAMB(learning_rate=0.1)
    weight = mx.nd.zeros((3,))
    opt.update(0, weight, mx.nd.array([1.0, -2.0, 0.5]), opt.create_state(0, weight))
    # m_hat / sqrt(v_hat) is sign(grad) at t=1: the ratio 1 keeps the raw step
    np.testing.assert_allclose(weight.asnumpy(), [-0.1, 0.1, -0.1], rtol=1e-4)


def test_sgld_is_half_step_plus_seeded_noise():
    rng = np.random.default_rng(1)
    w, g = rng.uniform(0, 1, (5, 3)).astype(np.float32), rng.uniform(-1, 1, (5, 3)).astype(np.float32)
    lr, wd = 0.04, 0.1
    opt = mx.optimizer.SGLD(learning_rate=lr, wd=wd, clip_gradient=0.5)
    assert opt.create_state(0, mx.nd.array(w)) is None
    weight = mx.nd.array(w)
    mx.random.seed(7)
    opt.update(0, weight, mx.nd.array(g), None)
    mx.random.seed(7)
    noise = mx.random.normal(0, np.sqrt(lr), shape=w.shape).asnumpy()
    want = w - lr / 2 * (np.clip(g, -0.5, 0.5) + wd * w) + noise
    np.testing.assert_allclose(weight.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_sgld_module_fit_updates_imperatively():
    """SGLD's rule is Python with noise: Module.fit does not fuse it into a compiled step."""
    x = np.random.default_rng(2).uniform(0, 1, (8, 4)).astype(np.float32)
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1, name="fc"),
                                        name="out")
    it = mx.io.NDArrayIter(x, x[:, 0], batch_size=4, label_name="out_label")
    mod = mx.mod.Module(net, label_names=("out_label",))
    mod.fit(it, num_epoch=1, optimizer="sgld", optimizer_params={"learning_rate": 0.01})
    assert np.isfinite(mod.get_params()[0]["fc_weight"].asnumpy()).all()
