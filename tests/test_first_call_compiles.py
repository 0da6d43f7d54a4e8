"""How many XLA programs a model's first call compiles: one for a first inference through
Module, two for a first training step (forward+backward, and the batched optimizer update);
no small programs for optimizer states, parameter copies or casts."""
import contextlib

import jax
import numpy as np
from jax._src import compiler

import jbind as mx


@contextlib.contextmanager
def xla_programs():
    """Names of every XLA program compiled inside (jbind's and jax's own small ones)."""
    names, orig = [], compiler.backend_compile_and_load

    def counting(backend, module, *a, **k):
        names.append(str(module.operation.attributes["sym_name"]).strip('"'))
        return orig(backend, module, *a, **k)
    compiler.backend_compile_and_load = counting
    try:
        yield names
    finally:
        compiler.backend_compile_and_load = orig


def _zoo_like(classes=5):
    """A small CNN with the zoo's pieces: conv + BatchNorm + relu, a depthwise conv, pooling,
    a residual add, global pooling and a dense head."""
    x = mx.sym.Variable("data")
    y = mx.sym.Convolution(x, num_filter=8, kernel=(3, 3), pad=(1, 1), no_bias=True, name="c0")
    y = mx.sym.Activation(mx.sym.BatchNorm(y, name="bn0"), act_type="relu")
    y = mx.sym.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type="max")
    z = mx.sym.Convolution(y, num_filter=8, num_group=8, kernel=(3, 3), pad=(1, 1), no_bias=True, name="dw")
    z = mx.sym.Convolution(mx.sym.BatchNorm(z, name="bn1"), num_filter=8, kernel=(1, 1), name="pw")
    y = mx.sym.Activation(y + z, act_type="relu")
    y = mx.sym.Convolution(y, num_filter=16, kernel=(3, 3), stride=(2, 2), pad=(1, 1), name="c2")
    y = mx.sym.Flatten(mx.sym.Pooling(y, kernel=(1, 1), global_pool=True, pool_type="avg"))
    return mx.sym.FullyConnected(y, num_hidden=classes, name="fc")


def _params(sym, shape):
    rng = np.random.RandomState(0)
    args, _, auxs = sym.infer_shape(data=shape)
    arg = {n: mx.nd.array(rng.uniform(-0.3, 0.3, s).astype(np.float32))
           for n, s in zip(sym.list_arguments(), args) if n != "data"}
    aux = {n: mx.nd.array(rng.uniform(0.5, 1.0, s).astype(np.float32)) for n, s in zip(sym.list_auxiliary_states(), auxs)}
    return arg, aux


def test_first_inference_through_module_compiles_one_program():
    sym = _zoo_like()
    shape = (1, 3, 12, 12)
    arg, aux = _params(sym, shape)
    data = mx.io.DataBatch([mx.nd.array(np.random.RandomState(1).rand(*shape).astype(np.float32))])
    mx.compile.clear()
    with xla_programs() as names:
        mod = mx.mod.Module(sym, data_names=["data"], label_names=None, context=mx.cpu())
        mod.bind(data_shapes=[("data", shape)], for_training=False)
        mod.set_params(arg, aux)
        mod.forward(data, is_train=False)
        out = mod.get_outputs()[0].asnumpy()
    assert out.shape == (1, 5)
    assert len(names) == 1 and names[0].startswith("jit_jbind_forward"), names


def test_first_training_step_compiles_two_programs():
    sym = mx.sym.SoftmaxOutput(_zoo_like(), name="softmax")
    shape = (2, 3, 12, 12)
    arg, aux = _params(sym, shape)
    arg.pop("softmax_label")
    rng = np.random.RandomState(2)
    batch = mx.io.DataBatch([mx.nd.array(rng.rand(*shape).astype(np.float32))], [mx.nd.array([1.0, 3.0])])
    mx.compile.clear()
    with xla_programs() as names:
        mod = mx.mod.Module(sym, data_names=["data"], label_names=["softmax_label"], context=mx.cpu())
        mod.bind(data_shapes=[("data", shape)], label_shapes=[("softmax_label", (2,))], for_training=True)
        mod.set_params(arg, aux)
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
        for _ in range(2):  # the second step reuses both programs
            mod.forward(batch, is_train=True)
            mod.backward()
            mod.update()
        mx.nd.waitall()
    assert len(names) == 2, names
    assert names[0].startswith("jit_jbind_train") and names[1] == "jit_run", names
    w = mod.get_params()[0]["c0_weight"].asnumpy()
    assert not np.allclose(w, arg["c0_weight"].asnumpy())


def test_host_made_states_equal_the_rule():
    """States made on the host are what each optimizer's `init_state` gives, on the weight's device."""
    for name, params in [("sgd", {"momentum": 0.9}), ("adam", {}), ("rmsprop", {"centered": True}),
                         ("adagrad", {}), ("ftrl", {})]:
        opt = mx.optimizer.create(name, **params)
        weights = [mx.nd.ones((3, 4), ctx=mx.cpu(1)), mx.nd.ones((5,), ctx=mx.cpu(1))]
        made = opt.create_states([0, 1], weights)
        for w, s in zip(weights, made):
            want = opt.init_state(w._data)
            got_leaves, want_leaves = jax.tree.leaves(s), jax.tree.leaves(want)
            assert len(got_leaves) == len(want_leaves) and len(want_leaves) > 0, name
            for g, v in zip(got_leaves, want_leaves):
                assert g._data.dtype == v.dtype and g._data.shape == v.shape
                assert g._data.devices() == w._data.devices()
                np.testing.assert_array_equal(g.asnumpy(), np.asarray(v))


def test_programs_compile_with_loop_emitters_on_the_cpu_unless_asked(monkeypatch):
    from jbind.compile._options import cpu_options as compile_options
    monkeypatch.delenv("JBIND_XLA_FUSION_EMITTERS", raising=False)
    assert compile_options() == {"xla_cpu_use_fusion_emitters": False}
    monkeypatch.setenv("JBIND_XLA_FUSION_EMITTERS", "1")
    assert compile_options() is None
