"""mx.autograd's backward from the residuals its forward kept (jbind/autograd/_pullback.py):
the forward of a recorded op is not run again by backward, a repeated training step
compiles nothing, and the paths that still replay (create_graph, integer variables,
Function, hybridized blocks) give the gradients they gave."""
import numpy as np
import pytest

import jbind as mx
from jbind import autograd as ag
from jbind.autograd import _backward
from jbind.bench._setup import jax_compile_clock
from jbind.ndarray import _dispatch
from jbind.ops._base import get_op

RNG = np.random.default_rng(7)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.asnumpy() if hasattr(a, "asnumpy") else a, b, rtol=tol, atol=tol)


def _count_lowerings(monkeypatch, name):
    cls = get_op(name)
    calls = [0]
    orig = cls.lower

    def counted(self, *a, **k):
        calls[0] += 1
        return orig(self, *a, **k)
    monkeypatch.setattr(cls, "lower", counted)
    return calls


@pytest.fixture
def lowering_calls(monkeypatch):
    """Counts calls of the Activation op's lowering (each trace of a program holding it)."""
    return _count_lowerings(monkeypatch, "Activation")


def test_backward_does_not_run_the_recorded_forward_again(lowering_calls):
    # a shape no other test uses: this op call's compiled program is traced here, once
    x = mx.nd.array(RNG.normal(size=(3, 11, 2)).astype("float32"))
    x.attach_grad()
    for step in range(2):
        before = lowering_calls[0]
        with ag.record():
            y = mx.nd.Activation(x, act_type="tanh")
            loss = (y * y).sum()
        assert lowering_calls[0] - before == (1 if step == 0 else 0)  # the eager forward's trace
        before = lowering_calls[0]
        loss.backward()
        assert lowering_calls[0] == before  # backward applied the pullback, it did not lower tanh again
        t = np.tanh(x.asnumpy())
        close(x.grad, 2 * t * (1 - t * t))


def test_the_residuals_that_are_inputs_are_the_inputs_themselves():
    x = mx.nd.array(RNG.normal(size=(4, 13)).astype("float32"))
    w = mx.nd.array(RNG.normal(size=(5, 13)).astype("float32"))
    w.attach_grad()
    with ag.record():
        y = mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=5)
    entry, leaves = y._ag[0].saved
    # the weight's gradient needs only the data: kept as the input array, not a copy
    assert y._ag[0].diff == (1,) and entry.sources == (("i", 0),) and leaves[0] is x._data
    y.backward()
    close(w.grad, np.ones((4, 5), np.float32).T @ x.asnumpy(), 1e-4)


def _mlp_step():
    net = mx.gluon.nn.Sequential()
    net.add(mx.gluon.nn.Dense(16, activation="relu", in_units=9), mx.gluon.nn.Dense(4, in_units=16))
    net.initialize(mx.init.Xavier())
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    x = mx.nd.array(RNG.normal(size=(8, 9)).astype("float32"))
    y = mx.nd.array(RNG.integers(0, 4, size=(8,)).astype("float32"))

    def step():
        with ag.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(8)
        return loss.mean().asscalar()
    return step


def test_a_repeated_unhybridized_gluon_step_compiles_nothing():
    step = _mlp_step()
    first = step()
    step()
    traces, programs = _dispatch.info()["traces"], _backward.compiled_count()
    with jax_compile_clock() as clock:
        for _ in range(2):
            last = step()
    assert clock.count == 0, f"{clock.count} XLA compiles in steady steps"
    assert _dispatch.info()["traces"] == traces and _backward.compiled_count() == programs
    assert last < first  # and it trains


def test_integer_variables_and_create_graph_still_replay():
    x = mx.nd.array([1, 2, 3], dtype="int32")
    x.attach_grad()
    with ag.record():
        y = (x * x).sum()
    y.backward()
    close(x.grad, np.array([2, 4, 6]))
    z = mx.nd.array([0.5, -1.0])
    z.attach_grad()
    with ag.record():
        s = (z * z * z).sum()
        (g,) = ag.grad(s, [z], create_graph=True)
        h = g.sum()
    h.backward()
    close(g, 3 * z.asnumpy() ** 2)
    close(z.grad, 6 * z.asnumpy())


def test_a_hybridized_block_among_ops_keeps_its_residuals_too(monkeypatch):
    calls = _count_lowerings(monkeypatch, "FullyConnected")
    dense = mx.gluon.nn.Dense(3, in_units=17)  # a shape of its own: its programs are traced here
    dense.initialize(mx.init.Xavier())
    dense.hybridize()
    x = mx.nd.array(RNG.normal(size=(2, 17)).astype("float32"))
    x.attach_grad()
    for _ in range(2):
        with ag.record():
            h = mx.nd.tanh(x)
            y = dense(h)
            out = (y * 2).sum()
        assert y._ag[0].kind == "HybridBlock" and y._ag[0].saved is not None
        before = calls[0]
        assert before > 0  # the forward's trace lowered it
        out.backward()
        assert calls[0] == before  # the block's graph was not lowered (run) again
        w = dense.weight.data().asnumpy()
        t = np.tanh(x.asnumpy())
        close(x.grad, (2 * np.ones((2, 3)) @ w) * (1 - t * t), 1e-4)
        close(dense.weight.grad(), 2 * np.ones((2, 3)).T @ t, 1e-4)
        close(dense.bias.grad(), np.full(3, 4.0), 1e-4)


def test_a_head_that_is_a_variable_and_an_unreached_variable():
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0])
    a.attach_grad()
    b.attach_grad()
    with ag.record():
        c = a * 3
    ag.backward([c, a], [mx.nd.array([1.0, 1.0]), mx.nd.array([2.0, 5.0])])
    close(a.grad, np.array([5.0, 8.0]))
    with ag.record():
        d = a * 2 + b.detach()
    d.backward()
    close(a.grad, np.array([2.0, 2.0]))
    close(b.grad, np.zeros(1))


def test_a_block_whose_vjp_program_was_compiled_elsewhere_traces_only_its_layout(monkeypatch):
    from jbind._memo import Memo
    from jbind.gluon import _cached_graph
    x = mx.nd.array(RNG.normal(size=(3, 19)).astype("float32"))
    grads = []
    for fresh in (False, True):
        if fresh:  # a new process loading the executable from its store sees only the compile cache
            monkeypatch.setattr(_cached_graph, "_VJPS", Memo(8))
        net = mx.gluon.nn.Dense(2, in_units=19)
        net.initialize(mx.init.Constant(0.5))
        net.hybridize()
        with mx.compile.count_compiles() as n:
            with ag.record():
                loss = (net(x) ** 2).sum()
            loss.backward()
        if fresh:
            assert n() == 0
        grads.append(net.weight.grad().asnumpy())
    close(grads[1], grads[0])
    h = x.asnumpy() @ np.full((19, 2), 0.5, np.float32)
    close(grads[0], 2 * h.T @ x.asnumpy(), 1e-3)
