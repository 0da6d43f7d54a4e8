"""multi_precision: a float16 weight's optimizer state carries a float32 master copy.

MXNet 1.9.1's rule: the state is `(state of the master copy, master copy)`, the update runs
in float32 on the master with the gradient cast up, and the weight becomes the master
rounded to float16. The imperative API, Python subclasses that only define
`create_state` / `update`, and the functional `init_state` / `step` all keep that layout.
"""
import jax
import numpy as np
import pytest

import jbind as mx


def _arrays(shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0, 1, shape).astype(np.float16)
    g = rng.uniform(-1, 1, shape).astype(np.float16)
    return w, g


def test_sgd_momentum_state_is_momentum_and_master():
    w, _ = _arrays()
    opt = mx.optimizer.SGD(momentum=0.9, multi_precision=True)
    mom, master = opt.create_state_multi_precision(0, mx.nd.array(w, dtype=np.float16))
    assert mom.dtype == np.float32 and master.dtype == np.float32
    np.testing.assert_array_equal(master.asnumpy(), w.astype(np.float32))
    np.testing.assert_array_equal(mom.asnumpy(), np.zeros(w.shape, np.float32))


def test_sgd_update_runs_in_float32_on_the_master():
    w, g = _arrays()
    lr, mom_c, wd = 0.1, 0.9, 0.01
    opt = mx.optimizer.SGD(learning_rate=lr, momentum=mom_c, wd=wd, multi_precision=True)
    weight = mx.nd.array(w, dtype=np.float16)
    state = opt.create_state_multi_precision(0, weight)
    for _ in range(2):
        opt.update_multi_precision(0, weight, mx.nd.array(g, dtype=np.float16), state)
    m = np.zeros(w.shape, np.float32)
    master = w.astype(np.float32)
    for _ in range(2):
        m = mom_c * m - lr * (g.astype(np.float32) + wd * master)
        master = master + m
    np.testing.assert_allclose(state[1].asnumpy(), master, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(state[0].asnumpy(), m, rtol=1e-6, atol=1e-7)
    assert weight.dtype == np.float16
    np.testing.assert_array_equal(weight.asnumpy(), master.astype(np.float16))


def test_without_multi_precision_the_state_stays_float16():
    w, _ = _arrays()
    opt = mx.optimizer.SGD(momentum=0.9)
    with pytest.warns(UserWarning, match="multi_precision"):
        state = opt.create_state_multi_precision(0, mx.nd.array(w, dtype=np.float16))
    assert isinstance(state, mx.nd.NDArray) and state.dtype == np.float16


def test_create_state_alone_has_no_master_copy():
    opt = mx.optimizer.SGD(momentum=0.9, multi_precision=True)
    state = opt.create_state(0, mx.nd.ones((2,), dtype=np.float16))
    assert isinstance(state, mx.nd.NDArray) and state.dtype == np.float16


def test_float32_weights_have_no_master_copy():
    opt = mx.optimizer.Adam(multi_precision=True)
    state = opt.create_state_multi_precision(0, mx.nd.ones((2, 2)))
    assert len(state) == 2 and all(s.dtype == np.float32 for s in state)
    assert state[0].shape == (2, 2)


def test_python_subclass_gets_the_master_layout():
    class HalfStep(mx.optimizer.Optimizer):
        def create_state(self, index, weight):
            return mx.nd.zeros(weight.shape, dtype=weight.dtype)

        def update(self, index, weight, grad, state):
            state[:] = state + grad
            weight[:] = weight - 0.5 * grad

    w, g = _arrays()
    opt = HalfStep(multi_precision=True)
    weight = mx.nd.array(w, dtype=np.float16)
    acc, master = opt.create_state_multi_precision(0, weight)
    assert acc.dtype == np.float32 and master.dtype == np.float32
    opt.update_multi_precision(0, weight, mx.nd.array(g, dtype=np.float16), (acc, master))
    want = w.astype(np.float32) - 0.5 * g.astype(np.float32)
    np.testing.assert_allclose(master.asnumpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(weight.asnumpy(), want.astype(np.float16))


def test_functional_step_matches_the_imperative_update():
    w, g = _arrays(seed=3)
    kw = dict(learning_rate=0.05, wd=0.02, multi_precision=True, clip_gradient=0.5)
    imp = mx.optimizer.Adamax(**kw)
    weight = mx.nd.array(w, dtype=np.float16)
    state = imp.create_state_multi_precision(0, weight)
    imp.update_multi_precision(0, weight, mx.nd.array(g, dtype=np.float16), state)

    fun = mx.optimizer.Adamax(**kw)
    s0 = fun.init_state(jax.numpy.asarray(w))
    assert s0[1].dtype == np.float32
    new_w, new_s = jax.jit(fun.step)(jax.numpy.asarray(w), jax.numpy.asarray(g), s0, 0.05, 0.02, 1)
    assert new_w.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(new_w), weight.asnumpy())
    np.testing.assert_allclose(np.asarray(new_s[1]), state[1].asnumpy(), rtol=1e-6)


def test_module_fit_with_nadam_updates_one_shared_schedule():
    """Nadam's m_schedule is one number for the whole optimizer, multiplied at each update
    of any parameter: Module.fit updates imperatively instead of through the fused step."""
    rng = np.random.default_rng(1)
    x, y = rng.uniform(0, 1, (8, 5)).astype(np.float32), rng.uniform(0, 1, (8,)).astype(np.float32)
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1, name="fc"),
                                        name="out")
    it = mx.io.NDArrayIter(x, y, batch_size=4, label_name="out_label")
    mod = mx.mod.Module(net, label_names=("out_label",))
    mod.fit(it, num_epoch=1, optimizer="nadam", optimizer_params={"learning_rate": 0.01})
    beta1, decay = 0.9, 0.004
    want = 1.0
    for t in (1, 2):          # two batches, each updating fc_weight and fc_bias
        want *= (beta1 * (1 - 0.5 * 0.96 ** (t * decay))) ** 2
    np.testing.assert_allclose(mod._optimizer.m_schedule, want, rtol=1e-6)
