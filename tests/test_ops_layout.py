"""Layout, moment, cumsum and AMP cast ops (jbind/ops/layout.py, amp.py; moments and
cumsum in reduce.py).

Behaviours marked "MXNet 1.9.1" were checked against real MXNet; the golden files of
tests/golden/ops_shape/ hold MXNet's values and gradients for the same ops.
"""
import pathlib

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, ops_in, raises_naming
from jbind.ops import amp as amp_mod
from jbind.ops import get_op
from jbind.ops import layout as layout_mod

V = mx.sym.Variable
S = mx.sym
F16 = dict(rtol=2e-3, atol=2e-3, grad_rtol=2e-3, grad_atol=2e-3)  # float16 rounds to ~5e-4


def _d2s(x, b):
    n, c, h, w = x.shape
    return x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c // (b * b), h * b, w * b)


def _s2d(x, b):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)


def _moments(x, axes, keepdims=False):
    return [x.mean(axis=axes, keepdims=keepdims), x.var(axis=axes, keepdims=keepdims)]


CASES = [
    # --- slice_like, reshape_like: the second input only lends its shape -------------------
    Case("slice_like_all", lambda: S.slice_like(V("data"), V("like"), name="sl"),
         lambda data, like: [data[:2, :3]], {"data": (3, 4), "like": (2, 3)}),
    Case("slice_like_axes", lambda: S.slice_like(V("data"), V("like"), axes=(0, -1), name="sl"),
         lambda data, like: [data[:2, :, :3]], {"data": (3, 2, 4), "like": (2, 5, 3)}),
    Case("reshape_like_all", lambda: S.reshape_like(V("lhs"), V("rhs"), name="rl"),
         lambda lhs, rhs: [lhs.reshape(3, 4)], {"lhs": (2, 6), "rhs": (3, 4)}),
    Case("reshape_like_ranges", lambda: S._npx_reshape_like(V("lhs"), V("rhs"), lhs_begin=0, lhs_end=1,
                                                            rhs_begin=0, rhs_end=2, name="rl"),
         lambda lhs, rhs: [lhs.reshape(2, 3, 2)], {"lhs": (6, 2), "rhs": (2, 3, 4)}),
    Case("reshape_like_negative", lambda: S.reshape_like(V("lhs"), V("rhs"), lhs_begin=-1, rhs_begin=1, name="rl"),
         lambda lhs, rhs: [lhs.reshape(2, 2, 3)], {"lhs": (2, 6), "rhs": (5, 2, 3)}),
    # --- shape as data (int64, as in MXNet; int32 under JBIND_X64=0) ------------------------
    Case("shape_array", lambda: S.shape_array(V("data"), name="sa"),
         lambda data: [np.array(data.shape)], {"data": (2, 3, 1)}),
    Case("npx_shape_array", lambda: S._npx_shape_array(V("data"), name="sa"),
         lambda data: [np.array(data.shape)], {"data": (4,)}),
    Case("size_array", lambda: S.size_array(V("data"), name="sz"),
         lambda data: [np.array([data.size])], {"data": (2, 3)}),
    # --- depth <-> space ---------------------------------------------------------------------
    Case("depth_to_space", lambda: S.depth_to_space(V("data"), block_size=2, name="d"),
         lambda data: [_d2s(data, 2)], {"data": (2, 8, 2, 3)}),
    Case("space_to_depth", lambda: S.space_to_depth(V("data"), block_size=3, name="d"),
         lambda data: [_s2d(data, 3)], {"data": (1, 2, 3, 6)}),
    Case("depth_space_round_trip", lambda: S.depth_to_space(S.space_to_depth(V("data"), block_size=2, name="a"),
                                                            block_size=2, name="b"),
         lambda data: [data], {"data": (1, 2, 4, 2)}),
    # --- diag ----------------------------------------------------------------------------------
    Case("diag_vector", lambda: S.diag(V("data"), name="dg"), lambda data: [np.diag(data)], {"data": (3,)}),
    Case("diag_vector_k", lambda: S.diag(V("data"), k=-2, name="dg"), lambda data: [np.diag(data, -2)],
         {"data": (3,)}),
    Case("diag_matrix_k", lambda: S.diag(V("data"), k=1, name="dg"), lambda data: [np.diag(data, 1)],
         {"data": (3, 4)}),
    Case("diag_3d_axes", lambda: S.diag(V("data"), k=1, axis1=2, axis2=0, name="dg"),
         lambda data: [np.diagonal(data, 1, 2, 0)], {"data": (2, 3, 4)}),
    Case("diag_3d_negative_axes", lambda: S.diag(V("data"), k=-1, axis1=-1, axis2=1, name="dg"),
         lambda data: [np.diagonal(data, -1, -1, 1)], {"data": (2, 3, 4)}),
    # --- moments -------------------------------------------------------------------------------
    Case("moments", lambda: S.moments(V("data"), axes=(1,), name="mo"),
         lambda data: _moments(data, (1,)), {"data": (2, 3, 4)}),
    Case("moments_keepdims", lambda: S.moments(V("data"), axes=(-1, 0), keepdims=True, name="mo"),
         lambda data: _moments(data, (0, 2), True), {"data": (2, 3, 4)}),
    Case("moments_all_axes", lambda: S.moments(V("data"), axes=(0, 1), name="mo"),   # MXNet 1.9.1: shape (1,)
         lambda data: [m.reshape(1) for m in _moments(data, (0, 1))], {"data": (3, 2)}),
    # --- cumsum (MXNet's _np_cumsum) ----------------------------------------------------------
    Case("cumsum_flat", lambda: S.cumsum(V("a"), name="cs"), lambda a: [np.cumsum(a)], {"a": (2, 3)}),
    Case("cumsum_axis", lambda: S._np_cumsum(V("a"), axis=1, name="cs"), lambda a: [np.cumsum(a, axis=1)],
         {"a": (2, 3, 2)}),
    Case("cumsum_dtype", lambda: S.cumsum(V("a"), axis=0, dtype="float16", name="cs"),
         lambda a: [np.cumsum(a, axis=0)], {"a": (3, 2)}, **F16),
    # --- AMP casts -----------------------------------------------------------------------------
    Case("amp_cast_float16", lambda: S.amp_cast(V("data"), dtype="float16", name="c"),
         lambda data: [data], {"data": (2, 3)}, **F16),
    Case("amp_cast_int_passes", lambda: S.amp_cast(V("data"), dtype="float16", name="c"),
         lambda data: [data], {"data": (2, 3)}, inputs={"data": ("int", -5, 5)}, grad=False,
         type_dict={"data": "int32"}),
    Case("amp_multicast_widest", lambda: S.amp_multicast(V("a"), V("b"), num_outputs=2, name="mc"),
         lambda a, b: [a, b], {"a": (2, 3), "b": (3,)}, type_dict={"a": "float16", "b": "float32"}, **F16),
    Case("amp_multicast_narrow", lambda: S.amp_multicast(V("a"), V("b"), V("c"), num_outputs=3, cast_narrow=True,
                                                         name="mc"),
         lambda a, b, c: [a, b, c], {"a": (2,), "b": (3,), "c": (1, 2)},
         type_dict={"a": "float32", "b": "float16", "c": "float32"}, **F16),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_every_op_has_a_case():
    mine = {c.name for m in (layout_mod, amp_mod) for c in vars(m).values()
            if isinstance(c, type) and c.__module__ == m.__name__ and hasattr(c, "lower")
            and not c.__name__.startswith("_")} | {"moments", "_np_cumsum"}
    covered = set().union(*(ops_in(c.build()) for c in CASES))
    assert mine - covered == set()


def test_names_and_aliases():
    """MXNet 1.9.1: cumsum is an alias of _np_cumsum (its JSON name), with input `a`."""
    assert get_op("cumsum") is get_op("_np_cumsum")
    assert get_op("_npx_reshape_like") is get_op("reshape_like")
    assert get_op("_npx_shape_array") is get_op("shape_array")
    assert '"op": "_np_cumsum"' in S.cumsum(V("x"), name="c").tojson()
    assert S.cumsum(name="c").list_arguments() == ["c_a"]
    assert S.slice_like(name="s").list_arguments() == ["s_data", "s_shape_like"]
    assert S.reshape_like(name="r").list_arguments() == ["r_lhs", "r_rhs"]
    assert S.moments(V("x"), axes=(0,), name="m").list_outputs() == ["m_output0", "m_output1"]
    mc = S.amp_multicast(num_outputs=2, name="mc")
    assert mc.list_arguments() == ["mc_data_0", "mc_data_1"]
    assert mc.list_outputs() == ["mc_output0", "mc_output1"]
    assert S.amp_multicast(V("a"), V("b"), V("c"), name="mc").list_outputs() == \
        ["mc_output0", "mc_output1", "mc_output2"]


# ------------------------------------------------------------------------- shape rules

def _rule(name, ins, outs=None, **params):
    op = get_op(name)(**params)
    a, o, _ = op.infer_shape(list(ins), list(outs or [None] * len(op.outputs())))
    return a, o


def test_shape_rules():
    # MXNet 1.9.1 values
    assert _rule("slice_like", [(6, 4), (2, 3)], axes=(0,))[1] == [(2, 4)]
    assert _rule("reshape_like", [(30, 7), (15, 2, 4)], lhs_begin=0, lhs_end=1, rhs_begin=0, rhs_end=2)[1] == \
        [(15, 2, 7)]
    assert _rule("reshape_like", [(3, 5), (1, 15, 4)], lhs_begin=0, lhs_end=2, rhs_begin=1, rhs_end=2)[1] == \
        [(15,)]
    assert _rule("reshape_like", [(30, 12), (4, 2, 2, 3)], lhs_begin=-1, rhs_begin=1)[1] == [(30, 2, 2, 3)]
    assert _rule("diag", [(3,)], k=-2)[1] == [(5, 5)]
    assert _rule("diag", [(3, 4)], k=-1)[1] == [(2,)]
    assert _rule("diag", [(2, 3, 4)], k=1, axis1=2, axis2=0)[1] == [(3, 1)]
    assert _rule("moments", [(2, 3)], axes=(0, 1), keepdims=True)[1] == [(1, 1), (1, 1)]
    assert _rule("_np_cumsum", [(2, 3)])[1] == [(6,)]
    assert _rule("depth_to_space", [(1, 8, 2, 3)], block_size=2)[1] == [(1, 2, 4, 6)]
    assert _rule("space_to_depth", [(1, 2, 4, 6)], block_size=2)[1] == [(1, 8, 2, 3)]
    assert _rule("shape_array", [(2, 3)])[1] == [(2,)]
    assert _rule("size_array", [None])[1] == [(1,)]


def test_partial_shapes():
    # unknown dims (0) stay unknown, nothing is made up (MXNet 1.9.1 fails on several of these)
    assert _rule("slice_like", [(0, 4), (2, 3)])[1] == [(2, 3)]
    assert _rule("slice_like", [(5, 4), (0, 3)], axes=(0,))[1] == [(0, 4)]
    assert _rule("slice_like", [None, (2, 3)])[1] == [None]
    assert _rule("reshape_like", [(0, 6), (2, 3)], lhs_begin=1, rhs_begin=0)[1] == [(0, 2, 3)]
    assert _rule("shape_array", [(0, 3)])[1] == [(2,)]
    assert _rule("shape_array", [None])[1] == [None]
    assert _rule("depth_to_space", [(0, 8, 0, 3)], block_size=2)[1] == [(0, 2, 0, 6)]
    assert _rule("diag", [(0, 4)], k=1)[1] == [(0,)]
    assert _rule("diag", [(0,)])[1] == [(0, 0)]
    assert _rule("_np_cumsum", [(2, 0)])[1] == [(0,)]
    assert _rule("_np_cumsum", [None], [(2, 3)], axis=1) == ([(2, 3)], [(2, 3)])   # same shape both ways
    assert _rule("amp_multicast", [(2, 0), None], [(0, 3), (4,)], num_outputs=2) == \
        ([(2, 3), (4,)], [(2, 3), (4,)])


# ------------------------------------------------------------------------------ dtypes

def _types(sym, **given):
    return [np.dtype(t).name for t in sym.infer_type(**given)[1]]


@pytest.mark.parametrize("a, b, narrow, want", [
    # MXNet 1.9.1's amp_multicast rule: float32 wins; else the FIRST input's dtype, even a non-float
    ("float16", "float16", False, ["float16", "float16"]),
    ("float16", "float32", False, ["float32", "float32"]),
    ("float64", "float16", False, ["float64", "float64"]),
    ("float16", "float64", False, ["float16", "float64"]),
    ("int32", "float16", False, ["int32", "int32"]),
    ("float16", "float32", True, ["float16", "float16"]),
    ("float64", "float32", True, ["float64", "float32"]),
    ("bfloat16", "float32", True, ["bfloat16", "bfloat16"]),   # from MXNet's source: its Python has no bfloat16
])
def test_amp_multicast_dtypes(a, b, narrow, want):
    mc = S.amp_multicast(V("a"), V("b"), num_outputs=2, cast_narrow=narrow, name="mc")
    assert _types(mc, a=a, b=b) == want


def test_dtype_rules():
    x, y = V("x"), V("y")
    # MXNet 1.9.1
    assert _types(S.amp_cast(x, dtype="float16", name="c"), x="int32") == ["int32"]
    assert _types(S.amp_cast(x, dtype="float16", name="c"), x="float64") == ["float64"]
    assert _types(S.amp_cast(x, dtype="bfloat16", name="c"), x="float32") == ["bfloat16"]   # MXNet's source
    assert _types(S.cumsum(x, name="c"), x="int8") == ["int8"]
    assert _types(S.cumsum(x, name="c"), x="bool") == ["int64"]
    assert _types(S.cumsum(x, dtype="float64", name="c"), x="int32") == ["float64"]
    assert _types(S.shape_array(x, name="s"), x="float16") == ["int64"]
    assert _types(S.size_array(x, name="s"), x="float16") == ["int64"]
    assert _types(S.reshape_like(x, y, name="r"), x="float16", y="int32") == ["float16"]
    assert _types(S.slice_like(x, y, name="r"), x="float16", y="int32") == ["float16"]
    assert _types(S.moments(x, axes=(0,), name="m"), x="float16") == ["float16", "float16"]
    assert _types(S.depth_to_space(x, block_size=2, name="d"), x="float16") == ["float16"]


def test_amp_multicast_waits_for_every_input_dtype():
    """The common dtype depends on all inputs: it is not guessed from some of them."""
    op = get_op("amp_multicast")(num_outputs=2)
    assert op.infer_type([np.dtype("float16"), None], [None, None])[1] == [None, None]
    assert op.infer_type([np.dtype("int32"), None], [None, None])[1] == [np.dtype("int32"), None]


def test_integer_outputs_run_and_train():
    exe = S.shape_array(V("x"), name="s").simple_bind(mx.cpu(), x=(2, 3))
    out = exe.forward(is_train=True, x=np.ones((2, 3)))[0]
    assert np.issubdtype(out.dtype, np.integer)
    np.testing.assert_array_equal(out.asnumpy(), [2, 3])
    exe.backward([mx.nd.array([1.0, 1.0])])                 # MXNet 1.9.1: a zero gradient
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.zeros((2, 3)))
    exe = S.cumsum(V("x"), axis=1, dtype="int32", name="c").simple_bind(mx.cpu(), grad_req="null", x=(1, 3))
    out = exe.forward(x=np.array([[1.7, -0.9, 2.5]]))[0]   # MXNet 1.9.1: each element truncated first
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.asnumpy(), [[1, 1, 3]])


GOLDEN = pathlib.Path(__file__).resolve().parent / "golden" / "ops_shape"


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.npz")), ids=lambda p: p.stem)
def test_output_dtypes_are_mxnets(path):
    """Each golden case's outputs have MXNet's dtypes (64-bit ones narrowed without x64)."""
    import jax
    with np.load(path) as g:
        sym = mx.sym.load_json(str(g["symbol_json"]))
        shapes = {k[6:]: tuple(g[k]) for k in g.files if k.startswith("shape:")}
        want = [g[f"infer:{i}"].dtype for i in range(len(sym.list_outputs()))]
        args = {a: g["arg:" + a] for a in sym.list_arguments()}
    outs = sym.simple_bind(mx.cpu(), grad_req="null", **shapes).forward(**args)
    assert [o.dtype for o in outs] == [jax.dtypes.canonicalize_dtype(t) for t in want]


# ------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("build, shapes, needles", [
    # each rejected by MXNet 1.9.1 too
    (lambda: S.slice_like(V("x"), V("y"), name="sl"), {"x": (2, 3, 4), "y": (1, 2)},
     ["slice_like", "'sl'", "(2, 3, 4)", "(1, 2)", "same number of dims"]),
    (lambda: S.slice_like(V("x"), V("y"), axes=(2,), name="sl"), {"x": (2, 3, 4), "y": (1, 2, 5)},
     ["slice_like", "'sl'", "(2, 3, 4)", "(1, 2, 5)", "larger"]),
    (lambda: S.slice_like(V("x"), V("y"), axes=(-1,), name="sl"), {"x": (2, 3, 4), "y": (1, 2)},
     ["slice_like", "'sl'", "(1, 2)", "out of range"]),
    (lambda: S.reshape_like(V("x"), V("y"), name="rl"), {"x": (2, 3, 4), "y": (6, 5)},
     ["reshape_like", "'rl'", "(2, 3, 4)", "(6, 5)", "24 elements"]),
    (lambda: S.reshape_like(V("x"), V("y"), lhs_begin=1, lhs_end=1, name="rl"), {"x": (2, 3, 4), "y": (6, 4)},
     ["reshape_like", "'rl'", "lhs_begin=1, lhs_end=1", "(2, 3, 4)"]),
    (lambda: S.reshape_like(V("x"), V("y"), lhs_end=5, name="rl"), {"x": (2, 3, 4), "y": (6, 4)},
     ["reshape_like", "lhs_end=5", "3 dims"]),
    (lambda: S.depth_to_space(V("x"), block_size=2, name="d"), {"x": (1, 6, 2, 2)},
     ["depth_to_space", "'d'", "(1, 6, 2, 2)", "block_size^2 = 4"]),
    (lambda: S.depth_to_space(V("x"), block_size=2, name="d"), {"x": (1, 8, 2)},
     ["depth_to_space", "'d'", "(1, 8, 2)", "4-D"]),
    (lambda: S.space_to_depth(V("x"), block_size=2, name="d"), {"x": (1, 2, 3, 4)},
     ["space_to_depth", "'d'", "(1, 2, 3, 4)", "multiples of block_size=2"]),
    (lambda: S.diag(V("x"), k=5, name="dg"), {"x": (3, 4)},
     ["diag", "'dg'", "(3, 4)", "k=5"]),
    (lambda: S.diag(V("x"), k=4, name="dg"), {"x": (3, 4)},      # MXNet 1.9.1: a (0,) array
     ["diag", "'dg'", "(3, 4)", "k=4"]),
    (lambda: S.diag(V("x"), axis1=1, axis2=-2, name="dg"), {"x": (2, 3, 4)},
     ["diag", "'dg'", "same axis 1"]),
    (lambda: S.diag(V("x"), axis1=3, name="dg"), {"x": (2, 3, 4)},
     ["diag", "'dg'", "`axis1`=3", "3 dims"]),
    (lambda: S.moments(V("x"), name="mo"), {"x": (2, 3)},
     ["moments", "'mo'", "axes", "data=(2, 3)"]),
    (lambda: S.moments(V("x"), axes=(1, 1), name="mo"), {"x": (2, 3)},
     ["moments", "'mo'", "duplicates", "data=(2, 3)"]),
    (lambda: S.moments(V("x"), axes=(2,), name="mo"), {"x": (2, 3)},
     ["moments", "'mo'", "out of range", "data=(2, 3)"]),
    (lambda: S.cumsum(V("x"), axis=2, name="cs"), {"x": (2, 3)},
     ["_np_cumsum", "'cs'", "axis=2", "a=(2, 3)"]),
    (lambda: S.cumsum(V("x"), axis=-1, name="cs"), {"x": (2, 3)},   # MXNet 1.9.1 fails on it in forward
     ["_np_cumsum", "'cs'", "axis=-1", "give axis=1"]),
])
def test_shape_errors(build, shapes, needles):
    raises_naming(lambda: build().infer_shape(**shapes), *needles)


def test_amp_multicast_shape_error():
    with pytest.raises(ValueError, match=r"input 1 and output 1: shapes \(2, 3\) and \(3, 2\)"):
        _rule("amp_multicast", [(4,), (2, 3)], [None, (3, 2)], num_outputs=2)


def test_parameter_errors():
    raises_naming(lambda: S.depth_to_space(V("x"), block_size=0, name="d"), "depth_to_space", "block_size")
    raises_naming(lambda: S.space_to_depth(V("x"), block_size=-2, name="d"), "space_to_depth", "block_size")
    raises_naming(lambda: S.amp_cast(V("x"), dtype="bool", name="c"), "amp_cast", "dtype")
    raises_naming(lambda: S.amp_cast(V("x"), name="c"), "amp_cast", "dtype")
    raises_naming(lambda: S.cumsum(V("x"), dtype="uint8", name="c"), "_np_cumsum", "dtype")
    raises_naming(lambda: S.amp_multicast(num_outputs=0, name="mc"), "amp_multicast", "num_outputs")
    raises_naming(lambda: S.slice_like(V("x"), V("y"), axes="a", name="s"), "slice_like", "axes")


# -------------------------------------------------------------------------- mx.nd use

def test_ndarray_use():
    nd = mx.nd
    a = np.arange(24.0).reshape(2, 3, 4)
    x = nd.array(a)
    np.testing.assert_array_equal(nd.slice_like(x, nd.ones((1, 2, 2)), axes=(0, -1)).asnumpy(), a[:1, :, :2])
    assert nd.reshape_like(x, nd.ones((6, 4)), lhs_begin=-3, lhs_end=-1, rhs_end=1).shape == (6, 4)
    np.testing.assert_array_equal(nd.shape_array(x).asnumpy(), [2, 3, 4])
    np.testing.assert_array_equal(nd.size_array(x).asnumpy(), [24])
    y = nd.array(np.arange(32.0).reshape(1, 8, 2, 2))
    np.testing.assert_array_equal(nd.space_to_depth(nd.depth_to_space(y, block_size=2), block_size=2).asnumpy(),
                                  y.asnumpy())
    np.testing.assert_array_equal(nd.diag(x, k=1, axis1=2, axis2=0).asnumpy(), [[12.0], [16.0], [20.0]])
    mean, var = nd.moments(x, axes=(0, 2))
    np.testing.assert_allclose(mean.asnumpy(), a.mean(axis=(0, 2)))
    np.testing.assert_allclose(var.asnumpy(), a.var(axis=(0, 2)))
    np.testing.assert_array_equal(nd.cumsum(x, axis=2).asnumpy(), np.cumsum(a, axis=2))
    assert nd.cumsum(x).shape == (24,)
    assert nd.amp_cast(x, dtype="float16").dtype == np.float16
    outs = nd.amp_multicast(x.astype("float16"), x, num_outputs=2)
    assert [o.dtype for o in outs] == [np.float32, np.float32]
    outs = nd.amp_multicast(x.astype("float16"), x, cast_narrow=True)
    assert [o.dtype for o in outs] == [np.float16, np.float16]


@pytest.mark.parametrize("call, needles", [
    (lambda nd: nd.slice_like(nd.ones((2, 3)), nd.ones((3, 3))), ["slice_like", "(2, 3)", "(3, 3)"]),
    (lambda nd: nd.reshape_like(nd.ones((2, 3)), nd.ones((4, 2))), ["reshape_like", "(2, 3)", "(4, 2)"]),
    (lambda nd: nd.depth_to_space(nd.ones((1, 3, 2, 2)), block_size=2), ["depth_to_space", "(1, 3, 2, 2)"]),
    (lambda nd: nd.space_to_depth(nd.ones((2, 2)), block_size=2), ["space_to_depth", "(2, 2)"]),
    (lambda nd: nd.diag(nd.ones((2, 3)), k=-2), ["diag", "(2, 3)", "k=-2"]),
    (lambda nd: nd.cumsum(nd.ones((2, 3)), axis=-1), ["_np_cumsum", "axis=-1", "give axis=1"]),
    (lambda nd: nd.moments(nd.ones((2, 3))), ["moments", "axes"]),
])
def test_ndarray_errors(call, needles):
    raises_naming(lambda: call(mx.nd), *needles)


def test_depth_space_refuse_an_empty_axis():
    # MXNet refuses data with a zero-size axis for depth_to_space / space_to_depth.
    with mx.util.np_shape(True):
        for f, shape in ((mx.nd.depth_to_space, (1, 4, 0, 3)), (mx.nd.space_to_depth, (1, 0, 2, 2))):
            with pytest.raises(mx.base.ShapeError, match="zero-size axis"):
                f(mx.nd.ones(shape), 2)
    assert mx.nd.depth_to_space(mx.nd.ones((1, 4, 1, 1)), 2).shape == (1, 1, 2, 2)
