"""Contexts: as in MXNet, every cpu(i) is valid; past JAX's CPU devices it shares device i % n."""
import jax
import numpy as np
import pytest

import jbind as mx

N_CPU = len(jax.local_devices(backend="cpu"))


def test_cpu_past_device_count_keeps_its_label():
    a = mx.nd.ones((2, 3), ctx=mx.cpu(5))
    assert a.context == mx.cpu(5) and repr(a.context) == "cpu(5)"
    assert a.data.devices() == {jax.local_devices(backend="cpu")[5 % N_CPU]}
    b = (a * 2 + 1)[0].reshape((3, 1))
    assert b.context == mx.cpu(5)
    assert mx.nd.sum(a).context == mx.cpu(5)
    assert mx.nd.zeros((2,), ctx=mx.cpu(5)).context == mx.cpu(5)
    with mx.cpu(6):
        assert mx.nd.random.uniform(shape=(2,)).context == mx.cpu(6)
        assert mx.nd.arange(3).context == mx.cpu(6)
    assert mx.cpu(5) != mx.cpu(5 % N_CPU) and mx.cpu(5) == mx.Context("cpu", 5)


def test_copyto_between_labels_on_one_device():
    a = mx.nd.array(np.arange(6).reshape(2, 3), ctx=mx.cpu(3))
    b = a.copyto(mx.cpu(0))
    assert b.context == mx.cpu(0)
    c = b.as_in_context(mx.cpu(3))
    assert c.context == mx.cpu(3)
    np.testing.assert_array_equal(c.asnumpy(), np.arange(6).reshape(2, 3))
    c[:] = 7
    assert c.context == mx.cpu(3) and b.asnumpy()[0, 1] == 1  # a copy, not shared
    d = mx.nd.zeros((2, 3), ctx=mx.cpu(0))
    c.copyto(d)
    assert d.context == mx.cpu(0) and d.asnumpy().sum() == 42


def test_gpu_past_gpu_count_raises():
    with pytest.raises(mx.base.MXNetError, match=r"gpu\(64\) does not exist"):
        mx.nd.ones((1,), ctx=mx.gpu(64))
    with pytest.raises(mx.base.MXNetError, match=r"cpu\(-1\) does not exist"):
        mx.nd.ones((1,), ctx=mx.cpu(-1))


def test_gluon_trains_over_more_cpu_contexts_than_devices():
    ctxs = [mx.cpu(i) for i in range(4)]
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.One(), ctx=ctxs)
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = np.arange(24, dtype=np.float32).reshape(8, 3) / 10
    parts = mx.gluon.utils.split_and_load(mx.nd.array(x), ctxs)
    assert [p.context for p in parts] == ctxs
    with mx.autograd.record():
        losses = [net(p).sum() for p in parts]
    for loss in losses:
        loss.backward()
    trainer.step(8)
    want = 1 - 0.1 * x.sum(axis=0) / 8  # d(sum of outputs)/dW[j, k] = sum of x[:, k]
    for c in ctxs:
        assert net.weight.data(c).context == c
        np.testing.assert_allclose(net.weight.data(c).asnumpy(), np.tile(want, (2, 1)), rtol=1e-5)


def test_sparse_copyto_keeps_the_cpu_label():
    rsp = mx.nd.sparse.row_sparse_array((np.ones((1, 2), np.float32), np.array([1])), shape=(3, 2))
    far = rsp.copyto(mx.cpu(3))
    assert far.context == mx.cpu(3) and far.stype == "row_sparse"
    np.testing.assert_array_equal(far.asnumpy(), rsp.asnumpy())


def test_current_context_and_deprecated_default_ctx_read_the_with_scope():
    assert mx.Context.current_context() == mx.cpu(0)
    with mx.cpu(1):
        assert mx.Context.current_context() == mx.cpu(1)
        with pytest.warns(DeprecationWarning, match="default_ctx"):
            assert mx.Context.default_ctx == mx.cpu(1)
    with pytest.warns(DeprecationWarning):
        assert mx.Context.default_ctx == mx.cpu(0)
