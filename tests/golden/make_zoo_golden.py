"""Golden data for layer ops and small model-zoo symbols, from real MXNet 1.9.1.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_zoo_golden.py [--group G]

Writes tests/golden/zoo/<case>.npz for every case in zoo_cases.py (with `--group G`,
tests/golden/ops_G/<case>.npz for the cases of ops_G_cases.py: more operators, one file
of cases per group, same format; tests/test_zoo_golden.py checks every group): the symbol JSON,
input shapes, inputs and aux states, the outputs of an inference forward
("infer:<i>"), and for training cases the outputs of a training forward ("out:<i>"),
the head gradients ("head:<i>", unless the heads are losses), the gradients
("grad:<arg>") and the aux states after backward ("auxafter:<aux>").
Deterministic: each case is seeded from its name and the npz bytes are reproducible.
Cases marked `native` run in a child process with MXNET_MKLDNN_ENABLED=0: MXNet's
MKLDNN kernel fails on them (Deconvolution with target_shape and a nonzero pad).
"""
import os
import subprocess
import sys
import zlib

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_golden import save_npz  # noqa: E402


def _group(argv):
    """(cases module, output folder) of `--group G` (default: the zoo)."""
    group = argv[argv.index("--group") + 1] if "--group" in argv else None
    name = "zoo" if group is None else "ops_" + group
    module = __import__(name + "_cases")
    return module, os.path.join(HERE, name), ([] if group is None else ["--group", group])


CASES, ZOO_DIR, GROUP_ARGS = _group(sys.argv)


def _seed(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def _draw(rng, spec, shape):
    kind, lo, hi = spec
    if kind == "int":
        return rng.randint(lo, hi, size=shape).astype(np.float32)
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def run_case(case):
    name, sym = case["name"], case["sym"]
    rng = np.random.RandomState(_seed(name))
    is_train = case.get("is_train", True)
    args, auxs = sym.list_arguments(), sym.list_auxiliary_states()
    req = {a: case.get("grad_req", {}).get(a, "write") for a in args}
    exe = sym.simple_bind(mx.cpu(), grad_req=req if is_train else "null", **case["shapes"])
    rec = {"symbol_json": np.array(sym.tojson()), "is_train": np.array(is_train),
           "list_arguments": np.array(args), "list_outputs": np.array(sym.list_outputs()),
           "list_auxiliary_states": np.array(auxs, dtype=str)}
    for k, v in case["shapes"].items():
        rec["shape:" + k] = np.array(v, dtype=np.int64)
    specs = case.get("inputs", {})
    for a in args:
        exe.arg_dict[a][:] = _draw(rng, specs.get(a, ("uniform", -1.0, 1.0)), exe.arg_dict[a].shape)
        rec["arg:" + a] = exe.arg_dict[a].asnumpy()
    for a in auxs:
        lo, hi = (0.5, 1.5) if a.endswith("var") else (-0.5, 0.5)
        exe.aux_dict[a][:] = rng.uniform(lo, hi, size=exe.aux_dict[a].shape).astype(np.float32)
        rec["aux:" + a] = exe.aux_dict[a].asnumpy()
    for i, o in enumerate(exe.forward(is_train=False)):
        rec["infer:%d" % i] = o.asnumpy()
    if is_train:
        outs = [o.asnumpy() for o in exe.forward(is_train=True)]
        for i, o in enumerate(outs):
            rec["out:%d" % i] = o
        if case.get("head_grads", True):
            heads = [rng.uniform(-1, 1, size=o.shape).astype(np.float32) for o in outs]
            for i, h in enumerate(heads):
                rec["head:%d" % i] = h
            exe.backward([mx.nd.array(h) for h in heads])
        else:
            exe.backward()
        for a in args:
            if req[a] != "null":
                rec["grad:" + a] = exe.grad_dict[a].asnumpy()
        for a in auxs:
            rec["auxafter:" + a] = exe.aux_dict[a].asnumpy()
    for k, v in rec.items():
        if v.dtype.kind == "f" and not np.all(np.isfinite(v)):
            raise SystemExit("%s: %s has non-finite values" % (name, k))
    path = os.path.join(ZOO_DIR, name + ".npz")
    save_npz(path, rec)
    return os.path.getsize(path)


def run_native(case):
    env = dict(os.environ, MXNET_MKLDNN_ENABLED="0", MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0")
    subprocess.run([sys.executable, os.path.abspath(__file__), *GROUP_ARGS, "--only", case["name"]], env=env,
                   check=True)
    return os.path.getsize(os.path.join(ZOO_DIR, case["name"] + ".npz"))


def main():
    cases = CASES.all_cases(mx)
    if "--only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1]
        run_case(next(c for c in cases if c["name"] == only))
        return
    os.makedirs(ZOO_DIR, exist_ok=True)
    for fn in os.listdir(ZOO_DIR):
        if fn.endswith(".npz"):
            os.remove(os.path.join(ZOO_DIR, fn))
    total = 0
    for c in cases:
        size = run_native(c) if c.get("native") else run_case(c)
        total += size
        print("%-32s train=%-5s %6dB" % (c["name"], c.get("is_train", True), size))
    print("\n%d cases, %.1f KB total" % (len(cases), total / 1024.0))


if __name__ == "__main__":
    main()
