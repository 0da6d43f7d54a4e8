"""Golden cases for the ordering and N-d indexing ops (jbind/ops/sorting.py, gather.py),
against MXNet 1.9.1; same format as zoo_cases.py (see its docstring), written to
tests/golden/ops_sort/ by ``make_zoo_golden.py --group sort``.

Sorted inputs are uniform floats, so ties (whose order MXNet leaves open) do not occur.
MXNet 1.9.1 cannot differentiate sort along an integer axis (its backward node loses the
axis), argmax_channel or batch_take, and its gather_nd backward writes out of bounds for
negative indices: those cases run inference only. batch_take takes
int32 indices, which simple_bind only gives through a Cast.
"""
import numpy as np  # noqa: F401  (kept so the module's only import is numpy)


def op_cases(mx):
    S = mx.sym
    x, i, u = S.Variable("x"), S.Variable("i"), S.Variable("u")
    cases = []

    def add(name, sym, shapes, **kw):
        cases.append(dict(name=name, sym=sym, shapes=shapes, **kw))

    # ------------------------------------------------------------ topk
    add("topk_indices", S.topk(x, name="t"), {"x": (3, 5)})
    add("topk_value_axis0", S.topk(x, axis=0, k=2, ret_typ="value", name="t"), {"x": (3, 4)})
    add("topk_both_ascend", S.topk(x, k=3, ret_typ="both", is_ascend=True, name="t"), {"x": (2, 5)})
    add("topk_both_flat", S.topk(x, axis=None, k=4, ret_typ="both", name="t"), {"x": (2, 3)})
    add("topk_mask_axis1", S.topk(x, axis=1, k=2, ret_typ="mask", name="t"), {"x": (2, 4, 3)})
    add("topk_all_int32", S.topk(x, axis=-2, k=0, ret_typ="both", dtype="int32", name="t"),
        {"x": (2, 3, 2)}, is_train=False)
    # ------------------------------------------------------------ sort, argsort
    add("sort_last", S.sort(x, name="s"), {"x": (3, 4)}, is_train=False)
    add("sort_axis0_desc", S.sort(x, axis=0, is_ascend=False, name="s"), {"x": (4, 3)}, is_train=False)
    add("sort_flat", S.sort(x, axis=None, name="s"), {"x": (2, 3)})
    add("sort_flat_desc", S.sort(x, axis=None, is_ascend=False, name="s"), {"x": (2, 2, 2)})
    add("argsort_last", S.argsort(x, name="a"), {"x": (3, 4)})
    add("argsort_axis0_desc_int32", S.argsort(x, axis=0, is_ascend=False, dtype="int32", name="a"),
        {"x": (4, 2)}, is_train=False)
    add("argsort_flat", S.argsort(x, axis=None, name="a"), {"x": (2, 3)}, is_train=False)
    # ------------------------------------------------------------ argmax_channel
    add("argmax_channel_2d", S.argmax_channel(x, name="am"), {"x": (3, 5)}, is_train=False)
    add("argmax_channel_4d", S.argmax_channel(x, name="am"), {"x": (2, 3, 2, 2)}, is_train=False)
    # ------------------------------------------------------------ gather_nd, scatter_nd
    # MXNet 1.9.1's backward writes out of bounds for negative indices: those run inference only
    add("gather_nd_elements", S.gather_nd(x, i, name="g"), {"x": (3, 4), "i": (2, 5)},
        inputs={"i": ("int", 0, 3)}, grad_req={"i": "null"})
    add("gather_nd_rows", S.gather_nd(x, i, name="g"), {"x": (3, 2, 2), "i": (1, 2, 3)},
        inputs={"i": ("int", 0, 3)}, grad_req={"i": "null"})
    add("gather_nd_negative", S.gather_nd(x, i, name="g"), {"x": (3, 4), "i": (2, 6)},
        inputs={"i": ("int", -3, 3)}, is_train=False)
    add("gather_nd_float_index", S.gather_nd(x, i, name="g"), {"x": (3, 4), "i": (2, 4)},
        inputs={"i": ("uniform", -2.9, 2.0)}, is_train=False)
    # distinct positions: the top 5 of 12 uniform numbers, unravelled into (3, 4)
    where = S.unravel_index(S.topk(u, k=5, name="pos"), shape=(3, 4), name="where")
    add("scatter_nd_elements", S.scatter_nd(x, where, shape=(3, 4), name="sc"), {"x": (5,), "u": (12,)},
        grad_req={"u": "null"})
    rows = S.reshape(S.topk(u, k=2, name="pos"), shape=(1, 2), name="rows")
    add("scatter_nd_rows", S.scatter_nd(x, rows, shape=(4, 3), name="sc"), {"x": (2, 3), "u": (4,)},
        grad_req={"u": "null"})
    # ------------------------------------------------------------ batch_take
    add("batch_take_clipped", S.batch_take(x, S.Cast(i, dtype="int32", name="c"), name="bt"),
        {"x": (4, 3), "i": (4,)}, inputs={"i": ("int", -2, 5)}, is_train=False)
    add("batch_take_2d_indices", S.batch_take(x, S.Cast(i, dtype="int32", name="c"), name="bt"),
        {"x": (4, 3), "i": (2, 2)}, inputs={"i": ("int", 0, 3)}, is_train=False)
    # ------------------------------------------------------------ ravel / unravel
    add("ravel_multi_index", S.ravel_multi_index(x, shape=(3, 4, 2), name="r"), {"x": (3, 5)},
        inputs={"x": ("int", 0, 2)}, is_train=False)
    add("ravel_multi_index_unknown_first", S.ravel_multi_index(x, shape=(-1, 4), name="r"), {"x": (2, 4)},
        inputs={"x": ("int", -1, 6)}, is_train=False)
    add("unravel_index", S.unravel_index(x, shape=(3, 4, 2), name="r"), {"x": (5,)},
        inputs={"x": ("int", 0, 24)}, is_train=False)
    add("unravel_index_negative", S.unravel_index(x, shape=(-1, 4), name="r"), {"x": (6,)},
        inputs={"x": ("int", -9, 30)}, is_train=False)
    add("unravel_ravel_train", S.unravel_index(S.ravel_multi_index(x, shape=(3, 4), name="r"),
                                               shape=(3, 4), name="ur"), {"x": (2, 3)},
        inputs={"x": ("int", 0, 3)})
    return cases


def all_cases(mx):
    return op_cases(mx)
