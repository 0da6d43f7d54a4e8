"""Golden data for jbind's `gluon.model_zoo.vision` from real MXNet 1.9.1 (issue #21, part 8).

Run from the repository root with an MXNet 1.9.1 venv (never one with jax):

    MXNET_SUBGRAPH_BACKEND=NONE /tmp/mxvenv_gluon/bin/python tests/golden/gluon/make_model_zoo_golden.py

Writes into tests/golden/gluon/model_zoo/:

- `names.json.gz`: for every name `get_model` accepts, built with default arguments in a
  fresh name scope, the input shape used, and per parameter (sorted by structural name) its
  structural name (what `save_parameters` writes), its full name (what `collect_params` and
  `export` use) and its shape after `infer_shape` on that input. Checked by
  tests/test_gluon_model_zoo.py without running anything.
- `<case>.params` (`save_parameters`, structural names; `.params.gz` for the COMPRESSED
  cases, whose weights are rounded to multiples of 1/256; `<case>-legacy.params` for the
  LEGACY cases, with `collect_params` names less the network's prefix, the layout of
  MXNet's older published files) and `<case>.npz` (input "data" and
  inference output "out") for a few small networks built from the zoo's classes, with
  Xavier weights and non-trivial BatchNorm statistics. jbind loads MXNet's file and must
  reproduce the output.

Deterministic: seeds come from the case names.
"""
import gzip
import json
import os
import zlib

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402
from mxnet.gluon.model_zoo import vision  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model_zoo")

NAMES = ["resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
         "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2",
         "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn", "alexnet",
         "densenet121", "densenet161", "densenet169", "densenet201", "squeezenet1.0", "squeezenet1.1",
         "inceptionv3", "mobilenet1.0", "mobilenet0.75", "mobilenet0.5", "mobilenet0.25",
         "mobilenetv2_1.0", "mobilenetv2_0.75", "mobilenetv2_0.5", "mobilenetv2_0.25"]


def input_shape(name):
    return (1, 3, 299, 299) if name == "inceptionv3" else (1, 3, 224, 224)


def small_cases():
    """name -> (builder taking the zoo module, input shape); the same builders run in jbind."""
    v = vision
    return {
        "resnet18_v1_thin": (lambda: v.ResNetV1(v.BasicBlockV1, [2, 2, 2, 2], [4, 4, 8, 12, 16], classes=10),
                             (2, 3, 32, 32)),
        "resnet_v2_bottleneck_thumb": (lambda: v.ResNetV2(v.BottleneckV2, [1, 1, 1, 1], [8, 16, 24, 32, 48],
                                                          classes=10, thumbnail=True), (2, 3, 16, 16)),
        "densenet_tiny": (lambda: v.DenseNet(8, 4, [2, 1], classes=10), (1, 3, 56, 56)),
        "mobilenetv2_0.25": (lambda: v.get_model("mobilenetv2_0.25", classes=10), (1, 3, 32, 32)),
    }


# cases whose parameters are rounded to multiples of 1/256 and stored gzip-compressed
# (the file would be over 1 MB as plain float32)
COMPRESSED = {"mobilenetv2_0.25"}
# cases also saved with full parameter names less the network's prefix (`<case>-legacy.params`)
LEGACY = {"resnet_v2_bottleneck_thumb"}


def names_golden():
    table = {}
    for name in NAMES:
        with mx.name.NameManager():
            net = vision.get_model(name)
        shape = input_shape(name)
        net.infer_shape(mx.nd.zeros(shape))
        full = {id(p): p for p in net.collect_params().values()}
        rows = []
        for sname, p in sorted(net._collect_params_with_prefix().items()):
            assert id(p) in full
            rows.append([sname, p.name, list(p.shape)])
        table[name] = {"input": list(shape), "params": rows}
        print(name, len(rows))
    with gzip.GzipFile(os.path.join(OUT, "names.json.gz"), "wb", mtime=0) as f:
        f.write(json.dumps(table, sort_keys=True).encode())


def outputs_golden():
    for name, (build, shape) in small_cases().items():
        seed = zlib.crc32(name.encode()) & 0x7FFFFFFF
        mx.random.seed(seed)
        rng = np.random.default_rng(seed)
        with mx.name.NameManager():
            net = build()
        net.initialize(mx.init.Xavier())
        data = mx.nd.array(rng.standard_normal(shape).astype(np.float32))
        net(data)
        for pname, p in sorted(net.collect_params().items()):
            if pname.endswith("running_mean"):
                p.set_data(mx.nd.array(rng.normal(0, 0.3, p.shape).astype(np.float32)))
            elif pname.endswith("running_var"):
                p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape).astype(np.float32)))
        path = os.path.join(OUT, name + ".params")
        if name in COMPRESSED:
            for p in net.collect_params().values():
                p.set_data(mx.nd.array(np.round(p.data().asnumpy() * 256) / 256))
        out = net(data).asnumpy()
        net.save_parameters(path)
        if name in LEGACY:  # the pre-1.3 layout of MXNet's published files: full names less the net's prefix
            net.collect_params().save(os.path.join(OUT, name + "-legacy.params"), strip_prefix=net.prefix)
        if name in COMPRESSED:
            with open(path, "rb") as f, gzip.GzipFile(path + ".gz", "wb", mtime=0) as g:
                g.write(f.read())
            os.remove(path)
            path += ".gz"
        np.savez(os.path.join(OUT, name + ".npz"), data=data.asnumpy(), out=out)
        size = os.path.getsize(path)
        print(name, out.shape, f"{size} bytes of parameters")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    names_golden()
    outputs_golden()
