"""The written-out backward of the RNN op's LSTM and GRU layers (ops/_recurrent.py):
against JAX's own transpose of the step loop (which the op still uses where an LSTM clips
its cell state), and against the unfused cells unrolled as ordinary ops."""
import numpy as np
import pytest

import jbind as mx
from jbind.ops import rnn_op


def _run(clip, layers, bidir, seed=0, t=9, n=3, i=5, h=4, p=0.0):
    """Outputs and gradients of an RNN lstm op; `clip` far outside the values reached takes
    the autodiff path with the same numbers."""
    d = 2 if bidir else 1
    rng = np.random.default_rng(seed)
    size = rnn_op.param_size("lstm", layers, bidir, i, h, None)
    vals = {"data": rng.standard_normal((t, n, i)), "params": rng.standard_normal(size) * 0.3,
            "h0": rng.standard_normal((d * layers, n, h)), "c0": rng.standard_normal((d * layers, n, h))}
    arrs = {k: mx.nd.array(v) for k, v in vals.items()}
    for a in arrs.values():
        a.attach_grad()
    extra = {"lstm_state_clip_min": -1e30, "lstm_state_clip_max": 1e30} if clip else {}
    with mx.autograd.record():
        out, hn, cn = mx.nd.RNN(arrs["data"], arrs["params"], arrs["h0"], arrs["c0"], state_size=h,
                                num_layers=layers, bidirectional=bidir, mode="lstm", state_outputs=True,
                                p=p, **extra)
        w = [mx.nd.array(rng.standard_normal(x.shape)) for x in (out, hn, cn)]
        total = (out * w[0]).sum() + (hn * w[1]).sum() + (cn * w[2]).sum()
    total.backward()
    return [x.asnumpy() for x in (out, hn, cn)] + [arrs[k].grad.asnumpy() for k in ("data", "params", "h0", "c0")]


@pytest.mark.parametrize("layers,bidir", [(1, False), (2, False), (2, True)])
def test_written_out_backward_matches_autodiff(layers, bidir):
    fast, slow = _run(False, layers, bidir), _run(True, layers, bidir)
    for name, a, b in zip(["out", "h_n", "c_n", "d data", "d params", "d h0", "d c0"], fast, slow):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=name)


def test_written_out_path_is_taken_only_without_clip_or_projection():
    op = rnn_op.RNN(state_size=4, num_layers=1, mode="lstm")
    assert op._written_out(None)
    assert rnn_op.RNN(state_size=4, num_layers=1, mode="gru")._written_out(None)
    assert not rnn_op.RNN(state_size=4, num_layers=1, mode="rnn_tanh")._written_out(None)
    assert not rnn_op.RNN(state_size=4, num_layers=1, mode="lstm", lstm_state_clip_min=-1.0,
                          lstm_state_clip_max=1.0)._written_out(None)
    assert not op._written_out(np.zeros((2, 4)))  # a projection weight


def test_gluon_lstm_trains_the_same_with_inter_layer_dropout():
    """Dropout between layers draws the same mask on both paths (same key, same layer)."""
    mx.random.seed(3)
    fast = _run(False, 2, False, p=0.5)
    mx.random.seed(3)
    slow = _run(True, 2, False, p=0.5)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _grads_of(outputs, shapes, values, heads):
    exe = mx.sym.Group(outputs).simple_bind(mx.cpu(), grad_req="write", **shapes)
    for k, v in values.items():
        exe.arg_dict[k][:] = v
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    exe.backward([mx.nd.array(h) for h in heads])
    return outs, {k: g.asnumpy() for k, g in exe.grad_dict.items()}


@pytest.mark.parametrize("mode,layers,bidir", [("lstm", 1, False), ("gru", 1, False), ("gru", 2, True),
                                               ("lstm", 2, True)])
def test_fused_gradients_equal_the_unfused_cells(mode, layers, bidir):
    t, n, i, h = 9, 3, 4, 5
    fused = mx.rnn.FusedRNNCell(h, num_layers=layers, mode=mode, bidirectional=bidir, prefix="f_")
    out, _ = fused.unroll(t, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    shapes = {"data": (t, n, i)}
    (size,) = out.infer_shape(**shapes)[0][1]
    rng = np.random.default_rng(5)
    data = rng.uniform(-1, 1, (t, n, i))
    flat = rng.uniform(-0.5, 0.5, size)
    head = rng.standard_normal((t, n, (2 if bidir else 1) * h))
    (got,), g_fused = _grads_of([out], shapes, {"data": data, "f_parameters": flat}, [head])

    stack = fused.unfuse()
    uout, _ = stack.unroll(t, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    unfused_args = stack.pack_weights(fused.unpack_weights({"f_parameters": mx.nd.array(flat)}))
    (want,), g_unfused = _grads_of([uout], shapes, {"data": data, **unfused_args}, [head])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g_fused["data"], g_unfused["data"], rtol=1e-4, atol=1e-5)
    per_gate = stack.unpack_weights({k: mx.nd.array(v) for k, v in g_unfused.items() if k != "data"})
    np.testing.assert_allclose(g_fused["f_parameters"], fused.pack_weights(per_gate)["f_parameters"].asnumpy(),
                               rtol=1e-4, atol=1e-5)
