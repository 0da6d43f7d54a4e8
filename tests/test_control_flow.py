"""mx.sym.contrib.foreach / while_loop / cond: structure, inference, gradients, bad input."""
import numpy as np
import pytest

import jbind as mx
from helpers import raises_naming

V = mx.sym.Variable
S = mx.sym


def _eval(sym, **vals):
    return [o.asnumpy() for o in sym.eval(**{k: mx.nd.array(v) for k, v in vals.items()})]


def test_free_symbols_become_inputs_and_the_body_keeps_its_own_nodes():
    data, s, w = V("data"), V("s"), V("w")
    fc = S.FullyConnected(data, num_hidden=2, name="fc")
    outs, states = S.contrib.foreach(lambda x, st: (x + w + fc, [st[0] * 2]), data, [s])
    node = outs._heads[0][0]
    assert node.op.name == "_foreach" and node.name == "_foreach0"
    assert [c.name for c, _ in node.inputs] == ["data", "s", "w", "fc"]
    assert node.op.subgraphs[0].list_inputs() == ["data-0", "w", "fc_output", "s-0"]
    assert S.Group([outs, states[0]]).list_arguments() == ["data", "s", "w", "fc_weight", "fc_bias"]


def test_foreach_keeps_the_bodys_nested_output_format():
    a, b, s = V("a"), V("b"), V("s")
    outs, states = S.contrib.foreach(lambda xs, st: ([xs[0], [xs[1] * 2]], [[st[0][0] + 1]]), [a, b], [[s]])
    assert isinstance(outs, list) and isinstance(outs[1], list) and isinstance(states[0], list)
    got = _eval(S.Group([outs[0], outs[1][0], states[0][0]]), a=np.ones((3, 2)), b=np.full((3, 2), 2.0),
                s=np.zeros(2))
    np.testing.assert_array_equal(got[1], np.full((3, 2), 4.0))
    np.testing.assert_array_equal(got[2], np.full(2, 3.0))


def test_foreach_over_a_1d_array_gives_the_body_one_element_slices():
    outs, states = S.contrib.foreach(lambda x, st: (x * st[0], [st[0] + x]), V("d"), [V("s")])
    assert outs.infer_shape(d=(4,), s=(1,))[1] == [(4, 1)]
    got = _eval(S.Group([outs, states[0]]), d=np.arange(4.0), s=np.ones(1))
    np.testing.assert_array_equal(got[0].ravel(), [0, 1, 4, 12])
    np.testing.assert_array_equal(got[1], [7])


def test_foreach_infers_backwards_and_partially():
    w = V("w")
    outs, _ = S.contrib.foreach(lambda x, st: (S.FullyConnected(x, w, no_bias=True, num_hidden=5), st),
                                V("d"), [V("s")])
    args, out, _ = outs.infer_shape_partial(d=(0, 2, 3), s=(1,))
    assert dict(zip(outs.list_arguments(), args))["w"] == (5, 3)
    assert out == [(0, 2, 5)]  # MXNet 1.x: 0 is an unknown dimension
    arg_t, out_t, _ = outs.infer_type(d="float64", s="float64", w="float64")
    assert out_t == [np.float64]


def test_different_bodies_make_different_graphs():
    a = S.contrib.foreach(lambda x, st: (x * 2, st), V("d"), [V("s")])[0]
    b = S.contrib.foreach(lambda x, st: (x * 3, st), V("d"), [V("s")])[0]
    c = S.contrib.foreach(lambda x, st: (x * 2, st), V("d"), [V("s")])[0]
    assert a.fingerprint != b.fingerprint and a.fingerprint == c.fingerprint
    d, s = np.ones((2, 2)), np.ones(1)
    assert _eval(a, d=d, s=s)[0].sum() == 8 and _eval(b, d=d, s=s)[0].sum() == 12


def test_json_round_trip_keeps_the_subgraphs():
    outs, states = S.contrib.foreach(lambda x, st: (x + st[0], [st[0] * 2]), V("d"), [V("s")])
    g = S.Group([outs, states[0]])
    again = S.load_json(g.tojson())
    assert again.tojson() == g.tojson() and again.fingerprint == g.fingerprint
    assert '"subgraphs": [' in g.tojson()
    vals = dict(d=np.arange(6.0).reshape(3, 2), s=np.ones(2))
    for x, y in zip(_eval(g, **vals), _eval(again, **vals)):
        np.testing.assert_array_equal(x, y)


def test_while_loop_stops_at_max_iterations_and_may_not_run():
    i = V("i")
    outs, final = S.contrib.while_loop(lambda i: i < 100, lambda i: ([i], [i + 1]), [i], max_iterations=3)
    got = _eval(S.Group([outs[0], final[0]]), i=np.zeros(1))
    np.testing.assert_array_equal(got[0].ravel(), [0, 1, 2])
    np.testing.assert_array_equal(got[1], [3])
    got = _eval(S.Group([outs[0], final[0]]), i=np.full(1, 200.0))
    np.testing.assert_array_equal(got[0].ravel(), [0, 0, 0])
    np.testing.assert_array_equal(got[1], [200])


def test_while_loop_gradient_matches_the_unrolled_loop():
    x, w = V("x"), V("w")
    _, (_, s) = S.contrib.while_loop(lambda i, s: i < 3, lambda i, s: (None, [i + 1, S.sin(s * w) + x]),
                                     [V("i"), x], max_iterations=5)
    unrolled = x
    for _ in range(3):
        unrolled = S.sin(unrolled * w) + x
    vals = {"i": np.zeros(1), "x": np.array([0.3, -0.7]), "w": np.array([1.5, 0.4])}
    grads = []
    for sym in (s, unrolled):
        args = {k: mx.nd.array(vals[k]) for k in sym.list_arguments()}
        exe = sym.bind(mx.cpu(), args, args_grad={k: mx.nd.zeros(v.shape) for k, v in args.items()})
        out = exe.forward(is_train=True)[0].asnumpy()
        exe.backward([mx.nd.ones(out.shape)])
        grads.append((out, exe.grad_dict["x"].asnumpy(), exe.grad_dict["w"].asnumpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_cond_reads_only_the_inputs_its_branches_use():
    a, b, c = V("a"), V("b"), V("c")
    (out,) = S.contrib.cond(a > 0, lambda: [b * 2], lambda: [c * 3])
    assert out.list_arguments() == ["a", "b", "c"]
    assert _eval(out, a=[1.0], b=[2.0], c=[5.0])[0] == 4
    assert _eval(out, a=[-1.0], b=[2.0], c=[5.0])[0] == 15


def test_module_trains_through_foreach():
    data, w = V("data"), V("step_weight", shape=(3,))
    outs, _ = S.contrib.foreach(lambda x, st: (S.broadcast_mul(x, w) + st[0], [st[0] + x]), data, [V("h0_weight", shape=(2, 3))])
    loss = S.MakeLoss(S.sum(S.square(outs)))
    mod = mx.mod.Module(loss, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (4, 2, 3))])
    mod.init_params(mx.init.One())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    batch = mx.io.DataBatch([mx.nd.ones((4, 2, 3))])
    mod.forward(batch, is_train=True)
    first = mod.get_outputs()[0].asscalar()
    mod.backward()
    mod.update()
    mod.forward(batch, is_train=True)
    assert mod.get_outputs()[0].asscalar() < first


def test_mismatched_state_shapes_are_named():
    outs, _ = S.contrib.foreach(lambda x, st: (x, [S.sum(st[0], axis=0)]), V("d"), [V("s")])
    raises_naming(lambda: outs.infer_shape(d=(3, 2), s=(2, 2)), "_foreach", "loop state 0", "(2, 2)", "(2,)",
                  cls=mx.base.ShapeError)


def test_body_returning_the_wrong_structure_is_named():
    raises_naming(lambda: S.contrib.foreach(lambda x, st: (x, [st[0], st[0]]), V("d"), [V("s")]),
                  "init_states", "states", cls=AssertionError)
    raises_naming(lambda: S.contrib.foreach(lambda x, st: x, V("d"), [V("s")]), "pair")
    raises_naming(lambda: S.contrib.while_loop(lambda i: i < 2, lambda i: (None, [i, i]), [V("i")],
                                               max_iterations=2), "2 loop variables", cls=ValueError)
    raises_naming(lambda: S.contrib.while_loop(lambda i: i < 2, lambda i: (None, [i]), [V("i")]),
                  "max_iterations")
    a = V("a")
    raises_naming(lambda: S.contrib.cond(V("p"), lambda: [a], lambda: [a, a * 2]), "then_func returned 1")


def test_a_pred_that_is_not_a_scalar_is_named():
    (out,) = S.contrib.cond(V("p"), lambda: [V("a") * 2], lambda: [V("a") * 3])
    raises_naming(lambda: out.infer_shape(p=(2,), a=(2,)), "_cond", "condition must be a scalar", "(2,)")
    with pytest.raises(mx.base.MXNetError, match="must be a scalar"):
        mx.nd.contrib.cond(mx.nd.ones(2), lambda: 1, lambda: 2)


def test_hostile_json_locs_are_refused():
    outs, _ = S.contrib.foreach(lambda x, st: (x + st[0], st), V("d"), [V("s")])
    text = outs.tojson().replace('"in_state_locs": "[1]"', '"in_state_locs": "[7]"')
    raises_naming(lambda: S.load_json(text), "_foreach", "in_state_locs")
    text = outs.tojson().replace('"subgraphs"', '"ignored"')
    raises_naming(lambda: S.load_json(text), "needs 1 subgraph")


def _nested_loops(depth):
    """MXNet JSON of `depth` foreach loops, each the body of the one outside it."""
    if depth == 0:
        nodes = [{"op": "null", "name": "x-0", "inputs": []}, {"op": "_copy", "name": "c", "inputs": [[0, 0, 0]]}]
    else:
        attrs = {"num_args": "2", "num_outputs": "1", "num_out_data": "1", "in_state_locs": "[]",
                 "in_data_locs": "[0]", "remain_locs": "[]"}
        nodes = [{"op": "null", "name": "x-0", "inputs": []},
                 {"op": "_foreach", "name": "f", "attrs": attrs, "inputs": [[0, 0, 0]],
                  "subgraphs": [_nested_loops(depth - 1)]}]
    return {"nodes": nodes, "arg_nodes": [0], "node_row_ptr": [0, 1, 2], "heads": [[1, 0, 0]]}


def test_subgraphs_nested_too_deep_are_refused():
    import json
    ok = S.load_json(json.dumps(_nested_loops(5)))
    np.testing.assert_array_equal(ok.eval(**{"x-0": mx.nd.ones((2, 2, 2, 2, 2, 3))})[0].asnumpy(), 1)
    raises_naming(lambda: S.load_json(json.dumps(_nested_loops(70))), "nested more than 64")


def test_subgraphs_on_an_op_without_them_are_refused():
    import json
    doc = json.loads((V("a") * 2).tojson())
    doc["nodes"][1]["subgraphs"] = [json.loads(V("b").tojson())]
    raises_naming(lambda: S.load_json(json.dumps(doc)), "_mul_scalar", "takes none")


def test_fingerprint_is_the_same_in_every_process():
    import subprocess
    import sys
    code = ("import jbind as mx; s = mx.sym.contrib.foreach(lambda x, st: (x * 2, st), mx.sym.var('d'), "
            "[mx.sym.var('s')])[0]; print(s.fingerprint)")
    got = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**__import__("os").environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(got) == 1
