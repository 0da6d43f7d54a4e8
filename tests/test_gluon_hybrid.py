"""HybridBlock.hybridize on jbind's executors and compile cache; export, SymbolBlock."""
import numpy as np
import pytest

import jbind as mx
from jbind import gluon
from jbind.gluon import nn


def _mlp(prefix=None):
    net = nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"), nn.BatchNorm(), nn.Dense(3))
    return net


def _x(*shape, seed=0):
    return mx.nd.array(np.random.default_rng(seed).standard_normal(shape))


def test_hybridized_matches_imperative_and_traces_mxnet_names():
    net = _mlp("mlp_")
    net.initialize(mx.init.Xavier())
    x = _x(4, 5)
    y0 = net(x).asnumpy()
    net.hybridize()
    y1 = net(x).asnumpy()
    np.testing.assert_allclose(y0, y1, rtol=1e-5, atol=1e-6)
    inputs, out = net._cached_graph
    assert [i.name for i in inputs] == ["data"]
    assert out.list_arguments() == ["data", "mlp_dense0_weight", "mlp_dense0_bias", "mlp_batchnorm0_gamma",
                                    "mlp_batchnorm0_beta", "mlp_dense1_weight", "mlp_dense1_bias"]
    assert out.list_auxiliary_states() == ["mlp_batchnorm0_running_mean", "mlp_batchnorm0_running_var"]
    assert out.list_outputs() == ["mlp_dense1_fwd_output"]
    net.hybridize(False)
    np.testing.assert_allclose(net(x).asnumpy(), y0, rtol=1e-6)


def test_one_compile_per_architecture_and_shape():
    a, b = _mlp(), _mlp()
    for n in (a, b):
        n.initialize()
        n.hybridize()
    a(_x(2, 5))  # warm: this architecture at this shape is compiled now
    with mx.compile.count_compiles() as n:
        for _ in range(3):
            a(_x(2, 5))
        b(_x(2, 5))          # another instance, other parameter names: same executable
    assert n() == 0
    with mx.compile.count_compiles() as n:
        a(_x(3, 5))
        b(_x(3, 5))
        a(_x(3, 5))
    assert n() == 1          # a new batch size: one compile, shared by both instances


def test_parameter_writes_reach_the_hybridized_call():
    net = nn.Dense(2, in_units=3, use_bias=False)
    net.initialize(mx.init.One())
    net.hybridize()
    x = mx.nd.ones((1, 3))
    assert net(x).asnumpy().tolist() == [[3, 3]]
    net.weight.set_data(mx.nd.full((2, 3), 2))
    assert net(x).asnumpy().tolist() == [[6, 6]]
    net.initialize(mx.init.Zero(), force_reinit=True)
    assert net(x).asnumpy().tolist() == [[0, 0]]


def test_deferred_init_through_the_hybridized_call_and_infer_shape():
    net = _mlp()
    net.initialize()
    net.hybridize()
    assert net(_x(2, 6)).shape == (2, 3)
    assert net[0].weight.shape == (8, 6) and net[1].running_var.shape == (8,)
    other = _mlp()
    other.infer_shape(_x(2, 4))
    assert other[0].weight.shape == (8, 4) and other[2].weight.shape == (3, 8)


def test_multiple_inputs_outputs_and_symbol_composition():
    class Two(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.fc = nn.Dense(2, in_units=3)

        def hybrid_forward(self, F, x, y):
            h = self.fc(x)
            return h + y, [h * 2, F.relu(y)]

    net = Two()
    net.initialize()
    x, y = _x(4, 3), _x(4, 2, seed=1)
    ref = net(x, y)
    net.hybridize()
    got = net(x, y)
    assert isinstance(got, tuple) or isinstance(got, list)
    for r, g in zip([ref[0], *ref[1]], [got[0], *got[1]]):
        np.testing.assert_allclose(r.asnumpy(), g.asnumpy(), rtol=1e-6)
    assert [i.name for i in net._cached_graph[0]] == ["data0", "data1"]
    s = net(mx.sym.var("a"), mx.sym.var("b"))
    assert s[0].list_arguments() == ["a", net.fc.weight.name, net.fc.bias.name, "b"]


def test_hybridized_errors():
    net = nn.Dense(2)
    net.initialize()
    net.hybridize()
    with pytest.raises(ValueError, match="mixed NDArrays and Symbols"):
        net(mx.nd.ones((1, 2)), mx.sym.var("a"))
    with pytest.raises(ValueError, match="must be"):
        net(mx.nd.ones((1, 2)), 1)


def test_export_loads_in_module_and_symbolblock(tmp_path):
    net = _mlp("exp_")
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = _x(4, 5)
    net[1].running_mean.set_data(mx.nd.array(np.linspace(-1, 1, 8)))
    y = net(x).asnumpy()
    prefix = str(tmp_path / "mlp")
    files = net.export(prefix, epoch=3)
    assert files == (prefix + "-symbol.json", prefix + "-0003.params")
    names = set(mx.nd.load(files[1]))
    assert "arg:exp_dense0_weight" in names and "aux:exp_batchnorm0_running_mean" in names
    sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, 3)
    mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (4, 5))], for_training=False)
    mod.set_params(arg_params, aux_params)
    mod.forward(mx.io.DataBatch([x]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), y, rtol=1e-5, atol=1e-6)
    block = gluon.SymbolBlock.imports(files[0], ["data"], files[1])
    np.testing.assert_allclose(block(x).asnumpy(), y, rtol=1e-5, atol=1e-6)
    assert block.params["exp_batchnorm0_running_var"].grad_req == "null"
    with pytest.raises(RuntimeError, match="hybridize"):
        _mlp().export(prefix)


def test_symbolblock_from_symbols_defers_and_shares_compiles():
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    out = mx.sym.Activation(out, act_type="tanh")
    blocks = [gluon.SymbolBlock(out, data) for _ in range(2)]
    for b in blocks:
        b.initialize(mx.init.One())
    x = _x(2, 4)
    # as in MXNet, a parameter without its own init takes the global one, bias included
    np.testing.assert_allclose(blocks[0](x).asnumpy(), np.tanh(x.asnumpy().sum(1, keepdims=True) + np.ones(3)),
                               rtol=1e-5)
    assert blocks[0].params["fc_weight"].shape == (3, 4)
    with mx.compile.count_compiles() as n:
        blocks[1](x)
    assert n() == 0
    s = blocks[0](mx.sym.var("z"))
    assert s.list_arguments() == ["z", "fc_weight", "fc_bias"]


def test_symbolblock_refuses_row_sparse_variables():
    data = mx.sym.var("data")
    out = mx.sym.dot(data, mx.sym.var("weight", stype="row_sparse"))
    with pytest.raises(AssertionError, match="'weight' because its storage type is 'row_sparse'"):
        gluon.SymbolBlock(out, data)


def test_symbolblock_wraps_internal_outputs():
    net = _mlp("feat_")
    net.initialize()
    net.hybridize()
    net(_x(2, 5))
    internals = net._cached_graph[1].get_internals()
    feat = internals["feat_dense0_relu_fwd_output"]
    block = gluon.SymbolBlock(feat, mx.sym.var("data"), params=net.collect_params())
    got = block(_x(2, 5)).asnumpy()
    ref = np.maximum(_x(2, 5).asnumpy() @ net[0].weight.data().asnumpy().T + net[0].bias.data().asnumpy(), 0)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


class _FakeAutograd:
    """Stands in for `mx.autograd` (another branch): training and recording on, and
    `record_call` keeps what a hybridized block hands it."""

    def __init__(self):
        self.calls = []

    def is_training(self):
        return True

    def is_recording(self):
        return True

    def record_call(self, fn, sig, inputs, outputs, kind, **kept):  # kept: residuals, when in a graph
        self.calls.append((fn, sig, inputs, outputs, kind))

    def mark_variables(self, variables, gradients, grad_reqs):
        self.calls.append(("mark", variables, gradients, grad_reqs))


def test_parameters_mark_their_gradient_buffers_for_autograd(monkeypatch):
    from jbind.gluon import _cached_graph
    fake = _FakeAutograd()
    monkeypatch.setattr(_cached_graph, "_AUTOGRAD", [fake])
    p = gluon.Parameter("w", shape=(2, 3), grad_req="add")
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    tag, variables, grads, req = fake.calls[-1]
    assert tag == "mark" and req == "add"
    assert variables == p.list_data() and grads == p.list_grad()
    p.cast("float16")
    assert fake.calls[-1][1] == p.list_data() and fake.calls[-1][2][0].dtype == np.float16
    n = len(fake.calls)
    gluon.Parameter("c", shape=(2,), grad_req="null").initialize()
    assert len(fake.calls) == n  # no gradient, nothing to mark


def test_training_call_updates_running_stats_and_records_a_pure_function(monkeypatch):
    from jbind.gluon import _cached_graph
    fake = _FakeAutograd()
    monkeypatch.setattr(_cached_graph, "_AUTOGRAD", [fake])
    nets = [nn.HybridSequential() for _ in range(2)]
    for net in nets:
        with net.name_scope():
            net.add(nn.Dense(4, in_units=3), nn.BatchNorm(in_channels=4, momentum=0.5))
        net.initialize(mx.init.Xavier())
        net.hybridize()
    x = _x(8, 3)
    y = nets[0](x)
    h = x.asnumpy() @ nets[0][0].weight.data().asnumpy().T + nets[0][0].bias.data().asnumpy()
    ref = (h - h.mean(0)) / np.sqrt(h.var(0) + 1e-5)  # batch statistics in training
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(nets[0][1].running_mean.data().asnumpy(), 0.5 * h.mean(0), rtol=1e-4, atol=1e-5)
    fn, sig, inputs, outputs, kind = fake.calls[-1]
    assert outputs == [y] and kind == "HybridBlock"
    again = fn([getattr(a, "_data", a) for a in inputs])
    np.testing.assert_allclose(np.asarray(again[0]), y.asnumpy(), rtol=1e-6)
    w_pos = next(i for i, a in enumerate(inputs) if a is nets[0][0].weight.data())
    import jax
    gw = jax.grad(lambda w: (fn([w if i == w_pos else getattr(a, "_data", a)
                                 for i, a in enumerate(inputs)])[0] ** 2).sum())(inputs[w_pos]._data)
    assert gw.shape == (4, 3) and np.isfinite(np.asarray(gw)).all()
    with mx.compile.count_compiles() as n:
        nets[1](x)
        nets[0](x)
    assert n() == 0 and fake.calls[-1][1] == fake.calls[-2][1] == sig  # one structure, one signature


def test_hybridized_block_runs_on_the_inputs_context():
    net = nn.Dense(3, in_units=4)
    net.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    net.hybridize()
    a = net(mx.nd.ones((2, 4), ctx=mx.cpu(0)))
    b = net(mx.nd.ones((2, 4), ctx=mx.cpu(1)))
    assert (a.context, b.context) == (mx.cpu(0), mx.cpu(1))
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


_RESTART = """
import json
import numpy as np
import jbind as mx
from jbind.compile import store
from jbind.gluon import nn
net = nn.HybridSequential()
with net.name_scope():
    net.add(nn.Dense(5, activation="tanh", in_units=4), nn.Dense(3, in_units=5))
net.initialize(mx.init.One())
net.hybridize()
out = net(mx.nd.array(np.linspace(-1, 1, 8).reshape(2, 4)))
print(json.dumps({"counts": store.counts, "out": out.asnumpy().tolist()}))
"""


def test_a_block_rebuilt_in_a_new_process_loads_its_executable(tmp_path):
    import json
    import os
    import subprocess
    import sys

    def run():
        env = dict(os.environ, JBIND_CACHE_DIR=str(tmp_path), JAX_PLATFORMS="cpu")
        proc = subprocess.run([sys.executable, "-c", _RESTART], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])
    first, second = run(), run()
    assert first["counts"]["saved"] >= 1 and first["counts"]["loaded"] == 0
    assert second["counts"]["loaded"] == first["counts"]["saved"] and second["counts"]["saved"] == 0
    np.testing.assert_array_equal(second["out"], first["out"])


def test_cast_to_float16_runs_hybridized_and_imported(tmp_path):
    net = _mlp("half_")
    net.initialize()
    net.hybridize()
    x = _x(2, 5)
    ref = net(x).asnumpy()
    net.export(str(tmp_path / "half"))
    block = gluon.SymbolBlock.imports(str(tmp_path / "half-symbol.json"), ["data"], str(tmp_path / "half-0000.params"))
    for b in (net, block):
        b.cast("float16")
        y = b(x.astype("float16"))
        assert y.dtype == np.float16
        np.testing.assert_allclose(y.asnumpy(), ref, rtol=2e-2, atol=2e-2)
    assert block.params["half_batchnorm0_running_var"].dtype == "float32"  # BatchNorm's stay float32, as MXNet


def test_register_op_hook_reports_each_op_by_mxnet_names():
    net = nn.HybridSequential(prefix="m_")
    with net.name_scope():
        net.add(nn.Dense(3), nn.Activation("relu"))
    net.initialize()
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.asnumpy())), monitor_all=True)
    x = mx.nd.array(np.linspace(-1, 1, 8).reshape(2, 4))
    out = net(x).asnumpy()
    # inputs then outputs of each op; Activation's input is 'input0' (MXNet lists no names for it)
    assert [(n, op) for n, op, _ in seen] == [
        ("m_dense0_fwd_data", "FullyConnected"), ("m_dense0_fwd_weight", "FullyConnected"),
        ("m_dense0_fwd_bias", "FullyConnected"), ("m_dense0_fwd_output", "FullyConnected"),
        ("m_relu0_fwd_input0", "Activation"), ("m_relu0_fwd_output", "Activation")]
    np.testing.assert_array_equal(seen[0][2], x.asnumpy())
    np.testing.assert_allclose(seen[-1][2], out, rtol=1e-6)
    np.testing.assert_allclose(np.maximum(seen[3][2], 0), out, rtol=1e-6)
    seen.clear()
    net.register_op_hook(lambda name, op, arr: seen.append(name))  # outputs only, from the next build
    net(x)
    assert len(seen) == 6
    net.hybridize()
    net(x)
    assert seen[6:] == ["m_dense0_fwd_output", "m_relu0_fwd_output"]


def test_get_symbol_inlines_small_hybridized_blocks_and_shows_others_as_one_cached_op():
    import json
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3, in_units=4), nn.Dense(2, in_units=3))
    net.initialize()
    x = mx.nd.array(np.arange(8).reshape(2, 4) / 8.0)

    def recorded(**flags):
        net.hybridize(**flags)
        with mx.autograd.record():
            y = net(x)
        nodes = json.loads(mx.autograd.get_symbol(y).tojson())["nodes"]
        return y, mx.autograd.get_symbol(y), [n["op"] for n in nodes if n["op"] != "null"]
    y, sym, ops = recorded()   # two ops, within the default inline_limit (2): the block's own ops
    assert ops == ["FullyConnected", "FullyConnected"]
    # the inlined graph computes the block: the unmarked input is const0, the parameters var0..3
    assert sym.list_arguments() == ["const0", "var0", "var1", "var2", "var3"]
    args = dict(zip(sym.list_arguments(), [x] + [p.data() for p in net.collect_params().values()]))
    out = sym.bind(mx.cpu(), args).forward()[0]
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy(), rtol=1e-5)
    assert recorded(inline_limit=1)[2] == ["_CachedOp"]
    assert recorded(inline_limit=5, static_alloc=True)[2] == ["_CachedOp"]
    assert recorded(inline_limit=5)[2] == ["FullyConnected", "FullyConnected"]


def test_groupnorm_gradients_agree_imperative_and_hybridized():
    """GroupNorm's input gradient (zero up to rounding for a ones head) agrees between the
    imperative and the hybridized block at MXNet's check tolerance (atol 1e-6)."""
    x = mx.nd.array(np.random.RandomState(0).uniform(size=(2, 10, 10, 10)))
    grads = []
    for hybrid in (False, True):
        layer = mx.gluon.nn.GroupNorm()
        layer.initialize()
        if hybrid:
            layer.hybridize()
        xi = x.copy()
        xi.attach_grad()
        with mx.autograd.record():
            out = layer(xi)
        out.backward()
        grads.append(xi.grad.asnumpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def test_a_cached_op_node_of_get_symbol_cannot_run():
    """The `_CachedOp` node autograd.get_symbol shows for a large hybridized block refuses to run with MXNetError."""
    from jbind.gluon._inline import _CachedOp
    op = _CachedOp(num_inputs=1, num_outputs=1, graph=0)
    with pytest.raises(mx.MXNetError, match="_CachedOp"):
        op.lower([], [], False, None)


def test_a_hybridized_call_takes_one_context():
    class Add(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a + b
    block = Add()
    block.hybridize()
    with pytest.raises(ValueError, match="multiple contexts.*cpu\\(1\\)"):
        block(mx.nd.ones((4,), ctx=mx.cpu(0)), mx.nd.ones((4,), ctx=mx.cpu(1)))
    pinned = mx.nd.ones((4,), ctx=mx.cpu(0)).as_in_context(mx.Context("cpu_pinned", 0))
    np.testing.assert_array_equal(block(mx.nd.ones((4,)), pinned).asnumpy(), [2, 2, 2, 2])   # as MXNet
