"""Gluon models exported and saved by real MXNet 1.9.1, for jbind to load (issue #21).

Run from the repository root with an MXNet 1.9.1 venv (numpy 1.23):

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_gluon_golden.py

For each case of gluon_cases.py (and MXNet's model-zoo `mobilenet0.25` with 10 classes)
it seeds MXNet and numpy from the case name, initializes the block (Xavier, BatchNorm
running statistics set to non-trivial values), hybridizes it, runs one inference batch
and writes:

- `gluon/<name>-symbol.json` and `gluon/<name>-0000.params` with `HybridBlock.export`;
- `gluon/<name>.params` with `save_parameters` (structural names), except for the zoo model;
- `gluon/<name>.npz`: the input ("data") and the output ("out").

tests/test_gluon_golden.py reads them; CI never runs MXNet.
"""
import os
import sys
import zlib

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gluon_cases as gc  # noqa: E402

OUT = os.path.join(HERE, "gluon")


def _input(spec, rng):
    if spec["kind"] == "float":
        return rng.standard_normal(spec["shape"]).astype(np.float32)
    return rng.integers(0, spec["kind"][1], spec["shape"]).astype(np.float32)


def _make(name, net, spec, structural):
    seed = zlib.crc32(name.encode()) & 0x7FFFFFFF
    mx.random.seed(seed)
    rng = np.random.default_rng(seed)
    net.initialize(mx.init.Xavier())
    data = mx.nd.array(_input(spec, rng))
    net(data)  # finish deferred initialization
    for pname, p in sorted(net.collect_params().items()):
        if pname.endswith(("running_mean", "running_var")):
            values = rng.uniform(0.5, 1.5, p.shape) if pname.endswith("var") else rng.normal(0, 0.3, p.shape)
            p.set_data(mx.nd.array(values.astype(np.float32)))
    net.hybridize()
    out = net(data)
    out = out[0] if isinstance(out, (list, tuple)) else out
    net.export(os.path.join(OUT, name))
    if structural:
        net.save_parameters(os.path.join(OUT, name + ".params"))
    np.savez(os.path.join(OUT, name + ".npz"), data=data.asnumpy(), out=out.asnumpy())
    print(name, out.shape)


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, spec in gc.CASES.items():
        _make(name, gc.build(mx, name), spec, True)
    for name, spec in gc.ZOO.items():
        with mx.name.NameManager():
            net = mx.gluon.model_zoo.vision.get_model(name, classes=spec["classes"])
        _make(name, net, spec, False)


if __name__ == "__main__":
    main()
