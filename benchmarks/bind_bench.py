"""MXNet's executor-group creation benchmark, run unchanged but for the imports.

    taskset -c 0 python benchmarks/bind_bench.py --num-layers 5 --num-hidden 200 \
        --num-embed 200 --batch-size 32 --repeat 500 [--contexts 2]

Creates one executor group for bucket 10, then `repeat` groups for buckets 1..5 with
`shared_group`, each from a freshly generated symbol, and prints MXNet's line
"Repeated N times, cost X ms per executor group creation". Also prints the cold costs
(the first group, and the first forward+backward of each new bucket) and the
parameter bytes alive.
"""
import argparse
import os
import sys
import time

if "--contexts" in sys.argv:  # several CPU devices must be requested before JAX starts
    n = sys.argv[sys.argv.index("--contexts") + 1]
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={n}"

import jbind as mx  # noqa: E402
from jbind.module.executor_group import DataParallelExecutorGroup  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--num-layers", type=int, default=5)
parser.add_argument("--num-hidden", type=int, default=200)
parser.add_argument("--num-embed", type=int, default=200)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--repeat", type=int, default=500)
parser.add_argument("--contexts", type=int, default=2)
args = parser.parse_args()
num_layers, num_hidden, num_embed, batch_size = args.num_layers, args.num_hidden, args.num_embed, args.batch_size


def sym_gen(seq_len):
    if hasattr(mx, "rnn"):
        stack = mx.rnn.SequentialRNNCell()
        for i in range(num_layers):
            stack.add(mx.rnn.LSTMCell(num_hidden=num_hidden, prefix="lstm_l%d_" % i))
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data=data, input_dim=50, output_dim=num_embed, name="embed")
        stack.reset()
        outputs, states = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, num_hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=50, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        return mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax")
    from models import sym_gen_factory  # the same LSTM written with ops, until mx.rnn exists
    return sym_gen_factory(mx, num_layers, num_hidden, num_embed, 50)(seq_len)


contexts = [mx.cpu(i) for i in range(args.contexts)]
workload = [1] * len(contexts)
shared_arg_names = [n for n in sym_gen(10).list_arguments() if n not in ("data", "softmax_label")]


def make(seq_len, shared=None):
    return DataParallelExecutorGroup(symbol=sym_gen(seq_len), contexts=contexts, workload=workload,
                                     data_shapes=[("data", (batch_size, seq_len))],
                                     label_shapes=[("softmax_label", (batch_size, seq_len))],
                                     param_names=shared_arg_names, for_training=True, inputs_need_grad=False,
                                     shared_group=shared)


class Batch:
    def __init__(self, data, label):
        self.data, self.label = data, label


t0 = time.time()
shared = make(10)
first_ms = (time.time() - t0) * 1000
first_fwd = []
for k in range(1, 6):
    g = make(k, shared)
    t = time.time()
    g.forward(Batch([mx.nd.zeros((batch_size, k))], [mx.nd.zeros((batch_size, k))]), is_train=True)
    g.backward()
    g.get_outputs()[0].wait_to_read()
    first_fwd.append((time.time() - t) * 1000)

with mx.compile.count_compiles() as compiles:
    start = time.time()
    for i in range(args.repeat):
        DataParallelExecutorGroup(symbol=sym_gen(i % 5 + 1), contexts=contexts, workload=workload,
                                  data_shapes=[("data", (batch_size, i % 5 + 1))],
                                  label_shapes=[("softmax_label", (batch_size, i % 5 + 1))],
                                  param_names=shared_arg_names, for_training=True, inputs_need_grad=False,
                                  shared_group=shared)
    end = time.time()
loop_ms = (end - start) * 1000 / args.repeat
print("Repeated %d times, cost %f ms per executor group creation" % (args.repeat, (end - start) * 1000 / args.repeat))
start = time.time()
for i in range(args.repeat):
    sym_gen(i % 5 + 1)
gen_ms = (time.time() - start) * 1000 / args.repeat
prebuilt = [sym_gen(i % 5 + 1) for i in range(args.repeat)]
start = time.time()
for i, sym in enumerate(prebuilt):
    DataParallelExecutorGroup(symbol=sym, contexts=contexts, workload=workload,
                              data_shapes=[("data", (batch_size, i % 5 + 1))],
                              label_shapes=[("softmax_label", (batch_size, i % 5 + 1))],
                              param_names=shared_arg_names, for_training=True, inputs_need_grad=False,
                              shared_group=shared)
alone_ms = (time.time() - start) * 1000 / args.repeat
print(f"of which sym_gen (building the Symbol in Python): {gen_ms:.3f} ms; "
      f"group creation from pre-built symbols: {alone_ms:.3f} ms")
print(f"contexts {len(contexts)}, compiles during the loop: {compiles()}")
print(f"cold: first group {first_ms:.1f} ms; first forward+backward of buckets 1..5 (compile): "
      + ", ".join(f"{x:.0f} ms" for x in first_fwd))
print(f"parameter + aux bytes alive: {shared.store.nbytes()} ({len(contexts)} device copies of "
      f"{shared.store.nbytes() // len(contexts)})")
