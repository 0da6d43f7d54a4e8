"""gluon.Trainer: SGD steps by hand, stale gradients, states files, several contexts."""
import numpy as np
import pytest

import jbind as mx
from jbind import autograd, gluon


def _net(ctx=None, seed=0):
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(0.0), ctx=ctx)
    rng = np.random.RandomState(seed)
    w, b = rng.randn(2, 3).astype(np.float32), rng.randn(2).astype(np.float32)
    net.weight.set_data(mx.nd.array(w))
    net.bias.set_data(mx.nd.array(b))
    return net, w, b


def _data(n=4):
    rng = np.random.RandomState(1)
    return rng.randn(n, 3).astype(np.float32), rng.randn(n, 2).astype(np.float32)


def _backward(net, x, y, ctx=None):
    loss_fn = gluon.loss.L2Loss()
    with autograd.record():
        loss = loss_fn(net(mx.nd.array(x, ctx=ctx)), mx.nd.array(y, ctx=ctx))
    loss.backward()
    return loss


def test_one_sgd_step_matches_the_hand_computed_update():
    net, w, b = _net()
    x, y = _data()
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5, "wd": 0.1})
    _backward(net, x, y)
    tr.step(x.shape[0])
    d = (x @ w.T + b - y) / 2        # L2Loss: mean over the 2 outputs of d**2 / 2
    gw, gb = d.T @ x / 4, d.sum(0) / 4
    np.testing.assert_allclose(net.weight.data().asnumpy(), w - 0.5 * (gw + 0.1 * w), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.bias.data().asnumpy(), b - 0.5 * (gb + 0.1 * b), rtol=1e-5, atol=1e-6)


def test_training_reduces_the_loss():
    net, _, _ = _net()
    x, y = _data(8)
    tr = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    first = _backward(net, x, y).mean().asscalar()
    tr.step(8)
    for _ in range(20):
        _backward(net, x, y)
        tr.step(8)
    assert _backward(net, x, y).mean().asscalar() < 0.5 * first


def test_learning_rate_get_and_set():
    net, _, _ = _net()
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.3})
    assert tr.learning_rate == pytest.approx(0.3)
    tr.set_learning_rate(0.7)
    assert tr.learning_rate == pytest.approx(0.7)
    with pytest.raises(mx.MXNetError, match="optimizer_params"):
        gluon.Trainer(net.collect_params(), mx.optimizer.SGD(), {"learning_rate": 0.1})


def test_stale_gradient_is_an_error_unless_ignored():
    net, _, _ = _net()
    x, y = _data()
    tr = gluon.Trainer(net.collect_params(), "sgd")
    _backward(net, x, y)
    tr.step(4)
    with pytest.raises(mx.MXNetError, match="ignore_stale_grad"):
        tr.step(4)
    before = net.weight.data().asnumpy()
    tr.step(4, ignore_stale_grad=True)            # nothing fresh: nothing updated
    np.testing.assert_array_equal(net.weight.data().asnumpy(), before)


def test_allreduce_then_update_equals_step():
    x, y = _data()
    a, _, _ = _net()
    b, _, _ = _net()
    ta = gluon.Trainer(a.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    tb = gluon.Trainer(b.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    for _ in range(2):
        _backward(a, x, y)
        ta.step(4)
        _backward(b, x, y)
        tb.allreduce_grads()
        tb.update(4)
    np.testing.assert_allclose(a.weight.data().asnumpy(), b.weight.data().asnumpy(), rtol=1e-6)


def test_save_and_load_states_round_trip(tmp_path):
    x, y = _data()
    net, _, _ = _net()
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    _backward(net, x, y)
    tr.step(4)
    fname = str(tmp_path / "t.states")
    tr.save_states(fname)
    twin, _, _ = _net()
    twin.weight.set_data(mx.nd.array(net.weight.data().asnumpy()))
    twin.bias.set_data(mx.nd.array(net.bias.data().asnumpy()))
    tt = gluon.Trainer(twin.collect_params(), "sgd", {"learning_rate": 0.5})
    tt.load_states(fname)
    assert tt.learning_rate == pytest.approx(0.1)
    for n, t in ((net, tr), (twin, tt)):
        _backward(n, x, y)
        t.step(4)
    np.testing.assert_allclose(twin.weight.data().asnumpy(), net.weight.data().asnumpy(), rtol=1e-6)


def test_a_malicious_states_file_is_refused(tmp_path):
    import pickle

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))
    fname = tmp_path / "evil.states"
    fname.write_bytes(pickle.dumps({0: Evil()}))
    net, _, _ = _net()
    tr = gluon.Trainer(net.collect_params(), "sgd")
    with pytest.raises(mx.MXNetError, match="evil.states"):
        tr.load_states(str(fname))


def test_two_contexts_update_as_one_context_on_the_whole_batch():
    x, y = _data(4)
    ctxs = [mx.cpu(0), mx.cpu(1)]
    multi, _, _ = _net(ctx=ctxs)
    single, _, _ = _net()
    tm = gluon.Trainer(multi.collect_params(), "sgd", {"learning_rate": 0.2})
    ts = gluon.Trainer(single.collect_params(), "sgd", {"learning_rate": 0.2})
    loss_fn = gluon.loss.L2Loss()
    with autograd.record():
        losses = [loss_fn(multi(mx.nd.array(x[i::2], ctx=c)), mx.nd.array(y[i::2], ctx=c))
                  for i, c in enumerate(ctxs)]
    autograd.backward(losses)
    tm.step(4)
    _backward(single, x, y)
    ts.step(4)
    for c in ctxs:
        np.testing.assert_allclose(multi.weight.data(c).asnumpy(), single.weight.data().asnumpy(), rtol=1e-5,
                                   atol=1e-6)


def test_bad_arguments_are_named():
    with pytest.raises(mx.MXNetError, match="Parameters"):
        gluon.Trainer([1, 2], "sgd")
    net, _, _ = _net()
    with pytest.raises(mx.MXNetError, match="kvstore"):
        gluon.Trainer(net.collect_params(), "sgd", kvstore="dist_async")


def test_all_parameters_update_in_one_compiled_call_compiled_once():
    net, _, _ = _net()
    x, y = _data()
    tr = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.1})
    for k in range(3):
        _backward(net, x, y)
        tr.set_learning_rate(0.1 / (k + 1))      # rates and counts are arguments: no recompile
        tr.step(4)
    fn = tr._compiled()
    assert len(tr._jit) == 1 and fn._cache_size() == 1


def test_a_kvstore_object_and_update_on_kvstore():
    x = gluon.Parameter("x", shape=(3,))
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    kv = mx.kv.create("device")
    tr = gluon.Trainer([x], "sgd", {"learning_rate": 1.0}, kvstore=kv)
    with autograd.record():
        ys = [w + 1 for w in x.list_data()]
    autograd.backward(ys)
    tr.step(1)
    assert tr._kvstore is kv and tr._update_on_kvstore is True
    np.testing.assert_array_equal(x.data(mx.cpu(1)).asnumpy(), [-2, -2, -2])   # grads of both contexts summed
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        tr.update(1)
