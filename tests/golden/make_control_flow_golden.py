"""MXNet 1.9.1's JSON, outputs and gradients of the control-flow graphs of
control_flow_cases.py.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /tmp/mxvenv/bin/python tests/golden/make_control_flow_golden.py

Writes tests/golden/control_flow/<case>.json (the symbol's tojson) and <case>.npz (inputs,
outputs, head gradients, gradients of every input), checked by
tests/test_control_flow_golden.py.
"""
import collections
import os
import sys

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "control_flow")
sys.path.insert(0, HERE)
from control_flow_cases import cases, inputs  # noqa: E402


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (build, shapes) in cases(mx).items():
        mx.attribute.AttrScope._subgraph_names = collections.defaultdict(int)  # names as in a fresh process
        with mx.name.NameManager():
            s = build()
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            f.write(s.tojson())
        vals = inputs(name, shapes)
        args = {k: mx.nd.array(v) for k, v in vals.items()}
        grads = {k: mx.nd.zeros(v.shape) for k, v in vals.items()}
        exe = s.bind(mx.cpu(), args, args_grad=grads)
        outs = [o.asnumpy() for o in exe.forward(is_train=True)]
        rng = np.random.default_rng(7)
        heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in outs]
        exe.backward([mx.nd.array(h) for h in heads])
        saved = {f"in_{k}": v for k, v in vals.items()}
        saved.update({f"out_{i}": o for i, o in enumerate(outs)})
        saved.update({f"head_{i}": h for i, h in enumerate(heads)})
        saved.update({f"grad_{k}": g.asnumpy() for k, g in exe.grad_dict.items()})
        np.savez(os.path.join(OUT, name + ".npz"), **saved)


if __name__ == "__main__":
    main()
