"""Golden cases for the layout, moment, cumsum and AMP cast ops (MXNet 1.9.1 reference).

Same format as zoo_cases.py (see its docstring for the case keys): every function takes
the library module ``mx`` and imports nothing but numpy, so ``make_zoo_golden.py --group
shape`` builds the symbols with MXNet and tests/test_zoo_golden.py with jbind. The golden
inputs are float32; the AMP cases make float16 inside the graph with Cast, not amp_cast:
MXNet's tojson() drops every amp_cast / amp_multicast whose output feeds another node
(RemoveAmpCast). Cases with float16 or integer casts run without MKLDNN (`native`): its
amp_multicast has no float16 kernel and its amp_cast rounds to integers where MXNet's own
kernel truncates.
"""
import numpy as np  # noqa: F401  (kept so the module's only import is numpy)


def op_cases(mx):
    S = mx.sym
    x, y = S.Variable("x"), S.Variable("y")
    cases = []

    def add(name, sym, shapes, **kw):
        cases.append(dict(name=name, sym=sym, shapes=shapes, **kw))

    # ------------------------------------------------------------ slice_like, reshape_like
    add("slice_like_all", S.slice_like(x, y, name="sl"), {"x": (3, 4), "y": (2, 3)})
    add("slice_like_axes", S.slice_like(x, y, axes=(0, -1), name="sl"), {"x": (3, 2, 4), "y": (2, 5, 3)})
    add("reshape_like_all", S.reshape_like(x, y, name="rl"), {"x": (2, 6), "y": (3, 4)})
    add("reshape_like_ranges", S.reshape_like(x, y, lhs_begin=0, lhs_end=1, rhs_begin=0, rhs_end=2,
                                              name="rl"), {"x": (6, 2), "y": (2, 3, 4)})
    add("reshape_like_negative", S.reshape_like(x, y, lhs_begin=-1, rhs_begin=1, name="rl"),
        {"x": (2, 6), "y": (5, 2, 3)})
    # ------------------------------------------------------------ shape_array, size_array
    add("shape_array", S.shape_array(x, name="sa"), {"x": (2, 3, 1)})
    add("size_array", S.size_array(x, name="sz"), {"x": (2, 3)})
    add("shape_array_infer", S.shape_array(x, name="sa"), {"x": (4,)}, is_train=False)
    # ------------------------------------------------------------ depth_to_space, space_to_depth
    add("depth_to_space", S.depth_to_space(x, block_size=2, name="d2s"), {"x": (2, 8, 2, 3)})
    add("depth_to_space_b3", S.depth_to_space(x, block_size=3, name="d2s"), {"x": (1, 9, 1, 2)})
    add("space_to_depth", S.space_to_depth(x, block_size=2, name="s2d"), {"x": (2, 2, 4, 6)})
    add("space_to_depth_b3", S.space_to_depth(x, block_size=3, name="s2d"), {"x": (1, 1, 3, 6)})
    # ------------------------------------------------------------ diag
    add("diag_vector", S.diag(x, name="dg"), {"x": (3,)})
    add("diag_vector_k_neg", S.diag(x, k=-2, name="dg"), {"x": (3,)})
    add("diag_vector_k_pos", S.diag(x, k=1, name="dg"), {"x": (2,)})
    add("diag_matrix_k", S.diag(x, k=1, name="dg"), {"x": (3, 4)})
    add("diag_matrix_k_neg", S.diag(x, k=-2, name="dg"), {"x": (4, 3)})
    add("diag_3d_axes_swapped", S.diag(x, k=1, axis1=2, axis2=0, name="dg"), {"x": (2, 3, 4)})
    add("diag_3d_negative_axes", S.diag(x, k=-1, axis1=-1, axis2=1, name="dg"), {"x": (2, 3, 4)})
    # ------------------------------------------------------------ moments
    add("moments_axis1", S.moments(x, axes=(1,), name="mo"), {"x": (2, 3, 4)})
    add("moments_keepdims", S.moments(x, axes=(0, 2), keepdims=True, name="mo"), {"x": (2, 3, 4)})
    add("moments_all_negative", S.moments(x, axes=(-1, 0), name="mo"), {"x": (3, 4)})
    # ------------------------------------------------------------ cumsum
    add("cumsum_flat", S.cumsum(x, name="cs"), {"x": (2, 3)})
    add("cumsum_axis1", S.cumsum(x, axis=1, name="cs"), {"x": (2, 3, 2)})
    add("cumsum_axis0_float64", S.cumsum(x, axis=0, dtype="float64", name="cs"), {"x": (3, 2)})
    add("cumsum_int32", S.cumsum(x, axis=1, dtype="int32", name="cs"), {"x": (2, 4)},
        inputs={"x": ("uniform", -5.0, 5.0)}, is_train=False)
    # ------------------------------------------------------------ AMP casts
    h = S.Cast(x, dtype="float16", name="to16")
    add("amp_cast_float16", S.amp_cast(x, dtype="float16", name="amp16"), {"x": (2, 3)})
    add("amp_cast_float16_back", S.amp_cast(h, dtype="float32", name="to32"), {"x": (2, 3)}, native=True)
    add("amp_cast_int32", S.amp_cast(x, dtype="int32", name="toint"), {"x": (2, 3)},
        inputs={"x": ("uniform", -5.0, 5.0)}, is_train=False, native=True)
    add("amp_multicast_float32", S.amp_multicast(x, y, num_outputs=2, name="mc"), {"x": (2, 3), "y": (3,)})
    add("amp_multicast_widest", S.amp_multicast(h, y, num_outputs=2, name="mc"), {"x": (2, 3), "y": (3,)},
        native=True)
    add("amp_multicast_narrow", S.amp_multicast(y, h, num_outputs=2, cast_narrow=True, name="mc"),
        {"x": (2, 3), "y": (3,)}, native=True)
    add("amp_multicast_first_dtype", S.amp_multicast(h, S.Cast(y, dtype="float16", name="y16"),
                                                     num_outputs=2, name="mc"),
        {"x": (2, 3), "y": (3,)}, native=True)
    add("amp_multicast_int_first", S.amp_multicast(S.Cast(y, dtype="int32", name="yint"), h, num_outputs=2,
                                                   name="mc"), {"x": (2, 3), "y": (3,)},
        inputs={"x": ("uniform", -5.0, 5.0), "y": ("uniform", -5.0, 5.0)}, is_train=False, native=True)
    # ------------------------------------------------------------ split_v2 (MXNet's Python function,
    # which takes no name: each built under a fresh NameManager, so both name it _split_v20)
    def fresh(build):
        with mx.name.NameManager():
            return build()
    add("split_v2_indices", fresh(lambda: S.split_v2(x, (1, 3), axis=1)), {"x": (3, 4)})
    add("split_v2_sections_squeeze", fresh(lambda: S.split_v2(x, 3, axis=0, squeeze_axis=True)), {"x": (3, 4)})
    add("split_v2_negative_axis", fresh(lambda: S.split_v2(x, (2,), axis=-1)), {"x": (2, 5)})
    return cases


def all_cases(mx):
    return op_cases(mx)
