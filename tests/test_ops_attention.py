"""The transformer contrib operators (jbind/ops/attention.py) against numpy references.

Behaviours marked "MXNet 1.9.1" were checked against it; tests/golden/ops_attention/
holds MXNet's own forward values and gradients of every op (tests/test_zoo_golden.py).
"""
import json

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, raises_naming

V = mx.sym.Variable
S = mx.sym
C = mx.sym.contrib
P = mx.base.ParamError
SE = mx.base.ShapeError


# ------------------------------------------------------------------ numpy references
def _heads(x, heads, parts):
    """(seq, batch, heads * parts * d) -> (seq, batch, heads, parts, d)."""
    s, b, e = x.shape
    return x.reshape(s, b, heads, parts, e // (heads * parts))


def _selfatt_qk(x, heads):
    r = _heads(x, heads, 3)
    s, b, _, _, d = r.shape
    return np.einsum("qbhd,kbhd->bhqk", r[:, :, :, 0], r[:, :, :, 1]).reshape(b * heads, s, s) / np.sqrt(d)


def _selfatt_valatt(x, att, heads):
    r = _heads(x, heads, 3)
    s, b, _, _, d = r.shape
    return np.einsum("bhqk,kbhd->qbhd", att.reshape(b, heads, s, s), r[:, :, :, 2]).reshape(s, b, heads * d)


def _encdec_qk(q, kv, heads):
    r = _heads(kv, heads, 2)
    sk, b, _, _, d = r.shape
    sq = q.shape[0]
    return np.einsum("qbhd,kbhd->bhqk", q.reshape(sq, b, heads, d), r[:, :, :, 0]).reshape(b * heads, sq, sk) \
        / np.sqrt(d)


def _encdec_valatt(kv, att, heads):
    r = _heads(kv, heads, 2)
    sk, b, _, _, d = r.shape
    sq = att.shape[1]
    return np.einsum("bhqk,kbhd->qbhd", att.reshape(b, heads, sq, sk), r[:, :, :, 1]).reshape(sq, b, heads * d)


def _arange_like(x, start=0.0, step=1.0, repeat=1, axis=None):
    shape = x.shape if axis is None else (x.shape[axis],)
    return (start + (np.arange(int(np.prod(shape))) // repeat) * step).reshape(shape)


def _index_copy(old, idx, new):
    out = old.copy()
    out[idx.astype(int)] = new
    return out


def _round(x):  # C's round: half away from zero
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


IDX = np.array([3.0, 0.0])
REPEATED = np.array([1.0, 1.0, 3.0])

def _selfatt():
    x, a, z = V("x"), V("a"), V("z")
    return S.Group([C.interleaved_matmul_selfatt_qk(x, heads=2), C.interleaved_matmul_selfatt_valatt(x, a, heads=2),
                    C.interleaved_matmul_selfatt_qk(z, heads=3)])


def _encdec():
    q, kv, a = V("q"), V("kv"), V("a")
    return S.Group([C.interleaved_matmul_encdec_qk(q, kv, heads=2), C.interleaved_matmul_encdec_valatt(kv, a, heads=2)])


def _div_arange():
    x = V("x")
    return S.Group([C.div_sqrt_dim(x), C.arange_like(x, start=-1.5, step=0.5, repeat=2),
                    C.arange_like(x, axis=-2, start=2, step=3)])


def _straight_through():
    x, y = V("x"), V("y")
    return S.Group([C.gradientmultiplier(x, scalar=-2), C.round_ste(y * 3), C.sign_ste(y)])


CASES = [
    # one graph per family: one compile each
    Case("selfatt_qk_valatt_heads_2_and_3", _selfatt,
         lambda x, a, z: [_selfatt_qk(x, 2), _selfatt_valatt(x, a, 2), _selfatt_qk(z, 3)],
         {"x": (3, 2, 12), "a": (4, 3, 3), "z": (2, 1, 9)}),
    Case("encdec_qk_valatt_heads_2", _encdec, lambda q, kv, a: [_encdec_qk(q, kv, 2), _encdec_valatt(kv, a, 2)],
         {"q": (3, 2, 4), "kv": (2, 2, 8), "a": (4, 3, 2)}),
    Case("div_sqrt_dim_and_arange_like", _div_arange,
         lambda x: [x / np.sqrt(5), _arange_like(x, -1.5, 0.5, 2), _arange_like(x, 2, 3, axis=-2)],
         {"x": (2, 3, 5)}),
    Case("index_copy", lambda: C.index_copy(V("old"), V("idx"), V("new")),
         lambda old, idx, new: [_index_copy(old, idx, new)],
         {"old": (4, 2, 3), "idx": (2,), "new": (2, 2, 3)}, inputs={"idx": IDX}, no_grad=("idx",)),
    # MXNet 1.9.1: forward identity / round / sign, backward scalar * g / g / g
    Case("gradientmultiplier_round_sign_ste", _straight_through,
         lambda x, y: [x, _round(y * 3), np.sign(y)], {"x": (2, 3), "y": (3, 4)},
         ref_grad=lambda x, y: {"x": np.full(x.shape, -2.0), "y": np.full(y.shape, 4.0)}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def _grads(sym, values, heads, fixed=()):
    exe = sym.simple_bind(mx.cpu(), grad_req={n: "null" if n in fixed else "write" for n in values},
                          **{k: np.shape(v) for k, v in values.items()})
    outs = exe.forward(is_train=True, **values)
    exe.backward([mx.nd.array(h) for h in heads])
    return [o.asnumpy() for o in outs], {n: exe.grad_dict[n].asnumpy() for n in values if n not in fixed}


def test_index_copy_gradient_is_mxnets_also_for_a_repeated_index():
    # MXNet 1.9.1's values: old.grad zeroes the copied rows, new row i gets g[index[i]]
    old, new = np.zeros((4, 2), np.float32), np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    head = np.arange(8, dtype=np.float32).reshape(4, 2)
    outs, g = _grads(C.index_copy(V("old"), V("idx"), V("new")), {"old": old, "idx": REPEATED, "new": new},
                     [head], fixed=("idx",))
    np.testing.assert_array_equal(g["old"], [[0, 1], [0, 0], [4, 5], [0, 0]])
    np.testing.assert_array_equal(g["new"], [[2, 3], [2, 3], [6, 7]])
    np.testing.assert_array_equal(outs[0][[0, 2, 3]], [[0, 0], [0, 0], [5, 6]])


def test_index_copy_out_of_range_rows_copy_nothing():
    # jbind drops them (MXNet 1.9.1 writes outside the array); negative ones too, not Python's wrap
    old = np.zeros((3, 2), np.float32)
    new = np.ones((2, 2), np.float32)
    for idx in ([5, 1], [-1, 1]):
        outs, g = _grads(C.index_copy(V("old"), V("idx"), V("new")),
                         {"old": old, "idx": np.array(idx, np.float32), "new": new}, [np.ones((3, 2))],
                         fixed=("idx",))
        np.testing.assert_array_equal(outs[0], [[0, 0], [1, 1], [0, 0]])
        np.testing.assert_array_equal(g["new"], [[0, 0], [1, 1]])
        np.testing.assert_array_equal(g["old"], [[1, 1], [0, 0], [1, 1]])


def test_attention_gradients_leave_unused_blocks_zero():
    # qk reads queries and keys only, valatt values only: the other blocks get zeros (MXNet 1.9.1)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (2, 1, 12)).astype(np.float32)
    att = rng.uniform(0, 1, (2, 2, 2)).astype(np.float32)
    _, g = _grads(C.interleaved_matmul_selfatt_qk(V("x"), heads=2), {"x": x}, [np.ones((2, 2, 2))])
    r = g["x"].reshape(2, 1, 2, 3, 2)
    assert np.all(r[:, :, :, 2] == 0) and np.all(r[:, :, :, :2] != 0)
    _, g = _grads(C.interleaved_matmul_selfatt_valatt(V("x"), V("a"), heads=2), {"x": x, "a": att},
                  [np.ones((2, 1, 4))])
    r = g["x"].reshape(2, 1, 2, 3, 2)
    assert np.all(r[:, :, :, :2] == 0) and np.all(r[:, :, :, 2] != 0)


# ------------------------------------------------------------------ names, parameters, errors
def test_names_inputs_and_parameters_are_mxnets():
    # MXNet 1.9.1's input names and parameters
    for sym, args in [
        (C.interleaved_matmul_selfatt_qk(heads=2, name="n"), ["n_queries_keys_values"]),
        (C.interleaved_matmul_selfatt_valatt(heads=2, name="n"), ["n_queries_keys_values", "n_attention"]),
        (C.interleaved_matmul_encdec_qk(heads=2, name="n"), ["n_queries", "n_keys_values"]),
        (C.interleaved_matmul_encdec_valatt(heads=2, name="n"), ["n_keys_values", "n_attention"]),
        (C.index_copy(name="n"), ["n_old_tensor", "n_index_vector", "n_new_tensor"]),
        (C.arange_like(name="n"), ["n_data"]), (C.div_sqrt_dim(name="n"), ["n_data"]),
        (C.gradientmultiplier(name="n"), ["n_data"]), (C.round_ste(name="n"), ["n_data"]),
        (C.sign_ste(name="n"), ["n_data"]),
    ]:
        assert sym.list_arguments() == args
        assert sym.list_outputs() == ["n_output"]
    R = mx.ops.REGISTRY
    assert R["_contrib_arange_like"].param_names() == ("start", "step", "repeat", "ctx", "axis")
    assert R["_contrib_gradientmultiplier"].param_names() == ("scalar", "is_int")
    assert mx.ops.get_op("_npx_arange_like") is R["_contrib_arange_like"]
    for n in ("selfatt_qk", "selfatt_valatt", "encdec_qk", "encdec_valatt"):
        assert R["_contrib_interleaved_matmul_" + n].param_names() == ("heads",)
    for n in ("div_sqrt_dim", "index_copy", "round_ste", "sign_ste"):
        assert R["_contrib_" + n].param_names() == ()
    # positional parameters after the inputs, in MXNet's order
    node = json.loads(C.gradientmultiplier(V("x"), 2, name="gm").tojson())["nodes"][1]
    assert node["attrs"] == {"scalar": "2"}  # as MXNet 1.9.1 writes it


def test_bad_parameters_raise_naming_the_op_and_value():
    raises_naming(lambda: C.interleaved_matmul_selfatt_qk(V("x"), heads=0),
                  "_contrib_interleaved_matmul_selfatt_qk", "heads must be positive, got 0", cls=P)
    raises_naming(lambda: C.interleaved_matmul_encdec_valatt(V("x"), V("a")), "required parameter", "heads",
                  cls=P)
    raises_naming(lambda: C.arange_like(V("x"), repeat=0), "_contrib_arange_like", "repeat must be positive",
                  cls=P)
    raises_naming(lambda: C.gradientmultiplier(V("x"), scale=2), "_contrib_gradientmultiplier", "'scale'",
                  "scalar", cls=P)
    raises_naming(lambda: C.interleaved_matmul_selfatt_qk(V("x"), heads="two"), "heads", "'two'", cls=P)


@pytest.mark.parametrize("make, shapes, needles", [
    # MXNet 1.9.1 does not check these and computes with the wrong layout
    (lambda: C.interleaved_matmul_selfatt_qk(V("x"), heads=2, name="qk"), {"x": (3, 2, 25)},
     ["'qk'", "queries_keys_values (3, 2, 25)", "dim 2 (25) must be a multiple of 6", "heads * 3 * head_dim",
      "heads=2"]),
    (lambda: C.interleaved_matmul_selfatt_qk(V("x"), heads=4), {"x": (3, 2, 18)},
     ["dim 2 (18) must be a multiple of 12"]),
    (lambda: C.interleaved_matmul_selfatt_valatt(V("x"), V("a"), heads=2), {"x": (3, 2, 24), "a": (6, 3, 3)},
     ["attention (6, 3, 3)", "dim 0 (6) must be batch * heads = 4", "batch 2 from queries_keys_values"]),
    (lambda: C.interleaved_matmul_encdec_qk(V("q"), V("kv"), heads=2), {"q": (3, 2, 6), "kv": (5, 2, 16)},
     ["keys_values (5, 2, 16)", "heads * 2 * head_dim = 12", "head_dim 3 from queries (3, 2, 6)"]),
    (lambda: C.interleaved_matmul_encdec_qk(V("q"), V("kv"), heads=2), {"q": (3, 2, 5), "kv": (5, 2, 10)},
     ["queries (3, 2, 5)", "must be a multiple of 2", "heads * head_dim"]),
    # MXNet 1.9.1 raises these: only the wording differs
    (lambda: C.interleaved_matmul_selfatt_qk(V("x"), heads=2), {"x": (3, 24)},
     ["queries_keys_values (3, 24) must have 3 dims", "seq_length, batch, heads * 3 * head_dim"]),
    (lambda: C.interleaved_matmul_encdec_valatt(V("kv"), V("a"), heads=2), {"kv": (5, 2, 16), "a": (5, 3, 5)},
     ["attention (5, 3, 5)", "must be a multiple of 2", "batch * heads"]),
    (lambda: C.interleaved_matmul_encdec_valatt(V("kv"), V("a"), heads=2), {"kv": (5, 2, 16), "a": (4, 3, 6)},
     ["attention (4, 3, 6)", "dim 2 (6) must be key length = 5"]),
    (lambda: C.index_copy(V("a"), V("i"), V("b")), {"a": (5, 3), "i": (6,), "b": (6, 3)},
     ["new_tensor (6, 3) has more rows than old_tensor (5, 3)"]),
    (lambda: C.index_copy(V("a"), V("i"), V("b")), {"a": (5, 3), "i": (3,), "b": (2, 3)},
     ["index_vector (3,) must have one index per row of new_tensor (2, 3)"]),
    (lambda: C.index_copy(V("a"), V("i"), V("b")), {"a": (5, 3), "i": (2, 1), "b": (2, 3)},
     ["index_vector (2, 1) must be 1-D"]),
    (lambda: C.index_copy(V("a"), V("i"), V("b")), {"a": (5, 3), "b": (2, 4)}, ["differ in dim 1"]),
    (lambda: C.index_copy(V("a"), V("i"), V("b")), {"a": (5, 3), "b": (2, 3, 1)}, ["differ in rank"]),
    (lambda: C.arange_like(V("x"), axis=2, name="al"), {"x": (5, 3)},
     ["_contrib_arange_like 'al'", "axis 2 is out of range for data with 2 dims"]),
    (lambda: C.div_sqrt_dim(V("x")), {"x": ()}, ["at least one dim"]),
])
def test_bad_shapes_raise_naming_op_and_shapes(make, shapes, needles):
    raises_naming(lambda: make().infer_shape(**shapes), *needles, cls=SE)


def test_infer_shape_full_and_partial():
    x, a, q, kv = V("x"), V("a"), V("q"), V("kv")
    # full shapes: MXNet 1.9.1's results
    assert C.interleaved_matmul_selfatt_qk(x, heads=2).infer_shape(x=(3, 2, 24)) == ([(3, 2, 24)], [(4, 3, 3)], [])
    assert C.interleaved_matmul_selfatt_valatt(x, a, heads=2).infer_shape(x=(3, 2, 24), a=(4, 3, 3)) == \
        ([(3, 2, 24), (4, 3, 3)], [(3, 2, 8)], [])
    assert C.interleaved_matmul_encdec_qk(q, kv, heads=2).infer_shape(q=(3, 2, 8), kv=(5, 2, 16)) == \
        ([(3, 2, 8), (5, 2, 16)], [(4, 3, 5)], [])
    assert C.interleaved_matmul_encdec_valatt(kv, a, heads=2).infer_shape(kv=(5, 2, 16), a=(4, 3, 5)) == \
        ([(5, 2, 16), (4, 3, 5)], [(3, 2, 8)], [])
    assert C.index_copy(x, a, q).infer_shape(x=(5, 3), a=(2,), q=(2, 3)) == ([(5, 3), (2,), (2, 3)], [(5, 3)], [])
    assert C.arange_like(x, axis=-1).infer_shape(x=(2, 5)) == ([(2, 5)], [(5,)], [])
    assert C.arange_like(x).infer_shape(x=(2, 5)) == ([(2, 5)], [(2, 5)], [])
    # partial: MXNet 1.9.1 needs every input's shape here; jbind fills what the others determine
    assert C.interleaved_matmul_selfatt_valatt(x, a, heads=2).infer_shape(x=(3, 2, 24)) == \
        ([(3, 2, 24), (4, 3, 3)], [(3, 2, 8)], [])
    assert C.interleaved_matmul_encdec_qk(q, kv, heads=2).infer_shape_partial(q=(3, 2, 8)) == \
        ([(3, 2, 8), (0, 2, 16)], [(4, 3, 0)], [])
    assert C.interleaved_matmul_encdec_valatt(kv, a, heads=2).infer_shape_partial(a=(4, 3, 5)) == \
        ([(5, 2, 0), (4, 3, 5)], [(3, 2, 0)], [])
    assert C.index_copy(x, a, q).infer_shape(x=(5, 3), q=(2, 3)) == ([(5, 3), (2,), (2, 3)], [(5, 3)], [])
    # a layer's output shape determines its input's through the next op
    s = C.interleaved_matmul_selfatt_qk(x, heads=2) + V("y")
    assert s.infer_shape_partial(y=(4, 3, 3)) == ([(3, 2, 0), (4, 3, 3)], [(4, 3, 3)], [])


def test_infer_type():
    x, i, b = V("x"), V("i"), V("b")
    # MXNet 1.9.1: one dtype for the inputs and the output; index_copy's output is old_tensor's
    assert C.interleaved_matmul_selfatt_qk(x, heads=2).infer_type(x="float16") == \
        ([np.float16], [np.float16], [])
    assert C.arange_like(x).infer_type(x="int32") == ([np.int32], [np.int32], [])
    assert C.index_copy(x, i, b).infer_type(x="float16", i="int32") == \
        ([np.float16, np.int32, np.float16], [np.float16], [])


# ------------------------------------------------------------------ mx.nd, values
def test_nd_calls_give_mxnets_values():
    nd = mx.nd
    # MXNet 1.9.1's documented examples and probed values
    t = nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    out = nd.contrib.index_copy(nd.zeros((5, 3)), nd.array([0, 4, 2]), t)
    np.testing.assert_array_equal(out.asnumpy(), [[1, 2, 3], [0, 0, 0], [7, 8, 9], [0, 0, 0], [4, 5, 6]])
    out = nd.contrib.index_copy(nd.zeros((5, 3)), nd.array([0, 4, 2], dtype="int64"), t)
    np.testing.assert_array_equal(out.asnumpy()[4], [4, 5, 6])
    np.testing.assert_array_equal(nd.contrib.arange_like(nd.zeros((3, 4))).asnumpy(),
                                  np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(nd.contrib.arange_like(nd.zeros((3, 4)), axis=-1).asnumpy(), [0, 1, 2, 3])
    np.testing.assert_allclose(nd.contrib.arange_like(nd.zeros((2, 3)), start=-1.7, step=-2.6, repeat=2).asnumpy(),
                               [[-1.7, -1.7, -4.3], [-4.3, -6.9, -6.9]], rtol=1e-6)
    # integer data: start and step truncated first (MXNet 1.9.1)
    r = nd.contrib.arange_like(nd.zeros((2, 3), dtype="int32"), start=-1.7, step=-2.6)
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r.asnumpy(), [[-1, -3, -5], [-7, -9, -11]])
    np.testing.assert_array_equal(nd.contrib.arange_like(nd.zeros((2, 5)), 1, 2, 3).asnumpy(),
                                  [[1, 1, 1, 3, 3], [3, 5, 5, 5, 7]])
    np.testing.assert_array_equal(nd.contrib.div_sqrt_dim(nd.ones((2, 4))).asnumpy(), np.full((2, 4), 0.5))
    x = nd.array([-1.5, 1.5, -1.9, 1.9, 2.7, 0.5, -0.5, 0])
    np.testing.assert_array_equal(nd.contrib.round_ste(x).asnumpy(), [-2, 2, -2, 2, 3, 1, -1, 0])
    np.testing.assert_array_equal(nd.contrib.sign_ste(x).asnumpy(), [-1, 1, -1, 1, 1, 1, -1, 0])
    np.testing.assert_array_equal(nd.contrib.gradientmultiplier(x, scalar=-3).asnumpy(), x.asnumpy())
    qkv = np.random.default_rng(2).uniform(-1, 1, (3, 2, 12)).astype(np.float32)
    out = nd.contrib.interleaved_matmul_selfatt_qk(nd.array(qkv), heads=2)
    assert out.shape == (4, 3, 3)
    np.testing.assert_allclose(out.asnumpy(), _selfatt_qk(qkv, 2), rtol=1e-5, atol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="must be a multiple of 9"):
        nd.contrib.interleaved_matmul_selfatt_qk(nd.array(qkv), heads=3)


# MXNet 1.9.1's JSON of a GluonNLP-style self-attention block (attrs as strings)
MXNET_JSON = {
    "nodes": [
        {"op": "null", "name": "qkv", "inputs": []},
        {"op": "_contrib_interleaved_matmul_selfatt_qk", "name": "qk", "attrs": {"heads": "2"},
         "inputs": [[0, 0, 0]]},
        {"op": "softmax", "name": "sm", "attrs": {"axis": "-1"}, "inputs": [[1, 0, 0]]},
        {"op": "_contrib_interleaved_matmul_selfatt_valatt", "name": "va", "attrs": {"heads": "2"},
         "inputs": [[0, 0, 0], [2, 0, 0]]},
        {"op": "_contrib_arange_like", "name": "al", "attrs": {"axis": "0", "repeat": "1", "start": "0",
                                                              "step": "1"}, "inputs": [[3, 0, 0]]},
        {"op": "_contrib_gradientmultiplier", "name": "gm", "attrs": {"scalar": "-0.5"}, "inputs": [[3, 0, 0]]},
    ],
    "arg_nodes": [0], "node_row_ptr": [0, 1, 2, 3, 4, 5, 6], "heads": [[5, 0, 0], [4, 0, 0]],
    "attrs": {"mxnet_version": ["int", 10901]},
}


def test_mxnet_json_loads_runs_and_round_trips():
    sym = mx.sym.load_json(json.dumps(MXNET_JSON))
    assert sym.list_arguments() == ["qkv"] and sym.list_outputs() == ["gm_output", "al_output"]
    again = mx.sym.load_json(sym.tojson())
    assert again.tojson() == sym.tojson()
    nodes = {n["name"]: n for n in json.loads(sym.tojson())["nodes"]}
    assert nodes["qk"]["attrs"] == {"heads": "2"} and nodes["gm"]["attrs"] == {"scalar": "-0.5"}
    assert nodes["al"]["attrs"]["axis"] == "0"
    qkv = np.random.default_rng(3).uniform(-1, 1, (3, 2, 12)).astype(np.float32)
    att = _selfatt_qk(qkv, 2)
    att = np.exp(att - att.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    want = _selfatt_valatt(qkv, att, 2)
    exe = again.simple_bind(mx.cpu(), qkv=qkv.shape)
    out, rng = exe.forward(is_train=False, qkv=qkv)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(rng.asnumpy(), [0, 1, 2])
