"""mx.rnn step cells and composite cells against numpy references, forward and gradient."""
import numpy as np
import pytest

import jbind as mx
import rnn_reference as ref
from helpers import Case, check_op

N, T, I, H = 2, 3, 4, 3

CELLS = {
    "rnn_tanh": lambda p="c_", h=H: mx.rnn.RNNCell(h, prefix=p),
    "rnn_relu": lambda p="c_", h=H: mx.rnn.RNNCell(h, activation="relu", prefix=p),
    "lstm": lambda p="c_", h=H: mx.rnn.LSTMCell(h, prefix=p),
    "gru": lambda p="c_", h=H: mx.rnn.GRUCell(h, prefix=p),
}


def run(outputs, shapes, seed=0, is_train=False, values=None):
    """Bind outputs (a symbol or list) -> (numpy outputs, the float64 argument values used)."""
    outs = outputs if isinstance(outputs, list) else [outputs]
    group = mx.sym.Group(outs)
    rng = np.random.default_rng(seed)
    exe = group.simple_bind(mx.cpu(), grad_req="null", **shapes)
    vals = dict(values or {})
    for n, arr in exe.arg_dict.items():
        if n not in vals:
            vals[n] = rng.uniform(-1, 1, size=arr.shape).astype(np.float32).astype(np.float64)
        arr[:] = vals[n]
    return [o.asnumpy() for o in exe.forward(is_train=is_train)], vals


def steps(data, layout):
    return [data[:, t] for t in range(data.shape[1])] if layout == "NTC" else list(data)


def merged(outs, layout):
    return np.stack(outs, axis=1 if layout == "NTC" else 0)


def data_shape(layout, width=I):
    return (N, T, width) if layout == "NTC" else (T, N, width)


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("layout", ["NTC", "TNC"])
@pytest.mark.parametrize("mode", sorted(CELLS))
def test_cell_unroll_matches_numpy(mode, layout, merge):
    cell = CELLS[mode]()
    outputs, states = cell.unroll(T, mx.sym.Variable("data"), layout=layout, merge_outputs=merge)
    assert isinstance(outputs, mx.sym.Symbol) == merge
    res, vals = run(([outputs] if merge else list(outputs)) + states, {"data": data_shape(layout)})
    want, want_states = ref.run(mode, steps(vals["data"], layout), ref.zeros_states(mode, N, H), vals, "c_")
    got_outs, got_states = (res[:1], res[1:]) if merge else (res[:T], res[T:])
    if merge:
        np.testing.assert_allclose(got_outs[0], merged(want, layout), rtol=1e-5, atol=1e-6)
    else:
        for g, w in zip(got_outs, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    for g, w in zip(got_states, want_states):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_list_inputs_and_manual_steps_match_numpy():
    cell = mx.rnn.LSTMCell(H, prefix="s_")
    xs = [mx.sym.Variable("x%d" % t) for t in range(2)]
    states = cell.begin_state()
    o0, states = cell(xs[0], states)
    o1, states = cell(xs[1], states)
    assert o1.name == "s_t1_out"
    res, vals = run([o0, o1] + states, {"x0": (N, I), "x1": (N, I)})
    want, st = ref.run("lstm", [vals["x0"], vals["x1"]], ref.zeros_states("lstm", N, H), vals, "s_")
    for g, w in zip(res, want + st):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _grad_case(mode):
    prefix, n, t, i, h = "g_", 2, 2, 3, 2
    nstate = 2 if mode == "lstm" else 1

    def build():
        cell = CELLS[mode](prefix, h)
        begin = cell.begin_state(func=mx.sym.Variable)
        out, states = cell.unroll(t, mx.sym.Variable("data"), begin_state=begin, merge_outputs=True)
        return mx.sym.Group([out, states[-1]])

    def reference(data, **p):
        begin = [p["g_begin_state_%d" % k] for k in range(nstate)]
        outs, states = ref.run(mode, steps(data, "NTC"), begin, p, prefix)
        return [merged(outs, "NTC"), states[-1]]

    shapes = {"data": (n, t, i), **{"g_begin_state_%d" % k: (n, h) for k in range(nstate)}}
    return Case(f"{mode}_unroll_grad", build, reference, shapes, is_train=True)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_cell_gradients_match_finite_differences(mode):
    check_op(_grad_case(mode))


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
@pytest.mark.parametrize("merge", [True, False])
def test_bidirectional_matches_numpy(layout, merge):
    cell = mx.rnn.BidirectionalCell(CELLS["lstm"]("l_"), CELLS["gru"]("r_"))
    outputs, states = cell.unroll(T, mx.sym.Variable("data"), layout=layout, merge_outputs=merge)
    flat = [s for group in states for s in group]
    res, vals = run(([outputs] if merge else list(outputs)) + flat, {"data": data_shape(layout)})
    xs = steps(vals["data"], layout)
    lo, ls = ref.run("lstm", xs, ref.zeros_states("lstm", N, H), vals, "l_")
    ro, rs = ref.run("gru", xs[::-1], ref.zeros_states("gru", N, H), vals, "r_")
    want = [np.concatenate([a, b], axis=1) for a, b in zip(lo, ro[::-1])]
    outs = [merged(want, layout)] if merge else want
    for g, w in zip(res, outs + ls + rs):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
def test_sequential_with_dropout_and_residual_matches_numpy(layout):
    cell = mx.rnn.SequentialRNNCell()
    cell.add(CELLS["lstm"]("a_", I))
    cell.add(mx.rnn.DropoutCell(0.5))
    cell.add(mx.rnn.ResidualCell(CELLS["gru"]("b_", I)))
    outputs, states = cell.unroll(T, mx.sym.Variable("data"), layout=layout, merge_outputs=True)
    res, vals = run([outputs] + states, {"data": data_shape(layout)})  # inference: dropout is identity
    xs = steps(vals["data"], layout)
    a, sa = ref.run("lstm", xs, ref.zeros_states("lstm", N, I), vals, "a_")
    b, sb = ref.run("gru", a, ref.zeros_states("gru", N, I), vals, "b_")
    np.testing.assert_allclose(res[0], merged([x + y for x, y in zip(b, a)], layout), rtol=1e-5, atol=1e-6)
    for g, w in zip(res[1:], sa + sb):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_sequential_stepping_matches_unroll():
    def make():
        cell = mx.rnn.SequentialRNNCell()
        cell.add(CELLS["gru"]("a_"))
        cell.add(CELLS["rnn_tanh"]("b_"))
        return cell
    cell = make()
    states = cell.begin_state()
    xs = [mx.sym.Variable("x%d" % t) for t in range(2)]
    outs = []
    for x in xs:
        o, states = cell(x, states)
        outs.append(o)
    stepped, vals = run(outs + states, {"x0": (N, I), "x1": (N, I)})
    unrolled, _ = make().unroll(2, xs, merge_outputs=False)
    res, _ = run(unrolled, {"x0": (N, I), "x1": (N, I)}, values=vals)
    for g, w in zip(res, stepped[:2]):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_dropout_cell_in_training():
    outputs, _ = mx.rnn.DropoutCell(0.5).unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    (res,), vals = run(outputs, {"data": (4, T, 8)}, is_train=True)
    x = vals["data"].astype(np.float32)
    kept = res != 0
    assert 0 < kept.sum() < kept.size
    np.testing.assert_allclose(res[kept], 2 * x[kept], rtol=1e-6)


def test_zoneout_keeps_the_previous_output_or_takes_the_new_one():
    base = CELLS["rnn_tanh"]("z_")
    cell = mx.rnn.ZoneoutCell(base, zoneout_outputs=0.5)
    outputs, _ = cell.unroll(T, mx.sym.Variable("data"), merge_outputs=False)
    infer, vals = run(list(outputs), {"data": (8, T, I)})
    want, _ = ref.run("rnn_tanh", steps(vals["data"], "NTC"), ref.zeros_states("rnn_tanh", 8, H), vals, "z_")
    for g, w in zip(infer, want):  # inference: no zoneout
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    train, _ = run(list(outputs), {"data": (8, T, I)}, is_train=True, values=vals)
    prev = np.zeros_like(train[0])
    for g, w in zip(train, want):
        new, old = np.isclose(g, w, atol=1e-6), np.isclose(g, prev, atol=1e-6)
        assert np.all(new | old)
        prev = g
    assert not np.allclose(train[-1], want[-1])


def test_names_restart_at_each_unroll_and_params_are_shared():
    cell = mx.rnn.LSTMCell(H, prefix="p_", forget_bias=0.25)
    a, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    b, _ = cell.unroll(2, mx.sym.Variable("data"), merge_outputs=True)
    names = [n for n in a.get_internals().list_outputs() if n.startswith("p_")]
    assert names == [n for n in b.get_internals().list_outputs() if n.startswith("p_")]
    assert "p_t1_out_output" in names and "p_begin_state_1_output" in names
    assert a.attr_dict()["p_i2h_bias"]["__init__"] == '["lstmbias", {"forget_bias": 0.25}]'
    assert sorted(cell.params._params) == ["p_h2h_bias", "p_h2h_weight", "p_i2h_bias", "p_i2h_weight"]
    assert cell.state_info == [{"shape": (0, H), "__layout__": "NC"}] * 2
    assert cell.state_shape == [(0, H), (0, H)]
    shared = mx.rnn.RNNParams("w_")
    c1, c2 = mx.rnn.GRUCell(H, prefix="x_", params=shared), mx.rnn.GRUCell(H, prefix="y_", params=shared)
    assert c1._iW is c2._iW and c1._iW.name == "w_i2h_weight"


def test_modified_cells_refuse_direct_use():
    base = CELLS["gru"]()
    cell = mx.rnn.ZoneoutCell(base, zoneout_states=0.5)
    with pytest.raises(AssertionError, match="modifier"):
        base.begin_state()
    with pytest.raises(mx.base.MXNetError):
        base.begin_state()
    assert len(cell.begin_state()) == 1
    with pytest.raises(AssertionError):
        mx.rnn.ZoneoutCell(mx.rnn.BidirectionalCell(CELLS["gru"]("l_"), CELLS["gru"]("r_")))
    with pytest.raises(NotImplementedError):
        mx.rnn.BidirectionalCell(CELLS["gru"]("l_"), CELLS["gru"]("r_"))(mx.sym.Variable("x"), [])
    with pytest.raises(AssertionError, match="deprecated"):
        base.unroll(2, None)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_pack_and_unpack_weights_round_trip(mode):
    cell = CELLS[mode]()
    g = ref.GATES[mode]
    rng = np.random.default_rng(1)
    args = {"c_i2h_weight": rng.normal(size=(g * H, I)), "c_h2h_weight": rng.normal(size=(g * H, H)),
            "c_i2h_bias": rng.normal(size=(g * H,)), "c_h2h_bias": rng.normal(size=(g * H,)), "other": 1}
    unpacked = cell.unpack_weights(args)
    gates = {"lstm": ["_i", "_f", "_c", "_o"], "gru": ["_r", "_z", "_o"], "rnn_tanh": [""]}[mode]
    assert sorted(unpacked) == sorted(["other"] + ["c_%s%s_%s" % (grp, gt, k) for grp in ("i2h", "h2h")
                                                   for gt in gates for k in ("weight", "bias")])
    np.testing.assert_array_equal(unpacked["c_i2h%s_weight" % gates[-1]], args["c_i2h_weight"][-H:])
    packed = cell.pack_weights(unpacked)
    for k, v in args.items():
        np.testing.assert_array_equal(packed[k], v)
    nd_packed = cell.pack_weights(cell.unpack_weights({k: mx.nd.array(v) if k != "other" else v
                                                       for k, v in args.items()}))
    assert isinstance(nd_packed["c_h2h_weight"], mx.nd.NDArray)
    np.testing.assert_allclose(nd_packed["c_h2h_weight"].asnumpy(), args["c_h2h_weight"], rtol=1e-6)


def test_zoneout_over_a_sequential_stack():
    """MXNet 1.9.1 fails here (AttributeError `_bidirectional`); jbind zones out the whole stack."""
    def stack():
        seq = mx.rnn.SequentialRNNCell()
        seq.add(CELLS["gru"]("a_"))
        seq.add(CELLS["lstm"]("b_"))
        return seq
    zoned, _ = mx.rnn.ZoneoutCell(stack(), 0.5, 0.5).unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    plain, _ = stack().unroll(T, mx.sym.Variable("data"), merge_outputs=True)
    (want,), vals = run(plain, {"data": (N, T, I)})
    (got,), _ = run(zoned, {"data": (N, T, I)}, values=vals)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(AssertionError, match="Bidirectional SequentialRNNCell"):
        seq = stack()
        seq.add(mx.rnn.BidirectionalCell(CELLS["gru"]("l_"), CELLS["gru"]("r_")))
        mx.rnn.ZoneoutCell(seq)
