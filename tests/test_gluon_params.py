"""gluon Parameter, Constant, ParameterDict and Block: MXNet's names, deferred shapes,
gradient buffers per grad_req, and .params files in MXNet's format and names."""
import os
import warnings

import numpy as np
import pytest

import jbind as mx
from jbind import gluon
from jbind.gluon import nn


def test_parameter_initialize_data_grad_and_contexts():
    p = gluon.Parameter("w", shape=(3, 2), init=mx.init.One())
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert [d.context for d in p.list_data()] == [mx.cpu(0), mx.cpu(1)]
    assert p.data(mx.cpu(1)).asnumpy().tolist() == [[1, 1]] * 3
    assert p.grad(mx.cpu(0)).shape == (3, 2) and len(p.list_grad()) == 2 and p.list_ctx() == [mx.cpu(0), mx.cpu(1)]
    p.set_data(mx.nd.full((3, 2), 5))
    assert all(d.asnumpy().sum() == 30 for d in p.list_data())
    p.grad(mx.cpu(0))[:] = 3
    p.zero_grad()
    assert p.grad(mx.cpu(0)).asnumpy().sum() == 0
    p.grad_req = "null"
    with pytest.raises(mx.MXNetError, match="grad_req='null'"):
        p.grad()
    p.grad_req = "add"
    assert p.grad(mx.cpu(0)).shape == (3, 2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        p.initialize()
    assert "already initialized" in str(w[0].message)
    assert repr(p) == "Parameter w (shape=(3, 2), dtype=<class 'numpy.float32'>)"


def test_parameter_errors_name_the_parameter():
    p = gluon.Parameter("w", shape=(0, 2), allow_deferred_init=True)
    p.initialize()
    with pytest.raises(gluon.DeferredInitializationError, match="'w'.*deferred"):
        p.data()
    with pytest.raises(RuntimeError, match="'v' has not been initialized"):
        gluon.Parameter("v", shape=(2,)).data()
    with pytest.raises(ValueError, match="invalid shape"):
        gluon.Parameter("u", shape=(0, 2)).initialize()
    with pytest.raises(AssertionError, match="incompatible"):
        p.shape = (3, 3)
    with pytest.raises(AssertionError, match="grad_req must be"):
        gluon.Parameter("t", grad_req="sometimes")


def test_deferred_init_fills_zero_dims_at_first_forward():
    net = nn.Dense(4)
    net.initialize(mx.init.Xavier())
    assert net.weight.shape == (4, 0)
    with pytest.raises(gluon.DeferredInitializationError):
        net.weight.data()
    net(mx.nd.ones((2, 7)))
    assert net.weight.shape == (4, 7) and net.weight.data().shape == (4, 7)
    assert net.weight.grad().shape == (4, 7) and net.bias.grad().asnumpy().tolist() == [0] * 4


def test_prefix_naming_and_collect_params_select():
    class Net(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.fc0 = nn.Dense(3)
                self.fc1 = nn.Dense(3)
                self.c = self.params.get_constant("c", [1.0, 2.0])

        def hybrid_forward(self, F, x, c):
            return self.fc1(self.fc0(x)) + F.sum(c)
    with mx.name.NameManager():
        a, b = Net(), Net()
        d = nn.Dense(2)
    assert (a.prefix, b.prefix, d.prefix) == ("net0_", "net1_", "dense0_")
    assert list(a.collect_params().keys()) == ["net0_c", "net0_dense0_weight", "net0_dense0_bias",
                                               "net0_dense1_weight", "net0_dense1_bias"]
    assert list(a.collect_params(".*weight").keys()) == ["net0_dense0_weight", "net0_dense1_weight"]
    assert list(a.collect_params("net0_dense1_").keys()) == ["net0_dense1_weight", "net0_dense1_bias"]
    assert a.fc1.name == "net0_dense1"
    c = a.collect_params()["net0_c"]
    assert isinstance(c, gluon.Constant) and c.grad_req == "null"
    a.initialize()
    assert c.data().asnumpy().tolist() == [1.0, 2.0]


def test_parameter_dict_get_shares_and_checks():
    pd = gluon.ParameterDict("net_")
    w = pd.get("w", shape=(2, 0), lr_mult=2.0)
    assert w.name == "net_w" and pd.get("w", shape=(0, 5)) is w and w.shape == (2, 5)
    with pytest.raises(AssertionError, match="lr_mult"):
        pd.get("w", lr_mult=3.0)
    child = gluon.ParameterDict("net_", shared=pd)
    assert child.get("w") is w
    pd.setattr("wd_mult", 0.5)
    assert w.wd_mult == 0.5
    other = gluon.ParameterDict("net_")
    other.get("w")
    with pytest.raises(AssertionError, match="same name"):
        pd.update(other)
    assert "net_w" in repr(pd)


def test_shared_params_between_blocks():
    a = nn.Dense(3, in_units=2)
    b = nn.Dense(3, in_units=2, params=a.collect_params())
    a.initialize()
    x = mx.nd.ones((1, 2))
    assert b.weight is a.weight
    np.testing.assert_array_equal(a(x).asnumpy(), b(x).asnumpy())


def _net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(4, in_units=3), nn.BatchNorm(in_channels=4), nn.Dense(2, in_units=4))
    return net


def test_save_load_parameters_structural_names_round_trip(tmp_path):
    net = _net()
    net.initialize(mx.init.Normal())
    f = str(tmp_path / "net.params")
    net.save_parameters(f)
    saved = mx.nd.load(f)
    assert sorted(saved) == ["0.bias", "0.weight", "1.beta", "1.gamma", "1.running_mean", "1.running_var",
                             "2.bias", "2.weight"]
    other = _net()
    other.load_parameters(f)
    assert other.prefix != net.prefix
    x = mx.nd.array(np.random.default_rng(0).standard_normal((5, 3)))
    np.testing.assert_allclose(other(x).asnumpy(), net(x).asnumpy(), rtol=1e-6)
    with pytest.raises(AssertionError, match="missing"):
        nn.Dense(2, in_units=4).load_parameters(f)
    small = nn.HybridSequential()
    small.add(nn.Dense(4, in_units=3))
    with pytest.raises(ValueError, match="not present"):
        small.load_parameters(f)
    small.load_parameters(f, ignore_extra=True)
    np.testing.assert_array_equal(small[0].weight.data().asnumpy(), saved["0.weight"].asnumpy())


def test_save_params_and_collect_params_save_use_prefixed_names(tmp_path):
    net = _net()
    net.initialize()
    f = str(tmp_path / "p.params")
    net.collect_params().save(f, strip_prefix=net.prefix)
    assert {"dense0_weight", "batchnorm0_running_var", "dense1_bias"} <= set(mx.nd.load(f))
    again = _net()
    again.load_parameters(f)  # no '.' in the names: the prefix-based layout
    np.testing.assert_array_equal(again[0].weight.data().asnumpy(), net[0].weight.data().asnumpy())
    with pytest.raises(ValueError, match="Prefix"):
        net.collect_params().save(f, strip_prefix="other_")


def test_load_checks_shape_and_dtype(tmp_path):
    f = str(tmp_path / "d.params")
    mx.nd.save(f, {"0.weight": mx.nd.ones((4, 5)), "0.bias": mx.nd.ones((4,))})
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3))
    with pytest.raises(AssertionError, match="shape incompatible"):
        net.load_parameters(f)
    mx.nd.save(f, {"0.weight": mx.nd.ones((4, 3), dtype="float16"), "0.bias": mx.nd.ones((4,))})
    with pytest.raises(AssertionError, match="dtype incompatible"):
        net.load_parameters(f)
    net.load_parameters(f, cast_dtype=True)
    assert net[0].weight.data().dtype == np.float32



def test_load_cast_to_saved_dtype_recasts_initialized_arrays(tmp_path):
    f = str(tmp_path / "c.params")
    mx.nd.save(f, {"w": mx.nd.ones((2, 2), dtype="int8")})
    params = gluon.ParameterDict("")
    params.get("w", shape=(2, 2), dtype="float64")
    params.load(f, cast_dtype=True, dtype_source="current")  # the parameter's dtype wins
    assert params["w"].data().dtype == np.float64
    params.load(f, cast_dtype=True, dtype_source="saved")    # now the file's: the held array follows
    assert params["w"].dtype == np.int8 and params["w"].data().dtype == np.int8
    np.testing.assert_array_equal(params["w"].data().asnumpy(), 1)

def test_hooks_apply_cast_and_summary(capsys):
    net = _net()
    net.initialize()
    seen = []
    h1 = net.register_forward_pre_hook(lambda b, inp: seen.append(("pre", inp[0].shape)))
    h2 = net.register_forward_hook(lambda b, inp, out: seen.append(("post", out.shape)))
    net(mx.nd.ones((2, 3)))
    assert seen == [("pre", (2, 3)), ("post", (2, 2))]
    h1.detach()
    h2.detach()
    net(mx.nd.ones((2, 3)))
    assert len(seen) == 2
    names = []
    net.apply(lambda b: names.append(b.name))
    assert names[-1] == net.name and len(names) == 4
    net.cast("float16")
    assert net[0].weight.data().dtype == np.float16 and net[1].gamma.data().dtype == np.float32
    net.cast("float32")
    net.summary(mx.nd.ones((2, 3)))
    out = capsys.readouterr().out
    assert "Dense-1" in out and "BatchNorm-2" in out and "Total params: 42" in out and "Trainable params: 34" in out


def test_block_attribute_rules():
    class B(gluon.Block):
        def __init__(self):
            super().__init__()
            self.a = nn.Dense(2)

    b = B()
    assert list(b._children) == ["a"]
    with pytest.raises(TypeError, match="Changing attribute type"):
        b.a = 3
    p = gluon.Parameter("q", shape=(1,))
    b.q = p
    with pytest.raises(AssertionError, match="Overriding"):
        b.q = gluon.Parameter("r", shape=(1,))


def test_blocks_in_a_plain_list_warn_that_they_are_not_collected():
    class B(gluon.Block):
        def __init__(self, register):
            super().__init__()
            self.layers = [nn.Dense(2, in_units=2)]
            if register:
                self.register_child(self.layers[0])

    with pytest.warns(UserWarning, match="unregistered container"):
        assert len(B(False).collect_params()) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(B(True).collect_params()) == 2


def test_a_hook_registered_twice_runs_once_and_either_handle_detaches_it():
    """MXNet keys hooks by the hook object (id): registering it again replaces the entry."""
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    calls = []
    hook = lambda block, inputs, outputs: calls.append(1)  # noqa: E731
    h1 = net.register_forward_hook(hook)
    h2 = net.register_forward_hook(hook)
    net(mx.nd.ones((1, 3)))
    assert len(calls) == 1
    h1.detach()
    net(mx.nd.ones((1, 3)))
    assert len(calls) == 1   # gone for both handles
    h2.detach()              # detaching again is harmless
    other = net.register_forward_hook(lambda *a: calls.append(2))
    net(mx.nd.ones((1, 3)))
    assert calls == [1, 2]
    other.detach()
