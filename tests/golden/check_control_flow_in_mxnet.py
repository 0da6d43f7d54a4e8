"""The other direction of tests/test_control_flow_golden.py: the control-flow graphs as jbind
saves them load in MXNet 1.9.1 and compute the golden values there.

    PYTHONPATH=. /work/main/.venv/bin/python tests/golden/check_control_flow_in_mxnet.py save /tmp/jcf
    MXNET_SUBGRAPH_BACKEND=NONE /tmp/mxvenv/bin/python tests/golden/check_control_flow_in_mxnet.py check /tmp/jcf
"""
import collections
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from control_flow_cases import cases  # noqa: E402


def save(folder):
    import jbind as mx
    os.makedirs(folder, exist_ok=True)
    for name, (build, _) in cases(mx).items():
        mx.attribute.AttrScope._subgraph_names = collections.defaultdict(int)
        with mx.name.NameManager():
            build().save(os.path.join(folder, name + ".json"))


def check(folder):
    import mxnet as mx
    for name in cases(mx):
        sym = mx.sym.load(os.path.join(folder, name + ".json"))
        gold = np.load(os.path.join(HERE, "control_flow", name + ".npz"))
        args = {k[3:]: mx.nd.array(gold[k]) for k in gold.files if k.startswith("in_")}
        exe = sym.bind(mx.cpu(), args, args_grad={k: mx.nd.zeros(v.shape) for k, v in args.items()})
        outs = exe.forward(is_train=True)
        exe.backward([mx.nd.array(gold[f"head_{i}"]) for i in range(len(outs))])
        for i, o in enumerate(outs):
            np.testing.assert_allclose(o.asnumpy(), gold[f"out_{i}"], rtol=1e-5, atol=1e-6)
        for k, g in exe.grad_dict.items():
            np.testing.assert_allclose(g.asnumpy(), gold[f"grad_{k}"], rtol=1e-5, atol=1e-6)
        print(name, "ok")


if __name__ == "__main__":
    {"save": save, "check": check}[sys.argv[1]](sys.argv[2])
