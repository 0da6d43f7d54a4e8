"""What a training step spares per call keeps MXNet's numbers: the packed rates and the
draw counter a step finds already on the device (jbind/optimizer/_packed.py), the batch
array a handle takes over instead of copying, the donation bookkeeping."""
import jax
import numpy as np
import pytest

import jbind as mx
from jbind import random as random_mod
from jbind.executor import step as step_mod
from jbind.executor import _draws
from jbind.optimizer._packed import Predicted, increment, pack_rates


def dropout_mlp():
    """A model whose numbers depend on the draw counter (Dropout)."""
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=16, name="fc1"), act_type="relu")
    h = mx.sym.Dropout(h, p=0.5)
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def _batch(n=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5)).astype(np.float32)
    y = rng.integers(0, 3, n).astype(np.float32)
    return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], provide_data=[mx.io.DataDesc("data", (n, 5))],
                           provide_label=[mx.io.DataDesc("softmax_label", (n,))], bucket_key=n)


@pytest.fixture
def hits(monkeypatch):
    """Counts how often a step took its numbers from the device (True) or the host (False)."""
    seen = []
    pick = Predicted.pick

    def spy(self, buf, sharding=None):
        got = pick(self, buf, sharding)
        seen.append(got is self.dev)
        return got
    monkeypatch.setattr(Predicted, "pick", spy)
    return seen


def _host_only(monkeypatch):
    """Every step sends its numbers from the host (the path without any prediction)."""
    monkeypatch.setattr(Predicted, "pick", lambda self, buf, sharding=None:
                        buf if sharding is None else jax.device_put(buf, sharding))
    monkeypatch.setattr(_draws, "device_counter", lambda device, counter: counter)


def _run_module(how, bucketing=False):
    mx.random.seed(5)
    if bucketing:
        mod = mx.mod.BucketingModule(lambda k: (dropout_mlp(), ("data",), ("softmax_label",)), default_bucket_key=8)
        mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    else:
        mod = mx.mod.Module(dropout_mlp(), context=mx.cpu())
        mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params(mx.init.Uniform(0.3))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    opt = mod._curr_module._optimizer if bucketing else mod._optimizer
    outs = []
    for i in range(6):
        if i == 2:
            mx.nd.random.uniform(shape=(2,))   # another draw: the counter jumps
        if i == 3:
            opt.set_learning_rate(0.05)  # the rates change
        if i == 4:
            opt.rescale_grad = 0.5   # another program (the optimizer's fingerprint)
        b = _batch(4 if bucketing and i % 2 else 8, seed=i)
        if how == "fused":
            mod.train_step(b)
        else:
            mod.forward_backward(b)
            mod.update()
        outs.append(mod.get_outputs()[0].asnumpy())
    params = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    return outs, params


def _assert_same(a, b):
    for x, y in zip(a[0], b[0]):
        np.testing.assert_array_equal(x, y)
    for k in a[1]:
        np.testing.assert_array_equal(a[1][k], b[1][k])


@pytest.mark.parametrize("how,bucketing", [("fused", False), ("fused", True), ("separate", False)])
def test_numbers_found_on_the_device_match_the_host_path(monkeypatch, hits, how, bucketing):
    fast = _run_module(how, bucketing)
    assert True in hits, "steady steps take their numbers from the device"
    assert False in hits[1:], "a jumped counter, a new rate or a new program sends them again"
    with monkeypatch.context() as m:
        _host_only(m)
        slow = _run_module(how, bucketing)
    _assert_same(fast, slow)


def test_executor_counter_on_the_device_matches_the_host_path(monkeypatch):
    def run():
        mx.random.seed(2)
        exe = dropout_mlp().simple_bind(mx.cpu(), data=(8, 5), softmax_label=(8,), grad_req="add")
        for name, h in exe.arg_dict.items():
            h[:] = np.random.default_rng(len(name)).normal(size=h.shape).astype(np.float32)
        got = []
        for i in range(4):
            if i == 2:
                mx.nd.random.uniform(shape=(2,))
            exe.forward(is_train=True)
            exe.backward()
            got.append([exe.outputs[0].asnumpy()] + [g.asnumpy() for g in exe.grad_arrays if g is not None])
        return exe, got
    exe, fast = run()
    host, dev = _draws.NEXT_COUNTER[exe._device]
    assert int(dev) == host == random_mod._get("cpu", 0).counter, "the next draw's counter, on the device"
    with monkeypatch.context() as m:
        m.setattr(_draws, "device_counter", lambda device, counter: counter)
        _, slow = run()
    for a, b in zip(fast, slow):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_predicted_gives_the_device_array_only_for_the_predicted_numbers():
    p = Predicted(increment(2, lead=(0, 1)))
    buf = pack_rates([0.1, 0.2], [0.0, 0.0], [1, 1], lead=(7, 3))
    assert p.pick(buf) is buf  # nothing predicted yet
    dev = jax.device_put(buf + p.inc)
    p.after(buf, dev)
    nxt = pack_rates([0.1, 0.2], [0.0, 0.0], [2, 2], lead=(7, 4))
    assert p.pick(nxt) is dev
    for other in (pack_rates([0.1, 0.3], [0.0, 0.0], [2, 2], lead=(7, 4)),   # a new rate
                  pack_rates([0.1, 0.2], [0.0, 0.0], [2, 3], lead=(7, 4)),   # one count ahead
                  pack_rates([0.1, 0.2], [0.0, 0.0], [2, 2], lead=(8, 4))):  # reseeded
        assert p.pick(other) is other


def test_update_sends_no_rates_in_a_steady_loop_and_compiles_once(hits):
    mod = mx.mod.Module(dropout_mlp(), context=mx.cpu())
    mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params(mx.init.Uniform(0.3))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    b = _batch()
    for _ in range(2):
        mod.forward_backward(b)
        mod.update()
    with mx.compile.count_compiles() as n:
        for _ in range(3):
            mod.forward_backward(b)
            mod.update()
    assert hits[-3:] == [True] * 3
    assert n() == 0


def test_batch_array_is_shared_not_copied_and_writes_stay_apart():
    mod = mx.mod.Module(dropout_mlp(), context=mx.cpu())
    mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params(mx.init.Uniform(0.3))
    b = _batch()
    mod.forward(b, is_train=False)
    h = mod._exec_group.execs[0].arg_dict["data"]
    assert h._data is b.data[0]._data
    h[:] = 0
    assert np.abs(b.data[0].asnumpy()).sum() > 0, "the batch keeps its values"
    b64 = mx.io.DataBatch([mx.nd.array(np.ones((8, 5)), dtype=np.float64)], b.label)
    mod.forward(b64, is_train=False)
    assert h.dtype == np.float32 and h._data is not b64.data[0]._data
    np.testing.assert_array_equal(h.asnumpy(), 1)


def test_own_copies_a_foreign_buffer_once():
    h = mx.nd.ones((3,))
    theirs = h._data
    step_mod._own(h)
    assert h._data is not theirs, "a buffer the step did not make is copied before donation"
    mine = h._data
    step_mod._own(h)
    assert h._data is mine, "its own buffer is not copied again"
    np.testing.assert_array_equal(theirs, 1)
