"""Cost of binding an already-compiled bucket from a freshly generated symbol.

    taskset -c 0 python benchmarks/bind_core.py [--repeat 200]

For buckets 1..10 of the seed model (benchmarks/models.py: embedding, 5 hand-written
LSTM layers, 200 hidden), the first bind of each bucket compiles; afterwards each
`sym_gen(b)` builds a new Symbol object, and `simple_bind(..., shared_exec=...)` on it
must hit the cache. Prints medians (min, max) for: sym_gen alone, simple_bind of a
cached bucket, and one inference forward call of the same executor (XLA on CPU runs small
computations inside the call) as the in-process baseline. Dropping the previous executor
(freeing its output buffers) is timed separately.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import jbind as mx
from models import sym_gen_factory


def _fmt(xs):
    xs = [x * 1e3 for x in xs]
    return f"{statistics.median(xs):8.3f} ms  (min {min(xs):.3f}, max {max(xs):.3f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--buckets", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    sym_gen = sym_gen_factory(mx)
    b = args.batch_size
    base = sym_gen(args.buckets)
    params = [n for n in base.list_arguments() if n not in ("data", "softmax_label")]
    first = base.simple_bind(mx.cpu(), data=(b, args.buckets), softmax_label=(b, args.buckets))
    compile_s = []
    for k in range(1, args.buckets + 1):
        t = time.perf_counter()
        exe = sym_gen(k).simple_bind(mx.cpu(), data=(b, k), softmax_label=(b, k), shared_exec=first, shared_arg_names=params)
        exe.forward(is_train=True)
        exe.backward()
        exe.forward(is_train=False)
        exe.outputs[0].wait_to_read()
        compile_s.append(time.perf_counter() - t)
    gen_t, bind_t, fwd_t, drop_t = [], [], [], []
    with mx.compile.count_compiles() as misses:
        for i in range(args.repeat):
            k = i % args.buckets + 1
            t0 = time.perf_counter()
            sym = sym_gen(k)
            t1 = time.perf_counter()
            new = sym.simple_bind(mx.cpu(), data=(b, k), softmax_label=(b, k), shared_exec=first, shared_arg_names=params)
            t2 = time.perf_counter()
            exe = new  # dropping the previous executor (freeing its buffers) is not part of binding
            t2b = time.perf_counter()
            exe.forward(is_train=False)
            t3 = time.perf_counter()
            exe.outputs[0].wait_to_read()  # the computation must not compete with the next bind
            gen_t.append(t1 - t0)
            bind_t.append(t2 - t1)
            fwd_t.append(t3 - t2b)
            drop_t.append(t2b - t2)
    exe.outputs[0].wait_to_read()
    nodes = len(mx.symbol.graph.graph_of(sym_gen(args.buckets)).nodes)
    print(f"seed model, buckets 1..{args.buckets} (bucket {args.buckets}: {nodes} nodes), "
          f"{args.repeat} binds, {misses()} compiles during the timed loop")
    print(f"first bind + train step + inference per bucket (compiles): median {statistics.median(compile_s):.2f} s")
    print(f"sym_gen(b) (Python graph building):    {_fmt(gen_t)}")
    print(f"simple_bind of a cached bucket:        {_fmt(bind_t)}")
    print(f"dropping the previous executor:        {_fmt(drop_t)}")
    print(f"baseline: one inference forward call:  {_fmt(fwd_t)}")
    print(f"ratio bind / forward call:             {statistics.median(bind_t) / statistics.median(fwd_t):.2f}")
    assert misses() == 0, "a cached bucket recompiled"


if __name__ == "__main__":
    main()
