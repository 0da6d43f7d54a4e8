"""gluon.rnn cells: the same numbers as the fused layers, MXNet's node and parameter
names when unrolled symbolically, valid_length, containers and modifiers."""
import numpy as np
import pytest

import jbind as mx
from jbind.gluon import rnn


def _x(*shape, seed=0):
    return mx.nd.array(np.random.default_rng(seed).standard_normal(shape))


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn_tanh"])
def test_unrolled_cell_matches_the_fused_layer(kind):
    layer = {"lstm": rnn.LSTM, "gru": rnn.GRU, "rnn_tanh": lambda h, **k: rnn.RNN(h, activation="tanh", **k)}[kind](
        4, layout="NTC", input_size=3)
    cell = {"lstm": rnn.LSTMCell, "gru": rnn.GRUCell, "rnn_tanh": rnn.RNNCell}[kind](4, input_size=3)
    layer.initialize(mx.init.Uniform(0.5))
    cell.initialize()
    for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
        getattr(cell, name).set_data(getattr(layer, "l0_" + name).data())
    x = _x(2, 5, 3)
    out, states = cell.unroll(5, x, layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy(), layer(x).asnumpy(), rtol=1e-4, atol=1e-5)
    assert states[0].shape == (2, 4)


def test_symbolic_unroll_names_nodes_by_step():
    cell = rnn.LSTMCell(4, prefix="lstm_")
    out, states = cell.unroll(3, mx.sym.var("data"), layout="TNC", merge_outputs=False)
    assert len(out) == 3 and out[2].name == "lstm_t2_out"
    assert out[0].list_arguments() == ["data", "lstm_i2h_weight", "lstm_i2h_bias", "lstm_h2h_weight",
                                       "lstm_h2h_bias"]
    internals = states[1].get_internals().list_outputs()
    assert "lstm_t2_state_output" in internals and "lstm_t0_slice_output0" in internals
    _, shapes, _ = mx.sym.Group(out).infer_shape(data=(3, 2, 5))
    assert shapes == [(2, 4)] * 3


def test_valid_length_masks_outputs_and_picks_last_states():
    cell = rnn.GRUCell(3, input_size=2)
    cell.initialize()
    x = _x(2, 4, 2)
    out, (h,) = cell.unroll(4, x, merge_outputs=True, valid_length=mx.nd.array([2, 4]))
    full, _ = cell.unroll(4, x, merge_outputs=True)
    o, f = out.asnumpy(), full.asnumpy()
    np.testing.assert_array_equal(o[0, 2:], 0)
    np.testing.assert_allclose(o[0, :2], f[0, :2], rtol=1e-6)
    np.testing.assert_allclose(h.asnumpy(), [f[0, 1], f[1, 3]], rtol=1e-6)


def test_sequential_bidirectional_residual_and_dropout_cells():
    x = _x(2, 5, 3)
    seq = rnn.HybridSequentialRNNCell()
    with seq.name_scope():
        seq.add(rnn.LSTMCell(3, input_size=3))
        seq.add(rnn.DropoutCell(0.5))
        seq.add(rnn.ResidualCell(rnn.GRUCell(3, input_size=3)))
    seq.initialize()
    assert len(seq.state_info(2)) == 3 and len(seq) == 3
    out, states = seq.unroll(5, x, merge_outputs=True)
    assert out.shape == (2, 5, 3) and [s.shape for s in states] == [(2, 3)] * 3
    step_out, _ = seq(x[:, 0], seq.begin_state(batch_size=2, func=mx.nd.zeros))
    np.testing.assert_allclose(step_out.asnumpy(), out.asnumpy()[:, 0], rtol=1e-5, atol=1e-6)
    seq.hybridize()
    hyb_out, _ = seq(x[:, 0], seq.begin_state(batch_size=2, func=mx.nd.zeros))
    np.testing.assert_allclose(hyb_out.asnumpy(), step_out.asnumpy(), rtol=1e-5, atol=1e-6)
    bi = rnn.BidirectionalCell(rnn.LSTMCell(2, prefix="l_"), rnn.LSTMCell(2, prefix="r_"))
    bi.initialize()
    out, states = bi.unroll(5, x, merge_outputs=True)
    assert out.shape == (2, 5, 4) and len(states) == 4
    rev, _ = bi._children["r_cell"].unroll(5, mx.nd.array(x.asnumpy()[:, ::-1]), merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy()[:, :, 2:], rev.asnumpy()[:, ::-1], rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError):
        bi(x[:, 0], bi.begin_state(batch_size=2))


def test_modifier_cells_guard_their_base():
    base = rnn.RNNCell(3)
    z = rnn.ZoneoutCell(base, zoneout_outputs=0.5)
    assert z.prefix == base.prefix + "zoneout" and z.params is base.params
    with pytest.raises(AssertionError, match="modifier"):
        base.begin_state(batch_size=2)
    with pytest.raises(AssertionError, match="already modified"):
        rnn.ResidualCell(base)
    z.initialize()
    out, _ = z.unroll(3, _x(2, 3, 4), merge_outputs=True)  # outside training zoneout keeps the new values
    assert out.shape == (2, 3, 3)


def test_hybridized_bidirectional_unroll_with_valid_length_matches_imperative():
    class Bi(mx.gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.bi = mx.gluon.rnn.BidirectionalCell(mx.gluon.rnn.GRUCell(4, prefix="l_"),
                                                         mx.gluon.rnn.GRUCell(4, prefix="r_"))

        def hybrid_forward(self, F, x, valid):
            return self.bi.unroll(3, x, valid_length=valid, layout="NTC", merge_outputs=True)[0]

    net = Bi()
    net.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(np.random.RandomState(0).randn(2, 3, 5))
    valid = mx.nd.array([3, 2])
    want = net(x, valid).asnumpy()
    net.hybridize()
    got = net(x, valid).asnumpy()
    assert got.shape == (2, 3, 8)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert (got[1, 2] == 0).all()  # past the second sequence's length
