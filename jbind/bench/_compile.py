"""`jbind-bench compile`: cold compile time per bucket of the LSTM language model (rolled and
unrolled loop lowering), and warm restart through the persistent compilation cache.

Cold: for each T, the compile cache is cleared, a fresh `sym_gen(T)` is bound and its
first forward+backward compiles one executable; the figure is the seconds jbind's cache
spent building it (graph lowering, JAX tracing, XLA). Baseline: `jax.jit(...).lower(...)
.compile()` of a fresh closure of the hand-written model (benchmarks/jax_baselines.py).

Warm restart: a subprocess with `JBIND_CACHE_DIR` set to an empty folder binds a
BucketingModule and precompiles every bucket's fused training step; then the hand-written
JAX training step of every bucket is compiled in the same process (same cache folder).
The same subprocess runs again: now both load from the cache.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time

from ._report import Figure
from ._setup import import_benchmark, lm_vocab, loop_switch, lowering, progress, rnn_lm, run_child

BASELINE = "JAX: lax.scan LM, jit lower+compile"


def variants() -> list:
    """(name, loop-lowering switch) pairs to compile with."""
    if loop_switch() is None:
        return [("default", None)]
    return [("rolled", True), ("unrolled", False)]


def figure_names(cfg) -> list:
    cold = [f"compile.{v}.T{t}" for t in cfg.compile_lengths for v, _ in variants()]
    return cold + ["compile.restart.cold", "compile.restart.warm"]


def run(cfg) -> list:
    return cold(cfg) + restart(cfg)


def _specs(jb, cfg, vocab, seq_len):
    import jax
    import numpy as np
    layers, hidden, embed = cfg.lm_model
    params = {k: jax.ShapeDtypeStruct(s, np.float32) for k, s in jb.param_shapes(layers, hidden, embed, vocab).items()}
    data = jax.ShapeDtypeStruct((cfg.batch, seq_len), np.float32)
    return params, data


def jax_compile(fn, *specs, donate=()):
    """Seconds to trace, lower and compile a fresh closure of `fn` (no in-memory cache reuse)."""
    import jax

    def fresh(*a):
        return fn(*a)
    t0 = time.perf_counter()
    jax.jit(fresh, donate_argnums=donate).lower(*specs).compile()
    return time.perf_counter() - t0


def cold(cfg) -> list:
    import jbind as mx
    from jbind import compile as jcompile
    jb = import_benchmark("jax_baselines")
    layers, hidden, embed = cfg.lm_model
    vocab, n = lm_vocab(), cfg.batch
    sym_gen = rnn_lm(mx, layers, hidden, embed, vocab)
    out = []
    steps = progress(total=len(cfg.compile_lengths) * (1 + len(variants())) * cfg.compile_repeat,
                     desc="compile: cold, per bucket")
    for t in cfg.compile_lengths:
        params, data = _specs(jb, cfg, vocab, t)
        base = []
        for _ in range(cfg.compile_repeat):
            base.append(jax_compile(jb.loss_and_grads, params, data, data))
            steps.update()
        for name, on in variants():
            xs = []
            for _ in range(cfg.compile_repeat):
                jcompile.clear()
                with lowering(on):
                    exe = sym_gen(t).simple_bind(mx.cpu(), data=(n, t), softmax_label=(n, t))
                    before = jcompile.stats()["compile_seconds"]
                    exe.forward(is_train=True)
                    exe.backward()
                    exe.outputs[0].wait_to_read()
                xs.append(jcompile.stats()["compile_seconds"] - before)
                steps.update()
            out.append(Figure(f"compile.{name}.T{t}", f"cold compile fwd+bwd, {name}, T={t}", "s", xs, base,
                              BASELINE))
    steps.close()
    return out


def restart(cfg) -> list:
    vocab = lm_vocab()
    folder = tempfile.mkdtemp(prefix="jbind-bench-cache-")
    runs = []
    try:
        for _ in progress(range(1 + cfg.restart_warm_runs), desc="compile: restarts"):
            res, wall = run_child("restart", cfg, env={"JBIND_CACHE_DIR": folder}, extra={"vocab": vocab})
            runs.append(dict(res, wall=wall))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    first, warm = runs[0], runs[1:]
    what = f"every bucket's train step ready, T={','.join(map(str, cfg.compile_lengths))}"
    base = "JAX: compile every bucket's step"
    return [
        Figure("compile.restart.cold", "first process: all buckets ready", "s", [first["jbind_ready"]],
               [first["jax_ready"]], base, note=f"{what}; process wall {first['wall']:.1f} s"),
        Figure("compile.restart.warm", "restarted process, persistent cache", "s", [r["jbind_ready"] for r in warm],
               [r["jax_ready"] for r in warm], base,
               note=f"{what}; process wall {min(r['wall'] for r in warm):.1f} s (min)"),
    ]


def restart_child(cfg, extra) -> dict:
    """Run in a fresh process with JBIND_CACHE_DIR set: seconds until every bucket is compiled."""
    import jax
    import numpy as np

    import jbind as mx
    jb = import_benchmark("jax_baselines")
    jax.block_until_ready(jax.jit(lambda x: x + 1)(np.ones(1, np.float32)))  # start the backend first
    layers, hidden, embed = cfg.lm_model
    vocab, n, lengths = extra["vocab"], cfg.batch, list(cfg.compile_lengths)
    gen = rnn_lm(mx, layers, hidden, embed, vocab)
    t0 = time.perf_counter()
    mod = mx.mod.BucketingModule(lambda t: (gen(t), ("data",), ("softmax_label",)), default_bucket_key=max(lengths),
                                 context=mx.cpu(0))
    mod.bind([("data", (n, max(lengths)))], [("softmax_label", (n, max(lengths)))])
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01, "wd": 1e-5})
    mod.precompile(lengths, wait=True)
    jbind_ready = time.perf_counter() - t0
    t0 = time.perf_counter()
    for t in lengths:
        params, data = _specs(jb, cfg, vocab, t)
        jax_compile(lambda p, x, y: jb.sgd_step(p, x, y, 0.01, 1e-5, 1.0 / n), params, data, data, donate=(0,))
    jax_ready = time.perf_counter() - t0
    folder = os.environ.get("JBIND_CACHE_DIR", "")
    return {"jbind_ready": jbind_ready, "jax_ready": jax_ready,
            "cache_files": len(os.listdir(folder)) if os.path.isdir(folder) else 0}
