"""Even splits run as one SPMD program over a mesh; results equal the per-device path."""
import numpy as np
import pytest

import jbind as mx
from jbind.module import spmd
from jbind.module.executor_group import DataParallelExecutorGroup, _runner

CTX2 = [mx.cpu(0), mx.cpu(1)]


class Batch:
    def __init__(self, data, label=None):
        self.data, self.label = data, label


@pytest.fixture
def per_device():
    """Run the body with the SPMD path off (one executable per device), then restore it."""
    def run(fn):
        old = spmd.set_spmd(False)
        try:
            return fn()
        finally:
            spmd.set_spmd(old)
    return run


def mlp(bn=False, hidden=6):
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1"), act_type="tanh", name="t")
    if bn:
        h = mx.sym.BatchNorm(h, fix_gamma=False, name="bn")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def make_group(sym, ctxs=CTX2, batch=8, **kw):
    params = [n for n in sym.list_arguments() if n not in ("data", "softmax_label")]
    return DataParallelExecutorGroup(sym, ctxs, [1] * len(ctxs), [("data", (batch, 5))],
                                     [("softmax_label", (batch,))], params, True, kw.pop("inputs_need_grad", False),
                                     **kw)


def init(g, seed=0):
    rng = np.random.default_rng(seed)
    arg = {n: mx.nd.array(rng.uniform(-1, 1, a[0].shape)) for n, a in zip(g.param_names, g.param_arrays)}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1, a[0].shape)) for n, a in zip(g.aux_names, g.aux_arrays)}
    g.set_params(arg, aux)


def batch(seed=1, n=8):
    rng = np.random.default_rng(seed)
    return Batch([mx.nd.array(rng.uniform(-1, 1, (n, 5)))], [mx.nd.array(rng.integers(0, 3, n))])


def snapshot(g):
    return ([o.asnumpy() for o in g.get_outputs()], [[x.asnumpy() for x in gr] for gr in g.grad_arrays],
            [[x.asnumpy() for x in a] for a in g.aux_arrays])


def run_group(sym, **kw):
    g = make_group(sym, **kw)
    init(g)
    g.forward(batch(), is_train=True)
    g.backward()
    return g, snapshot(g)


def assert_same(a, b, rtol=1e-5, atol=1e-6):
    for x, y in zip(a, b):
        if isinstance(x, list):
            assert_same(x, y, rtol, atol)
        else:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


@pytest.mark.parametrize("bn", [False, True])
def test_even_split_is_one_program_with_per_device_results(per_device, bn):
    sym = mlp(bn=bn, hidden=7 + bn)  # sizes no other test compiles
    with mx.compile.count_compiles() as n:
        g, got = run_group(sym)
    assert _runner(g) is not None
    assert n() == 1, "forward+backward of both devices: one SPMD executable"
    _, want = per_device(lambda: run_group(sym))
    assert_same(got, want)  # per-device gradients and per-device BatchNorm statistics, as MXNet


def test_gradient_sum_equals_one_device():
    sym = mlp(hidden=9)
    two, (out2, grads2, _) = run_group(sym)
    one, (out1, grads1, _) = run_group(sym, ctxs=[mx.cpu(0)])
    np.testing.assert_allclose(np.concatenate(out2) if isinstance(out2[0], list) else out2[0], out1[0], rtol=1e-6)
    for g2, g1 in zip(grads2, grads1):
        np.testing.assert_allclose(g2[0] + g2[1], g1[0], rtol=1e-5, atol=1e-6)


def test_head_gradients_inputs_need_grad_and_grad_add(per_device):
    data = mx.sym.Variable("data")
    sym = mx.sym.FullyConnected(mx.sym.tanh(data), num_hidden=4, name="fc")  # not a loss: needs head grads
    rng = np.random.default_rng(3)
    heads = [mx.nd.array(rng.uniform(-1, 1, (8, 4)))]

    def run():
        g = DataParallelExecutorGroup(sym, CTX2, [1, 1], [("data", (8, 5))], [], ["fc_weight", "fc_bias"], True,
                                      True, grad_req={"fc_weight": "add", "fc_bias": "write", "data": "write"})
        init(g)
        for _ in range(2):  # 'add' accumulates over the two backward calls
            g.forward(Batch([mx.nd.array(np.linspace(-1, 1, 40).reshape(8, 5))]), is_train=True)
            g.backward(heads)
        return ([o.asnumpy() for o in g.get_outputs()], [[x.asnumpy() for x in gr] for gr in g.grad_arrays],
                [x.asnumpy() for x in g.get_input_grads()]), g
    got, g = run()
    assert _runner(g) is not None
    want, _ = per_device(run)
    assert_same(got, want)
    with pytest.raises(mx.base.MXNetError, match="head gradient"):
        g.forward(Batch([mx.nd.ones((8, 5))]), is_train=True)
        g.backward()


def test_tnc_layout_runs_as_one_program(per_device):
    data = mx.sym.Variable("data")
    sym = mx.sym.sum(mx.sym.tanh(data), axis=0, name="s")
    desc = mx.io.DataDesc("data", (5, 4, 2), layout="TNC")
    x = np.arange(40, dtype=np.float32).reshape(5, 4, 2) / 40

    def run():
        g = DataParallelExecutorGroup(sym, CTX2, [1, 1], [desc], [], [], False, False)
        g.forward(Batch([mx.nd.array(x)]), is_train=False)
        return g, g.get_outputs()[0].asnumpy()
    g, got = run()
    assert _runner(g) is not None
    np.testing.assert_allclose(got, np.tanh(x).sum(axis=0), rtol=1e-6)


def test_uneven_split_keeps_one_executable_per_device():
    sym = mlp(hidden=10)
    params = [n for n in sym.list_arguments() if n not in ("data", "softmax_label")]
    g = DataParallelExecutorGroup(sym, CTX2, [3, 1], [("data", (8, 5))], [("softmax_label", (8,))], params,
                                  True, False)
    assert _runner(g) is None


def _train(ctxs, sym, steps=3, optimizer="sgd", **opt):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(16 * steps, 5)).astype(np.float32)
    Y = rng.integers(0, 3, 16 * steps).astype(np.float32)
    it = mx.io.NDArrayIter(X, Y, batch_size=16)
    mod = mx.mod.Module(sym, context=ctxs)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Zero())
    g = mod._exec_group
    init(g, seed=5)
    mod._params_dirty = True
    mod.init_optimizer(optimizer=optimizer, optimizer_params=opt)
    for b in it:
        mod.train_step(b)
    return mod


@pytest.mark.parametrize("optimizer,opt", [("sgd", dict(learning_rate=0.1, momentum=0.9, wd=1e-3)),
                                           ("adam", dict(learning_rate=0.01))])
def test_fused_step_over_the_mesh_equals_one_device(optimizer, opt):
    sym = mlp(hidden=11)
    with mx.compile.count_compiles() as n:
        two = _train(CTX2, sym, optimizer=optimizer, **opt)
    assert two._can_fuse() and _runner(two._exec_group) is not None
    assert n() == 1, "one fused step program for both devices"
    one = _train([mx.cpu(0)], sym, optimizer=optimizer, **opt)
    a2, _ = two.get_params()
    a1, _ = one.get_params()
    for name in a1:
        np.testing.assert_allclose(a2[name].asnumpy(), a1[name].asnumpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    g = two._exec_group
    for block in g.param_arrays:  # every device holds the same updated copy
        np.testing.assert_array_equal(block[0].asnumpy(), block[1].asnumpy())
    for block in g.grad_arrays:  # after the step each device's gradient is the sum (kvstore push/pull)
        np.testing.assert_array_equal(block[0].asnumpy(), block[1].asnumpy())


def test_optimizer_states_round_trip_after_spmd_steps(tmp_path):
    sym = mlp(hidden=11)
    two = _train(CTX2, sym, momentum=0.9, learning_rate=0.1)
    path = str(tmp_path / "opt.states")
    two.save_optimizer_states(path)
    one = _train([mx.cpu(0)], sym, momentum=0.9, learning_rate=0.1)
    path1 = str(tmp_path / "opt1.states")
    one.save_optimizer_states(path1)
    s2, s1 = two._updater.states, one._updater.states
    for k in s1:
        np.testing.assert_allclose(s2[k].asnumpy(), s1[k].asnumpy(), rtol=1e-5, atol=1e-6)
    # An imperative update after fused steps works on the same state handles.
    b = mx.io.DataBatch([mx.nd.ones((16, 5))], [mx.nd.zeros((16,))])
    two.forward_backward(b)
    two.update()
    two.train_step(b)
