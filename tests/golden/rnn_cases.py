"""RNN and data-iterator golden cases shared by MXNet (make_rnn_golden.py) and jbind (tests).

Every builder takes the library module ``mx``, so the same code runs on real MXNet
1.9.1 and on jbind. Imports nothing but numpy and the standard library.
"""
import random

import numpy as np


def _var(mx, name="data"):
    return mx.sym.Variable(name)


def _unroll(cell, mx, length=3, layout="NTC", merge=None, inputs=None, **kw):
    inputs = _var(mx) if inputs is None else inputs
    return cell.unroll(length, inputs, layout=layout, merge_outputs=merge, **kw)


def _step_manual(mx):
    cell = mx.rnn.LSTMCell(2, prefix="s_")
    states = cell.begin_state()
    o1, states = cell(_var(mx, "x0"), states)
    o2, states = cell(_var(mx, "x1"), states)
    more = cell.begin_state()  # begin_state_2, _3
    return [o1, o2], states + more


def _begin_state_var(mx):
    cell = mx.rnn.LSTMCell(2, prefix="v_")
    begin = cell.begin_state(func=mx.sym.Variable)
    return _unroll(cell, mx, merge=True, begin_state=begin)


def _shared(mx):
    params = mx.rnn.RNNParams("shared_")
    a = mx.rnn.RNNCell(3, prefix="a_", params=params)
    b = mx.rnn.RNNCell(3, prefix="b_", params=params)
    out, s1 = _unroll(a, mx, length=2, merge=False)
    out, s2 = b.unroll(2, out, merge_outputs=True)
    return out, s1 + s2


def _stack(mx):
    cell = mx.rnn.SequentialRNNCell()
    cell.add(mx.rnn.LSTMCell(3, prefix="l0_"))
    cell.add(mx.rnn.DropoutCell(0.3, prefix="d0_"))
    cell.add(mx.rnn.GRUCell(3, prefix="l1_"))
    cell.add(mx.rnn.RNNCell(3, prefix="l2_"))
    return _unroll(cell, mx, merge=True)


def _stack_stepped(mx):
    cell = mx.rnn.SequentialRNNCell()
    cell.add(mx.rnn.GRUCell(3, prefix="g0_"))
    cell.add(mx.rnn.ResidualCell(mx.rnn.LSTMCell(3, prefix="g1_")))
    return _unroll(cell, mx, merge=False, layout="TNC")


def _fused(mx, layout, merge, **kw):
    cell = mx.rnn.FusedRNNCell(3, **kw)
    return _unroll(cell, mx, layout=layout, merge=merge)


def _unfused(mx):
    cell = mx.rnn.FusedRNNCell(3, num_layers=2, mode="lstm", bidirectional=True, dropout=0.2, prefix="u_")
    return _unroll(cell.unfuse(), mx, layout="TNC", merge=True)


def _bidir(mx, merge, layout, left, right, **kw):
    return _unroll(mx.rnn.BidirectionalCell(left, right, **kw), mx, layout=layout, merge=merge)


D234, D324 = {"data": (2, 3, 4)}, {"data": (3, 2, 4)}

# name -> (builder(mx) -> (outputs, states), {input: shape})
GRAPHS = {
    "rnn_tanh_ntc": (lambda mx: _unroll(mx.rnn.RNNCell(3, prefix="rnn_"), mx, merge=True), D234),
    "rnn_relu_list": (lambda mx: _unroll(mx.rnn.RNNCell(3, activation="relu", prefix="r_"), mx,
                                         inputs=[_var(mx, "x%d" % i) for i in range(3)]),
                      {"x0": (2, 4), "x1": (2, 4), "x2": (2, 4)}),
    "lstm_tnc_unmerged": (lambda mx: _unroll(mx.rnn.LSTMCell(4, prefix="lstm_l0_", forget_bias=0.5), mx,
                                             layout="TNC", merge=False), {"data": (3, 2, 5)}),
    "lstm_default": (lambda mx: _unroll(mx.rnn.LSTMCell(4), mx, length=2), {"data": (2, 2, 5)}),
    "gru_ntc_merged": (lambda mx: _unroll(mx.rnn.GRUCell(3), mx, merge=True), D234),
    "stack": (_stack, D234),
    "stack_residual_tnc": (_stack_stepped, {"data": (3, 2, 3)}),
    "bidir_merged_tnc": (lambda mx: _bidir(mx, True, "TNC", mx.rnn.LSTMCell(3, prefix="bl_"),
                                           mx.rnn.GRUCell(3, prefix="br_"), output_prefix="bi_"), D324),
    "bidir_unmerged": (lambda mx: _bidir(mx, False, "NTC", mx.rnn.RNNCell(3, prefix="bl_"),
                                         mx.rnn.RNNCell(3, prefix="br_")), D234),
    "residual_merged": (lambda mx: _unroll(mx.rnn.ResidualCell(mx.rnn.GRUCell(4, prefix="res_")), mx,
                                           merge=True), D234),
    "residual_unmerged": (lambda mx: _unroll(mx.rnn.ResidualCell(mx.rnn.GRUCell(4, prefix="res_")), mx,
                                             merge=False), D234),
    "zoneout": (lambda mx: _unroll(mx.rnn.ZoneoutCell(mx.rnn.RNNCell(3, prefix="z_"), 0.3, 0.4), mx,
                                   merge=False), D234),
    "fused_lstm_bi2_tnc": (lambda mx: _fused(mx, "TNC", True, num_layers=2, mode="lstm", bidirectional=True,
                                             get_next_state=True, prefix="f_"), D324),
    "fused_gru_tnc_unmerged": (lambda mx: _fused(mx, "TNC", False, mode="gru", get_next_state=True), D324),
    "fused_rnn_tanh_ntc": (lambda mx: _fused(mx, "NTC", None, mode="rnn_tanh", num_layers=2), D234),
    "unfused_lstm_bi2": (_unfused, D324),
    "step_manual": (_step_manual, {"x0": (2, 3), "x1": (2, 3)}),
    "begin_state_var": (_begin_state_var, D234),
    "shared_params": (_shared, {"data": (2, 2, 3)}),
}

# (mode, num_layers, bidirectional) for the RNN operator against MXNet's own kernel
RNN_OPS = [("lstm", 1, False), ("gru", 1, False), ("rnn_tanh", 1, False), ("rnn_relu", 1, False),
           ("lstm", 2, True), ("gru", 2, True), ("rnn_tanh", 2, True)]
RNN_T, RNN_N, RNN_I, RNN_H = 3, 2, 3, 2


def rnn_op_symbol(mx, mode, layers, bidir):
    return mx.sym.RNN(mx.sym.Variable("data"), state_size=RNN_H, num_layers=layers, mode=mode,
                      bidirectional=bidir, state_outputs=True, name="rnn")


def sentences():
    """60 encoded sentences of 1..12 tokens (values 1..20), fixed."""
    rng = np.random.RandomState(7)
    return [[int(t) for t in rng.randint(1, 21, size=int(rng.randint(1, 13)))] for _ in range(60)]


WORDS = [["the", "cat", "sat"], ["a", "dog", "ran", "far"], ["the", "dog", "sat"], ["new", "cat"]]

# name -> BucketSentenceIter keyword arguments (sentences from `sentences()`)
BUCKET_ITERS = {
    "auto_nt": {"batch_size": 4},
    "explicit_tn_discard": {"batch_size": 3, "buckets": [4, 8, 10], "invalid_label": 0, "layout": "TN"},
    "unsorted_names_int": {"batch_size": 5, "buckets": [12, 6, 3], "data_name": "src", "label_name": "tgt",
                           "dtype": "int32"},
}

# name -> NDArrayIter keyword arguments, over data arange(rows * 2).reshape(rows, 2), label arange(rows)
ND_ITERS = {
    "pad": {"rows": 10, "batch_size": 3, "last_batch_handle": "pad"},
    "pad_tile": {"rows": 3, "batch_size": 8, "last_batch_handle": "pad"},
    "discard": {"rows": 10, "batch_size": 4, "last_batch_handle": "discard"},
    "roll_over": {"rows": 10, "batch_size": 4, "last_batch_handle": "roll_over"},
    "roll_over_shuffle": {"rows": 10, "batch_size": 3, "last_batch_handle": "roll_over", "shuffle": True},
    "pad_shuffle": {"rows": 7, "batch_size": 3, "last_batch_handle": "pad", "shuffle": True},
}


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)


def nd_iter(mx, rows, **kw):
    data = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
    return mx.io.NDArrayIter(data, np.arange(rows, dtype=np.float32), **kw)


def record_batches(it, epochs=3):
    """[[{data, label, pad, bucket_key, shapes}] per epoch], resetting between epochs."""
    out = []
    for e in range(epochs):
        if e:
            it.reset()
        out.append([{"data": [d.asnumpy().tolist() for d in b.data],
                     "label": [lb.asnumpy().tolist() for lb in (b.label or [])],
                     "dtype": [np.dtype(d.dtype).name for d in b.data],
                     "pad": b.pad, "bucket_key": b.bucket_key,
                     "provide_data": None if b.provide_data is None else
                     [[x.name, list(x.shape), x.layout] for x in b.provide_data]} for b in it])
    return out


def describe(descs):
    return [[d.name, list(d.shape), np.dtype(d.dtype).name, d.layout] for d in descs]
