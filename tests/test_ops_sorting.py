"""Ordering and N-d indexing ops (jbind/ops/sorting.py, gather.py).

Behaviours marked "MXNet 1.9.1" were checked against real MXNet; the golden files in
tests/golden/ops_sort/ hold MXNet's own outputs and gradients.
"""
import json

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, ops_in, raises_naming
from jbind.ops import gather as gather_mod
from jbind.ops import sorting as sorting_mod

V = mx.sym.Variable
S = mx.sym


# ------------------------------------------------------------------ numpy references
def _order(x, axis, ascend):
    data, ax = (x.reshape(-1), 0) if axis is None else (x, axis)
    return data, ax, np.argsort(data if ascend else -data, axis=ax, kind="stable")


def _topk(x, axis=-1, k=1, ret_typ="indices", is_ascend=False):
    data, ax, o = _order(x, axis, is_ascend)
    idx = np.take(o, range(k if k >= 1 else data.shape[ax]), axis=ax)
    if ret_typ == "mask":
        m = np.zeros(data.shape)
        np.put_along_axis(m, idx, 1.0, axis=ax)
        return [m.reshape(x.shape)]
    vals = np.take_along_axis(data, idx, axis=ax)
    return {"both": [vals, idx], "indices": [idx], "value": [vals]}[ret_typ]


def _sort(x, axis=-1, is_ascend=True):
    data, ax, o = _order(x, axis, is_ascend)
    return [np.take_along_axis(data, o, axis=ax)]


def _argsort(x, axis=-1, is_ascend=True):
    return [_order(x, axis, is_ascend)[2]]


def _rows(indices, dims):
    """MXNet's gather_nd index: size added to negatives, then truncated."""
    return tuple(np.trunc(np.where(v < 0, v + n, v)).astype(int) for v, n in zip(indices, dims))


def _gather_nd(data, indices):
    return [data[_rows(indices, data.shape)]]


def _scatter_nd(data, indices, shape):
    out = np.zeros(shape)
    rows = np.trunc(indices).astype(int)
    ok = np.all([(r >= 0) & (r < n) for r, n in zip(rows, shape)], axis=0)
    out[tuple(r[ok] for r in rows)] = data[ok]
    return [out]


def _batch_take(a, indices):
    j = np.clip(indices.reshape(-1).astype(int), 0, a.shape[1] - 1)
    return [a[np.arange(a.shape[0]), j].reshape(indices.shape)]


def _ravel(data, shape):
    flat = np.zeros(data.shape[1:])
    for row, n in zip(data, shape):
        flat = np.trunc(flat * n + row)
    return [flat]


def _unravel(data, shape):
    flat, rows = np.trunc(data), []
    for n in reversed(shape[1:]):
        q = np.trunc(flat / n)  # C's division, toward zero
        rows.append(flat - q * n)
        flat = q
    return [np.stack([flat] + rows[::-1])]


GATHER_IDX = np.array([[-3, 2, 0, -1], [3, -4, 1, 0]], dtype=float)
SCATTER_IDX = np.array([[0, 2, 1, 2], [3, 0, 0, 1]], dtype=float)
INT32_I = {"x": "float32", "i": "int32"}

CASES = [
    # --- topk (MXNet 1.9.1: indices in float32 by default; 'value' and 'both' differentiate values)
    Case("topk_indices", lambda: S.topk(V("x"), name="t"), lambda x: _topk(x), {"x": (3, 5)}),
    Case("topk_value_axis0", lambda: S.topk(V("x"), axis=0, k=2, ret_typ="value", name="t"),
         lambda x: _topk(x, axis=0, k=2, ret_typ="value"), {"x": (3, 4)}),
    Case("topk_both_ascend_flat", lambda: S.topk(V("x"), axis=None, k=3, ret_typ="both", is_ascend=True,
                                                 name="t"),
         lambda x: _topk(x, axis=None, k=3, ret_typ="both", is_ascend=True), {"x": (2, 3)}),
    Case("topk_mask", lambda: S.topk(V("x"), axis=1, k=2, ret_typ="mask", name="t"),
         lambda x: _topk(x, axis=1, k=2, ret_typ="mask"), {"x": (2, 4, 3)}),
    Case("topk_all_int32", lambda: S.topk(V("x"), axis=0, k=0, ret_typ="both", dtype="int32", name="t"),
         lambda x: _topk(x, axis=0, k=0, ret_typ="both"), {"x": (3, 2)}),
    # --- sort, argsort
    Case("sort_last", lambda: S.sort(V("x"), name="s"), lambda x: _sort(x), {"x": (3, 4)}),
    Case("sort_axis0_desc", lambda: S.sort(V("x"), axis=0, is_ascend=False, name="s"),
         lambda x: _sort(x, axis=0, is_ascend=False), {"x": (4, 3)}),
    Case("sort_flat", lambda: S.sort(V("x"), axis=None, name="s"), lambda x: _sort(x, axis=None),
         {"x": (2, 3)}),
    Case("argsort_last", lambda: S.argsort(V("x"), name="a"), lambda x: _argsort(x), {"x": (3, 4)}),
    Case("argsort_flat_desc_int32", lambda: S.argsort(V("x"), axis=None, is_ascend=False, dtype="int32",
                                                      name="a"),
         lambda x: _argsort(x, axis=None, is_ascend=False), {"x": (2, 3)}),
    # --- argmax_channel (MXNet 1.9.1: axis 1, the input's dtype)
    Case("argmax_channel_2d", lambda: S.argmax_channel(V("x"), name="am"),
         lambda x: [np.argmax(x, axis=1)], {"x": (3, 5)}),
    Case("argmax_channel_4d", lambda: S.argmax_channel(V("x"), name="am"),
         lambda x: [np.argmax(x, axis=1)], {"x": (2, 3, 2, 2)}),
    # --- gather_nd, scatter_nd
    Case("gather_nd_elements", lambda: S.gather_nd(V("x"), V("i"), name="g"), lambda x, i: _gather_nd(x, i),
         {"x": (3, 4), "i": (2, 4)}, inputs={"i": GATHER_IDX}, no_grad=("i",)),
    Case("gather_nd_rows", lambda: S.gather_nd(V("x"), V("i"), name="g"), lambda x, i: _gather_nd(x, i),
         {"x": (3, 2, 2), "i": (1, 2, 2)}, inputs={"i": ("int", -3, 3)}, no_grad=("i",)),
    Case("gather_nd_float_index", lambda: S.gather_nd(V("x"), V("i"), name="g"), lambda x, i: _gather_nd(x, i),
         {"x": (3, 4), "i": (2, 3)}, inputs={"i": (-2.9, 1.9)}, no_grad=("i",)),
    Case("scatter_nd_elements", lambda: S.scatter_nd(V("x"), V("i"), shape=(3, 4), name="sc"),
         lambda x, i: _scatter_nd(x, i, (3, 4)), {"x": (4,), "i": (2, 4)}, inputs={"i": SCATTER_IDX},
         no_grad=("i",)),
    Case("scatter_nd_rows_dropped", lambda: S.scatter_nd(V("x"), V("i"), shape=(4, 2), name="sc"),
         lambda x, i: _scatter_nd(x, i, (4, 2)), {"x": (3, 2), "i": (1, 3)},
         inputs={"i": np.array([[1.0, -1.0, 5.0]])}, no_grad=("i",)),
    # --- batch_take (int32 indices; clipped as MXNet 1.9.1)
    Case("batch_take", lambda: S.batch_take(V("x"), V("i"), name="bt"), lambda x, i: _batch_take(x, i),
         {"x": (4, 3), "i": (4,)}, inputs={"i": ("int", -2, 5)}, no_grad=("i",), type_dict=INT32_I),
    Case("batch_take_2d_indices", lambda: S.batch_take(V("x"), V("i"), name="bt"),
         lambda x, i: _batch_take(x, i), {"x": (4, 3), "i": (2, 2)}, inputs={"i": ("int", 0, 3)},
         no_grad=("i",), type_dict=INT32_I),
    # --- ravel_multi_index, unravel_index (no gradient; MXNet 1.9.1 truncates at each step)
    Case("ravel_multi_index", lambda: S.ravel_multi_index(V("x"), shape=(3, 4, 2), name="r"),
         lambda x: _ravel(x, (3, 4, 2)), {"x": (3, 5)}, inputs={"x": ("int", 0, 2)}, grad=False),
    Case("ravel_multi_index_fractions", lambda: S._ravel_multi_index(V("x"), shape=(-1, 4), name="r"),
         lambda x: _ravel(x, (-1, 4)), {"x": (2, 6)}, inputs={"x": (0.1, 3.9)}, grad=False),
    Case("unravel_index", lambda: S.unravel_index(V("x"), shape=(3, 4, 2), name="u"),
         lambda x: _unravel(x, (3, 4, 2)), {"x": (5,)}, inputs={"x": ("int", 0, 24)}, grad=False),
    Case("unravel_index_negative", lambda: S._unravel_index(V("x"), shape=(-1, 4), name="u"),
         lambda x: _unravel(x, (-1, 4)), {"x": (6,)}, inputs={"x": ("int", -9, 30)}, grad=False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_every_op_has_a_case():
    mine = {c.name for m in (sorting_mod, gather_mod) for c in vars(m).values()
            if isinstance(c, type) and c.__module__ == m.__name__ and getattr(c, "name", None)}
    assert mine == {"topk", "sort", "argsort", "argmax_channel", "gather_nd", "scatter_nd", "batch_take",
                    "_ravel_multi_index", "_unravel_index"}
    assert mine <= set().union(*(ops_in(c.build()) for c in CASES))


# ------------------------------------------------------------------ structure and dtypes
def test_outputs_and_json_layout_match_mxnet():
    x = V("x")
    # MXNet 1.9.1: 'value' and sort keep a hidden indices output (node_row_ptr counts it)
    for sym, outs, rows in [(S.topk(x, name="t"), ["t_output"], 1),
                            (S.topk(x, ret_typ="value", name="t"), ["t_output0"], 2),
                            (S.topk(x, ret_typ="both", name="t"), ["t_output0", "t_output1"], 2),
                            (S.topk(x, ret_typ="mask", name="t"), ["t_output"], 1),
                            (S.sort(x, name="t"), ["t_output0"], 2),
                            (S.argsort(x, name="t"), ["t_output"], 1)]:
        assert sym.list_outputs() == outs
        doc = json.loads(sym.tojson())
        assert doc["node_row_ptr"] == [0, 1, 1 + rows]
        assert mx.sym.load_json(sym.tojson()).list_outputs() == outs


def test_aliases_and_argument_names():
    r = S.ravel_multi_index(V("x"), shape=(2, 3))
    u = S.unravel_index(V("x"), shape=(2, 3))
    assert [json.loads(s.tojson())["nodes"][-1]["op"] for s in (r, u)] == ["_ravel_multi_index", "_unravel_index"]
    assert S.gather_nd(name="g").list_arguments() == ["g_data", "g_indices"]
    assert S.scatter_nd(shape=(2,), name="s").list_arguments() == ["s_data", "s_indices"]
    assert S.batch_take(name="b").list_arguments() == ["b_a", "b_indices"]


def test_dtypes():
    x = V("x")
    # MXNet 1.9.1: values and masks keep the data's dtype, indices take `dtype`
    assert S.topk(x, ret_typ="both", dtype="int32").infer_type(x="float16") == \
        ([np.float16], [np.float16, np.int32], [])
    assert S.topk(x, ret_typ="mask").infer_type(x="int32") == ([np.int32], [np.int32], [])
    assert S.topk(x).infer_type(x="int32") == ([np.int32], [np.float32], [])
    assert S.argsort(x, dtype="int32").infer_type(x="float16") == ([np.float16], [np.int32], [])
    assert S.argmax_channel(x).infer_type(x="int32") == ([np.int32], [np.int32], [])
    assert S.batch_take(x, V("i")).infer_type(x="float16") == ([np.float16, np.int32], [np.float16], [])
    assert S.unravel_index(x, shape=(2, 3)).infer_type(x="int32") == ([np.int32], [np.int32], [])


def test_shapes():
    x, i = V("x"), V("i")
    assert S.topk(x, k=4, axis=None, ret_typ="both").infer_shape(x=(2, 3))[1] == [(4,), (4,)]
    assert S.topk(x, k=-2, ret_typ="both").infer_shape(x=(2, 3))[1] == [(2, 3), (2, 3)]
    assert S.topk(x, k=2, axis=None, ret_typ="mask").infer_shape(x=(2, 3))[1] == [(2, 3)]
    assert S.argsort(x, axis=None).infer_shape(x=(2, 3))[1] == [(6,)]
    assert S.argmax_channel(x).infer_shape(x=(2, 3, 4, 5))[1] == [(2, 4, 5)]
    assert S.gather_nd(x, i).infer_shape(x=(2, 3, 4), i=(2, 5, 6))[1] == [(5, 6, 4)]
    # jbind fills in scatter_nd's data shape from indices and `shape` (MXNet 1.9.1 leaves it unknown)
    assert S.scatter_nd(x, i, shape=(3, 4)).infer_shape(i=(1, 5)) == ([(5, 4), (1, 5)], [(3, 4)], [])
    assert S.ravel_multi_index(x, shape=(2, 3)).infer_shape(x=(2, 7))[1] == [(7,)]
    assert S.unravel_index(x, shape=(-1, 3)).infer_shape(x=(7,))[1] == [(2, 7)]


def test_ties_keep_index_order():
    """MXNet 1.9.1 on small inputs: equal elements come in index order, either direction."""
    x = mx.nd.array([[3, 1, 2, 1], [0, 5, 5, 2]])
    np.testing.assert_array_equal(mx.nd.topk(x, k=4).asnumpy(), [[0, 2, 1, 3], [1, 2, 3, 0]])
    np.testing.assert_array_equal(mx.nd.argsort(x).asnumpy(), [[1, 3, 2, 0], [0, 3, 1, 2]])


def test_sort_gradient_puts_head_gradient_back_in_place():
    """MXNet 1.9.1's sort backward fails for an integer axis; jbind differentiates it."""
    exe = S.sort(V("x"), is_ascend=False, name="s").simple_bind(mx.cpu(), x=(2, 3))
    exe.forward(is_train=True, x=np.array([[1.0, 3.0, 2.0], [0.0, -1.0, 4.0]]))
    exe.backward([mx.nd.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])])
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [[30, 10, 20], [50, 60, 40]])


# ------------------------------------------------------------------ imperative use
def test_ndarray_calls():
    nd = mx.nd
    x = nd.array([[0.3, 0.2, 0.4], [0.1, 0.3, 0.2]])
    vals, idx = nd.topk(x, k=2, ret_typ="both")
    np.testing.assert_allclose(vals.asnumpy(), [[0.4, 0.3], [0.3, 0.2]])
    np.testing.assert_array_equal(idx.asnumpy(), [[2, 0], [1, 2]])
    assert idx.dtype == np.float32 and nd.argsort(x, dtype="int32").dtype == np.int32
    np.testing.assert_array_equal(nd.argsort(x, axis=None).asnumpy(), [3, 1, 5, 0, 4, 2])
    np.testing.assert_allclose(nd.sort(x, axis=0, is_ascend=False).asnumpy(), [[0.3, 0.3, 0.4], [0.1, 0.2, 0.2]])
    np.testing.assert_array_equal(nd.argmax_channel(x).asnumpy(), [2, 1])
    d = nd.array([[0, 1], [2, 3]])
    np.testing.assert_array_equal(nd.gather_nd(d, nd.array([[1, 1, 0], [0, 1, 0]])).asnumpy(), [2, 3, 0])
    np.testing.assert_array_equal(nd.scatter_nd(nd.array([2, 3, 0]), nd.array([[1, 1, 0], [0, 1, 0]]),
                                                shape=(2, 2)).asnumpy(), [[0, 0], [2, 3]])
    b = nd.array([[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(nd.batch_take(b, nd.array([0, 1, 0], dtype="int32")).asnumpy(), [1, 4, 5])
    a = nd.array([[3, 6, 6], [4, 5, 1]])
    np.testing.assert_array_equal(nd.ravel_multi_index(a, shape=(7, 6)).asnumpy(), [22, 41, 37])
    np.testing.assert_array_equal(nd.unravel_index(nd.array([22, 41, 37]), shape=(-1, 6)).asnumpy(),
                                  a.asnumpy())


def test_ndarray_gather_nd_raises_out_of_bounds():
    """MXNet 1.9.1: IndexError for an index outside [-n, n-1]; a compiled graph clips instead."""
    d = mx.nd.array(np.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        mx.nd.gather_nd(d, mx.nd.array([[3], [0]]))
    with pytest.raises(IndexError, match="axis 1 with size 4"):
        mx.nd.gather_nd(d, mx.nd.array([[0], [-5]]))
    exe = S.gather_nd(V("d"), V("i")).simple_bind(mx.cpu(), d=(3, 4), i=(2, 1))
    out = exe.forward(d=d.asnumpy(), i=np.array([[3], [-5]]))[0]
    np.testing.assert_array_equal(out.asnumpy(), [8])


# ------------------------------------------------------------------ bad input
def test_bad_input_errors():
    x, i = V("x"), V("i")
    raises_naming(lambda: S.topk(x, axis=2, name="t").infer_shape(x=(2, 3)), "topk", "'t'", "(2, 3)", "axis")
    raises_naming(lambda: S.topk(x, k=4, name="t").infer_shape(x=(2, 3)), "topk", "'t'", "(2, 3)", "k=4")
    raises_naming(lambda: S.sort(x, axis=-3, name="s").infer_shape(x=(2, 3)), "sort", "'s'", "(2, 3)")
    raises_naming(lambda: S.argmax_channel(x, name="am").infer_shape(x=(5,)), "argmax_channel", "'am'", "(5,)")
    raises_naming(lambda: S.gather_nd(x, i, name="g").infer_shape(x=(2, 3), i=(2,)), "gather_nd", "'g'", "(2,)")
    raises_naming(lambda: S.gather_nd(x, i, name="g").infer_shape(x=(2, 3), i=(3, 4)), "gather_nd", "(2, 3)", "(3, 4)")
    raises_naming(lambda: S.scatter_nd(x, i, shape=(3, 4), name="sc").infer_shape(x=(4,), i=(2, 3)),
            "scatter_nd", "'sc'", "(4,)", "(2, 3)", "(3, 4)")
    raises_naming(lambda: S.scatter_nd(x, i, shape=(3,), name="sc").infer_shape(x=(4,), i=(2, 4)),
            "scatter_nd", "(2, 4)", "(3,)")
    raises_naming(lambda: S.batch_take(x, i, name="bt").infer_shape(x=(2, 3, 4), i=(2,)), "batch_take", "(2, 3, 4)")
    raises_naming(lambda: S.batch_take(x, i, name="bt").infer_shape(x=(3, 4), i=(2,)), "batch_take", "(3, 4)", "(2,)")
    raises_naming(lambda: S.ravel_multi_index(x, shape=(2, 3, 4), name="r").infer_shape(x=(2, 5)),
            "_ravel_multi_index", "'r'", "(2, 5)", "(2, 3, 4)")
    raises_naming(lambda: S.ravel_multi_index(x, name="r").infer_shape(x=(2, 5)), "_ravel_multi_index", "shape")
    raises_naming(lambda: S.unravel_index(x, shape=(2, 3), name="u").infer_shape(x=(2, 5)),
            "_unravel_index", "'u'", "(2, 5)")
    raises_naming(lambda: S.topk(x, ret_typ="top"), "topk", "ret_typ", cls=mx.base.ParamError)


def test_batch_take_refuses_float_indices():
    """MXNet 1.9.1: batch_take's indices are int32; a float32 array there is a type error."""
    bt = S.batch_take(V("x"), V("i"), name="bt")
    raises_naming(lambda: bt.simple_bind(mx.cpu(), x=(3, 2), i=(3,)), "batch_take", "'bt'", "int32", "float32",
            cls=mx.base.DTypeError)


def test_nd_calls_take_axis_none_as_the_flattened_input():
    """`mx.nd.topk / sort / argsort(axis=None)` work on the flattened input (an explicit None
    is not the default axis -1): k may exceed the last axis' length."""
    x = np.random.RandomState(3).permutation(24).astype(np.float32).reshape(2, 3, 4)
    flat = x.ravel()
    top = mx.nd.topk(mx.nd.array(x), axis=None, k=7, ret_typ="value").asnumpy()
    np.testing.assert_array_equal(top, np.sort(flat)[::-1][:7])
    idx = mx.nd.topk(mx.nd.array(x), axis=None, k=7, dtype="int32").asnumpy()
    assert idx.dtype == np.int32
    np.testing.assert_array_equal(idx, np.argsort(flat)[::-1][:7])
    mask = mx.nd.topk(mx.nd.array(x), axis=None, k=7, ret_typ="mask").asnumpy()
    assert mask.shape == x.shape and mask.sum() == 7 and (x[mask == 1] >= 17).all()
    np.testing.assert_array_equal(mx.nd.sort(mx.nd.array(x), axis=None, is_ascend=False).asnumpy(),
                                  np.sort(flat)[::-1])
    np.testing.assert_array_equal(mx.nd.argsort(mx.nd.array(x), axis=None).asnumpy(), np.argsort(flat))
    with pytest.raises(mx.base.ShapeError, match="k=25"):
        mx.nd.topk(mx.nd.array(x), axis=None, k=25)
