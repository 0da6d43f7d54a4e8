"""`jbind-bench bind`: MXNet's executor-group benchmark (benchmarks/bind_bench.py), for 1 and
N contexts, next to a hand-written JAX jitted call of the same model.

The N-context part runs in a subprocess: several CPU devices must be requested
(XLA_FLAGS) before JAX starts.
"""
from __future__ import annotations

import time

from ._report import Figure
from ._setup import BenchError, batch, import_benchmark, jax_compile_clock, progress, rnn_lm, run_child


def run(cfg) -> list:
    figures = measure(cfg, 1)
    if cfg.contexts > 1:
        res, _ = run_child("bind", cfg, devices=cfg.contexts)
        figures += [Figure.from_json(name, d) for name, d in res.items()]
    return figures


def figure_names(cfg) -> list:
    names = ["group_loop", "group_prebuilt", "sym_gen", "first_group", "first_step", "compiles_cold",
             "compiles_warm", "cache_hits_warm"]
    ctxs = [1] + ([cfg.contexts] if cfg.contexts > 1 else [])
    return [f"bind.{n}ctx.{x}" for n in ctxs for x in names]


def measure(cfg, n_ctx: int) -> list:
    import jax
    import numpy as np

    import jbind as mx
    from jbind import compile as jcompile
    from jbind.module.executor_group import DataParallelExecutorGroup
    jb = import_benchmark("jax_baselines")
    if len(jax.devices("cpu")) < n_ctx:
        raise BenchError(f"bind with {n_ctx} contexts needs {n_ctx} CPU devices; JAX has {len(jax.devices('cpu'))}"
                         f" (set XLA_FLAGS=--xla_force_host_platform_device_count={n_ctx} before JAX starts)")
    layers, hidden, embed, vocab = cfg.bind_model
    n, buckets, loop = cfg.batch, list(cfg.bind_buckets), cfg.bind_loop
    sym_gen = rnn_lm(mx, layers, hidden, embed, vocab)
    contexts = [mx.cpu(i) for i in range(n_ctx)]
    names = [a for a in sym_gen(cfg.bind_default).list_arguments() if a not in ("data", "softmax_label")]

    def make(k, sym=None, shared=None):
        return DataParallelExecutorGroup(symbol=sym if sym is not None else sym_gen(k), contexts=contexts,
                                         workload=[1] * n_ctx, data_shapes=[("data", (n, k))],
                                         label_shapes=[("softmax_label", (n, k))], param_names=names,
                                         for_training=True, inputs_need_grad=False, shared_group=shared)

    def train_once(g, k):
        g.forward(batch(mx, n, k, vocab), is_train=True)
        g.backward()
        g.get_outputs()[0].wait_to_read()

    cpu0 = jax.devices("cpu")[0]
    shapes = jb.param_shapes(layers, hidden, embed, vocab)
    t0 = time.perf_counter()
    shared = make(cfg.bind_default)
    first_group = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready({k: jax.device_put(np.zeros(s, np.float32), cpu0) for k, s in shapes.items()})
    jax_alloc = time.perf_counter() - t0

    # Cold: the first forward+backward of each new bucket compiles.
    first, c0 = [], jcompile.stats()
    for k in progress(buckets, desc=f"bind {n_ctx} ctx: new buckets"):
        g = make(k, shared=shared)
        t0 = time.perf_counter()
        train_once(g, k)
        first.append(time.perf_counter() - t0)
    cold_misses = jcompile.stats()["misses"] - c0["misses"]
    params = {k: jax.device_put(v, cpu0) for k, v in jb.init_params(layers, hidden, embed, vocab).items()}
    data = {k: jax.device_put(np.asarray(batch(mx, n, k, vocab).data[0].asnumpy()), cpu0) for k in buckets}
    grad, jax_first = jb.make_grad(), []
    with jax_compile_clock() as jax_cold:
        for k in buckets:
            t0 = time.perf_counter()
            jax.block_until_ready(grad(params, data[k], data[k]))
            jax_first.append(time.perf_counter() - t0)

    # Warm: MXNet's loop, its two halves apart, and the baseline's dispatch and trace.
    fwd = jb.make_forward()
    for k in buckets:
        fwd(params, data[k]).block_until_ready()
    loop_ms, pre_ms, gen_ms, disp_ms, trace_ms = [], [], [], [], []
    jax_warm = 0
    c1 = jcompile.stats()
    for _ in progress(range(cfg.bind_repeat), desc=f"bind {n_ctx} ctx: warm loops"):
        t0 = time.perf_counter()
        for i in range(loop):
            make(buckets[i % len(buckets)], shared=shared)
        loop_ms.append((time.perf_counter() - t0) * 1e3 / loop)
        t0 = time.perf_counter()
        for i in range(loop):
            sym_gen(buckets[i % len(buckets)])
        gen_ms.append((time.perf_counter() - t0) * 1e3 / loop)
        prebuilt = [sym_gen(buckets[i % len(buckets)]) for i in range(loop)]
        t0 = time.perf_counter()
        for i, s in enumerate(prebuilt):
            make(buckets[i % len(buckets)], sym=s, shared=shared)
        pre_ms.append((time.perf_counter() - t0) * 1e3 / loop)
        del prebuilt  # 500 live symbols would slow the next loop's garbage collections
        with jax_compile_clock() as clock:
            total = 0.0
            for i in range(loop):
                x = data[buckets[i % len(buckets)]]
                t0 = time.perf_counter()
                out = fwd(params, x)
                total += time.perf_counter() - t0
                out.block_until_ready()
            disp_ms.append(total * 1e3 / loop)
            t0 = time.perf_counter()
            for i in range(max(1, loop // 10)):
                jax.make_jaxpr(jb.forward)(params, data[buckets[i % len(buckets)]])
            trace_ms.append((time.perf_counter() - t0) * 1e3 / max(1, loop // 10))
        jax_warm += clock.count
    for k in buckets:  # fresh symbols and groups of compiled buckets: cache hits only
        train_once(make(k, shared=shared), k)
    c2 = jcompile.stats()

    tag, ctx = f"bind.{n_ctx}ctx", f"{n_ctx} ctx"
    disp = "JAX: jitted forward call (dispatch)"
    each = f"mean over a loop of {loop}, buckets {buckets[0]}..{buckets[-1]}"
    return [
        Figure(f"{tag}.group_loop", f"group creation, sym_gen in the loop ({ctx})", "ms", loop_ms, disp_ms, disp,
               note=f"MXNet's figure: {each}"),
        Figure(f"{tag}.group_prebuilt", f"group creation, pre-built symbols ({ctx})", "ms", pre_ms, disp_ms, disp),
        Figure(f"{tag}.sym_gen", f"sym_gen(b), Python graph building ({ctx})", "ms", gen_ms, trace_ms,
               "JAX: trace the model (make_jaxpr)"),
        Figure(f"{tag}.first_group", f"first group, cold ({ctx})", "ms", [first_group * 1e3], [jax_alloc * 1e3],
               "JAX: allocate the parameters", note="shape inference and parameter allocation, no compile"),
        Figure(f"{tag}.first_step", f"first fwd+bwd of a new bucket ({ctx})", "s", first, jax_first,
               "JAX: first call, jitted fwd+bwd", note=f"one sample per bucket {buckets}, compile included"),
        Figure(f"{tag}.compiles_cold", f"compiles, new buckets ({ctx})", "count", [cold_misses], [jax_cold.count],
               "JAX: XLA compiles", note="jbind compiles one executable per context"),
        Figure(f"{tag}.compiles_warm", f"compiles, warm loops + rebinds ({ctx})", "count",
               [c2["misses"] - c1["misses"]], [jax_warm], "JAX: XLA compiles"),
        Figure(f"{tag}.cache_hits_warm", f"cache hits, rebinding each bucket ({ctx})", "count",
               [c2["hits"] - c1["hits"]], note="a fresh sym_gen(b) and group per bucket, then fwd+bwd"),
    ]
