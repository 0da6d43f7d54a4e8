"""One bucket's training step of the bucketing LM: time, page faults and peak RSS.

    taskset -c 0 python benchmarks/step_faults.py --num-layers 5
    JBIND_MALLOC_TUNING=0 taskset -c 0 python benchmarks/step_faults.py --num-layers 5

shows what jbind's malloc settings (jbind/_malloc.py) do: without them XLA:CPU's per-step
buffers are mapped anew at every step and their pages faulted in again.
"""
import argparse
import resource
import time

import numpy as np

import jbind as mx
from jbind.bench._setup import batch, rnn_lm


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-layers", type=int, default=5)
    p.add_argument("--bucket", type=int, default=30)
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args(argv)
    t, n, vocab, hidden = args.bucket, 32, 10000, 200
    gen = rnn_lm(mx, args.num_layers, hidden, hidden, vocab)
    mod = mx.mod.BucketingModule(lambda k: (gen(k), ("data",), ("softmax_label",)), default_bucket_key=t)
    mod.bind(data_shapes=[("data", (n, t))], label_shapes=[("softmax_label", (n, t))])
    mod.init_params(mx.init.Xavier(factor_type="in", magnitude=2.34))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    b = batch(mx, n, t, vocab)

    def step():
        mod.forward_backward(b)
        mod.update()
        mx.nd.waitall()

    for _ in range(3):
        step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / args.steps
    med = float(np.median(times))
    print(f"{args.num_layers} layers, bucket {t}: step {med * 1e3:.1f} ms median ({min(times) * 1e3:.1f}.."
          f"{max(times) * 1e3:.1f}), {n * t / med:,.0f} tokens/s, {faults:,.0f} page faults per step, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MB, "
          f"malloc settings {'on' if mx._malloc.applied else 'off'}")


if __name__ == "__main__":
    main()
