"""mx.export.to_jax: a symbol as a pure JAX function (jit, grad, optax, jax.export)."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jbind as mx

V = mx.sym.Variable
SHAPES = {"data": (4, 2, 6, 6), "softmax_label": (4,)}


def _net():
    h = mx.sym.Convolution(V("data"), kernel=(3, 3), pad=(1, 1), num_filter=3, name="conv")
    h = mx.sym.BatchNorm(h, fix_gamma=False, name="bn")
    h = mx.sym.Pooling(mx.sym.Activation(h, act_type="relu", name="relu"), kernel=(2, 2), stride=(2, 2),
                       pool_type="max", name="pool")
    h = mx.sym.FullyConnected(mx.sym.Flatten(h, name="flat"), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def _params(sym, shapes, seed=0):
    rng = np.random.default_rng(seed)
    arg_s, _, aux_s = sym.infer_shape(**shapes)
    args = {n: rng.uniform(-0.5, 0.5, s).astype(np.float32)
            for n, s in zip(sym.list_arguments(), arg_s) if n not in shapes}
    aux = {n: rng.uniform(0.5, 1.5, s).astype(np.float32) for n, s in zip(sym.list_auxiliary_states(), aux_s)}
    return args, aux


def _inputs(seed=1, batch=4):
    rng = np.random.default_rng(seed)
    return {"data": rng.uniform(-1, 1, (batch, 2, 6, 6)).astype(np.float32),
            "softmax_label": rng.integers(0, 3, batch).astype(np.float32)}


def _executor(sym, args, aux, inputs):
    exe = sym.simple_bind(mx.cpu(), grad_req={n: "null" if n in inputs else "write"
                                             for n in sym.list_arguments()},
                          **{n: v.shape for n, v in inputs.items()})
    for n, v in {**args, **inputs}.items():
        exe.arg_dict[n][:] = v
    for n, v in aux.items():
        exe.aux_dict[n][:] = v
    return exe


def test_params_pytree_and_outputs_match_the_executor():
    sym = _net()
    args, aux = _params(sym, SHAPES)
    fn, params = mx.export.to_jax(sym, {n: mx.nd.array(v) for n, v in args.items()}, aux)
    assert sorted(params) == ["arg", "aux"]
    assert set(params["arg"]) == set(args) and set(params["aux"]) == set(aux)
    assert all(isinstance(v, jax.Array) for v in jax.tree_util.tree_leaves(params))
    inputs = _inputs()
    exe = _executor(sym, args, aux, inputs)
    want = exe.forward(is_train=False)[0].asnumpy()
    np.testing.assert_allclose(np.asarray(fn(params, inputs)), want, rtol=1e-5, atol=1e-6)
    # training: batch statistics, and the moving statistics the executor publishes at backward()
    out, new_aux = fn(params, inputs, is_train=True)
    np.testing.assert_allclose(np.asarray(out), exe.forward(is_train=True)[0].asnumpy(), rtol=1e-5, atol=1e-6)
    exe.backward()
    assert set(new_aux) == set(aux)
    for n in aux:
        np.testing.assert_allclose(np.asarray(new_aux[n]), exe.aux_dict[n].asnumpy(), rtol=1e-5, atol=1e-6)


def test_jit_and_one_lowering_per_shape():
    sym = _net()
    fn, params = mx.export.to_jax(sym, *_params(sym, SHAPES))
    jfn = jax.jit(fn)
    for batch in (4, 2, 4):
        inputs = _inputs(batch=batch)
        np.testing.assert_allclose(np.asarray(jfn(params, inputs)), np.asarray(fn(params, inputs)),
                                   rtol=1e-5, atol=1e-6)
    assert fn.num_cached_shapes() == 2
    train = jax.jit(fn, static_argnames="is_train")
    out, new_aux = train(params, _inputs(), is_train=True)
    assert out.shape == (4, 3) and set(new_aux) == set(params["aux"])
    with pytest.raises(Exception, match="static_argnames"):
        jax.jit(lambda p, x, t: fn(p, x, is_train=t))(params, _inputs(), True)


def test_grad_is_mxnets_gradient():
    sym = _net()
    args, aux = _params(sym, SHAPES)
    fn, params = mx.export.to_jax(sym, args, aux)
    inputs = _inputs()

    def loss(p):
        out, _ = fn(p, inputs, is_train=True)
        return jnp.sum(out)  # SoftmaxOutput ignores the cotangent: MXNet's softmax - onehot
    grads = jax.jit(jax.grad(loss))(params)
    exe = _executor(sym, args, aux, inputs)
    exe.forward(is_train=True)
    exe.backward()
    for n in args:
        np.testing.assert_allclose(np.asarray(grads["arg"][n]), exe.grad_dict[n].asnumpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=n)


def test_optax_sgd_decreases_a_loss():
    h = mx.sym.Activation(mx.sym.FullyConnected(V("x"), num_hidden=8, name="fc1"), act_type="tanh", name="t")
    sym = mx.sym.FullyConnected(h, num_hidden=1, name="fc2")
    args, _ = _params(sym, {"x": (16, 3)})
    fn, params = mx.export.to_jax(sym, args, {})
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (16, 3)).astype(np.float32)
    y = np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)
    opt = optax.sgd(0.1)

    def loss(p):
        return jnp.mean((fn(p, {"x": x}) - y) ** 2)

    @jax.jit
    def step(p, state):
        value, g = jax.value_and_grad(loss)(p)
        updates, state = opt.update(g, state, p)
        return optax.apply_updates(p, updates), state, value
    state = opt.init(params)
    losses = []
    for _ in range(20):
        params, state, value = step(params, state)
        losses.append(float(value))
    assert losses[-1] < 0.7 * losses[0]


def test_jax_export_round_trip():
    sym = _net()
    fn, params = mx.export.to_jax(sym, *_params(sym, SHAPES))
    inputs = _inputs()
    exported = jax.export.export(jax.jit(fn))(params, inputs)
    want = np.asarray(fn(params, inputs))
    np.testing.assert_allclose(np.asarray(exported.call(params, inputs)), want, rtol=1e-6, atol=1e-6)
    restored = jax.export.deserialize(exported.serialize())
    np.testing.assert_allclose(np.asarray(restored.call(params, inputs)), want, rtol=1e-6, atol=1e-6)


def test_random_ops_need_a_key_in_training():
    sym = mx.sym.Dropout(V("x"), p=0.5, name="drop")
    fn, params = mx.export.to_jax(sym, {}, {})
    x = np.ones((64,), np.float32)
    np.testing.assert_array_equal(np.asarray(fn(params, {"x": x})), x)  # identity at inference
    with pytest.raises(ValueError, match="rng"):
        fn(params, {"x": x}, is_train=True)
    a, _ = fn(params, {"x": x}, is_train=True, rng=jax.random.key(1))
    b, _ = fn(params, {"x": x}, is_train=True, rng=jax.random.key_data(jax.random.key(1)))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert set(np.unique(np.asarray(a))) <= {0.0, 2.0}


def test_multiple_outputs_are_a_list():
    x = V("x")
    fn, params = mx.export.to_jax(mx.sym.Group([x * 2, x + 1]), {}, {})
    outs = fn(params, {"x": np.ones(3, np.float32)})
    assert isinstance(outs, list) and [float(o[0]) for o in outs] == [2.0, 2.0]


def test_bad_names_are_refused():
    sym = _net()
    args, aux = _params(sym, SHAPES)
    with pytest.raises(mx.MXNetError, match="allow_extra"):
        mx.export.to_jax(sym, {**args, "old_weight": np.zeros(2)}, aux)
    mx.export.to_jax(sym, {**args, "old_weight": np.zeros(2)}, aux, allow_extra=True)
    with pytest.raises(mx.MXNetError, match="aux_params lacks"):
        mx.export.to_jax(sym, args, {})
    fn, params = mx.export.to_jax(sym, args, aux)
    with pytest.raises(mx.MXNetError, match="missing \\['softmax_label'\\]"):
        fn(params, {"data": _inputs()["data"]})
    with pytest.raises(mx.MXNetError, match="given twice \\['fc_bias'\\]"):
        fn(params, {**_inputs(), "fc_bias": np.zeros(3, np.float32)})
