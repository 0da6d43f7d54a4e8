"""The RNN operator and FusedRNNCell: against numpy, and against the unfused cells."""
import numpy as np
import pytest

import jbind as mx
import rnn_reference as ref
from helpers import Case, check_op


def _op_case(mode, layers=1, bidir=False, t=2, n=2, i=3, h=2):
    d = 2 if bidir else 1
    lstm = mode == "lstm"

    def build():
        return mx.sym.RNN(mx.sym.Variable("data"), state_size=h, num_layers=layers, mode=mode,
                          bidirectional=bidir, state_outputs=True, name="rnn")

    def reference(data, rnn_parameters, rnn_state, rnn_state_cell=None):
        return ref.fused(mode, layers, bidir, data, rnn_parameters, rnn_state, rnn_state_cell)

    shapes = {"data": (t, n, i), "rnn_state": (d * layers, n, h)}
    if lstm:
        shapes["rnn_state_cell"] = (d * layers, n, h)
    # relu's kink breaks finite differences: keep its pre-activations away from 0
    inputs = {"data": (0.2, 1.0), "rnn_parameters": (0.05, 0.5)} if mode == "rnn_relu" else {}
    return Case(f"RNN_{mode}_{layers}{'_bi' if bidir else ''}", build, reference, shapes, inputs=inputs,
                is_train=True)


CASES = [_op_case("lstm"), _op_case("gru"), _op_case("rnn_tanh"), _op_case("rnn_relu"),
         _op_case("lstm", layers=2, bidir=True, t=2, n=1, i=2, h=2)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rnn_op_forward_and_gradient(case):
    check_op(case)


FUSED = [("lstm", 1, False), ("gru", 1, False), ("rnn_tanh", 1, False), ("rnn_relu", 2, False),
         ("lstm", 2, True), ("gru", 2, True)]


def _bind(outputs, shapes, values):
    exe = mx.sym.Group(outputs).simple_bind(mx.cpu(), grad_req="null", **shapes)
    for k, v in values.items():
        exe.arg_dict[k][:] = v
    return [o.asnumpy() for o in exe.forward()]


@pytest.mark.parametrize("mode,layers,bidir", FUSED)
def test_fused_cell_equals_unfused_cells_through_pack_and_unpack(mode, layers, bidir):
    t, n, i, h = 3, 2, 4, 3
    fused = mx.rnn.FusedRNNCell(h, num_layers=layers, mode=mode, bidirectional=bidir, get_next_state=True,
                                prefix="f_")
    out, states = fused.unroll(t, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    shapes = {"data": (t, n, i)}
    (size,) = out.infer_shape(**shapes)[0][1]
    rng = np.random.default_rng(3)
    data = rng.uniform(-1, 1, size=(t, n, i)).astype(np.float32)
    flat = rng.uniform(-0.5, 0.5, size=size).astype(np.float32)
    got = _bind([out] + states, shapes, {"data": data, "f_parameters": flat})

    stack = fused.unfuse()
    uout, ustates = stack.unroll(t, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    per_gate = fused.unpack_weights({"f_parameters": mx.nd.array(flat)})
    unfused_args = stack.pack_weights(per_gate)
    assert sorted(unfused_args) == sorted(uout.list_arguments()[1:])
    flat_states = [s for cell in ustates for s in (cell if isinstance(cell, list) else [cell])]
    want = _bind([uout] + flat_states, shapes, {"data": data, **unfused_args})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    # unfused states: per layer and direction, [h, c] for lstm; fused: (layers*dirs, N, H) per kind
    kinds = len(states)
    for k in range(kinds):
        np.testing.assert_allclose(got[1 + k], np.stack(want[1 + k::kinds]), rtol=1e-5, atol=1e-6)


def test_pack_inverts_unpack_for_numpy_and_ndarray():
    cell = mx.rnn.FusedRNNCell(3, num_layers=2, mode="gru", bidirectional=True, prefix="g_")
    size = mx.ops.rnn_op.param_size("gru", 2, True, 5, 3)
    flat = np.arange(size, dtype=np.float32)
    unpacked = cell.unpack_weights({"g_parameters": flat, "keep": 1})
    assert unpacked["g_l0_i2h_r_weight"].shape == (3, 5)
    assert unpacked["g_r1_i2h_o_weight"].shape == (3, 6)
    assert unpacked["g_r1_h2h_o_bias"].shape == (3,)
    assert unpacked["g_l0_i2h_r_weight"][0, 0] == 0 and unpacked["g_r1_h2h_o_bias"][-1] == size - 1
    repacked = cell.pack_weights(unpacked)
    assert sorted(repacked) == ["g_parameters", "keep"]
    np.testing.assert_array_equal(repacked["g_parameters"], flat)
    packed = cell.pack_weights(cell.unpack_weights({"g_parameters": mx.nd.array(flat)}))
    assert isinstance(packed["g_parameters"], mx.nd.NDArray)
    np.testing.assert_array_equal(packed["g_parameters"].asnumpy(), flat)
    with pytest.raises(AssertionError, match="Invalid parameters size"):
        cell.unpack_weights({"g_parameters": flat[:-1]})


def test_fused_ntc_warns_as_mxnet_and_matches_tnc():
    cell = mx.rnn.FusedRNNCell(2, mode="lstm", prefix="w_")
    with pytest.warns(UserWarning, match="NTC layout detected"):
        ntc, _ = cell.unroll(3, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    tnc, _ = cell.unroll(3, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    rng = np.random.default_rng(0)
    data = rng.uniform(-1, 1, size=(2, 3, 4))
    flat = rng.uniform(-1, 1, size=mx.ops.rnn_op.param_size("lstm", 1, False, 4, 2))
    a = _bind([ntc], {"data": (2, 3, 4)}, {"data": data, "w_parameters": flat})[0]
    b = _bind([tnc], {"data": (3, 2, 4)}, {"data": data.transpose(1, 0, 2), "w_parameters": flat})[0]
    np.testing.assert_allclose(a, b.transpose(1, 0, 2), rtol=1e-6)
    with pytest.raises(NotImplementedError):
        cell(mx.sym.Variable("x"), [])


def test_dropout_between_layers_only_in_training():
    sym = mx.sym.RNN(mx.sym.Variable("data"), state_size=8, num_layers=2, mode="rnn_tanh", p=0.5, name="r")
    plain = mx.sym.RNN(mx.sym.Variable("data"), state_size=8, num_layers=2, mode="rnn_tanh", name="r")
    shapes = {"data": (3, 4, 5)}
    rng = np.random.default_rng(0)
    vals = {"data": rng.uniform(-1, 1, (3, 4, 5)),
            "r_parameters": rng.uniform(-0.5, 0.5, plain.infer_shape(**shapes)[0][1])}
    exes = []
    for s in (sym, plain):
        exe = s.simple_bind(mx.cpu(), grad_req="null", **shapes)
        for k, v in vals.items():
            exe.arg_dict[k][:] = v
        exes.append(exe)
    base = exes[1].forward()[0].asnumpy()
    np.testing.assert_allclose(exes[0].forward(is_train=False)[0].asnumpy(), base, rtol=1e-6)
    assert not np.allclose(exes[0].forward(is_train=True)[0].asnumpy(), base)


def test_lstm_state_clip_bounds_the_cell_state():
    sym = mx.sym.RNN(mx.sym.Variable("data"), state_size=2, num_layers=1, mode="lstm", state_outputs=True,
                     lstm_state_clip_min=-0.1, lstm_state_clip_max=0.1, name="r")
    exe = sym.simple_bind(mx.cpu(), grad_req="null", data=(3, 1, 2))
    for k, arr in exe.arg_dict.items():
        arr[:] = np.random.default_rng(0).uniform(0, 3, arr.shape)
    cell = exe.forward()[2].asnumpy()
    np.testing.assert_allclose(np.abs(cell), 0.1, rtol=1e-6)


def test_rnn_op_errors_name_the_problem():
    with pytest.raises(mx.base.MXNetError, match="projection_size"):
        mx.sym.RNN(mx.sym.Variable("data"), state_size=2, num_layers=1, mode="lstm", projection_size=3)
    with pytest.raises(mx.base.MXNetError, match="use_sequence_length"):
        mx.sym.RNN(mx.sym.Variable("data"), state_size=2, num_layers=1, mode="gru", use_sequence_length=True)
    sym = mx.sym.RNN(mx.sym.Variable("data"), state_size=2, num_layers=1, mode="gru", name="r")
    with pytest.raises(mx.base.MXNetError, match="r_parameters"):
        sym.infer_shape(data=(3, 2, 4), r_parameters=(5,))
    with pytest.raises(mx.base.MXNetError, match="3-D"):
        sym.infer_shape(data=(3, 4))


def test_rnn_checkpoints_save_unpacked_and_load_packed(tmp_path):
    cell = mx.rnn.FusedRNNCell(2, mode="gru", prefix="c_")
    out, _ = cell.unroll(2, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    flat = mx.nd.array(np.arange(mx.ops.rnn_op.param_size("gru", 1, False, 3, 2)))
    prefix = str(tmp_path / "m")
    mx.rnn.do_rnn_checkpoint(cell, prefix)(0, out, {"c_parameters": flat}, {})
    _, saved, _ = mx.model.load_checkpoint(prefix, 1)
    assert "c_l0_i2h_r_weight" in saved and "c_parameters" not in saved
    sym, arg, aux = mx.rnn.load_rnn_checkpoint(cell, prefix, 1)
    assert sym.list_arguments() == out.list_arguments() and aux == {}
    np.testing.assert_array_equal(arg["c_parameters"].asnumpy(), flat.asnumpy())


def _primitives(jaxpr, counts=None):
    """How often each primitive occurs in a jaxpr, scan and other sub-jaxprs included."""
    import collections
    from jax.extend.core import jaxprs_in_params
    counts = collections.Counter() if counts is None else counts
    for eqn in jaxpr.eqns:
        counts[eqn.primitive.name] += 1
        for sub in jaxprs_in_params(eqn.params):
            _primitives(sub, counts)
    return counts


@pytest.mark.parametrize("mode,proj", [("lstm", None), ("lstm", 2), ("gru", None), ("rnn_tanh", None)])
def test_rnn_gradient_of_the_packed_parameters_is_one_concatenate(mode, proj):
    """The packed vector (and the states, the gates, the directions' outputs) is cut by
    one split, so its gradient is one concatenate: no per-piece pad to the full size and
    sum, which grows the backward program with layers x directions."""
    import jax
    import jax.numpy as jnp
    op = mx.ops.rnn_op.RNN(state_size=3, num_layers=3, mode=mode, bidirectional=True, projection_size=proj)
    size = mx.ops.rnn_op.param_size(mode, 3, True, 4, 3, proj)
    states = [jnp.zeros((6, 2, proj or 3))] + ([jnp.zeros((6, 2, 3))] if mode == "lstm" else [])

    def loss(flat, data, states):
        return op.lower([data, flat, *states], [], False, None)[0][0].sum()
    jaxpr = jax.make_jaxpr(jax.grad(loss, argnums=(0, 1, 2)))(jnp.ones(size), jnp.ones((5, 2, 4)), states).jaxpr
    counts = _primitives(jaxpr)
    assert counts["pad"] == 0 and counts["split"] >= 1, counts
