"""PyTorch's classic word_language_model (LSTM), as the peer of examples/gluon_word_lm.py.

Same corpus handling (words in order of first appearance, '<eos>' per line, columns of
`batchify`), same model (Embedding -> Dropout -> LSTM -> Dropout -> Linear, optionally
tied), same training (plain SGD on the mean cross-entropy, global-norm clipping,
truncated BPTT with detached states), same flags and the same log lines, so
benchmarks/gluon_lm_bench.py reads all three the same way.

    /tmp/torchvenv/bin/python benchmarks/torch_word_lm.py --epochs 1 --max-batches 200
"""
import argparse
import math
import os
import time

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "examples", "data", "fortunes")


def build_parser():
    p = argparse.ArgumentParser(description="PyTorch LSTM word language model")
    p.add_argument("--data", type=str, default=DATA)
    p.add_argument("--emsize", type=int, default=200)
    p.add_argument("--nhid", type=int, default=200)
    p.add_argument("--nlayers", type=int, default=2)
    p.add_argument("--lr", type=float, default=20.0)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch_size", "--batch-size", dest="batch_size", type=int, default=20)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--tied", action="store_true")
    p.add_argument("--log-interval", type=int, default=50)
    p.add_argument("--max-batches", type=int, default=None)
    p.add_argument("--max-valid-batches", type=int, default=None)
    p.add_argument("--seed", type=int, default=42)
    return p


def tokenize(path, word2idx):
    ids = []
    with open(path) as f:
        for line in f:
            for w in line.split() + ["<eos>"]:
                ids.append(word2idx.setdefault(w, len(word2idx)))
    return torch.tensor(ids, dtype=torch.long)


def batchify(ids, batch_size):
    nrows = ids.size(0) // batch_size
    return ids[:nrows * batch_size].view(batch_size, nrows).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, source.size(0) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout, tie_weights):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("--tied needs --emsize equal to --nhid")
            self.decoder.weight = self.encoder.weight
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
        return self.decoder(self.drop(out).view(-1, self.nhid)), hidden

    def init_hidden(self, bsz):
        return (torch.zeros(self.nlayers, bsz, self.nhid), torch.zeros(self.nlayers, bsz, self.nhid))


def evaluate(model, source, args, criterion):
    model.eval()
    total, nwords = 0.0, 0
    hidden = model.init_hidden(source.size(1))
    with torch.no_grad():
        for n, i in enumerate(range(0, source.size(0) - 1, args.bptt)):
            if args.max_valid_batches is not None and n >= args.max_valid_batches:
                break
            data, target = get_batch(source, i, args.bptt)
            output, hidden = model(data, hidden)
            total += criterion(output, target).item() * target.numel()
            nwords += target.numel()
    return total / nwords


def main():
    args = build_parser().parse_args()
    torch.manual_seed(args.seed)
    word2idx = {}
    train_data = batchify(tokenize(os.path.join(args.data, "train.txt"), word2idx), args.batch_size)
    val_data = batchify(tokenize(os.path.join(args.data, "valid.txt"), word2idx), args.batch_size)
    print("vocabulary %d words, %d train rows x %d columns, torch %s, %d thread(s)"
          % (len(word2idx), train_data.size(0), args.batch_size, torch.__version__, torch.get_num_threads()),
          flush=True)
    model = RNNModel(len(word2idx), args.emsize, args.nhid, args.nlayers, args.dropout, args.tied)
    criterion = nn.CrossEntropyLoss()
    lr, best_val = args.lr, float("inf")
    for epoch in range(args.epochs):
        model.train()
        total_L, nwords, t_log, words_log = 0.0, 0, time.time(), 0
        hidden = model.init_hidden(args.batch_size)
        nbatches = (train_data.size(0) - 1 + args.bptt - 1) // args.bptt
        if args.max_batches is not None:
            nbatches = min(nbatches, args.max_batches)
        for ibatch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            if ibatch >= nbatches:
                break
            data, target = get_batch(train_data, i, args.bptt)
            hidden = tuple(h.detach() for h in hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output, target)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(p.grad, alpha=-lr)
            total_L += loss.item() * target.numel()
            nwords += target.numel()
            words_log += target.numel()
            if (ibatch + 1) % args.log_interval == 0:
                elapsed = time.time() - t_log
                cur = total_L / nwords
                print("[Epoch %d Batch %d/%d] loss %.2f, ppl %.2f, %.0f tokens/s"
                      % (epoch, ibatch + 1, nbatches, cur, math.exp(cur), words_log / elapsed), flush=True)
                total_L, nwords, t_log, words_log = 0.0, 0, time.time(), 0
        val_L = evaluate(model, val_data, args, criterion)
        print("[Epoch %d] validation loss %.2f, validation ppl %.2f" % (epoch, val_L, math.exp(val_L)), flush=True)
        if val_L < best_val:
            best_val = val_L
        else:
            lr *= 0.25
            print("learning rate now %g" % lr, flush=True)


if __name__ == "__main__":
    main()
