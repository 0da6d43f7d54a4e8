"""`jbind-bench train`: bucketing LM training throughput on the bundled corpus.

jbind runs `BucketingModule.fit` as examples/bucketing_rnn.py does (mx.rnn LSTM cells,
SGD lr 0.01 wd 1e-5, Xavier, Perplexity), over N batches recorded once from
BucketSentenceIter and replayed unchanged every epoch. Epoch 0 includes binding and
compilation (fit precompiles every bucket in the background); its end waits until every
bucket is compiled, and the following epochs are the steady state.

Baseline: a hand-written JAX loop (benchmarks/jax_baselines.py: a jitted SGD step per
bucket, parameters donated) over the same batches, with the same host-side perplexity
per batch. Tokens are batch x bucket length (padding included), as the model computes them.
"""
from __future__ import annotations

import contextlib
import random
import statistics
import time

from . import _train_peers
from ._report import Figure
from ._setup import corpus, import_benchmark, jax_compile_clock, progress, quiet_stdout, rnn_lm

NAMES = ("tokens_per_s", "first_batch", "total_with_compile", "total_without_compile", "compile_overhead")


def figure_names(cfg) -> list:
    return [f"train.{n}" for n in NAMES] + _train_peers.figure_names(cfg)


@contextlib.contextmanager
def _kept_random_state():
    import numpy as np
    py, npy = random.getstate(), np.random.get_state()
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)


def record_batches(mx, cfg):
    """(the iterator, its first `train_batches` batches), with a fixed shuffle."""
    import numpy as np
    sentences, vocab = corpus()
    with _kept_random_state(), quiet_stdout():
        random.seed(0)
        np.random.seed(0)
        it = mx.rnn.BucketSentenceIter(sentences, cfg.batch, buckets=list(cfg.train_buckets), invalid_label=0)
    batches = []
    for b in it:
        batches.append(b)
        if len(batches) == cfg.train_batches:
            break
    return it, batches, len(vocab)


def _replay(mx, it, batches):
    class Replay(mx.io.DataIter):
        """The same batches every epoch (BucketSentenceIter reshuffles at reset)."""

        def __init__(self):
            super().__init__(it.batch_size)
            self.provide_data, self.provide_label = it.provide_data, it.provide_label
            self.default_bucket_key, self.buckets = it.default_bucket_key, it.buckets
            self.i = 0

        def reset(self):
            self.i = 0

        def next(self):
            if self.i == len(batches):
                raise StopIteration
            self.i += 1
            return batches[self.i - 1]
    return Replay()


def run_jbind(mx, cfg, it, batches, vocab, bar) -> dict:
    layers, hidden, embed = cfg.lm_model
    gen = rnn_lm(mx, layers, hidden, embed, vocab)
    mod = mx.mod.BucketingModule(lambda t: (gen(t), ("data",), ("softmax_label",)),
                                 default_bucket_key=it.default_bucket_key, context=mx.cpu(0))
    ends, epoch_ends, compile_s = [], [], []

    def on_batch(p):
        ends.append((p.epoch, time.perf_counter()))
        bar.update()

    with jax_compile_clock() as clock:
        def on_epoch(epoch, *args):
            if epoch == 0:  # the steady epochs run with every bucket compiled
                mod.precompile(sorted(it.buckets), wait=True)
                compile_s.append(clock.seconds)
            epoch_ends.append(time.perf_counter())

        t0 = time.perf_counter()
        mod.fit(_replay(mx, it, batches), eval_metric=mx.metric.Perplexity(0), optimizer="sgd",
                optimizer_params={"learning_rate": 0.01, "momentum": 0.0, "wd": 1e-5},
                initializer=mx.init.Xavier(factor_type="in", magnitude=2.34), num_epoch=1 + cfg.train_repeat,
                batch_end_callback=on_batch, epoch_end_callback=on_epoch)
    return _summary(t0, ends, epoch_ends, compile_s[0])


def run_jax(cfg, batches, vocab, bar) -> dict:
    import jax
    jb = import_benchmark("jax_baselines")
    layers, hidden, embed = cfg.lm_model
    host = [(b.data[0].asnumpy(), b.label[0].asnumpy()) for b in batches]
    dev = [(jax.device_put(d), jax.device_put(lab)) for d, lab in host]
    init = jb.init_params(layers, hidden, embed, vocab)
    step = jb.make_train_step(lr=0.01, wd=1e-5, rescale_grad=1.0 / cfg.batch)
    ends, epoch_ends = [], []
    with jax_compile_clock() as clock:
        t0 = time.perf_counter()
        params = {k: jax.device_put(v) for k, v in init.items()}
        for epoch in range(1 + cfg.train_repeat):
            metric = [0.0, 0]  # fit updates mx.metric.Perplexity on the host after every batch
            for (d, lab), (_, host_lab) in zip(dev, host):
                params, probs = step(params, d, lab)
                loss, num = jb.perplexity_terms(probs, host_lab, ignore_label=0)
                metric = [metric[0] + loss, metric[1] + num]
                ends.append((epoch, time.perf_counter()))
                bar.update()
            if epoch == 0:
                compile_s = clock.seconds
            epoch_ends.append(time.perf_counter())
    return _summary(t0, ends, epoch_ends, compile_s)


def _summary(t0, ends, epoch_ends, compile_s) -> dict:
    last = {}
    for epoch, t in ends:
        last[epoch] = t
    steady = [last[e] - epoch_ends[e - 1] for e in sorted(last) if e > 0]
    return {"first_batch": ends[0][1] - t0, "epoch0": last[0] - t0, "steady": steady, "compile": compile_s}


def run(cfg) -> list:
    import jbind as mx
    it, batches, vocab = record_batches(mx, cfg)
    tokens = sum(b.data[0].shape[0] * b.data[0].shape[1] for b in batches)
    bar = progress(total=2 * len(batches) * (1 + cfg.train_repeat), desc="train: batches")
    j = run_jbind(mx, cfg, it, batches, vocab, bar)
    x = run_jax(cfg, batches, vocab, bar)
    bar.close()
    n, keys = len(batches), sorted({b.bucket_key for b in batches})
    base = "JAX: hand-written loop"
    peers, why = _train_peers.run(cfg)     # after jbind's own figures, one process at a time
    return [
        Figure("train.tokens_per_s", "tokens/s, steady (all buckets compiled)", "tokens/s",
               [tokens / s for s in j["steady"]], [tokens / s for s in x["steady"]], base,
               note=f"{n} batches of {cfg.batch}, buckets seen {keys}, {tokens} tokens per epoch"
                    + (f"; {why}" if why else "")),
        Figure("train.first_batch", "time to first batch (bind, init, compile)", "s", [j["first_batch"]],
               [x["first_batch"]], base),
        Figure("train.total_with_compile", f"{n} batches, compile included", "s", [j["epoch0"]], [x["epoch0"]], base),
        Figure("train.total_without_compile", f"{n} batches, compile excluded", "s", j["steady"], x["steady"], base),
        Figure("train.compile_overhead", "first epoch - steady epoch (bind, compile)", "s",
               [j["epoch0"] - statistics.median(j["steady"])], [x["epoch0"] - statistics.median(x["steady"])], base,
               note=f"jbind compiles every bucket (background precompile, 2 threads); JAX the buckets it meets. "
                    f"Compile seconds summed over threads: jbind {j['compile']:.1f}, JAX {x['compile']:.1f}"),
    ] + peers
