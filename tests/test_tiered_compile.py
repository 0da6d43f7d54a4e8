"""Tiered compilation on the CPU: a program compiles quick first and with XLA's optimizing
pipeline at a fixed later call, computing the same numbers at both tiers."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbind as mx
from jbind.compile import _options, _tiered, persistent


def _lowered():
    def f(x, w):
        h = jnp.tanh(x @ w)
        return jnp.sum(h * h, axis=1), jnp.max(h, axis=0)
    x = jnp.asarray(np.random.RandomState(0).randn(16, 32).astype(np.float32))
    w = jnp.asarray(np.random.RandomState(1).randn(32, 8).astype(np.float32))
    return jax.jit(f).lower(x, w), (x, w)


@pytest.fixture
def tiering(monkeypatch):
    """Tiering on (switch at the third call), without a persistent cache folder (which turns it off)."""
    monkeypatch.setattr(_tiered, "TIER_UP_CALLS", 3)
    folder = persistent.persistent_cache_dir()
    if folder is not None:
        persistent.disable_persistent_cache()
    yield
    if folder is not None:
        persistent.enable_persistent_cache(folder)


def test_a_program_runs_quick_until_its_third_call_then_optimized(tiering):
    low, args = _lowered()
    ref = low.compile()(*args)
    prog = _options.compile_lowered(low)
    assert isinstance(prog, _tiered.Tiered)
    before = dict(_tiered.stats)
    outs = []
    for i in range(4):
        outs.append(prog(*args))
        assert prog.optimized == (i >= 2)
    assert _tiered.stats["tier_ups"] == before["tier_ups"] + 1
    for out in outs:
        for a, b in zip(out, ref):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_the_tier_call_is_configurable_and_zero_turns_tiering_off(tiering, monkeypatch):
    low, args = _lowered()
    monkeypatch.setattr(_tiered, "TIER_UP_CALLS", 0)
    assert isinstance(_options.compile_lowered(low), jax.stages.Compiled)
    monkeypatch.setattr(_tiered, "TIER_UP_CALLS", 1)
    prog = _options.compile_lowered(low)
    prog(*args)
    assert prog.optimized  # the first call already runs the optimized executable


def test_the_environment_sets_the_call_and_bad_values_fall_back(monkeypatch):
    monkeypatch.setenv("JBIND_TIER_UP_CALLS", "5")
    assert _tiered._env_calls() == 5
    monkeypatch.setenv("JBIND_TIER_UP_CALLS", "0")
    assert _tiered._env_calls() == 0
    monkeypatch.setenv("JBIND_TIER_UP_CALLS", "many")
    assert _tiered._env_calls() == 0
    monkeypatch.delenv("JBIND_TIER_UP_CALLS")
    assert _tiered._env_calls() == 0  # opt-in


def test_with_a_persistent_cache_programs_compile_optimized_at_once(tiering, tmp_path):
    low, _ = _lowered()
    old = persistent.persistent_cache_dir()
    persistent.enable_persistent_cache(str(tmp_path))
    try:
        assert isinstance(_options.compile_lowered(low, runs_often=True), jax.stages.Compiled)
    finally:
        persistent.disable_persistent_cache()
        if old is not None:
            persistent.enable_persistent_cache(old)


def test_a_failed_tier_up_keeps_the_quick_executable(tiering):
    low, args = _lowered()
    quick = low.compile(compiler_options=dict(_options.SMALL_OPTIONS))

    def broken(_):
        raise RuntimeError("no optimizing compile today")
    prog = _tiered.Tiered(low, quick, broken, 2)
    failures = _tiered.stats["tier_up_failures"]
    first = prog(*args)
    second = prog(*args)  # the tier-up fails here; the call still answers
    assert _tiered.stats["tier_up_failures"] == failures + 1
    for a, b in zip(first, second):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    prog(*args)  # no second attempt
    assert _tiered.stats["tier_up_failures"] == failures + 1


def test_an_executor_tiers_up_and_keeps_its_answers(tiering):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=6, name="fc")
    net = mx.sym.sum(mx.sym.Activation(net, act_type="tanh"), axis=1)
    rs = np.random.RandomState(3)
    args = {"data": mx.nd.array(rs.randn(5, 7)), "fc_weight": mx.nd.array(rs.randn(6, 7)),
            "fc_bias": mx.nd.array(rs.randn(6))}
    exe = net.bind(mx.cpu(), args)
    ups = _tiered.stats["tier_ups"]
    outs = [exe.forward(is_train=False)[0].asnumpy() for _ in range(4)]
    assert _tiered.stats["tier_ups"] >= ups + 1
    want = np.tanh(args["data"].asnumpy() @ args["fc_weight"].asnumpy().T + args["fc_bias"].asnumpy()).sum(1)
    for out in outs:
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_stats_report_tier_ups():
    s = mx.compile.stats()
    assert {"tier_ups", "tier_up_seconds", "tier_up_failures"} <= set(s)


def test_a_fused_training_step_compiles_optimized_at_once(tiering):
    low, _ = _lowered()
    assert isinstance(_options.compile_lowered(low, runs_often=True, tier=False), jax.stages.Compiled)
