"""gluon.contrib.rnn: convolutional cells, LSTMPCell and VariationalDropoutCell against
numpy references, parameter names and shapes, deferred channel counts."""
import numpy as np
import pytest

import jbind as mx
from jbind.gluon.contrib import rnn as crnn


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _conv1d(x, w, b, pad):
    """x (N, C, W), w (O, C, K) -> (N, O, W + 2 pad - K + 1): cross-correlation, as Convolution."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    k = w.shape[2]
    cols = np.stack([x[:, :, i:i + k] for i in range(x.shape[2] - k + 1)], axis=2)  # N C W' K
    return np.einsum("ncwk,ock->now", cols, w) + b[None, :, None]


def _params(cell):
    return {k[len(cell.prefix):]: v.data().asnumpy() for k, v in cell.collect_params().items()}


def test_conv1d_rnn_cell_step_matches_numpy():
    cell = crnn.Conv1DRNNCell((2, 9), 4, i2h_kernel=3, h2h_kernel=3, prefix="c_")
    cell.initialize(mx.init.Uniform(0.3))
    x = np.random.RandomState(0).randn(3, 2, 9).astype(np.float32)
    h0 = np.random.RandomState(1).randn(3, 4, 7).astype(np.float32)
    out, states = cell(mx.nd.array(x), [mx.nd.array(h0)])
    p = _params(cell)
    want = np.tanh(_conv1d(x, p["i2h_weight"], p["i2h_bias"], 0) + _conv1d(h0, p["h2h_weight"], p["h2h_bias"], 1))
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-4, atol=1e-5)
    assert sorted(p) == ["h2h_bias", "h2h_weight", "i2h_bias", "i2h_weight"]
    assert p["i2h_weight"].shape == (4, 2, 3) and p["h2h_weight"].shape == (4, 4, 3)
    assert cell.state_info(3) == [{"shape": (3, 4, 7), "__layout__": "NCW"}]


@pytest.mark.parametrize("cls, dims, n_states", [(crnn.Conv2DLSTMCell, 2, 2), (crnn.Conv3DGRUCell, 3, 1),
                                                 (crnn.Conv1DLSTMCell, 1, 2)])
def test_conv_cells_unroll_shapes_and_infer_input_channels(cls, dims, n_states):
    space = (6, 5, 4)[:dims]
    cell = cls((0,) + space, 3, i2h_kernel=3, h2h_kernel=(1,) * dims, i2h_pad=1, prefix="c_")
    cell.initialize()
    cell.hybridize()
    x = mx.nd.ones((2, 4, 2) + space)  # (N, T, C, spatial...)
    outs, states = cell.unroll(4, x, merge_outputs=True)
    assert outs.shape == (2, 4, 3) + space
    assert len(states) == n_states and all(s.shape == (2, 3) + space for s in states)
    assert cell.i2h_weight.shape[1] == 2
    # symbolically: the outputs are named after the step
    syms, _ = cls((2,) + space, 3, 3, 3, prefix="s_").unroll(2, [mx.sym.Variable(f"x{t}") for t in range(2)])
    assert mx.sym.Group(syms).list_outputs() == ["s_t0_out_output", "s_t1_out_output"]


def test_conv_cell_even_h2h_kernel_is_refused():
    with pytest.raises(mx.base.MXNetError, match="odd"):
        crnn.Conv2DRNNCell((1, 4, 4), 2, 3, (2, 3))


def test_lstmp_cell_matches_numpy():
    cell = crnn.LSTMPCell(5, 2, prefix="p_")
    cell.initialize(mx.init.Uniform(0.5))
    rng = np.random.RandomState(0)
    x, r, c = (rng.randn(3, 4).astype(np.float32), rng.randn(3, 2).astype(np.float32),
               rng.randn(3, 5).astype(np.float32))
    out, (r1, c1) = cell(mx.nd.array(x), [mx.nd.array(r), mx.nd.array(c)])
    p = _params(cell)
    g = x @ p["i2h_weight"].T + p["i2h_bias"] + r @ p["h2h_weight"].T + p["h2h_bias"]
    i, f, t, o = np.split(g, 4, axis=1)
    want_c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(t)
    want_r = (_sigmoid(o) * np.tanh(want_c)) @ p["h2r_weight"].T
    np.testing.assert_allclose(c1.asnumpy(), want_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.asnumpy(), want_r, rtol=1e-5, atol=1e-6)
    assert r1 is out or np.array_equal(r1.asnumpy(), out.asnumpy())
    assert sorted(p) == ["h2h_bias", "h2h_weight", "h2r_weight", "i2h_bias", "i2h_weight"]
    assert repr(cell) == "LSTMPCell(4 -> 20 -> 2)"


@pytest.mark.parametrize("drop_states", [0.0, 0.5])
def test_variational_dropout_reuses_one_mask_over_the_sequence(drop_states):
    base = mx.gluon.rnn.RNNCell(6, prefix="r_", activation="relu")
    cell = crnn.VariationalDropoutCell(base, drop_outputs=0.5, drop_states=drop_states)
    cell.initialize(mx.init.One())
    x = mx.nd.ones((4, 5, 3))
    with mx.autograd.record():
        outs, _ = cell.unroll(5, x, merge_outputs=True)
    zero = outs.asnumpy() == 0
    assert zero.any() and not zero.all()
    assert (zero == zero[:, :1, :]).all()  # the same units are dropped at every step
    inference, _ = cell.unroll(5, x, merge_outputs=True)  # no dropout outside training
    assert (inference.asnumpy() > 0).all()
