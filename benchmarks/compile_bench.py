"""Loop lowering benchmark: cold compile time against sequence length, and the seed step time.

    taskset -c 0 /work/venv/bin/python benchmarks/compile_bench.py [--quick]

1. Cold compile of one train step (forward + backward, one XLA executable) of a 2-layer
   LSTM LM (hidden 200, embed 200, vocab 10000, batch 32) for T = 10, 20, ..., 60, with
   the loop lowering on (rolled, one lax.scan per layer) and off (unrolled). Each compile
   starts from an empty compile cache (`mx.compile.clear()`). `compile` is the time jbind's
   cache spent building the executable (loop planning, tracing, XLA); `first step` adds
   binding, the first forward+backward and its transfers. Unrolled compiles take a minute
   at T=60, so they run once (and with --quick only up to T=30); rolled ones `--repeat` times.
2. Steady train step (forward + backward) of the seed config (5 layers, hidden 200,
   embed 200, vocab 50, batch 32, T=10), rolled and unrolled.

Next to each, the hand-written JAX baseline (`jax_baselines.loss_and_grads`: one lax.scan
per layer, the same gradients) measured in the same run, when that module is present.

Prints medians.
"""
import argparse
import statistics
import sys
import time

import jax
import numpy as np

import jbind as mx
from jbind.compile.cache import CACHE
from jbind.symbol import rolled
from jbind.symbol.graph import graph_of

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from models import sym_gen_factory  # noqa: E402

try:
    import jax_baselines as jb  # noqa: E402
except ImportError:  # the baseline columns are left out
    jb = None

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true", help="about a minute on one core")
parser.add_argument("--lengths", default="10,20,30,40,50,60")
parser.add_argument("--unrolled-max", type=int, default=None, help="skip unrolled compiles above this T")
parser.add_argument("--repeat", type=int, default=None, help="rolled compiles per T (default 3, quick 1)")
parser.add_argument("--batch-size", type=int, default=32)
args = parser.parse_args()
REPEAT = args.repeat or (1 if args.quick else 3)
UNROLLED_MAX = args.unrolled_max or (30 if args.quick else 60)
STEPS = 30 if args.quick else 100
N = args.batch_size


def bind(sym, t, vocab, seed=0):
    exe = sym.simple_bind(mx.cpu(), data=(N, t), softmax_label=(N, t))
    rng = np.random.default_rng(seed)
    for name, arr in exe.arg_dict.items():
        if name in ("data", "softmax_label"):
            arr[:] = rng.integers(0, vocab, arr.shape)
        else:
            arr[:] = rng.uniform(-0.1, 0.1, arr.shape)
    return exe


def train_step(exe):
    exe.forward(is_train=True)
    exe.backward()
    jax.block_until_ready([h._data for h in exe.grad_arrays if h is not None])


def cold_compile(t, on):
    sym = sym_gen_factory(mx, num_layers=2, num_hidden=200, num_embed=200, vocab=10000)(t)
    mx.compile.clear()
    graph_of(sym).__dict__.pop("_loop_plans", None)     # plan the loops again too
    with rolled.loop_lowering(on):
        before = CACHE.compile_seconds
        t0 = time.perf_counter()
        train_step(bind(sym, t, 10000))
        total = time.perf_counter() - t0
    return CACHE.compile_seconds - before, total


def _baseline_inputs(t, layers, vocab):
    params = {k: jax.numpy.asarray(v) for k, v in jb.init_params(layers, 200, 200, vocab).items()}
    rng = np.random.default_rng(0)
    return params, rng.integers(0, vocab, (N, t)).astype(np.float32), rng.integers(0, vocab, (N, t)).astype(np.float32)


def baseline_compile(t):
    args = _baseline_inputs(t, 2, 10000)
    t0 = time.perf_counter()
    jax.jit(lambda *a: jb.loss_and_grads(*a)).lower(*args).compile()
    return time.perf_counter() - t0


def baseline_step():
    args = _baseline_inputs(10, 5, 50)
    f = jax.jit(jb.loss_and_grads)
    for _ in range(3):
        jax.block_until_ready(f(*args))
    times = []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def step_time(on):
    sym = sym_gen_factory(mx, num_layers=5, num_hidden=200, num_embed=200, vocab=50)(10)
    with rolled.loop_lowering(on):
        exe = bind(sym, 10, 50)
        for _ in range(3):
            train_step(exe)
        times = []
        for _ in range(STEPS):
            t0 = time.perf_counter()
            train_step(exe)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    lengths = [int(x) for x in args.lengths.split(",")]
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}, batch {N}, rolled compiles x{REPEAT}, "
          f"unrolled x1 up to T={UNROLLED_MAX}")
    print("cold compile, one train step, 2-layer LSTM LM (H=200, E=200, V=10000), median seconds")
    print(f"{'T':>4} {'rolled compile':>15} {'unrolled compile':>17} {'rolled 1st step':>16} "
          f"{'unrolled 1st step':>18} {'JAX scan compile':>17}")
    for t in lengths:
        res = {}
        for on in (True, False):
            runs = [cold_compile(t, on) for _ in range(REPEAT if on else int(t <= UNROLLED_MAX))]
            res[on] = [f"{statistics.median(r[k] for r in runs):.3f}" if runs else "-" for k in (0, 1)]
        base = f"{statistics.median(baseline_compile(t) for _ in range(REPEAT)):.3f}" if jb else "-"
        print(f"{t:>4} {res[True][0]:>15} {res[False][0]:>17} {res[True][1]:>16} {res[False][1]:>18} "
              f"{base:>17}", flush=True)
    print(f"seed train step (5 layers, H=200, E=200, V=50, N={N}, T=10), median of {STEPS} steps")
    for on in (True, False):
        print(f"  {'rolled' if on else 'unrolled':>8}: {1e3 * step_time(on):7.2f} ms", flush=True)
    if jb:
        print(f"  {'JAX scan':>8}: {1e3 * baseline_step():7.2f} ms (hand-written baseline)", flush=True)


if __name__ == "__main__":
    main()
