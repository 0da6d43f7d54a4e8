"""Optimizers against MXNet 1.9.1 golden values, and the functional path against the imperative one.

Golden files: tests/golden/optimizer/<case>.npz from tests/golden/make_optimizer_golden.py
(cases in tests/golden/train_cases.py). Each case runs four updates of two parameters
through `mx.optimizer.get_updater`, as a Module does.
"""
import functools
import importlib.util
import pathlib
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbind as mx

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("jbind_train_cases", GOLDEN / "train_cases.py")
tc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tc)

RTOL, ATOL = 1e-6, 1e-6


@functools.lru_cache(maxsize=None)
def _load(name):
    return dict(np.load(GOLDEN / "optimizer" / f"{name}.npz"))


@functools.lru_cache(maxsize=None)
def _imperative(name):
    """(optimizer, updater, weights after each step) of the imperative run of case `name`."""
    return _run_updater(name, _load(name))


def _run_updater(name, d):
    n = tc.num_params(name)
    opt = tc.make_optimizer(mx, name)
    updater = mx.optimizer.get_updater(opt)
    weights = [mx.nd.array(d[f"w{i}"]) for i in range(n)]
    outs = []
    for s in range(tc.STEPS):
        updater(list(range(n)), [mx.nd.array(d[f"g{s}_{i}"]) for i in range(n)], weights)
        outs.append([w.asnumpy() for w in weights])
    return opt, updater, outs


@pytest.mark.parametrize("name", sorted(tc.OPT_CASES))
def test_matches_mxnet(name):
    d = _load(name)
    opt, updater, outs = _imperative(name)
    for s, ws in enumerate(outs):
        for i, w in enumerate(ws):
            np.testing.assert_allclose(w, d[f"out{s}_{i}"], rtol=RTOL, atol=ATOL, err_msg=f"{name} step {s} param {i}")
    for i in range(tc.num_params(name)):
        leaves = [x.asnumpy() for x in jax.tree.leaves(updater.states[i])]
        expected = [d[k] for k in sorted(k for k in d if k.startswith(f"state{i}_"))]
        assert len(leaves) == len(expected), f"{name}: state layout differs from MXNet's"
        for got, want in zip(leaves, expected):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=ATOL, err_msg=f"{name} state of {i}")
    assert opt.num_update == int(d["num_update"])


@pytest.mark.parametrize("name", sorted(n for n in tc.OPT_CASES if not n.startswith("nadam")) + ["nadam_one"])
def test_functional_path_under_jit_equals_imperative(name):
    """`step_tree` compiled once over a dict of parameters gives the imperative results."""
    d = _load(name)
    n = tc.num_params(name)
    opt = tc.make_optimizer(mx, name)
    names = [tc.PARAMS[i][0] for i in range(n)]
    weights = {nm: jnp.asarray(d[f"w{i}"]) for i, nm in enumerate(names)}
    states = opt.init_states(weights)
    step = jax.jit(opt.step_tree)
    for s in range(tc.STEPS):
        lrs, wds, ts = opt.prepare(list(range(n)))
        grads = {nm: jnp.asarray(d[f"g{s}_{i}"]) for i, nm in enumerate(names)}
        weights, states = step(weights, grads, states, dict(zip(names, lrs)), dict(zip(names, wds)),
                               dict(zip(names, ts)))
    assert step._cache_size() == 1
    _, _, outs = _imperative(name)
    for i, nm in enumerate(names):
        np.testing.assert_allclose(np.asarray(weights[nm]), outs[-1][i], rtol=1e-6, atol=1e-7)


def test_nadam_functional_schedule_is_per_parameter():
    """With several parameters, `step` keeps one m_schedule per parameter; MXNet (and `update`) share one."""
    opt = mx.optimizer.Nadam()
    w = jnp.ones(3)
    state = opt.init_state(w)
    assert len(state) == 3 and float(state[2]) == 1.0
    _, s1 = opt.step(w, w, state, 0.01, 0.0, 1)
    u = mx.optimizer.get_updater(opt)
    u([0, 1], [mx.nd.ones(3), mx.nd.ones(3)], [mx.nd.ones(3), mx.nd.ones(3)])
    np.testing.assert_allclose(opt.m_schedule, float(s1[2]) ** 2, rtol=1e-6)  # multiplied once per parameter
    assert len(u.states[0]) == 2  # MXNet's (mean, var)


def test_registry_and_create():
    assert isinstance(mx.optimizer.create("SGD"), mx.optimizer.SGD)
    assert isinstance(mx.optimizer.Optimizer.create_optimizer("adam", learning_rate=0.1), mx.optimizer.Adam)
    assert mx.optimizer.create("adam", learning_rate=0.1).learning_rate == 0.1
    assert mx.optimizer.create("sgd").learning_rate == 0.01
    with pytest.raises(ValueError, match="Cannot find optimizer"):
        mx.optimizer.create("nosuch")

    @mx.optimizer.register
    class MyPlain(mx.optimizer.SGD):
        pass

    assert isinstance(mx.optimizer.create("myplain"), MyPlain)
    with pytest.warns(UserWarning, match="overriding"):
        mx.optimizer.register(type("MyPlain", (mx.optimizer.SGD,), {}))
    del mx.optimizer.Optimizer.opt_registry["myplain"]


def test_multipliers_and_learning_rate():
    opt = mx.optimizer.SGD(learning_rate=0.5, wd=0.1, param_idx2name={0: "a_weight", 1: "a_bias", 2: "bn_gamma"},
                           sym=tc.build_sym(mx))
    assert opt.wd_mult == {"a_bias": 0.0, "fc_bias": 3.0}
    assert opt.lr_mult == {"fc_weight": 2.0, "fc_bias": 0.5}
    assert [opt._get_wd(i) for i in range(3)] == [0.1, 0.0, 0.1]
    opt.set_lr_mult({1: 3.0})
    assert opt._get_lr(1) == 1.5 and opt._get_lr(0) == 0.5
    opt.set_learning_rate(0.2)
    assert opt.learning_rate == 0.2
    sched = mx.optimizer.create("sgd", lr_scheduler=mx.lr_scheduler.FactorScheduler(2, 0.5, base_lr=1.0))
    with pytest.raises(UserWarning):
        sched.set_learning_rate(0.1)
    sched.num_update = 5
    assert sched.learning_rate == 0.25


def test_update_writes_through_the_handles():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    w = mx.nd.array([1.0, 2.0])
    alias = w
    state = opt.create_state(0, w)
    opt.update(0, w, mx.nd.array([1.0, 1.0]), state)
    np.testing.assert_allclose(alias.asnumpy(), [0.9, 1.9], rtol=1e-6)
    np.testing.assert_allclose(state.asnumpy(), [-0.1, -0.1], rtol=1e-6)
    assert mx.optimizer.SGD().create_state(0, w) is None
    assert opt._index_update_count == {0: 1} and opt.num_update == 1


def test_updater_states_roundtrip():
    opt = mx.optimizer.Adam(learning_rate=0.1)
    u = mx.optimizer.get_updater(opt)
    w = mx.nd.array([1.0, -1.0])
    u(0, mx.nd.array([0.5, 0.5]), w)
    blob = u.get_states()
    u2 = mx.optimizer.get_updater(mx.optimizer.Adam(learning_rate=0.1))
    u2.set_states(blob)
    np.testing.assert_array_equal(u2.states[0][0].asnumpy(), u.states[0][0].asnumpy())
    u3 = mx.optimizer.get_updater(mx.optimizer.SGD())
    u3.set_states(u.get_states(dump_optimizer=True))
    assert isinstance(u3.optimizer, mx.optimizer.Adam) and u3.optimizer.num_update == 1
    w2 = mx.nd.array(w.asnumpy())
    u(0, mx.nd.array([0.5, 0.5]), w)
    u3(0, mx.nd.array([0.5, 0.5]), w2)
    np.testing.assert_array_equal(w.asnumpy(), w2.asnumpy())
    pickle.loads(pickle.dumps(opt))  # the compiled step is not pickled


def test_states_of_another_optimizer_are_an_error_naming_both_layouts():
    u = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    u(0, mx.nd.array([0.5, 0.5]), mx.nd.array([1.0, -1.0]))
    for other in (mx.optimizer.SGD(), mx.optimizer.Adam()):
        u2 = mx.optimizer.get_updater(other)
        u2.set_states(u.get_states())
        with pytest.raises(mx.base.MXNetError, match=r"keeps \d state array.*holds 1 \[\(2,\)\].*momentum"):
            u2(0, mx.nd.array([0.5, 0.5]), mx.nd.array([1.0, -1.0]))


def test_float16_weights_warn_and_keep_dtype():
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    u = mx.optimizer.get_updater(opt)
    w = mx.nd.array([1.0, 2.0], dtype="float16")
    with pytest.warns(UserWarning, match="float16"):
        u(0, mx.nd.array([1.0, 1.0], dtype="float16"), w)
    assert w.dtype == np.float16 and u.states[0].dtype == np.float16


def test_hyperparameter_change_recompiles():
    """The compiled imperative step is keyed on the optimizer's fingerprint."""
    opt = mx.optimizer.SGD(learning_rate=1.0)
    w = mx.nd.array([0.0])
    opt.update(0, w, mx.nd.array([1.0]), None)
    opt.rescale_grad = 0.5
    opt.update(0, w, mx.nd.array([1.0]), None)
    np.testing.assert_allclose(w.asnumpy(), [-1.5])


def test_dcasgd_momentum_rule():
    """MXNet 1.9.1 fails here (truth value of an array); jbind applies the documented rule."""
    opt = mx.optimizer.DCASGD(learning_rate=0.1, momentum=0.5, lamda=0.0)
    w = mx.nd.array([1.0])
    state = opt.create_state(0, w)
    for _ in range(2):
        opt.update(0, w, mx.nd.array([1.0]), state)
    np.testing.assert_allclose(w.asnumpy(), [1.0 - 0.1 - 0.15], rtol=1e-6)
