"""Bucketing LSTM language model: MXNet's example/rnn/bucketing/lstm_bucketing.py on jbind.

    python examples/bucketing_rnn.py --num-epochs 1

Trains on the bundled corpus (examples/data/fortunes: BSD fortune cookies, Penn-Treebank
style; see its NOTICE) with mx.rnn LSTM cells, BucketSentenceIter and BucketingModule,
and prints training and validation perplexity. The script is MXNet's; only the import
and a few options for short runs (--max-batches, --data-dir) differ.
"""
import argparse
import logging
import os
import sys
import time

if "--contexts" in sys.argv:  # several CPU devices must be requested before JAX starts
    _n = sys.argv[sys.argv.index("--contexts") + 1]
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={_n}"
if "--cache-dir" in sys.argv:
    os.environ["JBIND_CACHE_DIR"] = sys.argv[sys.argv.index("--cache-dir") + 1]

import jbind as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

parser = argparse.ArgumentParser(description="Train an RNN language model with bucketing",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument("--data", type=str, default=os.path.join(HERE, "data", "fortunes", "train.txt"),
                    help="training corpus, one sentence per line")
parser.add_argument("--valid-data", type=str, default=os.path.join(HERE, "data", "fortunes", "valid.txt"))
parser.add_argument("--contexts", type=int, default=1, help="number of CPU devices (data parallel)")
parser.add_argument("--cache-dir", type=str, default=None, help="persistent compilation cache directory")
parser.add_argument("--plot", type=str, default=None,
                    help="write a PNG of train and validation perplexity and tokens/s per epoch")
parser.add_argument("--num-layers", type=int, default=2, help="number of stacked RNN layers")
parser.add_argument("--num-hidden", type=int, default=200, help="hidden layer size")
parser.add_argument("--num-embed", type=int, default=200, help="embedding layer size")
parser.add_argument("--gpus", type=str, help="list of gpus to run, e.g. 0 or 0,2,5. empty means using cpu")
parser.add_argument("--kv-store", "--kvstore", dest="kv_store", type=str, default="device",
                    help="key-value store type (dist_sync: one worker of `python -m jbind.launch -n N`)")
parser.add_argument("--num-epochs", type=int, default=25, help="max num of epochs")
parser.add_argument("--lr", type=float, default=0.01, help="initial learning rate")
parser.add_argument("--optimizer", type=str, default="sgd", help="the optimizer type")
parser.add_argument("--mom", type=float, default=0.0, help="momentum for sgd")
parser.add_argument("--wd", type=float, default=0.00001, help="weight decay for sgd")
parser.add_argument("--batch-size", type=int, default=32, help="the batch size.")
parser.add_argument("--disp-batches", type=int, default=50, help="show progress for every n batches")
parser.add_argument("--max-batches", type=int, default=None, help="stop each epoch after this many batches")
parser.add_argument("--buckets", type=str, default="10,20,30,40,50,60")
parser.add_argument("--seed", type=int, default=None, help="seed python, numpy and mx.random (init, batch order)")


def tokenize_text(fname, vocab=None, invalid_label=-1, start_label=0):
    if not os.path.isfile(fname):
        raise IOError("Please provide the corpus: missing %s" % fname)
    with open(fname) as f:
        lines = [list(filter(None, line.split(" "))) for line in f.read().splitlines()]
    sentences, vocab = mx.rnn.encode_sentences(lines, vocab=vocab, invalid_label=invalid_label,
                                               start_label=start_label)
    return sentences, vocab


class Limited(mx.io.DataIter):
    """Stops an iterator after `n` batches per epoch (for short runs)."""

    def __init__(self, it, n):
        super().__init__(it.batch_size)
        self.it, self.n, self.i = it, n, 0
        self.provide_data, self.provide_label = it.provide_data, it.provide_label
        self.default_bucket_key = it.default_bucket_key
        self.buckets = it.buckets  # lets BucketingModule.fit precompile every bucket

    def reset(self):
        self.i = 0
        self.it.reset()

    def upcoming_buckets(self):  # what this epoch's remaining batches need, in order
        return self.it.upcoming_buckets(self.n - self.i)

    def next(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.it.next()


def main():
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)-15s %(message)s", stream=sys.stdout)
    buckets = [int(b) for b in args.buckets.split(",")]
    if args.seed is not None:
        import random

        import numpy as np
        random.seed(args.seed)
        np.random.seed(args.seed)
        mx.random.seed(args.seed)
    start_label = 1
    invalid_label = 0
    train_sent, vocab = tokenize_text(args.data, start_label=start_label, invalid_label=invalid_label)
    val_sent, _ = tokenize_text(args.valid_data, vocab=vocab, start_label=start_label, invalid_label=invalid_label)
    kv = mx.kv.create(args.kv_store)
    # Each worker reads its slice of the same global batches (one part when alone).
    shard = dict(num_parts=max(kv.num_workers, 1), part_index=kv.rank, seed=args.seed)
    data_train = mx.rnn.BucketSentenceIter(train_sent, args.batch_size, buckets=buckets,
                                           invalid_label=invalid_label, **shard)
    data_val = mx.rnn.BucketSentenceIter(val_sent, args.batch_size, buckets=buckets, invalid_label=invalid_label,
                                         **shard)
    if args.max_batches:
        data_train = Limited(data_train, args.max_batches)
        data_val = Limited(data_val, max(1, args.max_batches // 4))

    stack = mx.rnn.SequentialRNNCell()
    for i in range(args.num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=args.num_hidden, prefix="lstm_l%d_" % i))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data=data, input_dim=len(vocab), output_dim=args.num_embed, name="embed")
        stack.reset()
        outputs, states = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, args.num_hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=len(vocab), name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax")
        return pred, ("data",), ("softmax_label",)

    if args.gpus:
        contexts = [mx.gpu(int(i)) for i in args.gpus.split(",")]
    elif args.contexts > 1:
        contexts = [mx.cpu(i) for i in range(args.contexts)]
    else:
        contexts = mx.cpu(0)
    report = Report(args.batch_size)

    model = mx.mod.BucketingModule(sym_gen=sym_gen, default_bucket_key=data_train.default_bucket_key,
                                   context=contexts)
    model.fit(train_data=data_train, eval_data=data_val, eval_metric=mx.metric.Perplexity(invalid_label),
              kvstore=kv, optimizer=args.optimizer,
              optimizer_params={"learning_rate": args.lr, "momentum": args.mom, "wd": args.wd},
              initializer=mx.init.Xavier(factor_type="in", magnitude=2.34), num_epoch=args.num_epochs,
              batch_end_callback=[mx.callback.Speedometer(args.batch_size, args.disp_batches, auto_reset=False),
                                  report.batch],
              epoch_end_callback=report.epoch, eval_end_callback=report.validation)
    report.summary(model, args.plot)


class Report:
    """Tokens/s per epoch (padding counted, as MXNet's Speedometer), perplexities, compile report."""

    def __init__(self, batch_size):
        self.batch_size, self.tokens, self.t0 = batch_size, 0, time.time()
        self.train, self.valid, self.speed = [], [], []  # per epoch
        self.metric = None
        self.batches, self.first, self.last = 0, None, None
        self.tenth, self.after_tenth = None, 0  # tokens/s after the 10th batch: the steady rate

    def batch(self, param):
        size = int(param.locals["data_batch"].data[0].size)
        self.metric = param.eval_metric  # fit's training metric, reset at each epoch's start
        self.tokens += size
        self.batches += 1
        self.last = time.time()
        if self.first is None:
            self.first = self.last
        if self.batches == 10:
            self.tenth = self.last
        elif self.batches > 10:
            self.after_tenth += size

    def epoch(self, epoch, symbol, arg_params, aux_params):
        dt = time.time() - self.t0
        logging.info("Epoch[%d] %d tokens in %.1f s: %.0f tokens/s", epoch, self.tokens, dt, self.tokens / dt)
        self.speed.append(self.tokens / dt)
        self.train.append(self.metric.get()[1] if self.metric is not None else float("nan"))
        self.tokens, self.t0 = 0, time.time()

    def validation(self, param):
        self.valid.append(param.eval_metric.get()[1])

    def summary(self, model, plot):
        start = process_start()
        if self.first is not None:
            logging.info("first batch %.2f s after process start; %d batches in %.2f s from process start",
                         self.first - start, self.batches, self.last - start)
        if self.tenth is not None and self.last > self.tenth:
            logging.info("after the 10th batch: %.0f tokens/s", self.after_tenth / (self.last - self.tenth))
        stats = mx.compile.stats()
        logging.info("compile report: %d executables compiled in %.1f s, %d cache hits",
                     stats["misses"], stats["compile_seconds"], stats["hits"])
        if plot:
            self.plot(plot)

    def plot(self, path):
        """Train and validation perplexity per epoch, and tokens/s on a second axis.

        The PNG's 'Description' text chunk holds the plotted numbers as JSON."""
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            from matplotlib.ticker import MaxNLocator
        except ImportError:
            raise SystemExit("--plot needs matplotlib: pip install 'jbind[bench]'")
        import json
        epochs = list(range(1, len(self.train) + 1))
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.plot(epochs, self.train, marker="o", color="tab:blue", label="train perplexity")
        ax.plot(epochs[:len(self.valid)], self.valid, marker="s", color="tab:orange", label="validation perplexity")
        ax.set_xlabel("epoch")
        ax.set_ylabel("perplexity")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        speed = ax.twinx()
        speed.plot(epochs, self.speed, linestyle="--", marker="^", color="tab:green", label="tokens/s")
        speed.set_ylabel("tokens/s")
        speed.set_ylim(bottom=0)
        lines = ax.get_lines() + speed.get_lines()
        ax.set_title("bucketing LSTM LM on jbind")
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        fig.legend(lines, [line.get_label() for line in lines], loc="lower center", ncol=3, frameon=False)
        data = {"epoch": epochs, "train_perplexity": self.train, "validation_perplexity": self.valid,
                "tokens_per_second": self.speed}
        tmp = path + ".tmp.png"
        fig.savefig(tmp, dpi=100, metadata={"Description": json.dumps(data)})
        plt.close(fig)
        os.replace(tmp, path)
        logging.info("wrote %s", path)


def process_start() -> float:
    """When this process started (Linux /proc, to 10 ms; else when this script was imported).

    The process's age is the system uptime minus its start tick; `btime` + start tick
    would be off by up to a second, btime being whole seconds."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return _IMPORTED


_IMPORTED = time.time()

if __name__ == "__main__":
    main()
