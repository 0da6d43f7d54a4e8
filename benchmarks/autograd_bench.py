"""Per-step wall time of one small training step written four ways, in one process:

1. Gluon without `hybridize()`: every op runs eagerly under `autograd.record()`, then
   `loss.backward()` and `trainer.step()` (the path issue 21 is about);
2. plain `mx.autograd`: the same model as `mx.nd` ops on arrays with `attach_grad()`,
   updated with `mx.nd.sgd_update`;
3. the same Gluon model hybridized (one compiled forward, its backward replayed);
4. hand-written JAX: `jax.jit` of `value_and_grad` plus the SGD update, the floor.

The model: a 2-layer MLP (100 -> 64 relu -> 10, softmax cross-entropy, batch 32) by
default, `--model lstm` a one-layer LSTM (hidden 32, 8 steps, batch 32). Prints each
way's median step time and its ratio to hand-written JAX, and how many XLA compiles
the timed (steady) steps caused (should be 0). Run it from the repository root, pinned
to one core, nothing else running:

    PYTHONPATH=. taskset -c 0 env OMP_NUM_THREADS=1 python benchmarks/autograd_bench.py [--model lstm] [--reps 200]
"""
from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import jbind as mx
from jbind.bench._setup import jax_compile_clock
from jbind.gluon import nn, rnn

BATCH, IN, HID, OUT, STEPS = 32, 100, 64, 10, 8


def _timed(step, reps: int, warm: int = 5) -> tuple[float, int]:
    """(median seconds per step, XLA compiles during the timed steps)."""
    for _ in range(warm):
        step()
    times = []
    with jax_compile_clock() as clock:
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
    return statistics.median(times), clock.count


class _LSTMNet(mx.gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.lstm = rnn.LSTM(HID // 2, layout="NTC", input_size=IN // 4)
            self.out = nn.Dense(OUT, in_units=HID // 2)

    def hybrid_forward(self, F, x):
        return self.out(F.SequenceLast(self.lstm(x), axis=1))


def _gluon(model: str, rng, hybridize: bool):
    if model == "mlp":
        net = nn.HybridSequential()
        net.add(nn.Dense(HID, activation="relu", in_units=IN), nn.Dense(OUT, in_units=HID))
        x = mx.nd.array(rng.normal(size=(BATCH, IN)).astype("float32"))
    else:
        net = _LSTMNet()
        x = mx.nd.array(rng.normal(size=(BATCH, STEPS, IN // 4)).astype("float32"))
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    y = mx.nd.array(rng.integers(0, OUT, size=(BATCH,)).astype("float32"))
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})

    def step():
        with mx.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)
        loss.wait_to_read()
    return step


def _plain(rng):
    x = mx.nd.array(rng.normal(size=(BATCH, IN)).astype("float32"))
    y = mx.nd.array(rng.integers(0, OUT, size=(BATCH,)).astype("float32"))
    params = [mx.nd.array(rng.normal(scale=0.1, size=s).astype("float32")) for s in [(HID, IN), (HID,), (OUT, HID), (OUT,)]]
    for p in params:
        p.attach_grad()
    w1, b1, w2, b2 = params

    def step():
        with mx.autograd.record():
            h = mx.nd.relu(mx.nd.FullyConnected(x, w1, b1, num_hidden=HID))
            logp = mx.nd.log_softmax(mx.nd.FullyConnected(h, w2, b2, num_hidden=OUT))
            loss = -mx.nd.pick(logp, y).mean()
        loss.backward()
        for p in params:
            mx.nd.sgd_update(p, p.grad, lr=0.01, out=p)
        loss.wait_to_read()
    return step


def _jax(model: str, rng):
    y = jnp.asarray(rng.integers(0, OUT, size=(BATCH,)))
    if model == "mlp":
        x = jnp.asarray(rng.normal(size=(BATCH, IN)).astype("float32"))
        shapes = [(HID, IN), (HID,), (OUT, HID), (OUT,)]

        def logits(p, x):
            return jax.nn.relu(x @ p[0].T + p[1]) @ p[2].T + p[3]
    else:
        x = jnp.asarray(rng.normal(size=(BATCH, STEPS, IN // 4)).astype("float32"))
        H = HID // 2
        shapes = [(4 * H, IN // 4), (4 * H, H), (4 * H,), (OUT, H), (OUT,)]

        def logits(p, x):
            def cell(carry, xt):
                h, c = carry
                i, f, g, o = jnp.split(xt @ p[0].T + h @ p[1].T + p[2], 4, axis=-1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), None
            zeros = jnp.zeros((x.shape[0], H), x.dtype)
            (h, _), _ = jax.lax.scan(cell, (zeros, zeros), jnp.swapaxes(x, 0, 1))
            return h @ p[3].T + p[4]
    params = [jnp.asarray(rng.normal(scale=0.1, size=s).astype("float32")) for s in shapes]

    def loss_fn(p, x, y):
        logp = jax.nn.log_softmax(logits(p, x))
        return -jnp.take_along_axis(logp, y[:, None], 1).mean()

    @jax.jit
    def update(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return loss, [a - 0.01 * b for a, b in zip(p, g)]

    state = [params]

    def step():
        loss, state[0] = update(state[0], x, y)
        loss.block_until_ready()
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=("mlp", "lstm"), default="mlp")
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    ways = {"gluon (not hybridized)": _gluon(a.model, rng, False)}
    if a.model == "mlp":
        ways["plain autograd"] = _plain(rng)
    ways["gluon hybridized"] = _gluon(a.model, rng, True)
    ways["hand-written jax.jit"] = _jax(a.model, rng)
    res = {name: _timed(step, a.reps) for name, step in ways.items()}
    floor = res["hand-written jax.jit"][0]
    print(f"{a.model}, batch {BATCH}, {a.reps} steps each (median)")
    for name, (sec, compiles) in res.items():
        print(f"  {name:24s} {sec * 1e6:9.0f} us/step   x{sec / floor:5.2f}   compiles in timed steps: {compiles}")


if __name__ == "__main__":
    main()
