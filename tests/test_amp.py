"""mx.contrib.amp: where the mixed-precision rewrite puts its casts, what it computes,
the parameter dtypes of convert_model, init()'s wrapped functions and the loss scale."""
import numpy as np
import pytest

import jbind as mx
from jbind.contrib.amp import amp
from jbind.ops._base import ALIASES, REGISTRY


def _nodes(sym):
    import json
    return {n["name"]: n for n in json.loads(sym.tojson(remove_amp_cast=False))["nodes"]}


def _input_names(sym, node_name):
    nodes = _nodes(sym)
    order = list(nodes)
    return [order[i] for i, _, _ in nodes[node_name]["inputs"]]


def _f32(sym):
    """Every argument float32 (the casts infer nothing about their inputs, as MXNet's)."""
    return {n: "float32" for n in sym.list_arguments()}


def _net():
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    e = mx.sym.exp(fc1, name="e")                                # float32 op
    act = mx.sym.Activation(e, act_type="relu", name="act")      # neutral: follows its input
    fc2 = mx.sym.FullyConnected(act, num_hidden=4, name="fc2")
    s = mx.sym.sum(e, axis=1, keepdims=True, name="s")           # float32 op
    return mx.sym.broadcast_add(fc2, s, name="add")              # widest of its inputs


def test_both_import_forms_give_the_amp_module():
    from jbind.contrib import amp as package
    import importlib
    assert importlib.import_module("jbind.contrib.amp.amp") is amp
    assert package.amp is amp and package.convert_symbol is amp.convert_symbol
    assert mx.contrib.amp.amp is amp
    assert mx.contrib.symbol is mx.sym.contrib and mx.contrib.nd is mx.nd.contrib


def test_casts_go_where_the_lists_say_with_mxnets_names():
    conv = amp.convert_symbol(_net())
    nodes = _nodes(conv)
    # FullyConnected runs in float16: data, weight and bias are cast to it
    assert _input_names(conv, "fc1") == ["data_amp_cast_float16", "fc1_weight_amp_cast_float16",
                                         "fc1_bias_amp_cast_float16"]
    # exp runs in float32: FullyConnected's output is cast back (named after its output)
    assert _input_names(conv, "e") == ["fc1_output_amp_cast_float32"]
    # relu follows its float32 input; fc2 casts it to float16
    assert _input_names(conv, "act") == ["e"]
    assert _input_names(conv, "fc2")[0] == "act_output_amp_cast_float16"
    # both inputs of the widest-type op are known: the float16 one is cast to float32
    assert _input_names(conv, "add") == ["fc2_output_amp_cast_float32", "s"]
    assert nodes["fc2_output_amp_cast_float32"]["attrs"] == {"dtype": "float32"}
    # the output is known to be float32 (the widest of float32 inputs): no cast after it
    assert conv.list_outputs() == ["add_output"]
    # an output not known to be float32 ends in a cast to it, named after the output's index
    fc = mx.sym.FullyConnected(mx.sym.var("d"), num_hidden=2, name="fc")
    assert amp.convert_symbol(mx.sym.relu(fc, name="r")).list_outputs() == ["r_0_amp_cast_float32_output"]
    assert amp.convert_symbol(fc).list_outputs() == ["fc_output_amp_cast_float32_output"]
    assert conv.list_arguments() == _net().list_arguments()


def test_widest_type_op_with_an_unknown_input_gets_one_multicast():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    fc = mx.sym.FullyConnected(a, num_hidden=3, name="fc")
    conv = amp.convert_symbol(mx.sym.elemwise_add(b, fc, name="plus"))
    mc = "b_amp_multicast"
    assert _input_names(conv, "plus") == [mc, mc]
    assert _nodes(conv)[mc]["attrs"] == {"num_outputs": "2"}
    _, out_t, _ = conv.infer_type(**_f32(conv))
    assert out_t == [np.float32]


def test_converted_graph_computes_what_the_float32_graph_does():
    net = _net()
    conv = amp.convert_symbol(net)
    rng = np.random.RandomState(0)
    shapes = {"data": (3, 5), "fc1_weight": (6, 5), "fc1_bias": (6,), "fc2_weight": (4, 6), "fc2_bias": (4,)}
    vals = {k: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for k, s in shapes.items()}
    ref = net.bind(mx.cpu(), dict(vals)).forward()[0].asnumpy()
    exe = conv.bind(mx.cpu(), dict(vals))
    out = exe.forward()[0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-2, atol=1e-2)
    arg_t, _, _ = conv.infer_type(**_f32(conv))
    assert set(arg_t) == {np.float32}


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_fp16_ops_see_the_target_dtype_and_fp32_ops_float32(target):
    conv = amp.convert_symbol(_net(), target_dtype=target)
    internals = conv.get_internals()
    names = internals.list_outputs()
    _, out_t, _ = internals.infer_type(**_f32(conv))
    dtypes = dict(zip(names, out_t))
    assert np.dtype(dtypes["fc1_output"]).name == target
    assert np.dtype(dtypes["fc2_output"]).name == target
    assert dtypes["e_output"] == np.float32 and dtypes["s_output"] == np.float32
    assert dtypes["add_output"] == np.float32


def test_excluded_nodes_stay_float32():
    conv = amp.convert_symbol(_net(), excluded_sym_names=["fc2"])
    assert _input_names(conv, "fc2") == ["act", "fc2_weight", "fc2_bias"]
    assert "fc2_weight_amp_cast_float16" not in _nodes(conv)
    assert _input_names(conv, "fc1")[0] == "data_amp_cast_float16"


def test_conditional_fp32_ops_cast_only_for_the_listed_values():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    soft = mx.sym.Activation(fc, act_type="softrelu", name="soft")
    relu = mx.sym.Activation(fc, act_type="relu", name="relu")
    conv = amp.convert_symbol(mx.sym.Group([soft, relu]))
    assert _input_names(conv, "soft") == ["fc_output_amp_cast_float32"]
    assert _input_names(conv, "relu") == ["fc"]
    assert conv.list_outputs() == ["soft_output", "relu_output_amp_cast_float32_output"]


def test_user_lists_are_checked():
    with pytest.raises(mx.MXNetError, match="two or more lists"):
        amp.convert_symbol(_net(), target_dtype_ops=["FullyConnected"], fp32_ops=["FullyConnected"])
    with pytest.raises(mx.MXNetError, match="none of"):
        amp.convert_symbol(_net(), target_dtype_ops=["no_such_op"])
    with pytest.raises(mx.MXNetError, match="float16 and bfloat16"):
        amp.convert_symbol(_net(), target_dtype="float64")
    with pytest.raises(mx.MXNetError, match="Symbol"):
        amp.convert_symbol("not a symbol")


def _params(net, shapes):
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    rng = np.random.RandomState(1)
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in zip(net.list_arguments(), arg_shapes)
            if n not in shapes}
    aux = {n: mx.nd.array(np.abs(rng.uniform(0.5, 1.0, s))) for n, s in zip(net.list_auxiliary_states(), aux_shapes)}
    return args, aux


def test_convert_model_casts_params_only_with_cast_optional_params():
    net = _net()
    args, aux = _params(net, {"data": (2, 5)})
    sym, a32, _ = amp.convert_model(net, dict(args), dict(aux))
    assert {np.dtype(v.dtype) for v in a32.values()} == {np.dtype(np.float32)}
    assert sym.attr_dict()["fc1_weight"]["__dtype__"] == "0"
    sym, a16, _ = amp.convert_model(net, dict(args), dict(aux), cast_optional_params=True)
    assert a16["fc1_weight"].dtype == np.float16 and a16["fc2_bias"].dtype == np.float16
    assert sym.attr_dict()["fc1_weight"]["__dtype__"] == "2"
    assert _input_names(sym, "fc1") == ["data_amp_cast_float16", "fc1_weight", "fc1_bias"]
    exe = sym.bind(mx.cpu(), {"data": mx.nd.ones((2, 5)), **a16})
    ref = net.bind(mx.cpu(), {"data": mx.nd.ones((2, 5)), **args}).forward()[0].asnumpy()
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), ref, rtol=1e-2, atol=1e-2)


def test_convert_model_bfloat16_params_and_batchnorm_aux_untouched():
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, num_filter=2, kernel=(3, 3), name="conv")
    net = mx.sym.BatchNorm(conv, name="bn")
    args, aux = _params(net, {"data": (1, 1, 5, 5)})
    sym, a, x = amp.convert_model(net, args, aux, target_dtype="bfloat16", cast_optional_params=True)
    assert np.dtype(a["conv_weight"].dtype).name == "bfloat16"
    assert sym.attr_dict()["conv_weight"]["__dtype__"] == "12"
    assert {np.dtype(v.dtype) for v in x.values()} == {np.dtype(np.float32)}


def test_tojson_round_trip_of_a_converted_symbol():
    conv = amp.convert_symbol(_net())
    again = mx.sym.load_json(conv.tojson(remove_amp_cast=False))
    assert again.tojson(remove_amp_cast=False) == conv.tojson(remove_amp_cast=False)
    # MXNet's default tojson drops the casts that feed other nodes
    plain = mx.sym.load_json(conv.tojson())
    assert not any("amp_cast" in n for n in plain.get_internals().list_outputs()[:-1])


def test_every_listed_op_is_registered():
    for target in ("float16", "bfloat16"):
        names = (amp.list_lp16_ops(target) + amp.list_fp32_ops(target) + amp.list_lp16_fp32_ops(target)
                 + amp.list_widest_type_cast(target) + amp.list_loss_output_functions(target)
                 + [c[0] for c in amp.list_conditional_fp32_ops(target)])
        missing = [n for n in names if n not in REGISTRY and n not in ALIASES]
        assert not missing, missing
        assert amp.list_lp16_ops(target)[:1] == ["Convolution"]
    assert amp.list_lp16_use_fp32_params("float16") is None
    assert "gamma" in amp.list_lp16_use_fp32_params("bfloat16")["BatchNorm"]


@pytest.fixture
def amp_on():
    amp.init()
    yield
    amp._reset()


def test_init_wraps_symbol_and_ndarray_functions(amp_on):
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    assert _input_names(fc, "fc")[0].startswith("amp_cast")
    _, out_t, _ = fc.infer_type(**_f32(fc))
    assert out_t == [np.float16]
    e = mx.sym.exp(fc, name="e")
    _, out_t, _ = e.infer_type(**_f32(e))
    assert out_t == [np.float32]
    added = mx.sym.broadcast_add(fc, mx.sym.var("b"), name="add")
    assert any(n.startswith("amp_multicast") for n in _nodes(added))
    x = mx.nd.ones((2, 4))
    y = mx.nd.FullyConnected(x, mx.nd.ones((3, 4)), mx.nd.zeros((3,)), num_hidden=3)
    assert y.dtype == np.float16
    np.testing.assert_allclose(mx.nd.exp(y).asnumpy(), np.exp(4.0) * np.ones((2, 3)), rtol=1e-3)
    assert mx.nd.exp(y).dtype == np.float32
    assert mx.nd.broadcast_add(y, x[:, :3]).dtype == np.float32
    assert mx.nd.Activation(y, act_type="softrelu").dtype == np.float32
    assert mx.nd.Activation(y, act_type="relu").dtype == np.float16


def test_init_casts_around_symbol_operators(amp_on):
    a = mx.sym.var("a")
    fc = mx.sym.FullyConnected(a, num_hidden=2, name="fc")
    summed = fc + a                 # widest type: both inputs through one multicast
    assert [n for n in _nodes(summed) if n.startswith("amp_multicast")] == _input_names(summed, summed.name)[:1]
    squared = fc ** 2               # _power_scalar runs in float32
    assert _input_names(squared, squared.name)[0].startswith("amp_cast")
    types = lambda s: s.infer_type(**_f32(s))[1]  # noqa: E731
    assert types(summed) == [np.float32] and types(squared) == [np.float32]
    assert types(fc * 2) == [np.float16]   # _mul_scalar keeps its input's dtype


def test_reset_puts_the_functions_back():
    original, binary = mx.sym.FullyConnected, mx.sym.Symbol._binary
    amp.init()
    assert mx.sym.FullyConnected is not original and mx.sym.Symbol._binary is not binary
    amp._reset()
    assert mx.sym.FullyConnected is original and mx.sym.Symbol._binary is binary


def test_init_trainer_needs_init_and_a_trainer():
    with pytest.raises(mx.MXNetError, match="amp.init"):
        amp.init_trainer(object())
    amp.init()
    try:
        with pytest.raises(mx.MXNetError, match="Trainer"):
            amp.init_trainer(mx.optimizer.SGD())
    finally:
        amp._reset()


class _Param:
    def __init__(self, grad):
        self._grad = [mx.nd.array(grad)]


def test_loss_scale_halves_after_an_overflow_and_doubles_after_clean_steps():
    s = amp.LossScaler()
    s._scale_seq_len = 3
    ok, bad = [_Param([1.0, 2.0])], [_Param([1.0, np.inf])]
    assert s.loss_scale == 2.0 ** 16
    assert s.has_overflow(bad) is True
    assert s.loss_scale == 2.0 ** 16  # the new scale takes effect at the next check, as MXNet's
    assert s.has_overflow(ok) is False
    assert s.loss_scale == 2.0 ** 15
    assert s.has_overflow([_Param([np.nan])]) is True
    assert s.has_overflow(ok) is False and s.loss_scale == 2.0 ** 14
    s.has_overflow(ok)
    s.has_overflow(ok)  # third clean step in a row
    s.has_overflow(ok)
    assert s.loss_scale == 2.0 ** 15
    s._loss_scale = s._next_loss_scale = 2.0 ** 24
    for _ in range(4):
        s.has_overflow(ok)
    assert s.loss_scale == 2.0 ** 24  # never above the maximum


def test_mxnet_import_form_used_by_its_bucketing_test():
    import importlib
    mod = importlib.import_module("jbind.contrib.amp")
    assert mod.amp.init is amp.init and "convert_symbol" in mod.__all__


def _trainer_with_grad(grad):
    p = mx.gluon.Parameter("w", shape=(2,))
    p.initialize(init=mx.init.One())
    tr = mx.gluon.Trainer([p], "sgd", {"learning_rate": 1.0})
    p.grad()[:] = mx.nd.array(grad)
    p.data()._fresh_grad = True
    return p, tr


def test_init_trainer_gives_the_trainer_a_scaler_and_an_overflow_skips_the_step():
    amp.init()
    try:
        p, tr = _trainer_with_grad([np.inf, 1.0])
        amp.init_trainer(tr)
        assert isinstance(tr._amp_loss_scaler, amp.LossScaler)
        scale = tr._amp_loss_scaler.loss_scale
        with amp.scale_loss(mx.nd.array([2.0]), tr) as scaled:
            assert scaled.asnumpy()[0] == 2.0 * scale
        tr.step(1)                                    # inf in the gradient: nothing changes
        np.testing.assert_array_equal(p.data().asnumpy(), [1.0, 1.0])
        p.grad()[:] = mx.nd.array([scale, 2 * scale])
        p.data()._fresh_grad = True
        tr.step(1)                                    # gradients divided by the loss scale of that step
        np.testing.assert_allclose(p.data().asnumpy(), [0.0, -1.0])
    finally:
        amp._reset()


def test_unscale_divides_the_gradients_by_the_loss_scale_once():
    amp.init()
    try:
        p, tr = _trainer_with_grad([4.0, 8.0])
        amp.init_trainer(tr)
        tr._scale = 0.25                              # what scale_loss sets for a loss scale of 4
        amp.unscale(tr)
        np.testing.assert_allclose(p.grad().asnumpy(), [1.0, 2.0])
        assert tr._scale == 1.0
        with pytest.raises(mx.MXNetError, match="Trainer"):
            amp.unscale(object())
    finally:
        amp._reset()
