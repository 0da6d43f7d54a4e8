"""Golden values for MXNet 1.9.1's optimizer update operators (`mx.nd.sgd_update`, ...).

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_optimizer_ops_golden.py

Writes tests/golden/optimizer_ops/optimizer_ops.npz: for every op and two parameter sets
(plain; and wd, rescale_grad != 1, clip_gradient, clip_weights where the op has it), the
inputs, the returned weight and every state after the call, and the cases as JSON
(key "cases": [[case id, op, {param: value}, [input names], [state names]], ...]).
Deterministic: inputs are drawn from a fixed seed per op.
"""
import json
import os
import zlib

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizer_ops", "optimizer_ops.npz")
SHAPE = (3, 4)

# op -> (state names, op-specific plain params, op-specific extra params of the second set)
OPS = {
    "sgd_update": ((), {}, {}),
    "sgd_mom_update": (("mom",), {"momentum": 0.9}, {}),
    "nag_mom_update": (("mom",), {"momentum": 0.9}, {}),
    "adam_update": (("mean", "var"), {}, {"beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6}),
    "rmsprop_update": (("n",), {}, {"gamma1": 0.9, "epsilon": 1e-6, "clip_weights": 0.9}),
    "rmspropalex_update": (("n", "g", "delta"), {}, {"gamma2": 0.8, "clip_weights": 0.9}),
    "signsgd_update": ((), {}, {}),
    "signum_update": (("mom",), {"momentum": 0.9}, {"wd_lh": 0.02}),
    "ftrl_update": (("z", "n"), {}, {"lamda1": 0.05, "beta": 0.5}),
    "ftml_update": (("d", "v", "z"), {"t": 3}, {"beta1": 0.5, "epsilon": 1e-6}),
    "mp_sgd_update": (("weight32",), {}, {}),
    "mp_sgd_mom_update": (("mom", "weight32"), {"momentum": 0.9}, {}),
    "mp_nag_mom_update": (("mom", "weight32"), {"momentum": 0.9}, {}),
}


def inputs(op, states, rng):
    f32 = np.float32
    w = rng.uniform(-1, 1, SHAPE).astype(f32)
    g = rng.uniform(-1, 1, SHAPE).astype(f32)
    vals = {"weight": w, "grad": g}
    for s in states:
        if s == "weight32":
            vals[s] = w.astype(f32)
        elif s in ("var", "v", "d"):
            vals[s] = rng.uniform(0.1, 1, SHAPE).astype(f32)
        elif s == "n":
            vals[s] = rng.uniform(0.5, 1.5, SHAPE).astype(f32)
        elif s == "g":  # rmspropalex needs n - g*g > 0
            vals[s] = rng.uniform(-0.5, 0.5, SHAPE).astype(f32)
        else:
            vals[s] = rng.uniform(-0.5, 0.5, SHAPE).astype(f32)
    if op.startswith("mp_"):
        vals["weight"] = w.astype(np.float16)
        vals["grad"] = g.astype(np.float16)
    return vals


def main():
    arrays, cases = {}, []
    for op, (states, plain, extra) in OPS.items():
        rng = np.random.default_rng(zlib.crc32(op.encode()))
        vals = inputs(op, states, rng)
        clip = "clip_grad" if op == "ftml_update" else "clip_gradient"
        sets = [dict(lr=0.1, **plain),
                dict(lr=0.1, wd=0.01, rescale_grad=0.5, **{clip: 0.3}, **plain, **extra)]
        for k, params in enumerate(sets):
            cid = f"{op}-{k}"
            nd = {n: mx.nd.array(v, dtype=v.dtype) for n, v in vals.items()}
            names = ["weight", "grad", *states]
            out = getattr(mx.nd, op)(*[nd[n] for n in names], **params)
            for n, v in vals.items():
                arrays[f"{cid}/in/{n}"] = v
            arrays[f"{cid}/out"] = out.asnumpy()
            for s in states:
                arrays[f"{cid}/state/{s}"] = nd[s].asnumpy()
            cases.append([cid, op, params, names, list(states)])
    arrays["cases"] = np.array(json.dumps(cases))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
