"""gluon.rnn's fused layers: MXNet's parameter names and file names, deferred input size,
a numpy reference for one LSTM layer, and export -> load_checkpoint through
`_rnn_param_concat`."""
import numpy as np
import pytest

import jbind as mx
from jbind import gluon
from jbind.gluon import rnn


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _x(*shape, seed=0):
    return mx.nd.array(np.random.default_rng(seed).standard_normal(shape))


def test_parameter_names_shapes_and_saved_names(tmp_path):
    layer = rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=3, prefix="lstm_")
    shapes = {k: p.shape for k, p in layer.collect_params().items()}
    assert shapes["lstm_l0_i2h_weight"] == (16, 3) and shapes["lstm_r1_i2h_weight"] == (16, 8)
    assert shapes["lstm_l1_h2h_weight"] == (16, 4) and shapes["lstm_r0_h2h_bias"] == (16,)
    assert len(shapes) == 16
    layer.initialize()
    f = str(tmp_path / "l.params")
    layer.save_parameters(f)
    assert "_unfused.1.r_cell.i2h_weight" in mx.nd.load(f)
    again = rnn.LSTM(4, num_layers=2, bidirectional=True, input_size=3)
    again.load_parameters(f)
    x = _x(5, 2, 3)
    np.testing.assert_allclose(again(x).asnumpy(), layer(x).asnumpy(), rtol=1e-6)
    gru = rnn.GRU(3)
    assert sorted(gru.collect_params())[0].endswith("l0_h2h_bias") and gru.l0_i2h_weight.shape == (9, 0)


def test_lstm_matches_numpy_and_returns_states_when_given():
    layer = rnn.LSTM(3, layout="NTC")
    layer.initialize(mx.init.Uniform(0.5))
    x = _x(2, 4, 5)
    out = layer(x).asnumpy()
    assert out.shape == (2, 4, 3) and layer.l0_i2h_weight.shape == (12, 5)
    wi, wh = layer.l0_i2h_weight.data().asnumpy(), layer.l0_h2h_weight.data().asnumpy()
    b = layer.l0_i2h_bias.data().asnumpy() + layer.l0_h2h_bias.data().asnumpy()
    h, c = np.zeros((2, 3)), np.zeros((2, 3))
    for t in range(4):
        g = x.asnumpy()[:, t] @ wi.T + h @ wh.T + b
        i, f, gg, o = _sigmoid(g[:, :3]), _sigmoid(g[:, 3:6]), np.tanh(g[:, 6:9]), _sigmoid(g[:, 9:])
        c = f * c + i * gg
        h = o * np.tanh(c)
        np.testing.assert_allclose(out[:, t], h, rtol=1e-4, atol=1e-5)
    states = layer.begin_state(2)
    assert [s.shape for s in states] == [(1, 2, 3), (1, 2, 3)]
    out2, (h2, c2) = layer(x, states)
    np.testing.assert_allclose(h2.asnumpy()[0], h, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="Invalid recurrent state shape"):
        layer(x, [mx.nd.zeros((1, 3, 3)), mx.nd.zeros((1, 3, 3))])


@pytest.mark.parametrize("make", [lambda: rnn.RNN(4, activation="tanh"), lambda: rnn.GRU(4, num_layers=2)])
def test_hybridized_matches_imperative(make):
    layer = make()
    layer.initialize()
    x = _x(3, 2, 5)
    ref = layer(x).asnumpy()
    layer.hybridize()
    np.testing.assert_allclose(layer(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_exported_lstm_loads_through_rnn_param_concat(tmp_path):
    net = gluon.nn.HybridSequential(prefix="lm_")
    with net.name_scope():
        net.add(gluon.nn.Embedding(10, 4), rnn.LSTM(6, num_layers=2, layout="NTC"), gluon.nn.Dense(10, flatten=False))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    tokens = mx.nd.array([[1, 2, 3], [4, 5, 9]])
    y = net(tokens).asnumpy()
    prefix = str(tmp_path / "lm")
    net.export(prefix)
    sym, args, aux = mx.model.load_checkpoint(prefix, 0)
    assert "_rnn_param_concat" in sym.tojson()
    mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (2, 3))], for_training=False)
    mod.set_params(args, aux)
    mod.forward(mx.io.DataBatch([tokens]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), y, rtol=1e-5, atol=1e-6)
    block = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    np.testing.assert_allclose(block(tokens).asnumpy(), y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [lambda: mx.gluon.rnn.GRU(3, num_layers=2, bidirectional=True),
                                  lambda: mx.gluon.rnn.RNN(3, num_layers=2, activation="tanh", dropout=0.5)])
def test_unfuse_gives_cells_that_share_the_layer_parameters(make):
    layer = make()
    cells = layer._unfuse()
    layer.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(np.random.RandomState(1).randn(4, 2, 5))
    fused = layer(x)  # outside autograd.record, dropout is off in both
    unrolled = cells.unroll(4, x, layout="TNC", merge_outputs=True)[0]
    np.testing.assert_allclose(unrolled.asnumpy(), fused.asnumpy(), rtol=1e-5, atol=1e-6)
    shared = cells.collect_params()
    assert set(shared.keys()) == set(layer.collect_params().keys())
    assert all(shared[k] is layer.collect_params()[k] for k in shared.keys())


def _lstmp_reference(x, params, layers, dirs, h, p):
    """numpy: a projected LSTM layer stack, time-major, zero begin states."""
    for layer in range(layers):
        outs = []
        for d, tag in enumerate("lr"[:dirs]):
            w = {k: params[f"{tag}{layer}_{k}"] for k in ("i2h_weight", "h2h_weight", "h2r_weight",
                                                         "i2h_bias", "h2h_bias")}
            r, c = np.zeros((x.shape[1], p)), np.zeros((x.shape[1], h))
            steps = range(x.shape[0]) if d == 0 else reversed(range(x.shape[0]))
            ys = [None] * x.shape[0]
            for t in steps:
                g = x[t] @ w["i2h_weight"].T + w["i2h_bias"] + r @ w["h2h_weight"].T + w["h2h_bias"]
                i, f, n, o = np.split(g, 4, axis=1)
                c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(n)
                r = (_sigmoid(o) * np.tanh(c)) @ w["h2r_weight"].T
                ys[t] = r
            outs.append(np.stack(ys))
        x = np.concatenate(outs, axis=-1)
    return x


@pytest.mark.parametrize("layers, bidirectional", [(1, False), (2, True)])
def test_lstm_projection_matches_numpy_and_trains(layers, bidirectional):
    h, p = 6, 3
    layer = rnn.LSTM(h, num_layers=layers, bidirectional=bidirectional, projection_size=p, prefix="lp_")
    layer.initialize(mx.init.Uniform(0.4))
    x = _x(4, 2, 5)
    with mx.autograd.record():
        out = layer(x)
    assert out.shape == (4, 2, (2 if bidirectional else 1) * p)
    params = {k[len("lp_"):]: v.data().asnumpy().astype(np.float64) for k, v in layer.collect_params().items()}
    assert params["l0_h2h_weight"].shape == (4 * h, p) and params["l0_h2r_weight"].shape == (p, h)
    want = _lstmp_reference(x.asnumpy().astype(np.float64), params, layers, 2 if bidirectional else 1, h, p)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-4, atol=1e-5)
    out.backward()
    assert np.abs(layer.l0_h2r_weight.grad().asnumpy()).sum() > 0
    states = layer.begin_state(2)
    assert [s.shape for s in states] == [(layers * (2 if bidirectional else 1), 2, p),
                                         (layers * (2 if bidirectional else 1), 2, h)]


def test_rnn_op_projection_needs_lstm_and_a_smaller_width():
    data, params, state = mx.sym.Variable("d"), mx.sym.Variable("p"), mx.sym.Variable("s")
    with pytest.raises(mx.base.MXNetError, match="projection_size"):
        mx.sym.RNN(data, params, state, state_size=4, num_layers=1, mode="gru", projection_size=2)
    with pytest.raises(mx.base.MXNetError, match="projection_size"):
        mx.sym.RNN(data, params, state, mx.sym.Variable("c"), state_size=4, num_layers=1, mode="lstm",
                   projection_size=5)
