"""Control flow from mx.nd (eager, under autograd) and from Gluon (F.contrib in hybridized
blocks, gluon.contrib.rnn's dynamic_unroll): the same values and gradients as the symbols."""
import numpy as np

import jbind as mx
from helpers import raises_naming

RNG = np.random.default_rng(3)


def _step(F, w):
    def step(x, states):
        h = F.tanh(F.broadcast_mul(x, w) + states[0])
        return h * 2, [h]
    return step


def test_nd_foreach_records_and_matches_the_symbol():
    d, h, w = (RNG.uniform(-1, 1, s).astype(np.float32) for s in [(4, 2, 3), (2, 3), (3,)])
    arrays = [mx.nd.array(v) for v in (d, h, w)]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        outs, states = mx.nd.contrib.foreach(_step(mx.nd, arrays[2]), arrays[0], [arrays[1]])
        loss = (outs * outs).sum() + states[0].sum()
    loss.backward()
    sw = mx.sym.var("w")
    souts, sstates = mx.sym.contrib.foreach(_step(mx.sym, sw), mx.sym.var("d"), [mx.sym.var("h")])
    sloss = mx.sym.MakeLoss(mx.sym.sum(souts * souts) + mx.sym.sum(sstates[0]))
    args = {"d": mx.nd.array(d), "h": mx.nd.array(h), "w": mx.nd.array(w)}
    exe = sloss.bind(mx.cpu(), args, args_grad={k: mx.nd.zeros(v.shape) for k, v in args.items()})
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), loss.asnumpy(), rtol=1e-5)
    exe.backward()
    for name, a in zip("dhw", arrays):
        np.testing.assert_allclose(exe.grad_dict[name].asnumpy(), a.grad.asnumpy(), rtol=1e-4, atol=1e-6)


def test_nd_while_loop_pads_and_returns_no_outputs_when_it_never_runs():
    outs, (i, s) = mx.nd.contrib.while_loop(lambda i, s: i < 3, lambda i, s: ([s], [i + 1, s + i]),
                                            [mx.nd.zeros((1,)), mx.nd.ones((1,))], max_iterations=5)
    np.testing.assert_array_equal(outs[0].asnumpy().ravel(), [1, 1, 2, 0, 0])
    assert i.asscalar() == 3 and s.asscalar() == 4
    outs, final = mx.nd.contrib.while_loop(lambda i: i < 0, lambda i: ([i], [i + 1]), mx.nd.zeros((1,)),
                                           max_iterations=5)
    assert outs == [] and final.asscalar() == 0


def test_nd_cond_runs_one_branch():
    calls = []
    got = mx.nd.contrib.cond(mx.nd.array([0]), lambda: calls.append("then") or 1,
                             lambda: calls.append("else") or 2)
    assert got == 2 and calls == ["else"]


def test_nd_errors_are_named():
    raises_naming(lambda: mx.nd.contrib.while_loop(lambda i: i < 2, lambda i: ([i], [i + 1]),
                                                   [mx.nd.zeros((1,))]), "max_iterations")
    raises_naming(lambda: mx.nd.contrib.foreach(lambda x, s: (x, [s[0], s[0]]), mx.nd.ones((2, 2)),
                                                [mx.nd.ones(2)]), "init_states", cls=AssertionError)


class _Loop(mx.gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.w = self.params.get("w", shape=(3,), init=mx.init.Constant(0.3))

    def hybrid_forward(self, F, x, h, w):
        outs, states = F.contrib.foreach(_step(F, w), x, [h])
        (best,) = F.contrib.cond(F.sum(states[0]) > 0, lambda: [states[0]], lambda: [-states[0]])
        _, (n, _) = F.contrib.while_loop(lambda n, s: n < 3, lambda n, s: (None, [n + 1, s * 0.5]),
                                         [F.sum(h, axis=(0, 1)).reshape((1,)) * 0, best], max_iterations=4)
        return outs, F.broadcast_add(best, n)


def test_hybridized_block_matches_the_eager_one():
    x, h = mx.nd.array(RNG.uniform(-1, 1, (5, 2, 3))), mx.nd.array(RNG.uniform(-1, 1, (2, 3)))
    results = []
    for hybrid in (False, True):
        net = _Loop(prefix="loop_")
        net.initialize()
        if hybrid:
            net.hybridize()
        with mx.autograd.record():
            outs, best = net(x, h)
            loss = outs.sum() + (best * best).sum()
        loss.backward()
        results.append((outs.asnumpy(), best.asnumpy(), net.w.grad().asnumpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_dynamic_unroll_matches_the_cells_unroll():
    from jbind.gluon.contrib.rnn.rnn_cell import dynamic_unroll
    cell = mx.gluon.rnn.LSTMCell(4, prefix="rnn_")
    cell.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(RNG.uniform(-1, 1, (3, 6, 5)))  # NTC
    states = [mx.nd.array(RNG.uniform(-1, 1, (3, 4))) for _ in range(2)]
    valid = mx.nd.array([6, 2, 4])
    want, want_states = cell.unroll(6, x, states, layout="NTC", merge_outputs=True, valid_length=valid)
    got, got_states = dynamic_unroll(cell, x, states, layout="NTC", valid_length=valid)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(got_states, want_states):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)


def test_exported_block_with_control_flow_imports_as_a_symbol_block(tmp_path):
    x, h = mx.nd.array(RNG.uniform(-1, 1, (5, 2, 3))), mx.nd.array(RNG.uniform(-1, 1, (2, 3)))
    net = _Loop(prefix="loop_")
    net.initialize()
    net.hybridize()
    want = [o.asnumpy() for o in net(x, h)]
    net.export(str(tmp_path / "loop"))
    back = mx.gluon.SymbolBlock.imports(str(tmp_path / "loop-symbol.json"), ["data0", "data1"],
                                        str(tmp_path / "loop-0000.params"))
    for a, b in zip(back(x, h), want):
        np.testing.assert_allclose(a.asnumpy(), b, rtol=1e-6)
