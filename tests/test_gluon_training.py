"""Gluon blocks under mx.autograd: a hybridized block's training pass is one recorded
node whose gradients equal the imperative block's; running statistics, dropout masks,
grad_req 'add' and zero_grad behave as MXNet's."""
import numpy as np

import jbind as mx
from jbind import autograd
from jbind.gluon import nn


def _pair():
    """Two copies of one network (same weights); the second hybridized."""
    nets = []
    for _ in range(2):
        with mx.name.NameManager():
            net = nn.HybridSequential()
            with net.name_scope():
                net.add(nn.Dense(6, activation="relu", in_units=4), nn.BatchNorm(in_channels=6, momentum=0.5),
                        nn.Dense(2, in_units=6))
        net.initialize(mx.init.Xavier())
        nets.append(net)
    for pa, pb in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
        pb.set_data(pa.data())
    nets[1].hybridize()
    return nets


def _x(*shape, seed=0):
    return mx.nd.array(np.random.default_rng(seed).standard_normal(shape))


def _step(net, x):
    with autograd.record():
        y = net(x)
        loss = (y * y).sum()
    loss.backward()
    return y


def test_hybridized_gradients_and_running_stats_equal_the_imperative_ones():
    a, b = _pair()
    x = _x(5, 4)
    ya, yb = _step(a, x), _step(b, x)
    np.testing.assert_allclose(ya.asnumpy(), yb.asnumpy(), rtol=1e-5, atol=1e-6)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        if pa.grad_req != "null":
            np.testing.assert_allclose(pa.grad().asnumpy(), pb.grad().asnumpy(), rtol=1e-4, atol=1e-5)
        else:  # running statistics moved by the training forward, in both
            np.testing.assert_allclose(pa.data().asnumpy(), pb.data().asnumpy(), rtol=1e-5, atol=1e-6)
    assert np.abs(b[1].running_mean.data().asnumpy()).sum() > 0
    with mx.compile.count_compiles() as n:
        for _ in range(2):
            _step(b, x)
    assert n() == 0


def test_input_gradient_and_inference_outside_record():
    _, b = _pair()
    x = _x(3, 4)
    x.attach_grad()
    with autograd.record():
        y = b(x)
    y.backward()
    assert x.grad.shape == (3, 4) and np.abs(x.grad.asnumpy()).sum() > 0
    before = b[1].running_var.data().asnumpy().copy()
    b(x)  # inference: running statistics unchanged
    np.testing.assert_array_equal(b[1].running_var.data().asnumpy(), before)


def test_hybridized_dropout_backward_uses_the_forward_mask():
    net = nn.Dropout(0.5)
    net.hybridize()
    x = mx.nd.ones((50, 8))
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    kept = y.asnumpy() != 0
    assert 0.2 < kept.mean() < 0.8
    np.testing.assert_allclose(x.grad.asnumpy(), kept * 2.0)
    np.testing.assert_array_equal(net(x).asnumpy(), x.asnumpy())  # identity outside training


def test_grad_req_add_accumulates_and_zero_grad_clears():
    net = nn.Dense(2, in_units=3)
    net.initialize(mx.init.One())
    net.collect_params().setattr("grad_req", "add")
    net.hybridize()
    x = mx.nd.ones((1, 3))
    for _ in range(2):
        with autograd.record():
            y = net(x)
        y.backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), np.full((2, 3), 2.0))
    net.zero_grad()
    assert net.weight.grad().asnumpy().sum() == 0
