import numpy as np

import jbind as mx


def _bn_net(**kw):
    return mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn", **kw)


def _bind(sym, shape):
    exe = sym.simple_bind(mx.cpu(), data=shape)
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape)
    exe.arg_dict["data"][:] = x
    exe.arg_dict["bn_gamma"][:] = rng.uniform(0.5, 1.5, size=shape[1])
    exe.arg_dict["bn_beta"][:] = rng.uniform(-1, 1, size=shape[1])
    exe.aux_dict["bn_moving_mean"][:] = rng.uniform(-1, 1, size=shape[1])
    exe.aux_dict["bn_moving_var"][:] = rng.uniform(0.5, 2, size=shape[1])
    return exe, x


def test_lists_aux_states_and_shapes():
    sym = _bn_net()
    assert sym.list_arguments() == ["data", "bn_gamma", "bn_beta"]
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert sym.list_outputs() == ["bn_output"]
    arg, out, aux = sym.infer_shape(data=(4, 3, 5))
    assert arg == [(4, 3, 5), (3,), (3,)] and out == [(4, 3, 5)] and aux == [(3,), (3,)]


def test_training_uses_batch_stats_and_updates_moving_stats_at_backward():
    sym = _bn_net(fix_gamma=False, momentum=0.8, eps=1e-3)
    exe, x = _bind(sym, (6, 3, 2))
    mm0 = exe.aux_dict["bn_moving_mean"].asnumpy()
    mv0 = exe.aux_dict["bn_moving_var"].asnumpy()
    g = exe.arg_dict["bn_gamma"].asnumpy()
    b = exe.arg_dict["bn_beta"].asnumpy()
    out = exe.forward(is_train=True)[0].asnumpy()
    mean = x.mean(axis=(0, 2))
    var = x.var(axis=(0, 2))
    want = (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-3) * g[None, :, None] + b[None, :, None]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    # forward alone does not move the statistics; backward does (MXNet 1.x)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), mm0)
    exe.backward([mx.nd.ones((6, 3, 2))])
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), mm0 * 0.8 + mean * 0.2, rtol=1e-5)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_var"].asnumpy(), mv0 * 0.8 + var * 0.2, rtol=1e-5)


def test_inference_uses_moving_stats_and_fix_gamma():
    sym = _bn_net()  # fix_gamma=True: gamma is treated as 1
    exe, x = _bind(sym, (4, 3))
    mm = exe.aux_dict["bn_moving_mean"].asnumpy()
    mv = exe.aux_dict["bn_moving_var"].asnumpy()
    b = exe.arg_dict["bn_beta"].asnumpy()
    out = exe.forward(is_train=False)[0].asnumpy()
    np.testing.assert_allclose(out, (x - mm) / np.sqrt(mv + 1e-3) + b, rtol=1e-4, atol=1e-5)


def test_fix_gamma_gives_zero_gamma_gradient():
    exe, _ = _bind(_bn_net(), (4, 3))
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((4, 3)) * 2])
    np.testing.assert_array_equal(exe.grad_dict["bn_gamma"].asnumpy(), np.zeros(3))
    np.testing.assert_allclose(exe.grad_dict["bn_beta"].asnumpy(), np.full(3, 8.0))


def test_moving_stats_shared_with_shared_exec():
    sym = _bn_net()
    exe, _ = _bind(sym, (4, 3))
    other = sym.simple_bind(mx.cpu(), data=(2, 3), shared_exec=exe, shared_arg_names=["bn_gamma", "bn_beta"])
    assert other.aux_dict["bn_moving_mean"] is exe.aux_dict["bn_moving_mean"]
    assert other.arg_dict["bn_gamma"] is exe.arg_dict["bn_gamma"]
