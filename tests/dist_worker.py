"""A worker of tests/test_distributed.py: trains a small model with kvstore=dist_sync (or
alone, over the same global batches) and saves its final parameters.

    python tests/dist_worker.py MODEL KVSTORE OUT.npz [NUM_PARTS]
"""
import sys

import numpy as np

import jbind as mx
from jbind import distributed


def mlp_iter(part, parts, global_batch=16):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 5)).astype(np.float32)
    Y = rng.integers(0, 3, 64).astype(np.float32)
    b = global_batch // parts
    rows = np.concatenate([np.arange(k * global_batch + part * b, k * global_batch + (part + 1) * b)
                           for k in range(64 // global_batch)])
    return mx.io.NDArrayIter(X[rows], Y[rows], batch_size=b)


def mlp():
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"), act_type="tanh")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def main():
    model, kvstore, out = sys.argv[1:4]
    parts = distributed.num_workers()
    rank = distributed.rank()
    mx.random.seed(rank)  # a different init per worker: rank 0's must win
    np.random.seed(rank)
    if model == "mlp":
        it = mlp_iter(rank, parts)
        mod = mx.mod.Module(mlp(), context=mx.cpu(0))
        mod.fit(it, num_epoch=2, kvstore=kvstore, optimizer="sgd",
                optimizer_params=dict(learning_rate=0.5, momentum=0.9), initializer=mx.init.Xavier())
    elif model == "mlp_separate":  # forward_backward + update: the gradient sum outside the step
        it = mlp_iter(rank, parts)
        mod = mx.mod.Module(mlp(), context=mx.cpu(0))
        mod.bind(it.provide_data, it.provide_label)
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer(kvstore=kvstore, optimizer="adam", optimizer_params=dict(learning_rate=0.05))
        for _ in range(2):
            it.reset()
            for batch in it:
                mod.forward_backward(batch)
                mod.update()
    elif model == "lm":  # the bucketing LM: every worker in the same bucket at every step
        rng = np.random.default_rng(7)
        sentences = [list(rng.integers(1, 12, size=rng.integers(2, 9))) for _ in range(160)]
        it = mx.rnn.BucketSentenceIter(sentences, 8 // parts, buckets=[4, 8], invalid_label=0,
                                       num_parts=parts, part_index=rank, seed=5)
        cell = mx.rnn.LSTMCell(num_hidden=6, prefix="lstm_")

        def sym_gen(seq_len):
            embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=12, output_dim=5, name="embed")
            cell.reset()
            out, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
            pred = mx.sym.FullyConnected(mx.sym.Reshape(out, shape=(-1, 6)), num_hidden=12, name="pred")
            label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
            return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)
        mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=it.default_bucket_key, context=mx.cpu(0))
        mod.fit(it, num_epoch=1, kvstore=kvstore, optimizer="sgd", eval_metric=mx.metric.Perplexity(0),
                optimizer_params=dict(learning_rate=0.1, momentum=0.9), initializer=mx.init.Xavier())
    else:
        raise SystemExit(f"unknown model {model}")
    arg, aux = mod.get_params()
    np.savez(out, **{k: v.asnumpy() for k, v in {**arg, **aux}.items()})
    print(f"worker {rank}/{parts} done", flush=True)


if __name__ == "__main__":
    main()
