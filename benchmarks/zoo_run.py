"""Serve and train one exported model the way an MXNet 1.x user does; time it (benchmarks/zoo_bench.py).

    python benchmarks/zoo_run.py --lib jbind|mxnet --prefix ~/.cache/jbind-zoo/resnet18_v1 \
        --inputs DIR --batches 1,32 --reps 10 --train-reps 5 --out result.json

The same code runs under Apache MXNet 1.9.1 and under jbind (`--lib`): the only
difference is the import. Per batch size N it reads `DIR/data_N.npy` and
`DIR/label_N.npy` and does

- inference: `mx.model.load_checkpoint(prefix, 0)`, `mx.mod.Module(sym, label_names=None)`,
  `bind(for_training=False)`, `set_params`, `forward(is_train=False)`; the first call
  (bind + set_params + first forward + reading the output, i.e. jbind's compile) is
  timed apart from the `--reps` steady calls;
- training: a `SoftmaxOutput` head on the network, `Module(..., label_names=['softmax_label'])`,
  `bind(for_training=True)`, `set_params`, SGD (learning rate 0.01, momentum 0.9), then
  `forward(is_train=True)`, `backward()`, `update()`; the first step (bind + optimizer +
  first step) apart from `--train-reps` steady steps, each ended by `mx.nd.waitall()`.

It saves the inference output (`DIR/<lib>_infer_N.npy`), the first training step's
output and the change it made to the first weight (`DIR/<lib>_train_N.npz`), for the
caller to compare across libraries, and writes its times as JSON to `--out`.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from _common import write_json


def _sync(mx, mod):
    for out in mod.get_outputs():
        out.wait_to_read()
    mx.nd.waitall()


def _batch(mx, np, data, label=None):
    return mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)] if label is not None else None)


def infer(mx, np, prefix, data, reps):
    t0 = time.perf_counter()
    sym, arg, aux = mx.model.load_checkpoint(prefix, 0)
    t1 = time.perf_counter()
    mod = mx.mod.Module(sym, data_names=["data"], label_names=None, context=mx.cpu())
    mod.bind(data_shapes=[("data", data.shape)], for_training=False)
    mod.set_params(arg, aux)
    batch = _batch(mx, np, data)
    mod.forward(batch, is_train=False)
    out = mod.get_outputs()[0].asnumpy()
    t2 = time.perf_counter()
    times = []
    for _ in range(reps):
        s = time.perf_counter()
        mod.forward(batch, is_train=False)
        _sync(mx, mod)
        times.append(time.perf_counter() - s)
    return {"load_s": t1 - t0, "first_s": t2 - t1, "steady_s": times}, out


def train(mx, np, prefix, data, label, reps):
    sym, arg, aux = mx.model.load_checkpoint(prefix, 0)
    first = next(n for n in sym.list_arguments() if n in arg)   # the weight nearest the input
    before = arg[first].asnumpy()
    t1 = time.perf_counter()
    net = mx.sym.SoftmaxOutput(sym, name="softmax")
    mod = mx.mod.Module(net, data_names=["data"], label_names=["softmax_label"], context=mx.cpu())
    mod.bind(data_shapes=[("data", data.shape)], label_shapes=[("softmax_label", label.shape)], for_training=True)
    mod.set_params(arg, aux)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
    batch = _batch(mx, np, data, label)
    mod.forward(batch, is_train=True)
    mod.backward()
    mod.update()
    _sync(mx, mod)
    t2 = time.perf_counter()
    out = mod.get_outputs()[0].asnumpy()
    delta = mod.get_params()[0][first].asnumpy() - before
    times = []
    for _ in range(reps):
        s = time.perf_counter()
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
        _sync(mx, mod)
        times.append(time.perf_counter() - s)
    return {"first_s": t2 - t1, "steady_s": times, "first_weight": first}, out, delta


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", choices=("mxnet", "jbind"), required=True)
    p.add_argument("--prefix", required=True, help="checkpoint prefix (PREFIX-symbol.json, PREFIX-0000.params)")
    p.add_argument("--inputs", required=True, help="folder with data_N.npy / label_N.npy; outputs go here too")
    p.add_argument("--batches", default="1,32")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--train-reps", type=int, default=5, help="steady training steps (0: no training)")
    p.add_argument("--out", required=True, help="JSON of times")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    if args.lib == "jbind":
        import jbind as mx
    else:
        import mxnet as mx
    import numpy as np
    res = {"lib": args.lib, "version": getattr(mx, "__version__", "?"), "import_s": time.perf_counter() - t0,
           "infer": {}, "train": {}}
    for n in [int(b) for b in args.batches.split(",") if b]:
        data = np.load(os.path.join(args.inputs, f"data_{n}.npy"))
        res["infer"][str(n)], out = infer(mx, np, args.prefix, data, args.reps)
        np.save(os.path.join(args.inputs, f"{args.lib}_infer_{n}.npy"), out)
        if args.train_reps > 0:
            label = np.load(os.path.join(args.inputs, f"label_{n}.npy"))
            res["train"][str(n)], out, delta = train(mx, np, args.prefix, data, label, args.train_reps)
            np.savez(os.path.join(args.inputs, f"{args.lib}_train_{n}.npz"), output=out, delta=delta)
    write_json(args.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
