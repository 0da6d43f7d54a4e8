"""What a Gluon training step keeps between steps (hybridized calls' keys and vjps, the
Trainer's update programs, backward's casts): a change of shape, grad_req or batch
size is seen, and the numbers are those of a step computed without the kept state."""
import jax
import numpy as np

import jbind as mx
from jbind import autograd, gluon, random as jrandom
from jbind.autograd import _backward
from jbind.compile import _options
from jbind.context import context_of_device
from jbind.gluon import _cached_graph, nn


def _mlp(hybridize, dropout=0.0):
    net = nn.HybridSequential()
    net.add(nn.Dense(6, activation="relu", in_units=5))
    if dropout:
        net.add(nn.Dropout(dropout))
    net.add(nn.Dense(3, in_units=6))
    net.initialize(mx.init.Xavier(rnd_type="gaussian"))
    rng = np.random.default_rng(0)
    for p in net.collect_params().values():
        p.set_data(mx.nd.array(rng.standard_normal(p.shape).astype(np.float32) * 0.3))
    if hybridize:
        net.hybridize()
    return net


def _batch(n, seed=1):
    rng = np.random.default_rng(seed)
    return mx.nd.array(rng.standard_normal((n, 5)).astype(np.float32)), mx.nd.array(rng.integers(0, 3, n))


def _train(hybridize, sizes, grad_req=None, steps_per_req=1):
    net = _mlp(hybridize)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "wd": 0.01})
    losses = []
    for k, n in enumerate(sizes):
        if grad_req is not None and k % steps_per_req == 0:
            net.collect_params().setattr("grad_req", grad_req[(k // steps_per_req) % len(grad_req)])
            net.collect_params().zero_grad()
        x, y = _batch(n, seed=k)
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        tr.step(n)
        losses.append(loss.asnumpy())
    return net, losses, tr


def test_hybridized_steps_match_imperative_steps_across_shapes_and_grad_reqs():
    sizes = [4, 4, 7, 4, 7, 7]
    for req in (None, ("write", "add")):
        a, la, _ = _train(True, sizes, req, steps_per_req=2)
        b, lb, _ = _train(False, sizes, req, steps_per_req=2)
        for x, y in zip(la, lb):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
        for p, q in zip(a.collect_params().values(), b.collect_params().values()):
            np.testing.assert_allclose(p.data().asnumpy(), q.data().asnumpy(), rtol=1e-5, atol=1e-6)


def test_grad_req_null_on_one_parameter_changes_the_kept_vjp():
    net = _mlp(True)
    x, y = _batch(4)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def grads():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        return {n: p.grad().asnumpy() for n, p in net.collect_params().items() if p.grad_req != "null"}
    full = grads()
    first = next(iter(net.collect_params().values()))
    first.grad_req = "null"
    part = grads()
    assert first.name not in part and set(part) == set(full) - {first.name}
    for n, g in part.items():
        np.testing.assert_allclose(g, full[n], rtol=1e-6)


def test_a_graph_without_random_ops_draws_nothing_and_dropout_draws_anew():
    x, _ = _batch(8)
    net = _mlp(True)
    gen = jrandom._generator(None)
    with autograd.record():
        net(x)
    before = gen.counter
    with autograd.record():
        net(x)
    assert gen.counter == before
    drop = _mlp(True, dropout=0.5)
    with autograd.record():
        a = drop(x).asnumpy()
    with autograd.record():
        b = drop(x).asnumpy()
    assert gen.counter == before + 2 and not np.array_equal(a, b)
    key = _cached_graph.key_data(True, jax.devices()[0])
    assert key.shape == (2,) and key.sharding.device_set == {jax.devices()[0]}


def test_trainer_keeps_an_update_per_batch_size_and_updates_like_sgd():
    net, _, tr = _train(False, [4, 7, 4, 7])
    assert len(tr._jit) == 2   # rescale_grad 1/4 and 1/7: both kept, neither recompiled
    fns = dict(tr._jit)
    p = net.collect_params()
    w = {n: q.data().asnumpy() for n, q in p.items()}
    x, y = _batch(7, seed=11)
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(net(x), y)
    loss.backward()
    g = {n: q.grad().asnumpy() for n, q in p.items()}
    tr.step(7)
    assert dict(tr._jit) == fns
    for n, q in p.items():  # sgd: w - lr * (grad / batch + wd * w)
        np.testing.assert_allclose(q.data().asnumpy(), w[n] - 0.1 * (g[n] / 7 + 0.01 * w[n]), rtol=1e-5, atol=1e-6)


def test_backward_casts_a_gradient_only_to_its_buffers_dtype():
    x = mx.nd.array([1.0, 2.0])
    g16 = mx.nd.zeros((2,), dtype=np.float16)
    autograd.mark_variables([x], [g16])
    with autograd.record():
        y = (x * x).sum()
    y.backward()
    assert g16.dtype == np.float16 and not g16._data.weak_type
    np.testing.assert_allclose(g16.asnumpy(), [2.0, 4.0])
    g = _backward._as_dtype(jax.numpy.ones(2, np.float32), np.dtype(np.float32))
    assert g.dtype == np.float32
    weak = jax.numpy.asarray(1.0)
    assert weak.weak_type and not _backward._as_dtype(weak, weak.dtype).weak_type


def test_small_jit_keys_weak_types_and_devices_apart():
    f = _options.jit(lambda a: a * 2)
    strong, weak = jax.numpy.ones((), np.float32), jax.numpy.asarray(1.0)
    other = jax.device_put(strong, jax.devices()[1])
    for v in (strong, weak, other, strong, weak, other):
        out = f(v)
        assert out.weak_type == v.weak_type and out.sharding.device_set == v.sharding.device_set
    assert len(f._compiled) == 3


def test_contexts_of_a_device_are_separate_scopes():
    dev = jax.devices()[1]
    a, b = context_of_device(dev), context_of_device(dev)
    assert a == b and a is not b and a.jax_device is dev
    outer = mx.current_context()
    with a:
        with b:
            assert mx.current_context() is b
        assert mx.current_context() is a
    assert mx.current_context() == outer
