"""`jbind-bench step`: one training step of the seed model per bucket, against the same model
written by hand in JAX, in the same process; the ratio is the binder's overhead.

jbind: `BucketingModule.train_step` (forward, backward and SGD in one fused XLA call) on
the seed model of benchmarks/models.py (LSTM written with ops; 5 layers, hidden 200,
embed 200, vocab 50, batch 32). Baseline: benchmarks/jax_baselines.py (one `lax.scan`
per layer), jitted with the parameters donated, starting from jbind's initial parameters.
Steps of the two alternate, so both see the same machine load; each is timed until its
outputs are ready.
"""
from __future__ import annotations

import time

from ._report import Figure
from ._setup import batch, import_benchmark, lowering_name, progress, seed_model


def figure_names(cfg) -> list:
    return [f"step.T{t}" for t in cfg.step_buckets] + ["step.overhead", "step.exec_fb", "step.fb_update"]


def run(cfg) -> list:
    import jax
    import numpy as np

    import jbind as mx
    jb = import_benchmark("jax_baselines")
    layers, hidden, embed, vocab = cfg.step_model
    n, buckets = cfg.batch, list(cfg.step_buckets)
    gen = seed_model(mx, layers, hidden, embed, vocab)
    mod = mx.mod.BucketingModule(lambda t: (gen(t), ("data",), ("softmax_label",)), default_bucket_key=max(buckets),
                                 context=mx.cpu(0))
    mod.bind([("data", (n, max(buckets)))], [("softmax_label", (n, max(buckets)))])
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    arg_params, _ = mod.get_params()
    params = {k: jax.device_put(np.array(v.asnumpy())) for k, v in arg_params.items()}
    step = jb.make_train_step(lr=0.01, wd=0.0, rescale_grad=1.0 / n)

    def jbind_step(b):
        mod.train_step(b)
        mod.get_outputs()[0].wait_to_read()

    def jax_step(x, y):
        nonlocal params
        params, probs = step(params, x, y)
        probs.block_until_ready()
        return probs

    out, ratios, parity = [], [], None
    bar = progress(total=len(buckets) * (1 + cfg.step_repeat), desc="step: per bucket")
    for t in buckets:
        b = batch(mx, n, t, vocab)
        x, y = jax.device_put(b.data[0].asnumpy()), jax.device_put(b.label[0].asnumpy())
        jbind_step(b)             # compiles (and, for the first bucket, both start from the same parameters)
        probs = jax_step(x, y)
        if parity is None:
            parity = float(np.abs(mod.get_outputs()[0].asnumpy() - np.asarray(probs)).max())
        bar.update()
        js, xs = [], []
        for _ in range(cfg.step_repeat):
            t0 = time.perf_counter()
            jbind_step(b)
            js.append((time.perf_counter() - t0) * 1e3)
            t0 = time.perf_counter()
            jax_step(x, y)
            xs.append((time.perf_counter() - t0) * 1e3)
            bar.update()
        f = Figure(f"step.T{t}", f"train step, T={t}", "ms", js, xs, "JAX: lax.scan LSTM, jitted step")
        ratios.append(f.ratio)
        out.append(f)
    bar.close()
    out[0].note = (f"seed model {layers}x{hidden}, embed {embed}, vocab {vocab}, batch {n}; jbind loop lowering "
                   f"{lowering_name()}; first-step outputs differ from the baseline's by {parity:.1e} at most")
    out.append(Figure("step.overhead", "binder overhead: jbind / JAX step time", "x", ratios,
                      note="the ratio of the medians above, one sample per bucket; 1 = no overhead"))
    out += _unfused(mx, jax, np, jb, mod, gen, n, min(buckets), vocab, cfg.step_repeat)
    return out


def _unfused(mx, jax, np, jb, mod, gen, n, t, vocab, repeat) -> list:
    """The same model's step taken apart, at the smallest bucket: an executor's forward +
    backward against jitted `loss_and_grads`, and `Module.forward_backward` + `update`
    (MXNet's explicit loop) against the jitted SGD step."""
    exe = gen(t).simple_bind(mx.cpu(0), data=(n, t), softmax_label=(n, t))
    args, _ = mod.get_params()
    for name, h in exe.arg_dict.items():
        if name in args:
            h[:] = args[name]
    b = batch(mx, n, t, vocab)
    exe.arg_dict["data"][:] = b.data[0]
    exe.arg_dict["softmax_label"][:] = b.label[0]
    x, y = jax.device_put(b.data[0].asnumpy()), jax.device_put(b.label[0].asnumpy())
    params = {k: jax.device_put(np.array(v.asnumpy())) for k, v in args.items()}
    grads_fn = jax.jit(jb.loss_and_grads)
    step = jb.make_train_step(lr=0.01, wd=0.0, rescale_grad=1.0 / n)

    def exe_fb():
        exe.forward(is_train=True)
        exe.backward()
        exe.grad_arrays[-1].wait_to_read()

    def jax_fb():
        jax.block_until_ready(grads_fn(params, x, y))

    def mod_fb():
        mod.forward_backward(b)
        mod.update()
        mod.get_outputs()[0].wait_to_read()

    def jax_step():
        nonlocal params
        params, probs = step(params, x, y)
        probs.block_until_ready()

    out = []
    for name, label, ours, theirs, base in (
            ("step.exec_fb", f"executor forward + backward, T={t}", exe_fb, jax_fb, "JAX: jitted loss_and_grads"),
            ("step.fb_update", f"Module.forward_backward + update, T={t}", mod_fb, jax_step,
             "JAX: lax.scan LSTM, jitted step")):
        ours(), theirs()  # compile both
        js, xs = [], []
        for _ in range(max(repeat, 3) * 5):
            t0 = time.perf_counter()
            ours()
            js.append((time.perf_counter() - t0) * 1e3)
            t0 = time.perf_counter()
            theirs()
            xs.append((time.perf_counter() - t0) * 1e3)
        out.append(Figure(name, label, "ms", js, xs, base))
    return out
