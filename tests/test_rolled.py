"""Loop lowering (jbind/symbol/rolled.py): rolled and unrolled lowerings agree, forward and
gradient, and the rolled one is a scan whose program does not grow with the sequence length."""
import jax
import numpy as np
import pytest

import jbind as mx
from jbind.symbol import rolled
from jbind.symbol.graph import graph_of
from jbind.symbol.infer import SHAPE, entry_values
from jbind.symbol.lower import make_forward
from models import sym_gen_factory

N, T, I, H = 3, 5, 4, 6
TOL = dict(rtol=1e-5, atol=1e-5)


def lowered(sym, shapes, on):
    """(forward, plan) of `sym` with the loop lowering on or off."""
    g = graph_of(sym)
    sh = entry_values(sym, SHAPE, shapes)
    with rolled.loop_lowering(on):
        return make_forward(g, sh), (rolled.plan(g, sh) if on else None)


def inputs(sym, shapes, ints=(), seed=0):
    rng = np.random.default_rng(seed)
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    return {n: (rng.integers(0, 7, s) if n in ints else rng.normal(0, 0.5, s)).astype(np.float32)
            for n, s in zip(sym.list_arguments(), arg_shapes)}


def evaluate(sym, shapes, on, is_train=False, ints=(), keys=None):
    """Outputs, and gradients of a random projection of the outputs w.r.t. float arguments,
    for each PRNG key in `keys` (one compile)."""
    fwd, plan = lowered(sym, shapes, on)
    vals = inputs(sym, shapes, ints)
    diff = {n: v for n, v in vals.items() if n not in ints}

    def f(diff, k):
        args = tuple(diff[n] if n in diff else vals[n] for n in sym.list_arguments())
        return fwd(args, (), jax.random.key(k), is_train)[0]

    rng = np.random.default_rng(1)
    cot = tuple(rng.normal(size=o.shape).astype(o.dtype) for o in jax.eval_shape(f, diff, 0))
    both = jax.jit(lambda diff, k: (lambda o, vjp: (o, vjp(cot)[0]))(*jax.vjp(lambda d: f(d, k), diff)))
    res = []
    for k in keys or (0,):
        outs, grads = both(diff, k)
        res.append(([np.asarray(o) for o in outs], {n: np.asarray(v) for n, v in grads.items()}))
    return (*res[0], plan) if keys is None else res


def check_same(sym, shapes, runs=None, **kw):
    o1, g1, plan = evaluate(sym, shapes, True, **kw)
    o0, g0, _ = evaluate(sym, shapes, False, **kw)
    assert len(o1) == len(o0)
    for a, b in zip(o1, o0):
        np.testing.assert_allclose(a, b, **TOL)
    for n in g0:
        np.testing.assert_allclose(g1[n], g0[n], err_msg=n, **TOL)
    nruns = 0 if plan is None else sum(isinstance(u, rolled.Run) for u in plan.order)
    if runs is not None:
        assert nruns == runs
    return plan


def seed_sym(t, layers=2):
    return sym_gen_factory(mx, num_layers=layers, num_hidden=H, num_embed=I, vocab=7)(t)


def test_seed_lstm_rolls_and_matches():
    plan = check_same(seed_sym(T), {"data": (N, T), "softmax_label": (N, T)}, runs=2,
                      ints=("data", "softmax_label"))
    run = next(u for u in plan.order if isinstance(u, rolled.Run))
    assert run.n == T and len(run.carries) == 2 and run.hoisted   # step 0 included, i2h hoisted


def _jaxpr_size(sym, shapes, on):
    fwd, _ = lowered(sym, shapes, on)
    vals = inputs(sym, shapes, ("data", "softmax_label"))
    vals = {n: vals[n] for n in sym.list_arguments()}
    args = tuple(vals[n] for n in sym.list_arguments())
    jaxpr = jax.make_jaxpr(lambda a: fwd(a, (), jax.random.key(0), False))(args)
    return len(jaxpr.eqns), _primitives(jaxpr.jaxpr)


def _primitives(jaxpr) -> set:
    """Primitive names of a jaxpr and of the jaxprs inside its equations (a scan may sit
    inside a custom_vjp call)."""
    out = set()
    for e in jaxpr.eqns:
        out.add(e.primitive.name)
        for v in e.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else [v]):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    out |= _primitives(inner)
    return out


def test_rolled_lowering_is_a_scan_of_constant_size():
    sizes = {}
    for t in (4, 12):
        shapes = {"data": (N, t), "softmax_label": (N, t)}
        sizes[t], prims = _jaxpr_size(seed_sym(t), shapes, True)
        assert "scan" in prims
    assert sizes[4] == sizes[12]
    unrolled = {t: _jaxpr_size(seed_sym(t), {"data": (N, t), "softmax_label": (N, t)}, False)[0]
                for t in (4, 12)}
    assert unrolled[12] > unrolled[4] + 100


CELLS = {
    "lstm": lambda p: mx.rnn.LSTMCell(H, prefix=p),
    "gru": lambda p: mx.rnn.GRUCell(H, prefix=p),
    "rnn_tanh": lambda p: mx.rnn.RNNCell(H, prefix=p),
}


def unrolled_outputs(cell, layout, merge):
    outs, states = cell.unroll(T, mx.sym.Variable("data"), layout=layout, merge_outputs=merge)
    return mx.sym.Group(([outs] if merge else list(outs)) + list(states))


def data_shape(layout):
    return {"data": (N, T, I) if layout == "NTC" else (T, N, I)}


@pytest.mark.parametrize("mode", sorted(CELLS))
@pytest.mark.parametrize("layout,merge", [("NTC", True), ("TNC", False)])
def test_rnn_cells(mode, layout, merge):
    check_same(unrolled_outputs(CELLS[mode]("c_"), layout, merge), data_shape(layout), runs=1)


@pytest.mark.parametrize("layout,merge", [("NTC", False), ("TNC", True)])
def test_stacked_with_dropout_inference(layout, merge):
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(H, prefix="l0_"))
    stack.add(mx.rnn.DropoutCell(0.3, prefix="d0_"))
    stack.add(mx.rnn.GRUCell(H, prefix="l1_"))
    check_same(unrolled_outputs(stack, layout, merge), data_shape(layout), runs=2)


def test_dropout_training_draws_the_same_bits():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(H, prefix="l0_"))
    stack.add(mx.rnn.DropoutCell(0.5, prefix="d0_"))
    stack.add(mx.rnn.LSTMCell(H, prefix="l1_"))
    sym = unrolled_outputs(stack, "NTC", True)
    (a, ga), (b, gb) = evaluate(sym, data_shape("NTC"), True, is_train=True, keys=(3, 4))
    (c, gc), = evaluate(sym, data_shape("NTC"), False, is_train=True, keys=(3,))
    for x, y in zip(a, c):
        np.testing.assert_allclose(x, y, **TOL)
    for n in gc:
        np.testing.assert_allclose(ga[n], gc[n], err_msg=n, **TOL)
    assert not np.allclose(a[0], b[0])      # the key matters: dropout is on
    _, plan = lowered(sym, data_shape("NTC"), True)
    assert [len(u.random) > 0 for u in plan.order if isinstance(u, rolled.Run)] == [True, False]


@pytest.mark.parametrize("merge", [True, False])
def test_bidirectional(merge):
    cell = mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(H, prefix="l_"), mx.rnn.GRUCell(H, prefix="r_"))
    outs, states = cell.unroll(T, mx.sym.Variable("data"), layout="NTC", merge_outputs=merge)
    flat = [s for group in states for s in group]
    sym = mx.sym.Group(([outs] if merge else list(outs)) + flat)
    check_same(sym, data_shape("NTC"), runs=2)


def test_encoder_decoder_and_many_to_one_head():
    """The decoder starts from the encoder's final states (its step 0 `f * c` reads the encoder);
    the head reads the decoder's last output."""
    enc, dec = mx.rnn.LSTMCell(H, prefix="enc_"), mx.rnn.LSTMCell(H, prefix="dec_")
    _, states = enc.unroll(T, mx.sym.Variable("src"), layout="NTC", merge_outputs=False)
    outs, _ = dec.unroll(T, mx.sym.Variable("tgt"), begin_state=states, layout="NTC", merge_outputs=False)
    plan = check_same(mx.sym.FullyConnected(outs[-1], num_hidden=2), {"src": (N, T, I), "tgt": (N, T, I)})
    assert [u.n for u in plan.order if isinstance(u, rolled.Run)] == [T, T]


def test_zoneout_and_residual_in_training():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.ZoneoutCell(mx.rnn.GRUCell(H, prefix="z_"), zoneout_outputs=0.3, zoneout_states=0.2))
    stack.add(mx.rnn.ResidualCell(mx.rnn.RNNCell(H, prefix="r_")))
    sym = unrolled_outputs(stack, "NTC", False)
    plan = check_same(sym, {"data": (N, T, H)}, is_train=True)
    assert [len(u.random) for u in plan.order if isinstance(u, rolled.Run)] == [2, 0]


def test_carry_changing_dtype_is_lowered_as_written():
    """The carry enters as float16 and leaves each step as float32: no scan, same values."""
    x = mx.sym.Variable("x")
    h = mx.sym.zeros(shape=(0, H), dtype="float16", name="begin")
    for t in range(T):
        i2h = mx.sym.FullyConnected(x, num_hidden=H, name=f"d_t{t}_i2h")
        h = mx.sym.Activation(mx.sym.Cast(h, dtype="float32", name=f"d_t{t}_cast") + i2h,
                              act_type="tanh", name=f"d_t{t}_out")
    plan = check_same(h, {"x": (N, I)}, runs=1)
    _, prims = _jaxpr_size(h, {"x": (N, I)}, True)
    assert "scan" not in prims


def test_steps_with_different_params_stay_unrolled():
    x = mx.sym.Variable("x")
    h = mx.sym.zeros(shape=(0, H), name="begin")
    outs = []
    for t in range(T):
        i2h = mx.sym.FullyConnected(x, num_hidden=H, name=f"odd_t{t}_i2h")
        h2h = mx.sym.FullyConnected(h, num_hidden=H, name=f"odd_t{t}_h2h")      # weights per step
        h = mx.sym.Activation(i2h + h2h, act_type="tanh" if t % 2 else "relu", name=f"odd_t{t}_out")
        outs.append(h)
    check_same(mx.sym.Group(outs), {"x": (N, I)}, runs=0)


def test_partial_run_after_a_different_step():
    """Step 0 differs (relu), steps 1.. are alike: they roll from step 0's output, which stays
    unrolled. Weights that differ per step (one i2h weight per step name) are stacked per-step inputs."""
    x = mx.sym.Variable("x")
    w = mx.sym.Variable("w")
    h = mx.sym.zeros(shape=(0, H), name="begin")
    for t in range(T):
        h2h = mx.sym.FullyConnected(h, weight=w, num_hidden=H, no_bias=True, name=f"p_t{t}_h2h")
        h = mx.sym.Activation(h2h + mx.sym.FullyConnected(x, num_hidden=H, name=f"p_t{t}_i2h"),
                              act_type="tanh" if t else "relu", name=f"p_t{t}_out")
    plan = check_same(h, {"x": (N, I)})
    assert [u.n for u in plan.order if isinstance(u, rolled.Run)] == [T - 1]


def test_executor_switch_is_part_of_the_cache_key():
    sym = seed_sym(3, layers=1)
    shapes = {"data": (N, 3), "softmax_label": (N, 3)}
    outs, before = {}, rolled.loop_lowering_enabled()
    with mx.compile.count_compiles() as n:
        for on in (True, False, True):
            with rolled.loop_lowering(on):
                exe = sym.simple_bind(mx.cpu(), **shapes)
                for name, arr in inputs(sym, shapes, ("data", "softmax_label")).items():
                    exe.arg_dict[name][:] = arr
                exe.forward(is_train=True)
                exe.backward()
                outs[on] = exe.outputs[0].asnumpy(), exe.grad_dict["lstm_l0_h2h_weight"].asnumpy()
    assert n() == 2
    for a, b in zip(outs[True], outs[False]):
        np.testing.assert_allclose(a, b, **TOL)
    assert rolled.loop_lowering_enabled() == before      # the context manager restores the switch


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_weight_gradients_after_the_loop_match_jax_transpose(mode):
    """symbol/_scan_grad.py: the step's h2h FullyConnected gets its weight gradient after the
    loop; off (JAX's own transpose of the scan) gives the same outputs and gradients."""
    from jbind.symbol import _scan_grad
    sym = unrolled_outputs(CELLS[mode]("w_"), "TNC", True)
    shapes = data_shape("TNC")
    o1, g1, _ = evaluate(sym, shapes, True)
    old = _scan_grad.set_enabled(False)
    try:
        assert _scan_grad.cache_suffix() == "+scangrad0" and "+scangrad0" in rolled.cache_suffix()
        o0, g0, _ = evaluate(sym, shapes, True)
        assert "custom_vjp_call" not in _jaxpr_prims(sym, shapes)
    finally:
        _scan_grad.set_enabled(old)
    assert "custom_vjp_call" in _jaxpr_prims(sym, shapes) and rolled.cache_suffix() == ""
    for a, b in zip(o1, o0):
        np.testing.assert_allclose(a, b, **TOL)
    for n in g0:
        np.testing.assert_allclose(g1[n], g0[n], err_msg=n, **TOL)


def _jaxpr_prims(sym, shapes):
    fwd, _ = lowered(sym, shapes, True)
    args = tuple(inputs(sym, shapes)[n] for n in sym.list_arguments())
    return _primitives(jax.make_jaxpr(lambda a: fwd(a, (), jax.random.key(0), False))(args).jaxpr)
