"""Which library's float32 training step is off: one SGD-momentum step of a zoo checkpoint in
float32 and in float64, under jbind or MXNet 1.9.1, saving the first weight's change.

zoo_bench.py compares jbind's and MXNet's float32 weight change after one step at 1e-4; where
that check fails, run this under both libraries in both dtypes and compare each float32
change with the float64 ones (which agree with each other to ~1e-13 when the two libraries
compute the same function):

    python benchmarks/zoo_f64_check.py --lib jbind --dtype float32 --model mobilenet1.0 --batch 1
    python benchmarks/zoo_f64_check.py --lib jbind --dtype float64 ...
    /tmp/mxvenv/bin/python benchmarks/zoo_f64_check.py --lib mxnet --dtype float32 ...
    /tmp/mxvenv/bin/python benchmarks/zoo_f64_check.py --lib mxnet --dtype float64 ...
    python benchmarks/zoo_f64_check.py --compare --model mobilenet1.0 --batch 1

Inputs are zoo_bench's (`write_inputs`, same seed); the float64 run drops the exported
symbol's float32 `__dtype__` hints (a copy in `--work`). Results go to `--work`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _prefix(cache, work, model, dtype):
    if dtype == "float32":
        return os.path.join(cache, model)
    with open(os.path.join(cache, f"{model}-symbol.json")) as f:
        graph = json.load(f)
    for node in graph["nodes"]:
        for key in ("attrs", "attr"):
            node.get(key, {}).pop("__dtype__", None)
    with open(os.path.join(work, f"{model}-symbol.json"), "w") as f:
        json.dump(graph, f)
    link = os.path.join(work, f"{model}-0000.params")
    if not os.path.exists(link):
        os.symlink(os.path.join(cache, f"{model}-0000.params"), link)
    return os.path.join(work, model)


def step(args):
    import numpy as np
    if args.lib == "jbind":
        if args.dtype == "float64":
            os.environ["JAX_ENABLE_X64"] = "1"
        import jbind as mx
    else:
        import mxnet as mx
    import zoo_bench
    check = np.load(os.path.join(args.cache, f"{args.model}-check.npz"))["data"]
    zoo_bench.write_inputs(args.work, args.model, check, [args.batch])
    data = np.load(os.path.join(args.work, f"data_{args.batch}.npy")).astype(args.dtype)
    label = np.load(os.path.join(args.work, f"label_{args.batch}.npy")).astype(args.dtype)
    sym, arg, aux = mx.model.load_checkpoint(_prefix(args.cache, args.work, args.model, args.dtype), 0)
    arg = {k: v.astype(args.dtype) for k, v in arg.items()}
    aux = {k: v.astype(args.dtype) for k, v in aux.items()}
    first = next(k for k in sym.list_arguments() if k in arg)
    before = arg[first].asnumpy()
    mod = mx.mod.Module(mx.sym.SoftmaxOutput(sym, name="softmax"), data_names=["data"],
                        label_names=["softmax_label"], context=mx.cpu())
    mod.bind(data_shapes=[mx.io.DataDesc("data", data.shape, dtype=data.dtype)],
             label_shapes=[mx.io.DataDesc("softmax_label", label.shape, dtype=label.dtype)], for_training=True)
    mod.set_params(arg, aux)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
    batch = mx.io.DataBatch(data=[mx.nd.array(data, dtype=data.dtype)], label=[mx.nd.array(label, dtype=label.dtype)])
    mod.forward(batch, is_train=True)
    mod.backward()
    mod.update()
    delta = mod.get_params()[0][first].asnumpy() - before
    np.save(os.path.join(args.work, f"{args.lib}_{args.dtype}_{args.model}_{args.batch}.npy"), delta.astype(np.float64))
    print(f"{args.lib} {args.dtype}: {first} changed, largest |change| {abs(delta).max():.3e}")


def compare(args):
    import numpy as np
    runs = {}
    for lib in ("jbind", "mxnet"):
        for dtype in ("float32", "float64"):
            path = os.path.join(args.work, f"{lib}_{dtype}_{args.model}_{args.batch}.npy")
            if os.path.exists(path):
                runs[f"{lib} {dtype}"] = np.load(path)
    refs = [k for k in runs if k.endswith("float64")]
    for ref in refs:
        scale = abs(runs[ref]).max()
        for name, d in runs.items():
            if name != ref:
                print(f"{name} against {ref}: {abs(d - runs[ref]).max() / scale:.2e} of the largest change")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", choices=("jbind", "mxnet"))
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--model", default="mobilenet1.0")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/jbind-zoo"))
    p.add_argument("--work", default=os.path.expanduser("~/.cache/jbind-zoo/f64-check"))
    p.add_argument("--compare", action="store_true", help="compare the saved runs")
    args = p.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    if args.compare:
        compare(args)
    elif args.lib:
        step(args)
    else:
        p.error("--lib or --compare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
