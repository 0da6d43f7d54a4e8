"""Shape, indexing and sequence ops (jbind/ops/shape.py, join.py, indexing.py, sequence.py).

Behaviours marked "MXNet 1.9.1" were checked against real MXNet.
"""
import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, ops_in, raises_naming
from jbind.ops import get_op
from jbind.ops import indexing as indexing_mod
from jbind.ops import sequence as seq_mod
from jbind.ops import shape as shape_mod
from jbind.ops.shape import reshape_target

V = mx.sym.Variable
S = mx.sym


def _idx(i, n, mode):
    i = np.trunc(i).astype(int)  # MXNet casts float indices to int
    return np.mod(i, n) if mode == "wrap" else np.clip(i, 0, n - 1)


def _take(a, indices, axis=0, mode="clip"):
    return np.take(a, _idx(indices, a.shape[axis], mode), axis=axis)


def _pick(data, index, axis=-1, keepdims=False, mode="clip"):
    i = np.expand_dims(_idx(index, data.shape[axis], mode), axis)
    out = np.take_along_axis(data, i, axis=axis)
    return out if keepdims else np.squeeze(out, axis)


def _lens(ln, steps):
    return np.clip(np.trunc(ln).astype(int), 0, steps)


def _seq_mask(data, ln, value=0.0, axis=0):
    x = np.moveaxis(data, axis, 0).copy()
    for b, n in enumerate(_lens(ln, x.shape[0])):
        x[n:, b] = value
    return np.moveaxis(x, 0, axis)


def _seq_last(data, ln=None, axis=0):
    x = np.moveaxis(data, axis, 0)
    if ln is None:
        return x[-1]
    return np.stack([x[max(n - 1, 0), b] for b, n in enumerate(_lens(ln, x.shape[0]))])


def _seq_reverse(data, ln):
    x = data.copy()
    for b, n in enumerate(_lens(ln, x.shape[0])):
        x[:n, b] = data[:n, b][::-1]
    return x


IDX = ("int", -2, 7)            # integer-valued indices, some out of range
FIDX = (-2.9, 6.9)              # non-integer indices: finite differences see a zero gradient

CASES = [
    # --- Reshape (MXNet 1.9.1 special values) ---------------------------------------------
    Case("reshape_0_m1", lambda: S.Reshape(V("data"), shape=(0, -1), name="r"),
         lambda data: [data.reshape(2, 12)], {"data": (2, 3, 4)}),
    Case("reshape_m3_m2", lambda: S.Reshape(V("data"), shape=(-3, -2), name="r"),
         lambda data: [data.reshape(6, 2, 2)], {"data": (2, 3, 2, 2)}),
    Case("reshape_m4", lambda: S.reshape(V("data"), shape=(0, -4, 2, -1, 0), name="r"),
         lambda data: [data.reshape(2, 2, 3, 2)], {"data": (2, 6, 2)}),
    Case("reshape_reverse", lambda: S.Reshape(V("data"), shape=(-1, 0), reverse=True, name="r"),
         lambda data: [data.reshape(6, 4)], {"data": (2, 3, 4)}),
    Case("reshape_target_shape", lambda: S.Reshape(V("data"), target_shape=(0, 4), name="r"),
         lambda data: [data.reshape(6, 4)], {"data": (2, 3, 4)}),
    Case("reshape_keep_highest", lambda: S.Reshape(V("data"), target_shape=(9, 0), keep_highest=True,
                                                   name="r"),
         lambda data: [data.reshape(2, 12)], {"data": (2, 3, 4)}),
    Case("flatten", lambda: S.Flatten(V("data"), name="f"), lambda data: [data.reshape(2, 6)],
         {"data": (2, 3, 2)}),
    Case("flatten_1d", lambda: S.flatten(V("data"), name="f"), lambda data: [data.reshape(3, 1)],
         {"data": (3,)}),
    # --- join / split ----------------------------------------------------------------------
    Case("concat_dim1", lambda: S.Concat(V("a"), V("b"), V("c"), name="cat"),
         lambda a, b, c: [np.concatenate([a, b, c], axis=1)], {"a": (2, 1, 2), "b": (2, 3, 2), "c": (2, 2, 2)}),
    Case("concat_neg_dim", lambda: S.concat(V("a"), V("b"), dim=-1, name="cat"),
         lambda a, b: [np.concatenate([a, b], axis=-1)], {"a": (2, 3), "b": (2, 1)}),
    Case("rnn_param_concat", lambda: S._rnn_param_concat(V("a"), V("b"), dim=0, name="cat"),
         lambda a, b: [np.concatenate([a, b])], {"a": (6,), "b": (4,)}),
    Case("stack", lambda: S.stack(V("a"), V("b"), axis=1, name="st"),
         lambda a, b: [np.stack([a, b], axis=1)], {"a": (2, 3), "b": (2, 3)}),
    Case("stack_neg_axis", lambda: S.stack(V("a"), V("b"), V("c"), axis=-1, name="st"),
         lambda a, b, c: [np.stack([a, b, c], axis=-1)], {"a": (2, 2), "b": (2, 2), "c": (2, 2)}),
    Case("slicechannel", lambda: S.SliceChannel(V("data"), num_outputs=3, name="sc"),
         lambda data: np.split(data, 3, axis=1), {"data": (2, 6, 2)}),
    Case("slicechannel_squeeze", lambda: S.SliceChannel(V("data"), num_outputs=3, axis=0, squeeze_axis=True,
                                                        name="sc"),
         lambda data: list(data), {"data": (3, 2, 2)}),
    Case("split_neg_axis", lambda: S.split(V("data"), num_outputs=2, axis=-1, name="sc"),
         lambda data: np.split(data, 2, axis=-1), {"data": (2, 3, 4)}),
    Case("split_v2_indices", lambda: S.split_v2(V("data"), (1, 4), axis=1),
         lambda data: np.split(data, [1, 4], axis=1), {"data": (2, 6, 2)}),
    Case("split_v2_sections", lambda: S.split_v2(V("data"), 2, axis=-1, squeeze_axis=False),
         lambda data: np.split(data, 2, axis=-1), {"data": (2, 3, 4)}),
    # --- axis moves ------------------------------------------------------------------------
    Case("expand_dims", lambda: S.expand_dims(V("data"), axis=1, name="e"),
         lambda data: [data[:, None]], {"data": (3, 4)}),
    Case("expand_dims_neg", lambda: S.expand_dims(V("data"), axis=-1, name="e"),
         lambda data: [data[..., None]], {"data": (3, 4)}),
    Case("transpose_default", lambda: S.transpose(V("data"), name="t"),
         lambda data: [data.transpose()], {"data": (2, 3, 4)}),
    Case("transpose_axes", lambda: S.transpose(V("data"), axes=(1, 2, 0), name="t"),
         lambda data: [data.transpose(1, 2, 0)], {"data": (2, 3, 4)}),
    Case("swapaxis", lambda: S.SwapAxis(V("data"), dim1=0, dim2=2, name="sw"),
         lambda data: [np.swapaxes(data, 0, 2)], {"data": (2, 3, 4)}),
    Case("swapaxes_neg", lambda: S.swapaxes(V("data"), dim1=-1, dim2=1, name="sw"),
         lambda data: [np.swapaxes(data, -1, 1)], {"data": (2, 3, 4)}),
    Case("reverse", lambda: S.reverse(V("data"), axis=(0, 2), name="rv"),
         lambda data: [data[::-1, :, ::-1]], {"data": (2, 3, 4)}),
    Case("flip", lambda: S.flip(V("data"), axis=1, name="rv"), lambda data: [data[:, ::-1]], {"data": (3, 4)}),
    Case("squeeze_all", lambda: S.squeeze(V("data"), name="sq"),
         lambda data: [data.reshape(2, 3)], {"data": (2, 1, 3, 1)}),
    Case("squeeze_axis", lambda: S.squeeze(V("data"), axis=(-1,), name="sq"),
         lambda data: [data.reshape(2, 1, 3)], {"data": (2, 1, 3, 1)}),
    Case("squeeze_to_1", lambda: S.squeeze(V("data"), name="sq"),   # MXNet 1.9.1: shape (1,), not ()
         lambda data: [data.reshape(1)], {"data": (1, 1)}),
    # --- slicing ---------------------------------------------------------------------------
    Case("slice_axis", lambda: S.slice_axis(V("data"), axis=1, begin=1, end=3, name="sl"),
         lambda data: [data[:, 1:3]], {"data": (2, 5, 2)}),
    Case("slice_axis_end_none", lambda: S.slice_axis(V("data"), axis=0, begin=2, end=None, name="sl"),
         lambda data: [data[2:]], {"data": (5, 3)}),
    Case("slice_axis_negative", lambda: S.slice_axis(V("data"), axis=-1, begin=-3, end=-1, name="sl"),
         lambda data: [data[..., -3:-1]], {"data": (2, 3, 5)}),
    Case("slice", lambda: S.slice(V("data"), begin=(0, 1), end=(2, 4), name="sl"),
         lambda data: [data[0:2, 1:4]], {"data": (2, 5, 3)}),
    Case("slice_none_step", lambda: S.slice(V("data"), begin=(None, 4, None), end=(None, None, None),
                                            step=(1, -2, -1), name="sl"),
         lambda data: [data[:, 4::-2, ::-1]], {"data": (2, 5, 3)}),
    Case("crop", lambda: S.crop(V("data"), begin=(-9,), end=(9,), step=(2,), name="sl"),
         lambda data: [data[::2]], {"data": (5, 3)}),
    # --- indexing --------------------------------------------------------------------------
    Case("take_axis0", lambda: S.take(V("a"), V("i"), name="tk"),
         lambda a, i: [_take(a, i)], {"a": (5, 3), "i": (2, 3)}, inputs={"i": ("int", 0, 5)}, no_grad=("i",)),
    Case("take_axis1_clip", lambda: S.take(V("a"), V("i"), axis=1, name="tk"),
         lambda a, i: [_take(a, i, axis=1)], {"a": (2, 4, 3), "i": (6,)}, inputs={"i": IDX}, no_grad=("i",)),
    Case("take_wrap_index_grad", lambda: S.take(V("a"), V("i"), axis=-1, mode="wrap", name="tk"),
         lambda a, i: [_take(a, i, axis=-1, mode="wrap")], {"a": (2, 4), "i": (3, 2)}, inputs={"i": FIDX}),
    # mode='raise' with indices in range (out of range is an error: tests/test_take_raise.py)
    Case("take_raise_in_range", lambda: S.take(V("a"), V("i"), mode="raise", name="tk"),
         lambda a, i: [_take(a, i)], {"a": (4, 2), "i": (5,)}, inputs={"i": ("int", 0, 3)}, no_grad=("i",)),
    Case("pick", lambda: S.pick(V("data"), V("index"), name="pk"),
         lambda data, index: [_pick(data, index)], {"data": (3, 4)}, inputs={"index": IDX},
         no_grad=("index",)),
    Case("pick_axis0_keepdims", lambda: S.pick(V("data"), V("index"), axis=0, keepdims=True, name="pk"),
         lambda data, index: [_pick(data, index, 0, True)], {"data": (3, 2, 2)}, inputs={"index": FIDX}),
    Case("pick_wrap", lambda: S.pick(V("data"), V("index"), axis=1, mode="wrap", name="pk"),
         lambda data, index: [_pick(data, index, 1, mode="wrap")], {"data": (2, 4, 2)}, inputs={"index": IDX},
         no_grad=("index",)),
    Case("one_hot", lambda: S.one_hot(V("indices"), depth=4, on_value=2.0, off_value=-1.0, name="oh"),
         lambda indices: [np.where(np.trunc(indices)[..., None] == np.arange(4), 2.0, -1.0)],
         {"indices": (2, 3)}, inputs={"indices": (-1.9, 5.9)}),
    Case("one_hot_int32", lambda: S.one_hot(V("indices"), depth=3, dtype="int32", name="oh"),
         lambda indices: [(np.trunc(indices)[..., None] == np.arange(3)).astype(np.int32)],
         {"indices": (4,)}, inputs={"indices": IDX}, grad=False),
    # --- repeats ---------------------------------------------------------------------------
    Case("tile", lambda: S.tile(V("data"), reps=(2,), name="tl"), lambda data: [np.tile(data, 2)],
         {"data": (2, 3)}),
    Case("tile_more_reps", lambda: S.tile(V("data"), reps=(2, 1, 3), name="tl"),
         lambda data: [np.tile(data, (2, 1, 3))], {"data": (2, 2)}),
    Case("repeat_flat", lambda: S.repeat(V("data"), repeats=2, name="rp"),
         lambda data: [np.repeat(data, 2)], {"data": (2, 3)}),
    Case("repeat_axis", lambda: S.repeat(V("data"), repeats=3, axis=-1, name="rp"),
         lambda data: [np.repeat(data, 3, axis=-1)], {"data": (2, 2)}),
    # --- sequences (MXNet 1.9.1: lengths truncated; axis=1 for Mask and Last) ---------------
    Case("sequence_mask", lambda: S.SequenceMask(V("data"), V("len"), use_sequence_length=True, value=-1.0,
                                                 name="sm"),
         lambda data, len: [_seq_mask(data, len, -1.0)], {"data": (4, 3, 2), "len": (3,)},
         inputs={"len": np.array([1.0, 4.0, 2.7])}, no_grad=("len",)),
    Case("sequence_mask_axis1", lambda: S.SequenceMask(V("data"), V("len"), use_sequence_length=True, axis=1,
                                                       name="sm"),
         lambda data, len: [_seq_mask(data, len, 0.0, axis=1)], {"data": (3, 4), "len": (3,)},
         inputs={"len": np.array([0.0, 9.0, 2.0])}, no_grad=("len",)),
    Case("sequence_mask_nolen", lambda: S.SequenceMask(V("data"), value=5.0, name="sm"),
         lambda data: [data], {"data": (3, 2)}),
    Case("sequence_last", lambda: S.SequenceLast(V("data"), V("len"), use_sequence_length=True, name="sl"),
         lambda data, len: [_seq_last(data, len)], {"data": (4, 3, 2), "len": (3,)},
         inputs={"len": np.array([1.0, 4.0, 2.5])}, no_grad=("len",)),
    Case("sequence_last_axis1", lambda: S.SequenceLast(V("data"), V("len"), use_sequence_length=True, axis=1,
                                                       name="sl"),
         lambda data, len: [_seq_last(data, len, axis=1)], {"data": (2, 4), "len": (2,)},
         inputs={"len": np.array([3.0, 2.0])}, no_grad=("len",)),
    Case("sequence_last_nolen", lambda: S.SequenceLast(V("data"), name="sl"),
         lambda data: [data[-1]], {"data": (3, 2, 2)}),
    Case("sequence_reverse", lambda: S.SequenceReverse(V("data"), V("len"), use_sequence_length=True,
                                                       name="sr"),
         lambda data, len: [_seq_reverse(data, len)], {"data": (4, 3, 2), "len": (3,)},
         inputs={"len": np.array([1.0, 4.0, 2.9])}, no_grad=("len",)),
    Case("sequence_reverse_len_grad", lambda: S.SequenceReverse(V("data"), V("len"), use_sequence_length=True,
                                                                name="sr"),
         lambda data, len: [_seq_reverse(data, len)], {"data": (3, 2), "len": (2,)},
         inputs={"len": np.array([2.5, 1.5])}),
    Case("sequence_reverse_nolen", lambda: S.SequenceReverse(V("data"), name="sr"),
         lambda data: [data[::-1]], {"data": (3, 2, 2)}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_every_op_has_a_case():
    mine = {c.name for m in (shape_mod, indexing_mod, seq_mod) for c in vars(m).values()
            if isinstance(c, type) and c.__module__ == m.__name__ and hasattr(c, "lower")
            and not c.__name__.startswith("_")}
    covered = set().union(*(ops_in(c.build()) for c in CASES))
    assert mine - covered == set()


# --------------------------------------------------------------------------- Reshape rule

@pytest.mark.parametrize("src, shape, reverse, want", [
    # each row checked against MXNet 1.9.1's Reshape
    ((2, 3, 4), (0, -1), False, (2, 12)),
    ((2, 3, 4), (-1, 0), False, (8, 3)),
    ((2, 3, 4), (-1, 0), True, (6, 4)),
    ((10, 5, 4), (-1, 0), True, (50, 4)),
    ((10, 5, 4), (0, 0, -4, -1, 2), False, (10, 5, 2, 2)),
    ((2, 3, 4, 5), (-3, -2), False, (6, 4, 5)),
    ((2, 3, 4, 5), (-2, -3), True, (2, 3, 20)),
    ((2, 3, 4, 5), (-4, 1, 2, -2), False, (1, 2, 3, 4, 5)),
    ((2, 3, 4, 5), (5, -1), True, (5, 24)),
    ((2, 3, 4), (-1,), False, (24,)),
    ((2, 3, 4), (-2,), False, (2, 3, 4)),
    ((2, 3, 4), (2, 3, 4, -2), False, (2, 3, 4)),
    ((2, 3, 4), (2, 3, 4, 1), False, (2, 3, 4, 1)),
    ((24,), (-4, 2, -1), False, (2, 12)),
])
def test_reshape_target(src, shape, reverse, want):
    assert reshape_target(src, shape, reverse) == want


@pytest.mark.parametrize("src, shape, reverse, match", [
    # MXNet 1.9.1 infers a shape of another size for the first five (no size check); jbind raises
    ((2, 5), (3, -1), False, "elements"),            # MXNet: (3, 3)
    ((2, 5), (20, -1), False, "elements"),           # MXNet: (20, 0), a zero-size array
    ((2, 5), (4, 4), False, "elements"),             # MXNet: (4, 4)
    ((2, 3, 4), (6, -2), False, "elements"),         # MXNet: (6, 3, 4); a plain value takes one dim
    ((2, 3, 4, 5), (0, -3), True, "elements"),       # MXNet: (3, 20)
    # MXNet 1.9.1 rejects these too
    ((2, 5), (2, -4, 2, 2), False, "do not divide"),
    ((2, 3, 4), (0, 0, 0, 0), False, "no input dim left"),
    ((2, 3, 4), (-1, -1), False, "only one dim"),
    ((2, 3, 4), (-4, -1, -1, 0, 0), False, "after -4"),
    ((2, 3, 4, 5), (-4, 2, -1, 0), True, "followed by two"),
    ((24,), (-4, 2, -1, -4, 3, -1), False, "no input dim left"),
    ((2, 3), (0, -5), False, "invalid value"),
])
def test_reshape_target_errors(src, shape, reverse, match):
    with pytest.raises(ValueError, match=match):
        reshape_target(src, shape, reverse)


def test_ndarray_reshape_uses_special_values():
    x = mx.nd.array(np.arange(24.0).reshape(2, 3, 4))
    assert x.reshape((-1, 0), reverse=True).shape == (6, 4)
    assert x.reshape(0, 0, -4, 2, -1).shape == (2, 3, 2, 2)
    with pytest.raises(mx.base.MXNetError, match="elements"):
        x.reshape((5, -1))


@pytest.mark.parametrize("src, out, params, want_in, want_out", [
    # MXNet 1.9.1: unknown dims stay unknown
    ((2, 0, 4), None, dict(shape=(0, -1)), (2, 0, 4), (2, 0)),
    ((0, 3, 4), None, dict(shape=(-3, 0)), (0, 3, 4), (0, 4)),
    ((2, 0, 4), None, dict(shape=(-1, 0), reverse=True), (2, 0, 4), (0, 4)),
    # MXNet 1.9.1 solves one unknown input dim from a known output; two are left alone
    ((2, 0, 4), (6, 4), dict(shape=(-3, 0)), (2, 3, 4), (6, 4)),
    ((0, 0, 4), (6, 4), dict(shape=(-3, 0)), (0, 0, 4), (6, 4)),
    ((2, 0, 4), None, dict(shape=(6, 4)), (2, 3, 4), (6, 4)),
    (None, (6, 4), dict(shape=(-1, 0)), None, None),           # input ndim unknown: nothing
])
def test_reshape_partial_rule(src, out, params, want_in, want_out):
    ins, outs, _ = get_op("Reshape")(**params).infer_shape([src], [out])
    assert ins == [want_in] and outs[0] == want_out


def test_reshape_infers_input_backward_in_a_graph():
    r = S.Reshape(V("x"), shape=(-3, 0), name="r")
    st = S.stack(r, V("y"), name="st")
    arg, out, _ = st.infer_shape_partial(x=(2, 0, 4), y=(6, 4))
    assert arg == [(2, 3, 4), (6, 4)] and out == [(2, 6, 4)]


# ------------------------------------------------------------------ other partial rules

def _rule(name, ins, outs=None, **params):
    op = get_op(name)(**params)
    a, o, _ = op.infer_shape(list(ins), list(outs or [None] * len(op.outputs())))
    return a, o


def test_partial_rules():
    # Concat: MXNet 1.9.1 fills the other dims of every input, never the concat dim backward
    assert _rule("Concat", [(2, 0), None], [(2, 5)], num_args=2) == ([(2, 0), (2, 0)], [(2, 5)])
    assert _rule("Concat", [(0, 3), (2, 0)], num_args=2, dim=0) == ([(0, 3), (2, 3)], [(0, 3)])
    assert _rule("Concat", [(2, 3), (2, 4)], num_args=2) == ([(2, 3), (2, 4)], [(2, 7)])
    # _rnn_param_concat (a Gluon RNN's flattened weights): one or two inputs unknown along dim
    # share what the output leaves, so a fused RNN's parameter vector sizes its input weights
    assert _rule("_rnn_param_concat", [(0,), (4,), (0,)], [(10,)], num_args=3, dim=0) == \
        ([(3,), (4,), (3,)], [(10,)])
    assert _rule("_rnn_param_concat", [(6,), (4,)], num_args=2, dim=0) == ([(6,), (4,)], [(10,)])
    with pytest.raises(ValueError, match="exceed"):
        _rule("_rnn_param_concat", [(0,), (12,)], [(10,)], num_args=2, dim=0)
    with pytest.raises(ValueError, match="1 or 2"):
        _rule("_rnn_param_concat", [(0,), (0,), (0,)], [(10,)], num_args=3, dim=0)
    # SliceChannel: the input is back-calculated from the outputs once its ndim is known
    assert _rule("SliceChannel", [(0, 0, 3)], [(2, 2, 0), None], num_outputs=2) == \
        ([(2, 4, 3)], [(2, 2, 3)] * 2)
    assert _rule("SliceChannel", [(2, 0, 3)], num_outputs=2) == ([(2, 0, 3)], [(2, 0, 3)] * 2)
    assert _rule("SliceChannel", [None], [(2, 3), None], num_outputs=2)[0] == [None]
    assert _rule("SliceChannel", [(0, 0)], [(2,), None], num_outputs=2, squeeze_axis=True)[0] == [(2, 2)]
    # expand_dims and transpose work both ways, as in MXNet 1.9.1
    assert _rule("expand_dims", [None], [(2, 1, 3)], axis=1) == ([(2, 3)], [(2, 1, 3)])
    assert _rule("transpose", [None], [(2, 3, 4)], axes=(1, 2, 0)) == ([(4, 2, 3)], [(2, 3, 4)])
    assert _rule("transpose", [(2, 0, 3)]) == ([(2, 0, 3)], [(3, 0, 2)])
    assert _rule("SwapAxis", [None], [(2, 3, 4)], dim1=0, dim2=2) == ([(4, 3, 2)], [(2, 3, 4)])
    # unknown dims stay unknown through slicing, take, tile, repeat, Flatten
    assert _rule("slice_axis", [(2, 0, 3)], axis=1, begin=1, end=3)[1] == [(2, 0, 3)]
    assert _rule("slice", [(0, 0, 3)], begin=(0, 1), end=(2, 3))[1] == [(0, 0, 3)]
    assert _rule("take", [(2, 0, 3), (4, 2)], axis=1)[1] == [(2, 4, 2, 3)]
    assert _rule("take", [(2, 5, 3), None])[1] == [None]
    assert _rule("tile", [(2, 0)], reps=(2, 2))[1] == [(4, 0)]
    assert _rule("repeat", [(2, 0)], repeats=2, axis=0)[1] == [(4, 0)]
    assert _rule("Flatten", [(2, 0, 3)])[1] == [(2, 0)]
    assert _rule("squeeze", [(2, 0, 1)])[1] == [None]
    # pick: index has data's shape without the axis, whatever keepdims
    assert _rule("pick", [(2, 3, 4), None], axis=0, keepdims=True) == ([(2, 3, 4), (3, 4)], [(1, 3, 4)])
    # stack: every input gets the shared shape, also from the output
    assert _rule("stack", [(2, 0), (0, 3)], num_args=2, axis=1) == ([(2, 3)] * 2, [(2, 2, 3)])
    assert _rule("stack", [None, None], [(2, 2, 3)], num_args=2, axis=1)[0] == [(2, 3)] * 2
    # Sequence ops: sequence_length's shape is the batch dim
    assert _rule("SequenceMask", [(4, 3, 2), None], use_sequence_length=True, axis=1)[0] == \
        [(4, 3, 2), (4,)]
    assert _rule("SequenceLast", [(4, 3, 2), None], use_sequence_length=True)[1] == [(3, 2)]


def test_sequence_arguments():
    assert S.SequenceMask(V("x"), name="m").list_arguments() == ["x"]
    assert S.SequenceLast(V("x"), use_sequence_length=True, name="m").list_arguments() == \
        ["x", "m_sequence_length"]
    assert S.Concat(num_args=2, name="c").list_arguments() == ["c_arg0", "c_arg1"]
    assert S.take(V("x"), V("i"), name="t").list_arguments() == ["x", "i"]
    assert S.split(V("x"), num_outputs=2, name="sc").list_outputs() == ["sc_output0", "sc_output1"]


def test_dtypes():
    t = S.take(V("a"), V("i"), name="t")
    assert t.infer_type(a="float16") == ([np.float16, np.float16], [np.float16], [])
    assert t.infer_type(a="float16", i="int32") == ([np.float16, np.int32], [np.float16], [])
    oh = S.one_hot(V("i"), depth=3, dtype="int32", name="oh")
    assert oh.infer_type(i="float32") == ([np.float32], [np.int32], [])
    sm = S.SequenceMask(V("x"), V("l"), use_sequence_length=True, name="m")
    assert sm.infer_type(x="float16", l="int32") == ([np.float16, np.int32], [np.float16], [])


def test_float64_propagates():
    t = S.take(V("a"), V("i"), name="t")
    assert t.infer_type(a="float64") == ([np.float64, np.float64], [np.float64], [])


def test_integer_indices_and_lengths():
    a = np.arange(12.0).reshape(3, 4)
    exe = S.take(V("a"), V("i"), axis=1, name="t").simple_bind(
        mx.cpu(), grad_req="null", type_dict={"a": "float32", "i": "int32"}, a=(3, 4), i=(3,))
    out = exe.forward(a=a, i=np.array([-1, 2, 9]))[0].asnumpy()
    np.testing.assert_array_equal(out, a[:, [0, 2, 3]])
    exe = S.SequenceLast(V("x"), V("l"), use_sequence_length=True, name="s").simple_bind(
        mx.cpu(), grad_req="null", type_dict={"x": "float32", "l": "int32"}, x=(3, 2), l=(2,))
    np.testing.assert_array_equal(exe.forward(x=np.arange(6.0).reshape(3, 2), l=np.array([3, 1]))[0].asnumpy(),
                                  [4.0, 1.0])


def test_json_round_trip_of_none_params():
    s = S.slice(V("x"), begin=(0, None), end=(2, -1), name="sl")
    t = mx.sym.load_json(s.tojson())
    assert t.infer_shape(x=(3, 4))[1] == [(2, 3)]
    s = S.squeeze(S.reverse(S.transpose(V("x"), axes=(1, 0), name="t"), axis=(0,), name="r"), axis=(1,), name="sq")
    assert mx.sym.load_json(s.tojson()).infer_shape(x=(1, 3))[1] == [(3,)]


# ------------------------------------------------------------------------------- errors

def test_impossible_reshape_error():
    r = S.Reshape(V("data"), shape=(4, -1), name="r")
    raises_naming(lambda: r.infer_shape(data=(2, 5)), "Reshape", "'r'", "(2, 5)", "(4, -1)")
    r = S.Reshape(V("data"), shape=(2, -4, 2, 2), name="r")     # rejected by MXNet 1.9.1 too
    raises_naming(lambda: r.infer_shape(data=(2, 5)), "Reshape", "'r'", "(2, 5)", "do not divide")


def test_concat_mismatch_error():
    c = S.Concat(V("a"), V("b"), dim=1, name="cat")
    raises_naming(lambda: c.infer_shape(a=(2, 3), b=(3, 4)), "Concat", "'cat'", "(2, 3)", "(3, 4)")
    c = S.Concat(V("a"), V("b"), dim=0, name="cat")
    raises_naming(lambda: c.infer_shape(a=(2, 3), b=(3, 4, 1)), "Concat", "'cat'", "(2, 3)", "(3, 4, 1)")


def test_slicechannel_not_dividing_error():
    s = S.SliceChannel(V("data"), num_outputs=3, name="sc")
    raises_naming(lambda: s.infer_shape(data=(2, 4, 3)), "SliceChannel", "'sc'", "(2, 4, 3)", "num_outputs=3")
    s = S.SliceChannel(V("data"), num_outputs=2, squeeze_axis=True, name="sc")
    raises_naming(lambda: s.infer_shape(data=(2, 4, 3)), "SliceChannel", "'sc'", "(2, 4, 3)", "squeeze_axis")


def test_slice_axis_out_of_range_error():
    for kw in [dict(axis=1, begin=0, end=9), dict(axis=1, begin=3, end=1), dict(axis=1, begin=-9, end=2),
               dict(axis=1, begin=2, end=2)]:
        s = S.slice_axis(V("data"), name="sl", **kw)
        raises_naming(lambda: s.infer_shape(data=(2, 5, 3)), "slice_axis", "'sl'", "(2, 5, 3)")
    s = S.slice_axis(V("data"), axis=3, begin=0, end=1, name="sl")
    raises_naming(lambda: s.infer_shape(data=(2, 5, 3)), "slice_axis", "'sl'", "axis", "(2, 5, 3)")


@pytest.mark.parametrize("build, shapes, needle", [
    (lambda: S.slice(V("x"), begin=(0, 9), end=(1, 10), name="n"), {"x": (2, 5)}, "nothing"),
    (lambda: S.slice(V("x"), begin=(0, 0, 0), end=(1, 1, 1), name="n"), {"x": (2, 5)}, "more axes"),
    (lambda: S.tile(V("x"), reps=(0, 2), name="n"), {"x": (2, 5)}, "reps"),
    (lambda: S.repeat(V("x"), repeats=0, name="n"), {"x": (2, 5)}, "repeats"),
    (lambda: S.squeeze(V("x"), axis=(0,), name="n"), {"x": (2, 5)}, "size is not 1"),
    (lambda: S.expand_dims(V("x"), axis=3, name="n"), {"x": (2, 5)}, "axis"),
    (lambda: S.transpose(V("x"), axes=(0, 1), name="n"), {"x": (2, 5, 1)}, "permutation"),
    (lambda: S.SwapAxis(V("x"), dim2=3, name="n"), {"x": (2, 5)}, "dim2"),
    (lambda: S.stack(V("x"), V("y"), name="n"), {"x": (2, 5), "y": (2, 4)}, "stack"),
    (lambda: S.pick(V("x"), V("i"), axis=None, name="n"), {"x": (2, 5)}, "axis=None"),
    (lambda: S.SequenceMask(V("x"), axis=2, name="n"), {"x": (2, 5, 3)}, "axis"),
    (lambda: S.SequenceReverse(V("x"), axis=1, name="n"), {"x": (2, 5, 3)}, "axis"),
])
def test_other_shape_errors(build, shapes, needle):
    raises_naming(lambda: build().infer_shape(**shapes), "'n'", needle)


def test_one_hot_depth_zero_is_an_empty_result():
    # MXNet accepts depth=0 (a zero-size last axis); only a negative depth is refused.
    out = mx.nd.one_hot(mx.nd.array(np.ones((2, 3)), dtype=np.int32), depth=0, dtype=np.int32)
    assert out.shape == (2, 3, 0) and out.dtype == np.int32
    with pytest.raises(mx.base.MXNetError, match="depth"):
        mx.nd.one_hot(mx.nd.array(np.ones((2,))), depth=-1)
