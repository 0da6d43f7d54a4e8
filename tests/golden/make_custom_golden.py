"""Golden values for Python custom operators (`mx.operator`) from real MXNet 1.9.1.

Run from the repository root with the MXNet venv:

    /work/mxvenv/bin/python tests/golden/make_custom_golden.py

For each case of custom_cases.py: binds the graph, fills the arguments and aux states
from a seeded draw, runs forward (training) and backward, and writes
tests/golden/custom/<case>.npz with the symbol JSON, inputs, outputs, head gradients,
gradients, aux states after the step and the ops' call log.
"""
import json
import os
import sys
import zlib

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import custom_cases  # noqa: E402

OUT_DIR = os.path.join(HERE, "custom")


def run(case):
    sym, name = case["build"](), case["name"]
    rng = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
    args, auxs = sym.list_arguments(), sym.list_auxiliary_states()
    req = {a: case["grad_req"].get(a, "write") for a in args}
    custom_cases.LOG.clear()
    exe = sym.simple_bind(mx.cpu(), grad_req=req, **case["shapes"])
    out = {"symbol_json": np.array(sym.tojson()), "list_arguments": np.array(args),
           "list_outputs": np.array(sym.list_outputs()), "list_auxiliary_states": np.array(auxs, dtype=str)}
    for a in args:
        v = custom_cases.draw(rng, case["inputs"].get(a, ("uniform",)), exe.arg_dict[a].shape)
        exe.arg_dict[a][:] = v
        out["arg:" + a] = v
    for a in auxs:
        v = custom_cases.draw(rng, ("uniform",), exe.aux_dict[a].shape)
        exe.aux_dict[a][:] = v
        out["aux:" + a] = v
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    for i, o in enumerate(outs):
        out["out:%d" % i] = o
    if case["head_grads"]:
        heads = [rng.uniform(-1, 1, size=o.shape).astype(np.float32) for o in outs]
        for i, h in enumerate(heads):
            out["head:%d" % i] = h
        exe.backward([mx.nd.array(h) for h in heads])
    else:
        exe.backward()
    for a in args:
        if req[a] != "null":
            out["grad:" + a] = exe.grad_dict[a].asnumpy()
    for a in auxs:
        out["auxafter:" + a] = exe.aux_dict[a].asnumpy()
    mx.nd.waitall()
    calls = [list(c) for c in custom_cases.LOG.get(case["op_type"], []) if c[0] in ("forward", "backward")]
    out["calls"] = np.array(json.dumps(calls))
    path = os.path.join(OUT_DIR, name + ".npz")
    np.savez_compressed(path, **out)
    return os.path.getsize(path)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    total = 0
    for case in custom_cases.cases(mx):
        size = run(case)
        total += size
        print("%-16s %6d bytes" % (case["name"], size))
    print("total %d bytes" % total)


if __name__ == "__main__":
    main()
