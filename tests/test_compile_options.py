"""Small programs compile with XLA:CPU's short pipeline, compute what the default one does,
and each shape compiles once (jbind/compile/_options.py, ndarray/_dispatch.py)."""
import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jbind as mx
from jbind.compile import _options
from jbind.ndarray import _dispatch

_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
_counters: list = []



@pytest.fixture(autouse=True)
def _short_pipeline_on(monkeypatch):
    """These tests are about the short pipeline, which is opt-in: turn it on for them."""
    monkeypatch.setattr(_options, "SMALL_BYTES", 1 << 18)


def test_the_short_pipeline_is_off_unless_asked():
    """A fresh process compiles small programs with the optimizing pipeline unless
    JBIND_SMALL_PROGRAM_BYTES is set (eager and hybridized results then round alike)."""
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "JBIND_SMALL_PROGRAM_BYTES"}
    code = "from jbind.compile import _options; print(_options.SMALL_BYTES)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def _on_compile(event, duration, **kwargs):
    if event == _BACKEND_COMPILE:
        for c in _counters:
            c[0] += 1


jax.monitoring.register_event_duration_secs_listener(_on_compile)


@contextlib.contextmanager
def backend_compiles():
    """Counts XLA compiles (every program, jbind's or JAX's own) inside the block."""
    c = [0]
    _counters.append(c)
    try:
        yield lambda: c[0]
    finally:
        _counters.remove(c)


def _lowered(shape):
    return jax.jit(lambda x, y: (x + y, jnp.max(x, axis=0))).lower(
        jax.ShapeDtypeStruct(shape, np.float32), jax.ShapeDtypeStruct(shape, np.float32))


def test_small_programs_get_the_short_pipeline_and_large_ones_the_loop_emitters(monkeypatch):
    small, large = _lowered((4, 5)), _lowered((512, 512))
    assert _options.program_bytes(small) == 3 * 4 * 5 * 4 + 5 * 4
    monkeypatch.delenv("JBIND_XLA_FUSION_EMITTERS", raising=False)
    assert _options.options_for(small) == _options.SMALL_OPTIONS
    assert _options.options_for(large) == {"xla_cpu_use_fusion_emitters": False}
    monkeypatch.setenv("JBIND_XLA_FUSION_EMITTERS", "1")
    assert _options.options_for(large) == {}


def test_the_short_pipeline_computes_what_the_default_one_does():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(6, 7)).astype(np.float32)
    y = rng.normal(size=(6, 7)).astype(np.float32)
    x[2, 3] = np.nan  # max propagates NaN in both pipelines
    x[4, 1] = np.inf
    fn = jax.jit(lambda a, b: (a + b, a * b, a / b, a > b, jnp.max(a, axis=0), jnp.min(a, axis=1),
                               jnp.sum(a * b, axis=1), jnp.maximum(a, b)))
    low = fn.lower(x, y)
    short = low.compile(compiler_options=_options.SMALL_OPTIONS)(x, y)
    default = low.compile()(x, y)
    for s, d in zip(short, default):
        np.testing.assert_array_equal(np.asarray(s), np.asarray(d))
    assert np.isnan(np.asarray(short[4])[3])


def test_small_jit_compiles_once_per_shape_and_inlines_under_a_trace():
    f = _options.jit(lambda a, b: jnp.sin(a) * b)
    x = jnp.ones((3,), jnp.float32)
    with backend_compiles() as n:
        np.testing.assert_allclose(np.asarray(f(x, 2.0)), np.sin(1.0) * 2, rtol=1e-6)
        f(x, 3.0)                                     # another scalar value: the same program
        f(x + 1, np.float32(2))                      # same array shape
        assert n() <= 3 and len(f._compiled) == 2    # python float and numpy float32: two avals
        f(jnp.ones((4,), jnp.float32), 2.0)
        assert len(f._compiled) == 3
    g = jax.grad(lambda a: f(a, 2.0).sum())(x)      # called with tracers: inlined, nothing cached
    np.testing.assert_allclose(np.asarray(g), 2 * np.cos(1.0), rtol=1e-6)
    assert len(f._compiled) == 3


def test_nd_arithmetic_and_comparison_compile_one_program_per_shape():
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = mx.nd.array(np.full((3, 4), 5, np.float32))
    (x > y).asnumpy(), (x + y).asnumpy()
    with backend_compiles() as n:
        r = x > y                                    # the comparison and its cast: one program, compiled
        s = y > x
        t = x + y
        assert n() == 0
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r.asnumpy(), (np.arange(12).reshape(3, 4) > 5).astype(np.float32))
    np.testing.assert_array_equal(s.asnumpy(), (np.arange(12).reshape(3, 4) < 5).astype(np.float32))
    np.testing.assert_array_equal(t.asnumpy(), np.arange(12).reshape(3, 4) + 5)
    a, b = mx.nd.array(np.ones((7, 2), np.float32)), mx.nd.array(np.ones((1, 2), np.float32))
    with backend_compiles() as n:
        (a <= b).asnumpy()                           # new shapes
        assert n() == 1                               # compare + cast in one program


def test_an_op_call_compiles_once_per_shape_and_the_key_ignores_nothing_that_matters():
    x = mx.nd.array(np.random.rand(2, 3).astype(np.float32))
    mx.nd.softmax(x, axis=1).asnumpy()
    with backend_compiles() as n:
        a = mx.nd.softmax(x, axis=1)
        assert n() == 0
        b = mx.nd.softmax(x, axis=0)                 # another parameter: another program
        assert n() == 1
    np.testing.assert_allclose(a.asnumpy().sum(axis=1), 1, rtol=1e-6)
    np.testing.assert_allclose(b.asnumpy().sum(axis=0), 1, rtol=1e-6)
    assert any(isinstance(e, _dispatch._Entry) and e.compiled is not None for e in _dispatch._cache.values())


def test_numeric_gradient_check_compiles_nothing_the_second_time():
    from jbind.test_utils import check_numeric_gradient
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    rng = np.random.RandomState(1)
    loc = {"data": rng.rand(4, 5), "fc_weight": rng.rand(3, 5), "fc_bias": rng.rand(3)}
    with backend_compiles() as n:
        check_numeric_gradient(sym, loc, numeric_eps=1e-3, rtol=1e-2, atol=1e-2)
        first = n()
        check_numeric_gradient(sym, loc, numeric_eps=1e-3, rtol=1e-2, atol=1e-2)
        assert n() == first and first <= 4


def test_the_bound_can_turn_the_short_pipeline_off(monkeypatch):
    monkeypatch.setattr(_options, "SMALL_BYTES", 0)
    assert _options.options_for(_lowered((2, 2))) == _options.large_options()


def test_executors_keep_the_optimizing_pipeline_outside_test_helpers(monkeypatch):
    """A small executor's program runs often: XLA's optimizing pipeline, short only in test helpers."""
    seen = []
    real = _options.options_for
    monkeypatch.setattr(_options, "options_for", lambda lowered, runs_often=False: seen.append(
        real(lowered, runs_often)) or seen[-1])
    x = mx.sym.Variable("x")
    exe = (x * 3 + 1).simple_bind(mx.cpu(), x=(3,), grad_req="null")
    exe.forward(is_train=False)
    with _options.short_pipeline():
        exe2 = (x * 5 + 2).simple_bind(mx.cpu(), x=(3,), grad_req="null")
        exe2.forward(is_train=False)
    assert len(seen) == 2
    assert seen[0].get("xla_backend_optimization_level") is None
    assert seen[1].get("xla_backend_optimization_level") == 0


def test_all_wrappers_together_keep_a_bounded_number_of_executables(monkeypatch):
    """Many small_jit wrappers (one per function) share one LRU bound on their executables."""
    monkeypatch.setattr(_options, "TOTAL_LIMIT", 3)
    fs = [_options.jit(lambda a, k=k: a + k) for k in range(3)]
    for f in fs:
        for n in (1, 2):
            f(jnp.ones((n,)))
    held = sum(len(f._compiled) for f in fs)
    assert held <= 3
    assert len(fs[-1]._compiled) == 2          # the most recent ones stay
    np.testing.assert_array_equal(fs[0](jnp.ones((1,))), [1.0])   # an evicted one recompiles, same value
