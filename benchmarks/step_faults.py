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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-layers", type=int, default=5)
    p.add_argument("--bucket", type=int, default=30)
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args(argv)
    t, batch, vocab, hidden = args.bucket, 32, 10000, 200
    stack = mx.rnn.SequentialRNNCell()
    for i in range(args.num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=hidden, prefix=f"lstm_l{i}_"))

    def sym_gen(seq_len):
        data, label = mx.sym.Variable("data"), mx.sym.Variable("softmax_label")
        emb = mx.sym.Embedding(data=data, input_dim=vocab, output_dim=hidden, name="embed")
        stack.reset()
        out, _ = stack.unroll(seq_len, inputs=emb, merge_outputs=True)
        pred = mx.sym.FullyConnected(mx.sym.Reshape(out, shape=(-1, hidden)), num_hidden=vocab, name="pred")
        sm = mx.sym.SoftmaxOutput(data=pred, label=mx.sym.Reshape(label, shape=(-1,)), name="softmax")
        return sm, ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=t)
    mod.bind(data_shapes=[("data", (batch, t))], label_shapes=[("softmax_label", (batch, t))])
    mod.init_params(mx.init.Xavier(factor_type="in", magnitude=2.34))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    rng = np.random.default_rng(0)
    b = mx.io.DataBatch([mx.nd.array(rng.integers(1, vocab, (batch, t)))],
                        [mx.nd.array(rng.integers(1, vocab, (batch, t)))], bucket_key=t,
                        provide_data=[mx.io.DataDesc("data", (batch, t))],
                        provide_label=[mx.io.DataDesc("softmax_label", (batch, t))])

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
          f"{max(times) * 1e3:.1f}), {batch * t / med:,.0f} tokens/s, {faults:,.0f} page faults per step, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MB, "
          f"malloc settings {'on' if mx._malloc.applied else 'off'}")


if __name__ == "__main__":
    main()
