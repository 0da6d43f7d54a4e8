"""MXNet 1.9.1's side of e2e_bench.py: the bucketing LSTM example, run by MXNet itself.

    OMP_NUM_THREADS=1 taskset -c 0 /path/to/mxnet-venv/bin/python benchmarks/mxnet_bucketing.py \
        --max-batches 200 --seed 1

MXNet's example/rnn/bucketing/lstm_bucketing.py with the options of
examples/bucketing_rnn.py (same corpus, buckets, seeds and batch limit), timed the same
way: process start from /proc, the first and the last trained batch at their
batch_end_callback. Prints the lines e2e_bench.py parses. Needs `mxnet` (never jbind).
"""
import argparse
import logging
import os
import random
import sys
import time

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "examples", "data", "fortunes")


def process_start() -> float:
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))


def tokenize_text(fname, vocab=None, invalid_label=-1, start_label=0):
    with open(fname) as f:
        lines = [list(filter(None, line.split(" "))) for line in f.read().splitlines()]
    return mx.rnn.encode_sentences(lines, vocab=vocab, invalid_label=invalid_label, start_label=start_label)


class Limited(mx.io.DataIter):
    def __init__(self, it, n):
        super().__init__(it.batch_size)
        self.it, self.n, self.i = it, n, 0
        self.provide_data, self.provide_label = it.provide_data, it.provide_label
        self.default_bucket_key = it.default_bucket_key

    def reset(self):
        self.i = 0
        self.it.reset()

    def next(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.it.next()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-batches", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--num-layers", type=int, default=2)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)-15s %(message)s", stream=sys.stdout)
    random.seed(args.seed)
    np.random.seed(args.seed)
    mx.random.seed(args.seed)
    buckets, batch_size, hidden, embed = [10, 20, 30, 40, 50, 60], 32, 200, 200
    train, vocab = tokenize_text(os.path.join(DATA, "train.txt"), start_label=1, invalid_label=0)
    valid, _ = tokenize_text(os.path.join(DATA, "valid.txt"), vocab=vocab, start_label=1, invalid_label=0)
    data_train = Limited(mx.rnn.BucketSentenceIter(train, batch_size, buckets=buckets, invalid_label=0),
                         args.max_batches)
    data_val = Limited(mx.rnn.BucketSentenceIter(valid, batch_size, buckets=buckets, invalid_label=0),
                       max(1, args.max_batches // 4))
    stack = mx.rnn.SequentialRNNCell()
    for i in range(args.num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=hidden, prefix="lstm_l%d_" % i))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        emb = mx.sym.Embedding(data=data, input_dim=len(vocab), output_dim=embed, name="embed")
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=emb, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=len(vocab), name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax")
        return pred, ("data",), ("softmax_label",)

    times, sizes = [], []
    model = mx.mod.BucketingModule(sym_gen=sym_gen, default_bucket_key=data_train.default_bucket_key,
                                   context=mx.cpu())
    model.fit(train_data=data_train, eval_data=data_val, eval_metric=mx.metric.Perplexity(0),
              kvstore="device", optimizer="sgd",
              optimizer_params={"learning_rate": 0.01, "momentum": 0.0, "wd": 0.00001},
              initializer=mx.init.Xavier(factor_type="in", magnitude=2.34), num_epoch=1,
              batch_end_callback=[mx.callback.Speedometer(batch_size, 10 * args.max_batches, auto_reset=False),
                                  lambda param: (times.append(time.time()),
                                                 sizes.append(param.locals["data_batch"].data[0].size))])
    start = process_start()
    logging.info("first batch %.2f s after process start; %d batches in %.2f s from process start",
                 times[0] - start, len(times), times[-1] - start)
    if len(times) > 10:
        logging.info("after the 10th batch: %.0f tokens/s", sum(sizes[10:]) / (times[-1] - times[9]))


if __name__ == "__main__":
    main()
