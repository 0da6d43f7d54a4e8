"""Golden NDArray files (`mx.nd.save`, `.params`, checkpoints) from real MXNet 1.9.1.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_params_golden.py

Writes tests/golden/params/:
  dtype_<dtype>.params    mx.nd.save of a dict {"edge", "rand"} per dtype (float32, float64,
                          float16, uint8, int32, int8, int64, bool, bfloat16); "edge" holds
                          extremes, -0.0, inf, NaN with a payload, subnormals
  dict_mixed.params       a dict of mixed dtypes, one array on cpu(1), one cpu_pinned(0),
                          a non-ASCII name and names with "arg:" / "aux:" prefixes
  list_mixed.params       a list of mixed dtypes (no names)
  single.params           mx.nd.save(fname, one_ndarray): a list of one
  empty.params            mx.nd.save(fname, {}): loads as []
  v3_npshape.params       saved under mx.util.np_shape(True): V3 magic, a 0-d and a (0, 3) array
  sparse.params           a csr and a row_sparse array (jbind must refuse them)
  legacy_v1.params        built here with struct in the V1 layout (magic 0xF993FAC8, no
                          storage type, int32 ndim + int64 dims); MXNet 1.9.1 writes only V2,
                          so the bytes follow NDArray::LegacyLoad and this script asserts
                          that MXNet 1.9.1 loads them back to the expected arrays
  legacy_nomagic.params   the same for the oldest layout (uint32 ndim + uint32 dims, no
                          magic), including an ndim-0 record, which 1.9.1 reads as a scalar
  mlp-symbol.json, mlp-0007.params
                          mx.model.save_checkpoint of an MLP with BatchNorm
  expected.json           every array's name, dtype, shape, saved context and raw bytes
                          (see params_manifest.py), the checkpoint's names, and an input and
                          MXNet's inference output for the MLP

Deterministic: fixed seeds; the files depend only on MXNet and numpy.
"""
import os
import struct
import sys

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import params_manifest as pm  # noqa: E402

OUT = os.path.join(HERE, "params")
BF16 = np.dtype([("bfloat16", np.uint16)])
V1_MAGIC = 0xF993FAC8


def edge_values(dtype):
    if dtype == "bool":
        return np.array([[True, False, True, True], [False, False, True, False]])
    if dtype in ("float32", "float64", "float16"):
        fi = np.finfo(dtype)
        bits = {"float32": np.uint32, "float64": np.uint64, "float16": np.uint16}[dtype]
        nan_payload = (np.array(np.nan, dtype).view(bits) | bits(1)).view(dtype)
        vals = [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, fi.max, fi.tiny, fi.tiny / 4, -fi.eps]
        return np.concatenate([np.array(vals, dtype), [nan_payload], np.array([np.nan], dtype)]).reshape(2, 6)
    ii = np.iinfo(dtype)
    return np.array([ii.min, ii.max, 0, 1, ii.max - 1, ii.min + 1 if ii.min else 2, 7, 100], dtype).reshape(2, 4)


def rand_values(dtype, rng):
    if dtype == "bool":
        return rng.rand(3, 1, 2) > 0.5
    if dtype.startswith("float"):
        return rng.randn(3, 1, 2).astype(dtype)
    ii = np.iinfo(dtype)
    return rng.randint(max(ii.min, -1000), min(ii.max, 1000), size=(3, 1, 2)).astype(dtype)


def loaded_numpy(fname):
    got = mx.nd.load(fname)
    if isinstance(got, dict):
        return {k: v.asnumpy() for k, v in got.items()}
    return [v.asnumpy() for v in got]


def save_and_check(fname, data, contexts=None):
    """mx.nd.save, then check MXNet loads the same bytes back; returns the manifest entry."""
    path = os.path.join(OUT, fname)
    mx.nd.save(path, data)
    if isinstance(data, dict):
        names, values = list(data), [v.asnumpy() for v in data.values()]
    else:
        data = [data] if isinstance(data, mx.nd.NDArray) else data
        names, values = None, [v.asnumpy() for v in data]
    entry = pm.file_entry(values, names, contexts)
    errors = pm.check_loaded(entry, loaded_numpy(path), fname)
    assert not errors, errors
    return entry


def build_legacy(path, records, names, layout):
    """Write an NDArray list whose arrays use MXNet's V1 or magic-less layout."""
    parts = [struct.pack("<QQQ", 0x112, 0, len(records))]
    for arr, flag in records:
        if layout == "v1":
            parts.append(struct.pack(f"<Ii{arr.ndim}q", V1_MAGIC, arr.ndim, *arr.shape))
        else:
            parts.append(struct.pack(f"<I{arr.ndim}I", arr.ndim, *arr.shape))
        parts.append(struct.pack("<iii", 1, 0, flag) + pm.raw_bytes(arr))
    parts.append(struct.pack("<Q", len(names)))
    for n in names:
        parts.append(struct.pack("<Q", len(n.encode())) + n.encode())
    with open(path, "wb") as f:
        f.write(b"".join(parts))


def mlp():
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    h = mx.sym.BatchNorm(h, fix_gamma=False, name="bn1")
    h = mx.sym.Activation(h, act_type="relu", name="relu1")
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def make_checkpoint(rng):
    net = mlp()
    shapes, _, aux_shapes = net.infer_shape(data=(4, 5))
    arg = {n: mx.nd.array(rng.randn(*s).astype(np.float32)) for n, s in zip(net.list_arguments(), shapes)
           if n not in ("data", "softmax_label")}
    aux_vals = {"bn1_moving_mean": rng.randn(8), "bn1_moving_var": rng.rand(8) + 0.5}
    aux = {n: mx.nd.array(aux_vals[n].astype(np.float32)) for n in net.list_auxiliary_states()}
    mx.model.save_checkpoint(os.path.join(OUT, "mlp"), 7, net, arg, aux)
    x = rng.randn(4, 5).astype(np.float32)
    exe = net.bind(mx.cpu(), {"data": mx.nd.array(x), "softmax_label": mx.nd.zeros((4,)), **arg},
                   aux_states=aux, grad_req="null")
    y = exe.forward(is_train=False)[0].asnumpy()
    names = [f"arg:{k}" for k in arg] + [f"aux:{k}" for k in aux]
    entry = pm.file_entry([v.asnumpy() for v in list(arg.values()) + list(aux.values())], names)
    assert not pm.check_loaded(entry, loaded_numpy(os.path.join(OUT, "mlp-0007.params")), "mlp")
    ckpt = {"prefix": "mlp", "epoch": 7, "arguments": net.list_arguments(),
            "auxiliary_states": net.list_auxiliary_states()}
    return entry, ckpt, {"mlp_input": pm.describe("data", x), "mlp_output": pm.describe("softmax", y)}


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(20240607)
    files = {}
    for dt in ("float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool"):
        files[f"dtype_{dt}.params"] = save_and_check(f"dtype_{dt}.params", {
            "edge": mx.nd.array(edge_values(dt), dtype=dt), "rand": mx.nd.array(rand_values(dt, rng), dtype=dt)})
    bf = {k: mx.nd.array(v).astype(BF16) for k, v in
          (("edge", edge_values("float32")), ("rand", rand_values("float32", rng)))}
    files["dtype_bfloat16.params"] = save_and_check("dtype_bfloat16.params", bf)

    mixed = {"arg:fc_weight": mx.nd.array(rng.randn(3, 2), dtype="float32"),
             "aux:bn_moving_var": mx.nd.array(rng.rand(4), dtype="float16", ctx=mx.cpu(1)),
             "poids_é": mx.nd.array(rng.randint(0, 255, (2, 2, 2)), dtype="uint8", ctx=mx.cpu_pinned(0)),
             "plain": mx.nd.array(rng.randint(-9, 9, (5,)), dtype="int32")}
    files["dict_mixed.params"] = save_and_check("dict_mixed.params", mixed, [(1, 0), (1, 1), (3, 0), (1, 0)])
    files["list_mixed.params"] = save_and_check("list_mixed.params", [
        mx.nd.array(rng.randn(2, 3), dtype="float32"), mx.nd.array([1, 0, 1], dtype="bool"),
        mx.nd.array(rng.randint(-100, 100, (1, 4)), dtype="int8")])
    files["single.params"] = save_and_check("single.params", mx.nd.array([[1.25, -2.5]]))
    files["empty.params"] = save_and_check("empty.params", {})
    assert loaded_numpy(os.path.join(OUT, "empty.params")) == []
    files["empty.params"]["form"] = "list"

    with mx.util.np_shape(True):
        v3 = {"scalar": mx.nd.array(np.float32(2.5).reshape(())), "empty_rows": mx.nd.zeros((0, 3)),
              "m": mx.nd.array(rng.randn(2, 2).astype(np.float32))}
        files["v3_npshape.params"] = save_and_check("v3_npshape.params", v3)

    mx.nd.save(os.path.join(OUT, "sparse.params"), {
        "csr": mx.nd.array([[0, 1], [0, 0]]).tostype("csr"),
        "rsp": mx.nd.array([[0, 1], [0, 0]]).tostype("row_sparse")})

    v1 = [(rng.randn(2, 3).astype(np.float32), 0), (np.array([7, -8, 9, 2 ** 31 - 1], np.int32), 4),
          (np.array([np.pi, -0.0], np.float64), 1)]
    build_legacy(os.path.join(OUT, "legacy_v1.params"), v1, ["w", "i", "d"], "v1")
    files["legacy_v1.params"] = pm.file_entry([a for a, _ in v1], ["w", "i", "d"])
    old = [(rng.randn(3, 2).astype(np.float32), 0), (np.array(5.5, np.float32), 0),
           (np.array([[1, 2]], np.uint8), 3)]
    build_legacy(os.path.join(OUT, "legacy_nomagic.params"), old, [], "nomagic")
    files["legacy_nomagic.params"] = pm.file_entry([a for a, _ in old])
    for fname in ("legacy_v1.params", "legacy_nomagic.params"):  # MXNet 1.9.1 reads what we built
        errors = pm.check_loaded(files[fname], loaded_numpy(os.path.join(OUT, fname)), fname)
        assert not errors, errors

    files["mlp-0007.params"], ckpt, extra = make_checkpoint(rng)
    with open(os.path.join(OUT, pm.MANIFEST), "w", encoding="utf-8") as f:
        f.write(pm.dumps({"files": files, "checkpoints": [ckpt], "extra": extra}))
    print(f"wrote {len(os.listdir(OUT))} files to {OUT}")


if __name__ == "__main__":
    main()
