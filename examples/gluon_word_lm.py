"""Gluon word language model: MXNet 1.x's example/gluon/word_language_model on jbind.

    python examples/gluon_word_lm.py --epochs 1 --max-batches 200
    python examples/gluon_word_lm.py --mxnet ...      # the same file under real MXNet 1.9.1

An LSTM language model written as an MXNet 1.x user writes one: an `RNNModel`
HybridBlock (Embedding -> Dropout -> rnn.LSTM -> Dropout -> Dense, optionally with the
decoder tied to the embedding), hybridized, trained with `gluon.Trainer('sgd')`, the
gradients clipped by `gluon.utils.clip_global_norm`, truncated back-propagation through
time with the hidden states detached between segments, and the corpus batchified into
(seq_len, batch) columns. Prints training perplexity with tokens/s every
`--log-interval` batches and validation perplexity after each epoch.

Data: the bundled corpus in examples/data/fortunes (BSD fortune cookies in Penn Treebank
style; see its NOTICE). Apart from the import everything is plain MXNet 1.x API.
"""
import argparse
import math
import os
import sys
import time

if "--mxnet" in sys.argv:  # the same script on Apache MXNet 1.9.1, for comparison
    import mxnet as mx
else:
    import jbind as mx
import numpy as np  # noqa: E402

autograd, gluon = mx.autograd, mx.gluon
nn, rnn = gluon.nn, gluon.rnn

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "fortunes")


def build_parser():
    p = argparse.ArgumentParser(description="Gluon LSTM word language model",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data", type=str, default=DATA, help="folder with train.txt and valid.txt")
    p.add_argument("--mxnet", action="store_true", help="run on Apache MXNet (import mxnet) instead of jbind")
    p.add_argument("--emsize", type=int, default=200, help="size of word embeddings")
    p.add_argument("--nhid", type=int, default=200, help="number of hidden units per layer")
    p.add_argument("--nlayers", type=int, default=2, help="number of LSTM layers")
    p.add_argument("--lr", type=float, default=20.0, help="initial learning rate")
    p.add_argument("--clip", type=float, default=0.25, help="gradient clipping (global norm)")
    p.add_argument("--epochs", type=int, default=2, help="upper epoch limit")
    p.add_argument("--batch_size", "--batch-size", dest="batch_size", type=int, default=20, help="batch size")
    p.add_argument("--bptt", type=int, default=35, help="sequence length of truncated BPTT")
    p.add_argument("--dropout", type=float, default=0.2, help="dropout applied to layers (0 = no dropout)")
    p.add_argument("--tied", action="store_true", help="tie the word embedding and softmax weights")
    p.add_argument("--log-interval", type=int, default=50, help="report interval in batches")
    p.add_argument("--max-batches", type=int, default=None, help="stop each epoch after this many batches")
    p.add_argument("--max-valid-batches", type=int, default=None, help="evaluate on at most this many segments")
    p.add_argument("--no-hybridize", dest="hybridize", action="store_false", help="run the model imperatively")
    p.add_argument("--seed", type=int, default=42, help="seed of numpy and mx.random")
    return p


class Vocab:
    """Word <-> index, in order of first appearance."""

    def __init__(self):
        self.word2idx, self.idx2word = {}, []

    def add(self, word):
        if word not in self.word2idx:
            self.word2idx[word] = len(self.idx2word)
            self.idx2word.append(word)
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


def tokenize(path, vocab):
    """One flat array of word ids; every line ends with '<eos>'."""
    if not os.path.isfile(path):
        raise IOError("missing corpus file %s" % path)
    ids = []
    with open(path) as f:
        for line in f:
            ids.extend(vocab.add(w) for w in line.split() + ["<eos>"])
    return np.array(ids, dtype=np.float32)


def batchify(ids, batch_size):
    """Cut a flat id sequence into `batch_size` contiguous streams, one per column:
    shape (len(ids) // batch_size, batch_size); the tail that does not fill a row is dropped."""
    nrows = len(ids) // batch_size
    if nrows < 2:
        raise ValueError("corpus of %d words is too short for batch size %d" % (len(ids), batch_size))
    return mx.nd.array(np.asarray(ids)[:nrows * batch_size].reshape(batch_size, nrows).T)


def get_batch(source, i, bptt):
    """Rows i .. i+seq_len of `source` as input and the next word of each as the flat target."""
    seq_len = min(bptt, source.shape[0] - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len]
    return data, target.reshape((-1,))


def detach(hidden):
    """Cut the graph at the segment boundary (truncated BPTT): same values, no history."""
    if isinstance(hidden, (list, tuple)):
        return [detach(h) for h in hidden]
    return hidden.detach()


class RNNModel(gluon.HybridBlock):
    """Embedding -> Dropout -> LSTM -> Dropout -> Dense over the vocabulary."""

    def __init__(self, vocab_size, num_embed, num_hidden, num_layers, dropout=0.5, tie_weights=False, **kwargs):
        super(RNNModel, self).__init__(**kwargs)
        self.num_hidden = num_hidden
        with self.name_scope():
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(vocab_size, num_embed, weight_initializer=mx.init.Uniform(0.1))
            self.rnn = rnn.LSTM(num_hidden, num_layers, dropout=dropout, input_size=num_embed)
            if tie_weights:
                if num_embed != num_hidden:
                    raise ValueError("--tied needs --emsize equal to --nhid (%d != %d)" % (num_embed, num_hidden))
                self.decoder = nn.Dense(vocab_size, in_units=num_hidden, params=self.encoder.params)
            else:
                self.decoder = nn.Dense(vocab_size, in_units=num_hidden)

    def hybrid_forward(self, F, inputs, hidden):
        emb = self.drop(self.encoder(inputs))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output.reshape((-1, self.num_hidden)))
        return decoded, hidden

    def begin_state(self, *args, **kwargs):
        return self.rnn.begin_state(*args, **kwargs)


def evaluate(model, source, args, ctx, loss):
    """Mean cross-entropy per word over `source` (no dropout, no gradients)."""
    total, nwords = 0.0, 0
    hidden = model.begin_state(func=mx.nd.zeros, batch_size=source.shape[1], ctx=ctx)
    for n, i in enumerate(range(0, source.shape[0] - 1, args.bptt)):
        if args.max_valid_batches is not None and n >= args.max_valid_batches:
            break
        data, target = get_batch(source, i, args.bptt)
        output, hidden = model(data, hidden)
        total += mx.nd.sum(loss(output, target)).asscalar()
        nwords += target.size
    return total / nwords


def train(args, log=print):
    """Train and evaluate; returns a dict of the logged figures (for tests and benchmarks)."""
    np.random.seed(args.seed)
    mx.random.seed(args.seed)
    ctx = mx.cpu()
    vocab = Vocab()
    train_data = batchify(tokenize(os.path.join(args.data, "train.txt"), vocab), args.batch_size)
    val_data = batchify(tokenize(os.path.join(args.data, "valid.txt"), vocab), args.batch_size)
    log("vocabulary %d words, %d train rows x %d columns, %s"
        % (len(vocab), train_data.shape[0], args.batch_size, "mxnet " + mx.__version__ if args.mxnet else "jbind"))

    model = RNNModel(len(vocab), args.emsize, args.nhid, args.nlayers, args.dropout, args.tied)
    model.initialize(mx.init.Xavier(), ctx=ctx)
    if args.hybridize:
        model.hybridize()
    trainer = gluon.Trainer(model.collect_params(), "sgd", {"learning_rate": args.lr, "momentum": 0, "wd": 0})
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    params = [p for p in model.collect_params().values() if p.grad_req != "null"]

    result = {"train_ppl": [], "val_ppl": [], "tokens_per_s": []}
    best_val = float("inf")
    for epoch in range(args.epochs):
        total_L, nwords, t_log, words_log = 0.0, 0, time.time(), 0
        hidden = model.begin_state(func=mx.nd.zeros, batch_size=args.batch_size, ctx=ctx)
        nbatches = (train_data.shape[0] - 1 + args.bptt - 1) // args.bptt
        if args.max_batches is not None:
            nbatches = min(nbatches, args.max_batches)
        for ibatch, i in enumerate(range(0, train_data.shape[0] - 1, args.bptt)):
            if ibatch >= nbatches:
                break
            data, target = get_batch(train_data, i, args.bptt)
            hidden = detach(hidden)
            with autograd.record():
                output, hidden = model(data, hidden)
                L = loss(output, target) / target.size  # mean over the segment's words
                L.backward()
            grads = [p.grad(ctx) for p in params]
            gluon.utils.clip_global_norm(grads, args.clip)
            trainer.step(1)
            total_L += mx.nd.sum(L).asscalar() * target.size
            nwords += target.size
            words_log += target.size
            if (ibatch + 1) % args.log_interval == 0:
                elapsed = time.time() - t_log
                cur = total_L / nwords
                result["train_ppl"].append(math.exp(cur))
                result["tokens_per_s"].append(words_log / elapsed)
                log("[Epoch %d Batch %d/%d] loss %.2f, ppl %.2f, %.0f tokens/s"
                    % (epoch, ibatch + 1, nbatches, cur, math.exp(cur), words_log / elapsed))
                total_L, nwords, t_log, words_log = 0.0, 0, time.time(), 0
        val_L = evaluate(model, val_data, args, ctx, loss)
        result["val_ppl"].append(math.exp(val_L))
        log("[Epoch %d] validation loss %.2f, validation ppl %.2f" % (epoch, val_L, math.exp(val_L)))
        if val_L < best_val:
            best_val = val_L
        else:  # as the MXNet and PyTorch examples do: smaller steps once validation stalls
            trainer.set_learning_rate(trainer.learning_rate * 0.25)
            log("learning rate now %g" % trainer.learning_rate)
    return result


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.mxnet != (mx.__name__ == "mxnet"):
        raise SystemExit("--mxnet must be given on the command line (it chooses the import)")
    train(args, log=lambda s: print(s, flush=True))


if __name__ == "__main__":
    main()
