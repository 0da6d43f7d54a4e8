"""Compiles saved without changing a number: programs that lower to the same text share one
executable, and grad_req 'add' runs on a graph's compiled 'write' program."""
import numpy as np

import jbind as mx


def _mlp():
    x = mx.sym.Variable("x")
    h = mx.sym.FullyConnected(x, num_hidden=11, name="fc1")
    return mx.sym.FullyConnected(mx.sym.tanh(h), num_hidden=3, name="fc2")


def _args(rng, batch):
    return {"x": rng.randn(batch, 9), "fc1_weight": rng.randn(11, 9), "fc1_bias": rng.randn(11),
            "fc2_weight": rng.randn(3, 11), "fc2_bias": rng.randn(3)}


def _bind(sym, values, req):
    args = {k: mx.nd.array(v) for k, v in values.items()}
    grads = {k: mx.nd.array(np.full(v.shape, 0.5)) for k, v in values.items()}
    return sym.bind(mx.cpu(), args=args, args_grad=grads, grad_req=req)


def _step(ex, head):
    ex.forward(is_train=True)
    ex.backward([head])
    return {k: g.asnumpy() for k, g in ex.grad_dict.items() if g is not None}


def _write_case(seed, batch):
    """The graph, its arguments, a head gradient and the gradients grad_req 'write' gives."""
    rng = np.random.RandomState(seed)
    sym, values = _mlp(), _args(rng, batch)
    head = mx.nd.array(rng.randn(batch, 3))
    return sym, values, head, _step(_bind(sym, values, "write"), head)


def test_add_after_write_sums_into_the_buffers_without_a_new_compile():
    sym, values, head, new = _write_case(0, 37)
    before = mx.compile.stats()["misses"]
    a = _bind(sym, values, "add")
    a.forward(is_train=True)
    a.backward([head])
    assert mx.compile.stats()["misses"] == before  # the 'write' program ran
    for k, g in a.grad_dict.items():
        np.testing.assert_allclose(g.asnumpy(), 0.5 + new[k], rtol=1e-6, atol=1e-6)
    a.forward(is_train=True)
    a.backward([head])
    for k, g in a.grad_dict.items():
        np.testing.assert_allclose(g.asnumpy(), 0.5 + 2 * new[k], rtol=1e-5, atol=1e-5)


def test_add_with_some_arguments_write_keeps_each_request():
    sym, values, head, new = _write_case(1, 41)
    req = {"x": "null", "fc1_weight": "add", "fc1_bias": "write", "fc2_weight": "add", "fc2_bias": "write"}
    a = _bind(sym, values, req)
    a.forward(is_train=True)
    a.backward([head])
    assert a.grad_dict["x"] is None or np.allclose(a.grad_dict["x"].asnumpy(), 0.5)
    for k in ("fc1_weight", "fc2_weight"):
        np.testing.assert_allclose(a.grad_dict[k].asnumpy(), 0.5 + new[k], rtol=1e-6, atol=1e-6)
    for k in ("fc1_bias", "fc2_bias"):
        np.testing.assert_allclose(a.grad_dict[k].asnumpy(), new[k], rtol=1e-6, atol=1e-6)


def test_a_training_forward_that_ignores_is_train_shares_the_inference_program():
    rng = np.random.RandomState(2)
    sym, values = _mlp(), _args(rng, 43)
    ex = sym.bind(mx.cpu(), args={k: mx.nd.array(v) for k, v in values.items()})
    infer = ex.forward(is_train=False)[0].asnumpy()
    shared = mx.compile.stats()["same_program"]
    train = ex.forward(is_train=True)[0].asnumpy()
    assert mx.compile.stats()["same_program"] == shared + 1
    np.testing.assert_array_equal(train, infer)


def test_dropout_keeps_a_training_program_of_its_own():
    x = mx.sym.Variable("x")
    sym = mx.sym.Dropout(x * 2, p=0.5)
    ex = sym.bind(mx.cpu(), args={"x": mx.nd.ones((47, 5))})
    infer = ex.forward(is_train=False)[0].asnumpy()
    shared = mx.compile.stats()["same_program"]
    train = ex.forward(is_train=True)[0].asnumpy()
    assert mx.compile.stats()["same_program"] == shared
    np.testing.assert_array_equal(infer, 2.0)
    assert set(np.unique(train)) <= {0.0, 4.0} and (train == 0).any()


def test_the_same_program_on_another_device_is_compiled_for_that_device():
    x = mx.sym.Variable("x")
    sym = mx.sym.sin(x) * 3
    data = np.linspace(0, 1, 53 * 3).reshape(53, 3)
    outs = []
    for dev in (0, 1):
        ex = sym.bind(mx.cpu(dev), args={"x": mx.nd.array(data, ctx=mx.cpu(dev))})
        shared = mx.compile.stats()["same_program"]
        out = ex.forward()[0]
        assert mx.compile.stats()["same_program"] == shared
        assert out.context == mx.cpu(dev)
        outs.append(out.asnumpy())
    np.testing.assert_allclose(outs[0], np.sin(data) * 3, rtol=1e-6)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_programs_that_ignore_an_argument_of_another_shape_do_not_share():
    import jax
    import jax.numpy as jnp

    from jbind.compile._options import compile_lowered

    f = lambda a, b: a * 2  # noqa: E731 - `b` is pruned from the program's text
    x = jnp.arange(3.0)
    one = compile_lowered(jax.jit(f).lower(x, jnp.ones((9,))))
    two = compile_lowered(jax.jit(f).lower(x, jnp.ones((9, 1))))
    assert one is not two
    np.testing.assert_array_equal(two(x, jnp.ones((9, 1))), [0.0, 2.0, 4.0])
    assert compile_lowered(jax.jit(f).lower(x, jnp.ones((9, 1)))) is two


def test_a_weakly_typed_result_is_not_handed_to_a_strongly_typed_call():
    import jax
    import jax.numpy as jnp

    from jbind.compile._options import compile_lowered

    f = lambda a: a * 2.0  # noqa: E731
    weak = compile_lowered(jax.jit(f).lower(2.0))
    strong = compile_lowered(jax.jit(f).lower(jnp.float32(2.0)))
    assert weak is not strong
    assert not strong(jnp.float32(3.0)).weak_type
