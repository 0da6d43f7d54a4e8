import jax
import numpy as np
import pytest

import jbind as mx


def mlp():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data=data, num_hidden=10, name="fc1")
    return mx.sym.SoftmaxOutput(mx.sym.Activation(fc, act_type="relu", name="relu1"), name="softmax")


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _fill(exe, rng):
    for name, arr in exe.arg_dict.items():
        if name == "softmax_label":
            arr[:] = rng.integers(0, 10, size=arr.shape)
        else:
            arr[:] = rng.uniform(-1, 1, size=arr.shape)


def _reference(exe):
    a = {k: v.asnumpy().astype(np.float64) for k, v in exe.arg_dict.items()}
    pre = a["data"] @ a["fc1_weight"].T + a["fc1_bias"]
    h = np.maximum(pre, 0)
    p = _softmax(h)
    dh = p - np.eye(10)[a["softmax_label"].astype(int)]
    dpre = dh * (pre > 0)
    return p, {"fc1_weight": dpre.T @ a["data"], "fc1_bias": dpre.sum(0), "data": dpre @ a["fc1_weight"]}


def test_issue_example_forward_backward_matches_numpy():
    exe = mlp().simple_bind(mx.cpu(), data=(32, 100))
    rng = np.random.default_rng(0)
    _fill(exe, rng)
    exe.arg_dict["data"][:] = np.random.rand(32, 100)
    exe.forward(is_train=True)
    exe.backward()
    p, grads = _reference(exe)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), p, rtol=1e-4, atol=1e-6)
    for k, g in grads.items():
        np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), g, rtol=1e-3, atol=1e-5)
    np.testing.assert_array_equal(exe.grad_dict["softmax_label"].asnumpy(), 0)
    assert exe.output_dict["softmax_output"] is exe.outputs[0]


def test_forward_kwargs_and_inference():
    exe = mlp().simple_bind(mx.cpu(), data=(4, 3))
    _fill(exe, np.random.default_rng(1))
    x = np.ones((4, 3))
    out = exe.forward(data=x)[0].asnumpy()
    np.testing.assert_allclose(exe.arg_dict["data"].asnumpy(), x)
    assert out.shape == (4, 10)
    with pytest.raises(mx.base.MXNetError, match="unknown argument 'dta'"):
        exe.forward(dta=x)
    with pytest.raises(mx.base.MXNetError, match="cannot assign an array of shape"):
        exe.forward(data=np.ones((5, 3)))


def test_grad_req_add_and_null():
    sym = mlp()
    rng = np.random.default_rng(2)
    exe = sym.simple_bind(mx.cpu(), grad_req={"fc1_weight": "add", "fc1_bias": "write"}, data=(4, 3))
    # As MXNet: every argument is a key, None where grad_req is null.
    assert {k for k, v in exe.grad_dict.items() if v is not None} == {"fc1_weight", "fc1_bias"}
    assert list(exe.grad_dict) == sym.list_arguments()
    _fill(exe, rng)
    exe.forward(is_train=True)
    exe.backward()
    g1 = exe.grad_dict["fc1_weight"].asnumpy()
    b1 = exe.grad_dict["fc1_bias"].asnumpy()
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_allclose(exe.grad_dict["fc1_weight"].asnumpy(), 2 * g1, rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["fc1_bias"].asnumpy(), b1, rtol=1e-5)
    with pytest.raises(mx.base.MXNetError, match="grad_req 'wrte'"):
        sym.simple_bind(mx.cpu(), grad_req="wrte", data=(4, 3))
    exe = sym.simple_bind(mx.cpu(), grad_req=["null", "write", "null", "null"], data=(4, 3))
    assert [k for k, v in exe.grad_dict.items() if v is not None] == ["fc1_weight"]


def test_non_loss_output_needs_head_gradient():
    x = mx.sym.Variable("x")
    y = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    exe = y.simple_bind(mx.cpu(), x=(3, 4))
    exe.forward(is_train=True)
    with pytest.raises(mx.base.MXNetError, match="head gradient is required"):
        exe.backward()
    exe.backward([mx.nd.ones((3, 2))])
    np.testing.assert_allclose(exe.grad_dict["fc_bias"].asnumpy(), [3, 3])
    with pytest.raises(mx.base.MXNetError, match=r"has shape \(3, 3\)"):
        exe.backward([mx.nd.ones((3, 3))])


def test_outputs_exist_at_bind_and_backward_needs_no_forward():
    # MXNet allocates outputs (zeros, the output dtype) when binding, and backward()
    # without a forward differentiates at the arguments' current values.
    x = mx.sym.Variable("x", dtype=np.int32)
    exe = mx.sym.Cast(x, dtype=np.float16).simple_bind(mx.cpu(), x=(2, 3))
    assert exe.outputs[0].dtype == np.float16 and exe.outputs[0].shape == (2, 3)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.zeros((2, 3)))
    d = mx.sym.Variable("d")
    grad = mx.nd.zeros((2, 2))
    exe = mx.sym.tile(d * d, reps=(2,)).bind(mx.cpu(), args=[mx.nd.array([[1, 2], [3, 4]])], args_grad=[grad])
    exe.backward(mx.nd.ones((2, 4)))
    np.testing.assert_allclose(grad.asnumpy(), [[4, 8], [12, 16]])


def test_shared_exec_shares_parameters_by_reference():
    sym = mlp()
    a = sym.simple_bind(mx.cpu(), data=(8, 5))
    b = sym.simple_bind(mx.cpu(), data=(4, 5), shared_exec=a, shared_arg_names=["fc1_weight", "fc1_bias"])
    assert b.arg_dict["fc1_weight"] is a.arg_dict["fc1_weight"]
    assert b.grad_dict["fc1_weight"] is a.grad_dict["fc1_weight"]
    assert b.arg_dict["data"] is not a.arg_dict["data"]
    a.arg_dict["fc1_weight"][:] = np.full((10, 5), 0.5)
    np.testing.assert_allclose(b.arg_dict["fc1_weight"].asnumpy(), 0.5)
    with pytest.raises(mx.base.MXNetError, match="shared array 'fc1_weight'"):
        mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc1"),
                             name="softmax").simple_bind(mx.cpu(), data=(4, 5), shared_exec=a,
                                                         shared_arg_names=["fc1_weight"])


def test_bind_uses_given_arrays_as_they_are():
    sym = mlp()
    args = {"data": mx.nd.ones((2, 3)), "fc1_weight": mx.nd.ones((10, 3)), "fc1_bias": mx.nd.zeros((10,)),
            "softmax_label": mx.nd.zeros((2,))}
    grads = {"fc1_weight": mx.nd.zeros((10, 3))}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    assert exe.arg_dict["fc1_weight"] is args["fc1_weight"]
    exe.forward()
    args["data"][:] = np.zeros((2, 3))  # a later write shows in the next forward
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), np.full((2, 10), 0.1), rtol=1e-6)
    exe.forward(is_train=True)
    exe.backward()
    assert exe.grad_dict["fc1_weight"] is grads["fc1_weight"]
    assert [k for k, v in exe.grad_dict.items() if v is not None] == ["fc1_weight"]
    with pytest.raises(mx.base.MXNetError, match="no array given for arg 'softmax_label'"):
        sym.bind(mx.cpu(), {k: v for k, v in args.items() if k != "softmax_label"})
    bad = dict(args, fc1_weight=mx.nd.ones((10, 4)))
    with pytest.raises(mx.base.MXNetError, match="fc1_weight"):
        sym.bind(mx.cpu(), bad)


def test_copy_params_from_and_reshape():
    sym = mlp()
    exe = sym.simple_bind(mx.cpu(), data=(4, 3))
    exe.copy_params_from({"fc1_weight": mx.nd.ones((10, 3))}, {})
    np.testing.assert_allclose(exe.arg_dict["fc1_weight"].asnumpy(), 1)
    with pytest.raises(ValueError, match="not in the arguments"):
        exe.copy_params_from({"nope": mx.nd.ones((1,))})
    exe.copy_params_from({"nope": mx.nd.ones((1,))}, allow_extra_params=True)
    small = exe.reshape(data=(2, 3), softmax_label=(2,))
    assert small.arg_dict["fc1_weight"] is exe.arg_dict["fc1_weight"]
    assert small.arg_dict["data"].shape == (2, 3)
    with pytest.raises(mx.base.MXNetError, match="allow_up_sizing"):
        exe.reshape(data=(8, 3), softmax_label=(8,))


def test_context_errors():
    with pytest.raises(mx.base.MXNetError, match=r"gpu\(7\) does not exist"):
        mlp().simple_bind(mx.gpu(7), data=(2, 3))
    # as in MXNet, any cpu(i) is valid: past JAX's CPU devices it shares device i % n
    far = mlp().simple_bind(mx.cpu(7), data=(2, 3))
    far.forward()
    assert far.outputs[0].context == mx.cpu(7) and far.arg_dict["data"].context == mx.cpu(7)
    exe = mlp().simple_bind(mx.cpu(1), data=(2, 3))
    exe.forward()
    assert exe.outputs[0].context == mx.cpu(1)


def test_a_context_pickles_after_its_device_was_looked_up():
    import pickle
    ctx = mx.cpu(1)
    ctx.jax_device  # noqa: B018  (resolves and holds the JAX device, which does not pickle)
    again = pickle.loads(pickle.dumps(ctx))
    assert again == ctx and again.jax_device == ctx.jax_device


def test_float32_products_are_traced_at_full_precision_unless_the_user_chose_one():
    """MXNet's float32 FullyConnected / Convolution are full float32; JAX's default lets a
    GPU use TF32. jbind traces with 'float32' unless jax_default_matmul_precision is set,
    and a set precision is part of the compile-cache key."""
    from jbind.symbol import rolled
    from jbind.symbol.graph import graph_of
    from jbind.symbol.lower import make_forward
    fc = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=4, name="fc")
    net = mx.sym.Convolution(mx.sym.Reshape(fc, shape=(1, 1, 2, 2)), kernel=(1, 1), num_filter=1, no_bias=True,
                             name="c")
    arg_shapes, _, _ = net.infer_shape(x=(1, 3))
    args = tuple(np.ones(s, np.float32) for s in arg_shapes)
    forward = make_forward(graph_of(net))

    def precisions():
        jaxpr = jax.make_jaxpr(lambda a: forward(a, (), jax.random.key(0), False))(args)
        return [str(e.params["precision"]) for e in jaxpr.eqns if "precision" in e.params]

    assert precisions() == ["(Precision.HIGHEST, Precision.HIGHEST)"] * 2
    assert rolled.cache_suffix() == ""
    with jax.default_matmul_precision("tensorfloat32"):
        assert precisions() == ["(Precision.HIGH, Precision.HIGH)"] * 2
        assert rolled.cache_suffix().endswith("+matmul:tensorfloat32")


def test_the_backward_of_a_fused_loss_head_is_traced_at_full_precision_too():
    """The fused FullyConnected + SoftmaxOutput head has its own backward (a custom_vjp,
    traced when the gradient is taken): its products are float32 as well."""
    from jbind.symbol.graph import graph_of
    from jbind.symbol.lower import make_train
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=4, name="fc"), name="sm")
    arg_shapes, _, _ = net.infer_shape(x=(2, 3))
    args = tuple(np.ones(s, np.float32) for s in arg_shapes)
    train = make_train(graph_of(net), (True, True, True, False), (False,) * 4, (True,))
    jaxpr = jax.make_jaxpr(lambda a: train(a, (), jax.random.key(0), (), ()))(args)

    def dots(eqns):
        for e in eqns:
            if e.primitive.name == "dot_general":
                yield str(e.params["precision"])
            for v in e.params.values():  # the custom_vjp's forward and backward
                yield from dots(getattr(getattr(v, "jaxpr", None), "eqns", []))
    found = list(dots(jaxpr.eqns))
    assert len(found) >= 2 and set(found) == {"(Precision.HIGHEST, Precision.HIGHEST)"}, found


def test_grad_req_null_maps_every_argument_to_none():
    sym = mlp()
    exe = sym.simple_bind(mx.cpu(), grad_req="null", data=(4, 3))
    assert exe.grad_dict == {n: None for n in sym.list_arguments()}
    assert exe.grad_arrays == [None] * len(sym.list_arguments())
    # the default grad_req='write' gives every argument a buffer, the label too
    exe = sym.simple_bind(mx.cpu(), data=(4, 3))
    assert all(exe.grad_dict[n].shape == exe.arg_dict[n].shape for n in sym.list_arguments())


def test_backward_after_inference_forward():
    x = mx.sym.Variable("x")
    w = mx.sym.Variable("w")
    y = mx.sym.dot(x, w)
    exe = y.simple_bind(mx.cpu(), x=(2, 3), w=(3, 4))
    xv, wv = np.arange(6.0).reshape(2, 3), np.ones((3, 4))
    exe.forward(is_train=False, x=xv, w=wv)
    head = np.full((2, 4), 2.0)
    exe.backward(mx.nd.array(head))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), head @ wv.T, rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), xv.T @ head, rtol=1e-6)


def test_backward_after_inference_forward_leaves_aux_states():
    data = mx.sym.Variable("data")
    bn = mx.sym.BatchNorm(data, name="bn", fix_gamma=False)
    exe = bn.simple_bind(mx.cpu(), data=(4, 2))
    exe.aux_dict["bn_moving_var"][:] = 1
    exe.forward(is_train=False, data=np.arange(8.0).reshape(4, 2))
    exe.backward(mx.nd.ones((4, 2)))
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), 0)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_var"].asnumpy(), 1)


def test_reshaped_executor_shares_memory():
    x = mx.sym.Variable("x")
    y = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    exe = y.simple_bind(mx.cpu(), x=(4, 3), grad_req="null")
    exe.arg_dict["x"][:] = np.arange(12.0).reshape(4, 3)
    exe.arg_dict["fc_weight"][:] = 1
    exe.arg_dict["fc_bias"][:] = 0
    small = exe.reshape(x=(2, 3))
    # the smaller input is the front of the original's buffer
    np.testing.assert_allclose(small.arg_dict["x"].asnumpy(), np.arange(6.0).reshape(2, 3))
    small.arg_dict["x"][:] = 1
    np.testing.assert_allclose(exe.arg_dict["x"].asnumpy()[:2], 1)
    np.testing.assert_allclose(exe.arg_dict["x"].asnumpy()[2:], np.arange(6.0, 12.0).reshape(2, 3))
    assert small.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]
    small.forward()
    np.testing.assert_allclose(small.outputs[0].asnumpy(), 3)
    np.testing.assert_allclose(exe.outputs[0].asnumpy()[:2], 3)  # outputs alias too
    big = exe.reshape(allow_up_sizing=True, x=(6, 3))
    big.arg_dict["x"][:] = 0
    assert exe.arg_dict["x"].asnumpy()[0, 0] == 1


def test_backward_without_differentiated_arguments_needs_no_head_gradient():
    out = mx.sym.Dropout(mx.sym.Variable("data"), p=0.5)
    exe = out.simple_bind(mx.cpu(), grad_req="null", data=(4, 3))
    exe.forward(is_train=True, data=np.ones((4, 3)))
    exe.backward()  # MXNet has no gradient graph here, so nothing is asked of the head
    mod = mx.mod.Module(out, label_names=None)
    mod.bind(data_shapes=[("data", (4, 3))])
    mod.init_params()
    mod.init_optimizer()
    mod.forward_backward(mx.io.DataBatch([mx.nd.ones((4, 3))]))
    mod.update()
    assert mod.get_outputs()[0].shape == (4, 3)


def test_backward_is_train_false_differentiates_the_inference_forward():
    # MXNet's backward(is_train=False): Dropout is the identity there, unless mode='always'.
    x = mx.sym.Variable("x")
    exe = mx.sym.Dropout(x, p=0.5).simple_bind(mx.cpu(), x=(8, 8))
    exe.arg_dict["x"][:] = 1
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((8, 8))])
    assert (exe.grad_dict["x"].asnumpy() == 0).any()
    exe.forward(is_train=False)
    exe.backward([mx.nd.ones((8, 8))], is_train=False)
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.ones((8, 8)))
    exe = mx.sym.Dropout(x, p=0.5, mode="always").simple_bind(mx.cpu(), x=(8, 8))
    exe.arg_dict["x"][:] = 1
    exe.forward(is_train=False)
    exe.backward([mx.nd.ones((8, 8))], is_train=False)
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), exe.outputs[0].asnumpy())
    assert (exe.outputs[0].asnumpy() == 0).any()


def test_simple_bind_ignores_keywords_that_are_not_shapes():
    # MXNet's simple_bind reads only tuple keywords as shapes (scripts pass force_rebind=True).
    exe = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc").simple_bind(
        mx.cpu(), data=(3, 4), force_rebind=True)
    assert exe.arg_dict["data"].shape == (3, 4) and exe.outputs[0].shape == (3, 2)

@pytest.mark.parametrize("make", [lambda x, y: x == y, lambda x, y: mx.sym.broadcast_greater(x, y),
                                  lambda x, y: mx.sym.BlockGrad(x * y), lambda x, y: mx.sym.round(x) + (y > 1)])
def test_backward_without_head_gradient_when_backward_ignores_it(make):
    # as MXNet 1.9.1: an output whose gradient is zero (comparison, BlockGrad, round) needs
    # no head gradient; the argument gradients come out zero
    exe = make(mx.sym.Variable("x"), mx.sym.Variable("y")).simple_bind(mx.cpu(), x=(2, 3), y=(2, 3))
    for g in exe.grad_arrays:
        g[:] = 5
    exe.forward(is_train=True, x=np.ones((2, 3)), y=np.zeros((2, 3)))
    exe.backward()
    for g in exe.grad_arrays:
        assert np.array_equal(g.asnumpy(), np.zeros((2, 3)))


def test_training_forward_then_backward_compiles_one_program():
    # forward(is_train=True) on outputs that take head gradients runs the training
    # function with zero heads, which backward then reuses: one compile, not two
    sym = mx.sym.Concat(mx.sym.Variable("a"), mx.sym.Variable("b"), dim=1) * 3
    a, b = np.arange(6.0).reshape(2, 3), np.ones((2, 2))
    exe = sym.simple_bind(mx.cpu(), a=(2, 3), b=(2, 2))
    with mx.compile.count_compiles() as n:
        out = exe.forward(is_train=True, a=a, b=b)[0].asnumpy()
        exe.backward([mx.nd.ones((2, 5)) * 2])
    assert n() == 1
    np.testing.assert_allclose(out, np.concatenate([a, b], 1) * 3)
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), np.full((2, 3), 6.0))
    # training forwards without a backward: after two, the forward-only program is compiled
    with mx.compile.count_compiles() as n:
        for _ in range(4):
            np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), out)
    assert n() == 1
    np.testing.assert_allclose(exe.grad_dict["a"].asnumpy(), np.full((2, 3), 6.0))


def test_simple_bind_ignores_keywords_that_are_not_shapes():
    # as MXNet 1.9.1: simple_bind(..., axis=-1, mode='clip') binds as if they were not given
    exe = (mx.sym.Variable("x") * 2).simple_bind(mx.cpu(), x=(2, 3), axis=-1, mode="clip")
    assert exe.arg_dict["x"].shape == (2, 3)
    with pytest.raises(mx.base.MXNetError, match="'y' is not an input"):
        (mx.sym.Variable("x") * 2).simple_bind(mx.cpu(), x=(2, 3), y=(1,))


def test_bind_args_dict_entry_none_for_a_non_input_is_ignored():
    # as MXNet 1.9.1: {'b': None} for a convolution without bias is not an unknown input
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    conv = mx.sym.Convolution(x, w, num_filter=1, kernel=(3,), no_bias=True)
    exe = conv.bind(mx.cpu(), {"x": mx.nd.ones((1, 1, 5)), "w": mx.nd.ones((1, 1, 3)), "b": None},
                    args_grad={"x": mx.nd.zeros((1, 1, 5)), "w": mx.nd.zeros((1, 1, 3)), "b": None},
                    grad_req={"x": "null", "w": "write", "b": "write"})  # 'b' in grad_req: ignored too
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), np.full((1, 1, 3), 3.0))
    exe.backward([mx.nd.ones((1, 1, 3))])
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), np.full((1, 1, 3), 3.0))
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.zeros((1, 1, 5)))  # null: untouched
    with pytest.raises(mx.base.MXNetError, match="unknown inputs"):
        conv.bind(mx.cpu(), {"x": mx.nd.ones((1, 1, 5)), "w": mx.nd.ones((1, 1, 3)), "b": mx.nd.ones(1)})
