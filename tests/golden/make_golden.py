"""Generate golden reference data from real MXNet 1.9.1.

Run from the repository root with the MXNet venv:

    /work/mxvenv/bin/python tests/golden/make_golden.py

Writes tests/golden/ops/<case>.npz, tests/golden/graphs/<case>.json and
tests/golden/graphs/errors.json.  Deterministic: each case uses a numpy seed
derived from its name.
"""
import io
import json
import re
import os
import sys
import zipfile
import zlib

import numpy as np

# plain operators, no MKLDNN graph fusion (also silences a log line per bind)
os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402

OPS_DIR = os.path.join(HERE, "ops")
GRAPHS_DIR = os.path.join(HERE, "graphs")


def seed_for(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def gen_input(rng, spec, shape):
    kind, lo, hi = spec
    if kind == "uniform":
        return rng.uniform(lo, hi, size=shape).astype(np.float32)
    if kind == "int":
        return rng.randint(lo, hi, size=shape).astype(np.float32)
    raise ValueError(spec)


def full_grad_req(case, arg_names):
    req = case.get("grad_req", "write")
    if isinstance(req, str):
        return {a: req for a in arg_names}
    return {a: req.get(a, "write") for a in arg_names}


def run_op_case(case):
    name = case["name"]
    sym = case["sym"]
    rng = np.random.RandomState(seed_for(name))
    is_train = bool(case.get("is_train", True))
    arg_names = sym.list_arguments()
    aux_names = sym.list_auxiliary_states()
    req = full_grad_req(case, arg_names)
    exe = sym.simple_bind(mx.cpu(), grad_req=req, **case["shapes"])

    out = {
        "symbol_json": np.array(sym.tojson()),
        "list_arguments": np.array(arg_names),
        "list_outputs": np.array(sym.list_outputs()),
        "list_auxiliary_states": np.array(aux_names, dtype=str),
        "is_train": np.array(is_train),
    }
    specs = case.get("inputs", {})
    for a in arg_names:
        arr = exe.arg_dict[a]
        v = gen_input(rng, specs.get(a, ("uniform", -1.0, 1.0)), arr.shape)
        arr[:] = v
        out["arg:" + a] = arr.asnumpy()
    for a in aux_names:
        arr = exe.aux_dict[a]
        if a.endswith("var"):
            v = rng.uniform(0.5, 1.5, size=arr.shape).astype(np.float32)
        else:
            v = rng.uniform(-0.5, 0.5, size=arr.shape).astype(np.float32)
        arr[:] = v
        out["aux:" + a] = arr.asnumpy()

    exe.forward(is_train=is_train)
    outs = [o.asnumpy() for o in exe.outputs]
    for i, o in enumerate(outs):
        out["out:%d" % i] = o
    for a in aux_names:
        out["auxfwd:" + a] = exe.aux_dict[a].asnumpy()

    did_backward = False
    if is_train and any(r != "null" for r in req.values()):
        if case.get("head_grads", True):
            heads = [rng.uniform(-1, 1, size=o.shape).astype(o.dtype) for o in outs]
            for i, h in enumerate(heads):
                out["head:%d" % i] = h
            exe.backward(out_grads=[mx.nd.array(h, dtype=h.dtype) for h in heads])
        else:
            exe.backward()
        did_backward = True
        for a in arg_names:
            if req[a] != "null":
                out["grad:" + a] = exe.grad_dict[a].asnumpy()
    for a in aux_names:
        out["auxafter:" + a] = exe.aux_dict[a].asnumpy()

    # arguments MXNet modified in place (BatchNorm fix_gamma=True writes 1s)
    for a in arg_names:
        after = exe.arg_dict[a].asnumpy()
        if not np.array_equal(after, out["arg:" + a]):
            print("  note: %s: argument %s modified in place" % (name, a))
            out["argafter:" + a] = after
    for k, v in out.items():
        if v.dtype.kind == "f" and not np.all(np.isfinite(v)):
            print("  WARNING: %s: %s has non-finite values" % (name, k))
    path = os.path.join(OPS_DIR, name + ".npz")
    save_npz(path, out)
    return did_backward, os.path.getsize(path)


def save_npz(path, arrays):
    """Like np.savez_compressed, but byte-for-byte reproducible (fixed zip times)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asanyarray(arrays[key]), allow_pickle=False)
            zf.writestr(info, buf.getvalue())


def shapes_to_lists(shapes):
    if shapes is None:
        return None
    return [None if s is None else list(s) for s in shapes]


def types_to_names(types):
    if types is None:
        return None
    return [None if t is None else np.dtype(t).name for t in types]


def run_graph_case(name, sym, shape_kwargs):
    internals = sym.get_internals()
    d = {
        "json": sym.tojson(),
        "list_arguments": sym.list_arguments(),
        "list_outputs": sym.list_outputs(),
        "list_auxiliary_states": sym.list_auxiliary_states(),
        "list_inputs": sym.list_inputs(),
        "internals_list_outputs": internals.list_outputs(),
        "attr_dict": sym.attr_dict(),
        "name": sym.name if len(sym.list_outputs()) == 1 else None,
    }
    if shape_kwargs is not None:
        arg, outs, aux = sym.infer_shape(**shape_kwargs)
        d["infer_shape_kwargs"] = {k: list(v) for k, v in shape_kwargs.items()}
        d["infer_shape"] = {"arg": shapes_to_lists(arg), "out": shapes_to_lists(outs),
                            "aux": shapes_to_lists(aux)}
        type_kwargs = {k: np.float32 for k in shape_kwargs}
        if type_kwargs:
            arg_t, out_t, aux_t = sym.infer_type(**type_kwargs)
            d["infer_type_kwargs"] = {k: "float32" for k in type_kwargs}
            d["infer_type"] = {"arg": types_to_names(arg_t), "out": types_to_names(out_t),
                               "aux": types_to_names(aux_t)}
    path = os.path.join(GRAPHS_DIR, name + ".json")
    with open(path, "w") as f:
        json.dump(d, f, indent=1, sort_keys=True)
    return os.path.getsize(path)


def run_error_cases():
    res = {}
    for name, fn in cases.error_cases(mx).items():
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            # drop log timestamps such as "[23:43:12] " so the output is stable
            msg = re.sub(r"\[\d\d:\d\d:\d\d\] ", "", str(e)).strip()
            res[name] = {
                "class": type(e).__name__,
                "module": type(e).__module__,
                "mro": [c.__name__ for c in type(e).__mro__],
                "first_line": msg.splitlines()[0] if msg else "",
            }
        else:
            res[name] = {"class": None, "first_line": "no exception raised"}
    with open(os.path.join(GRAPHS_DIR, "errors.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    return res


def main():
    os.makedirs(OPS_DIR, exist_ok=True)
    os.makedirs(GRAPHS_DIR, exist_ok=True)
    for d in (OPS_DIR, GRAPHS_DIR):
        for fn in os.listdir(d):
            if fn.endswith((".npz", ".json")):
                os.remove(os.path.join(d, fn))

    total = 0
    op_list = cases.op_cases(mx)
    n_bwd = 0
    for c in op_list:
        bwd, size = run_op_case(c)
        n_bwd += bwd
        total += size
        print("op    %-32s outs=%d bwd=%s %6dB" % (c["name"], len(c["sym"].list_outputs()),
                                                 bwd, size))
    graphs = cases.graph_cases(mx)
    for name, sym in graphs.items():
        size = run_graph_case(name, sym, cases.GRAPH_SHAPES.get(name))
        total += size
        print("graph %-32s args=%s" % (name, sym.list_arguments()))
    errs = run_error_cases()
    for name, e in errs.items():
        print("error %-32s %s: %s" % (name, e["class"], e["first_line"][:100]))
    print("\n%d op cases (%d with backward), %d graph cases, %d error cases, %.1f KB total"
          % (len(op_list), n_bwd, len(graphs), len(errs), total / 1024.0))


if __name__ == "__main__":
    main()
