"""mx.rnn's convolutional cells: ConvRNNCell, ConvLSTMCell, ConvGRUCell."""
import numpy as np
import pytest

import jbind as mx
from test_ops_conv import np_conv


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _run(cell, steps, data, weights):
    inputs = [mx.sym.Variable(f"x{t}") for t in range(steps)]
    outputs, states = cell.unroll(steps, inputs)
    group = mx.sym.Group(list(outputs) + list(states))
    args = dict(weights, **{f"x{t}": data[t] for t in range(steps)})
    exe = group.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()})
    return [o.asnumpy() for o in exe.forward()]


def _weights(rng, gates, hidden, cin, k=3):
    return {"c_i2h_weight": rng.normal(0, 0.3, (gates * hidden, cin, k, k)),
            "c_i2h_bias": rng.normal(0, 0.1, (gates * hidden,)),
            "c_h2h_weight": rng.normal(0, 0.3, (gates * hidden, hidden, k, k)),
            "c_h2h_bias": rng.normal(0, 0.1, (gates * hidden,))}


def _convs(x, h, w):
    i2h = np_conv(x, w["c_i2h_weight"], (1, 1), (1, 1), (1, 1)) + w["c_i2h_bias"][None, :, None, None]
    h2h = np_conv(h, w["c_h2h_weight"], (1, 1), (1, 1), (1, 1)) + w["c_h2h_bias"][None, :, None, None]
    return i2h, h2h


@pytest.mark.parametrize("kind", ["rnn", "lstm", "gru"])
def test_conv_cells_match_a_numpy_reference(kind):
    rng = np.random.default_rng(0)
    hidden, shape = 2, (1, 3, 5, 4)
    cls, gates = {"rnn": (mx.rnn.ConvRNNCell, 1), "lstm": (mx.rnn.ConvLSTMCell, 4),
                  "gru": (mx.rnn.ConvGRUCell, 3)}[kind]
    cell = cls(input_shape=shape, num_hidden=hidden, activation="tanh", prefix="c_")
    w = _weights(rng, gates, hidden, shape[1])
    data = rng.normal(size=(2,) + shape)
    got = _run(cell, 2, data, w)
    h = np.zeros((1, hidden, 5, 4))
    c = np.zeros_like(h)
    for t in range(2):
        i2h, h2h = _convs(data[t], h, w)
        if kind == "rnn":
            h = np.tanh(i2h + h2h)
        elif kind == "lstm":
            g = np.split(i2h + h2h, 4, axis=1)
            c = _sigmoid(g[1]) * c + _sigmoid(g[0]) * np.tanh(g[2])
            h = _sigmoid(g[3]) * np.tanh(c)
        else:
            (ir, iz, i_n), (hr, hz, h_n) = np.split(i2h, 3, axis=1), np.split(h2h, 3, axis=1)
            r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
            h = (1 - z) * np.tanh(i_n + r * h_n) + z * h
    np.testing.assert_allclose(got[1], h, rtol=1e-4, atol=1e-5)
    if kind == "lstm":
        np.testing.assert_allclose(got[-1], c, rtol=1e-4, atol=1e-5)


def test_conv_cell_names_states_and_strided_input():
    cell = mx.rnn.ConvLSTMCell(input_shape=(1, 3, 8, 6), num_hidden=4, i2h_kernel=(3, 3), i2h_stride=(2, 2),
                               i2h_pad=(1, 1))
    assert [s["shape"] for s in cell.state_info] == [(0, 4, 4, 3)] * 2
    assert cell.state_info[0]["__layout__"] == "NCHW"
    out, states = cell(mx.sym.Variable("x"), cell.begin_state())
    assert out.name == "ConvLSTM_t0_out"
    assert sorted(cell.params._params) == ["ConvLSTM_h2h_bias", "ConvLSTM_h2h_weight", "ConvLSTM_i2h_bias",
                                           "ConvLSTM_i2h_weight"]
    assert out.infer_shape(x=(5, 3, 8, 6))[1] == [(5, 4, 4, 3)]
    assert mx.rnn.ConvGRUCell((1, 2, 4, 4), 3).params._params["ConvGRU_i2h_bias"].attr("__init__") == "zeros"
    with pytest.raises(mx.rnn.RNNError, match="odd"):
        mx.rnn.ConvRNNCell((1, 2, 4, 4), 3, h2h_kernel=(2, 3))
