"""`jbind-bench memory`: parameter and aux bytes alive across K buckets and G executor groups,
against one copy.

jbind: a BucketingModule of the seed model bound for K buckets (one training step each),
then G more DataParallelExecutorGroups sharing its group. Figures: `ParamStore.nbytes()`
(distinct parameter and aux buffers) and the bytes of every array JAX holds
(`jax.live_arrays()`, after garbage collection) above what was alive before.
Baseline: the hand-written JAX model's parameters, and the same loop by hand (parameters,
and per bucket its batch and last output kept alive, as a bucket's module keeps them).
"""
from __future__ import annotations

import gc
import math

from ._report import Figure
from ._setup import BenchError, batch, import_benchmark, seed_model


def figure_names(cfg) -> list:
    return [f"memory.{n}" for n in ("store_1", "store_k", "store_kg", "live_1", "live_k", "live_kg")]


def _live() -> int:
    import jax
    gc.collect()
    return sum(a.nbytes for a in jax.live_arrays() if not a.is_deleted())


def run(cfg) -> list:
    import jax

    import jbind as mx
    from jbind.module.executor_group import DataParallelExecutorGroup
    jb = import_benchmark("jax_baselines")
    layers, hidden, embed, vocab = cfg.step_model
    n, buckets, groups = cfg.batch, list(cfg.memory_buckets), cfg.memory_groups
    shapes = jb.param_shapes(layers, hidden, embed, vocab)
    one_copy = sum(4 * math.prod(s) for s in shapes.values())

    # Baseline first: the same state, held by hand.
    start = _live()
    params = {k: jax.device_put(v) for k, v in jb.init_params(layers, hidden, embed, vocab).items()}
    jax_params = _live() - start
    step, held = jb.make_train_step(lr=0.01, rescale_grad=1.0 / n), []
    for i, t in enumerate(buckets):
        b = batch(mx, n, t, vocab)
        x, y = jax.device_put(b.data[0].asnumpy()), jax.device_put(b.label[0].asnumpy())
        params, probs = step(params, x, y)
        held.append((x, y, probs))
        if i == 0:
            jax_1 = _live() - start
    jax_k = _live() - start
    del params, held, probs
    gen = seed_model(mx, layers, hidden, embed, vocab)

    # jbind: K buckets of one BucketingModule, then G groups sharing its parameters.
    start = _live()
    mod = mx.mod.BucketingModule(lambda t: (gen(t), ("data",), ("softmax_label",)), default_bucket_key=buckets[-1],
                                 context=mx.cpu(0))
    mod.bind([("data", (n, buckets[-1]))], [("softmax_label", (n, buckets[-1]))])
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    store = mod.buckets[buckets[-1]]._exec_group.store
    for i, t in enumerate(buckets):
        mod.train_step(batch(mx, n, t, vocab))
        mod.get_outputs()[0].wait_to_read()
        if i == 0:
            live_1, store_1 = _live() - start, store.nbytes()
    live_k, store_k = _live() - start, store.nbytes()
    shared = mod.buckets[buckets[-1]]._exec_group
    names = shared.param_names
    kept = [DataParallelExecutorGroup(gen(t), [mx.cpu(0)], [1], [("data", (n, t))], [("softmax_label", (n, t))],
                                      names, True, False, shared_group=shared)
            for t in (buckets * groups)[:groups]]
    if not all(g.store is store for g in kept):
        raise BenchError("executor groups built with shared_group hold another ParamStore")
    live_kg, store_kg = _live() - start, store.nbytes()

    base = "JAX: one copy of the parameters"
    hand = "JAX: the same loop by hand"
    k, g = len(buckets), groups
    return [
        Figure("memory.store_1", "ParamStore.nbytes(), 1 bucket", "bytes", [store_1], [jax_params], base,
               note=f"one copy computed from the shapes: {one_copy:,} bytes"),
        Figure("memory.store_k", f"ParamStore.nbytes(), {k} buckets", "bytes", [store_k], [jax_params], base),
        Figure("memory.store_kg", f"ParamStore.nbytes(), {k} buckets + {g} groups", "bytes", [store_kg],
               [jax_params], base),
        Figure("memory.live_1", "jax.live_arrays() bytes, 1 bucket", "bytes", [live_1], [jax_1], hand,
               note="jbind also holds one gradient per parameter (shared by every bucket), the Module's "
                    "arg_params copy (as MXNet's Module) and a cached zero buffer per distinct shape"),
        Figure("memory.live_k", f"jax.live_arrays() bytes, {k} buckets", "bytes", [live_k], [jax_k], hand),
        Figure("memory.live_kg", f"jax.live_arrays() bytes, {k} buckets + {g} groups", "bytes", [live_kg],
               [jax_k], hand),
    ]
