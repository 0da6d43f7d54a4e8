"""Export Gluon model zoo networks as MXNet 1.x checkpoints, for benchmarks/zoo_bench.py.

Run with Apache MXNet 1.9.1 (the files the benchmark serves are MXNet's own exports):

    /tmp/mxvenv/bin/python benchmarks/zoo_export.py --out ~/.cache/jbind-zoo \
        --models resnet18_v1,squeezenet1.1

(elsewhere: `python -m venv v && v/bin/pip install mxnet==1.9.1 "numpy<1.24"`). With
`--lib jbind` the same code runs on jbind's own model zoo (the CI smoke test does that).

Each model is built with `pretrained=False`, initialised with a fixed seed
(Xavier, MXNet's model zoo default), given one training-mode pass so that BatchNorm's
running statistics are not the trivial 0 / 1, hybridized and exported to
`OUT/<name>-symbol.json` and `OUT/<name>-0000.params`. Beside them,
`OUT/<name>-check.npz` holds one input (batch 1) and the exporting library's
inference-mode output for it: the benchmark checks every run against it. `tiny` is a
small network of the same layer kinds (convolution, BatchNorm, depthwise convolution,
pooling, dense) for smoke tests.

Writes are atomic (a temporary folder renamed into place), and a model whose files
exist is left alone unless `--force`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

ZOO = ("resnet18_v1", "resnet50_v1", "resnet50_v2", "mobilenet1.0", "mobilenetv2_1.0", "densenet121",
       "inceptionv3", "squeezenet1.1", "vgg11_bn", "alexnet")
SIZES = {"inceptionv3": 299, "tiny": 32}     # input side; every other model takes 224
SEED = 7


def input_shape(name: str) -> tuple:
    """The (channels, height, width) a model's data takes."""
    side = SIZES.get(name, 224)
    return (3, side, side)


def files(out: str, name: str) -> dict:
    """The paths one exported model occupies."""
    return {"symbol": os.path.join(out, f"{name}-symbol.json"), "params": os.path.join(out, f"{name}-0000.params"),
            "check": os.path.join(out, f"{name}-check.npz"), "prefix": os.path.join(out, name)}


def exported(out: str, name: str) -> bool:
    return all(os.path.isfile(p) for k, p in files(out, name).items() if k != "prefix")


def tiny(mx):
    """A small network with the zoo's layer kinds (32 x 32 input, 10 classes)."""
    nn = mx.gluon.nn
    net = nn.HybridSequential(prefix="tiny_")
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                nn.Conv2D(8, 3, padding=1, groups=8, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                nn.MaxPool2D(2), nn.Conv2D(16, 1), nn.BatchNorm(), nn.Activation("relu"),
                nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dense(10))
    return net


def build(mx, name: str):
    if name == "tiny":
        return tiny(mx)
    return mx.gluon.model_zoo.vision.get_model(name, pretrained=False)


def export(mx, np, out: str, name: str) -> None:
    """Build, initialise, run once in training mode, hybridize, export, and save the check."""
    mx.random.seed(SEED)
    rng = np.random.RandomState(SEED)
    net = build(mx, name)
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    c, h, w = input_shape(name)
    with mx.autograd.record(train_mode=True):   # moves BatchNorm's running mean and variance off 0 / 1
        net(mx.nd.array(rng.uniform(-1, 1, (2, c, h, w)).astype("float32"))).wait_to_read()
    net.hybridize()
    data = rng.uniform(-1, 1, (1, c, h, w)).astype("float32")
    output = net(mx.nd.array(data)).asnumpy()     # inference mode; also traces the graph export needs
    tmp = tempfile.mkdtemp(prefix=f".{name}-", dir=out)
    try:
        net.export(os.path.join(tmp, name), epoch=0)
        np.savez(os.path.join(tmp, f"{name}-check.npz"), data=data, output=output)
        for path in files(out, name).values():
            base = os.path.basename(path)
            if os.path.isfile(os.path.join(tmp, base)):
                os.replace(os.path.join(tmp, base), path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.expanduser("~/.cache/jbind-zoo"), help="cache folder (not the repo)")
    p.add_argument("--models", default=",".join(ZOO), help=f"comma-separated, from {ZOO + ('tiny',)}")
    p.add_argument("--lib", choices=("mxnet", "jbind"), default="mxnet", help="whose Gluon builds the models")
    p.add_argument("--force", action="store_true", help="export again even where the files exist")
    args = p.parse_args(argv)
    names = [m for m in args.models.split(",") if m]
    unknown = sorted(set(names) - set(ZOO) - {"tiny"})
    if unknown:
        p.error(f"unknown models {unknown}; choose from {list(ZOO) + ['tiny']}")
    if args.lib == "jbind":
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import jbind as mx
    else:
        import mxnet as mx
    import numpy as np
    os.makedirs(args.out, exist_ok=True)
    done = {}
    for name in names:
        if exported(args.out, name) and not args.force:
            done[name] = "cached"
            continue
        export(mx, np, args.out, name)
        done[name] = "exported"
        print(f"{name}: exported to {files(args.out, name)['prefix']}", flush=True)
    print(json.dumps({"lib": args.lib, "version": getattr(mx, "__version__", "?"), "models": done}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
