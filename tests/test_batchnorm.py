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


GOLDEN = np.load(__import__("pathlib").Path(__file__).parent / "golden" / "batchnorm" / "fp16.npz")


def _golden_case(tag):
    return {k[len(tag) + 1:]: GOLDEN[k] for k in GOLDEN.files if k.startswith(tag + "/")}


import pytest  # noqa: E402


@pytest.mark.parametrize("tag", ["fix0_glob0", "fix1_glob0", "fix0_glob1", "fix1_glob1"])
def test_float16_data_keeps_float32_parameters_and_arithmetic_as_mxnet(tag):
    """tests/golden/make_batchnorm_golden.py: MXNet 1.9.1 gives float16 data float32 gamma,
    beta, moving statistics and mean / var outputs, and normalises in float32."""
    g = _golden_case(tag)
    fix, glob = tag == "fix1_glob0" or tag == "fix1_glob1", tag.endswith("glob1")
    sym = mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn", fix_gamma=fix, use_global_stats=glob,
                           output_mean_var=True, momentum=0.8, eps=1e-3)
    args, outs, aux = sym.infer_type(data="float16")
    assert [np.dtype(t).name for t in args + outs + aux] == list(g["types"])
    exe = sym.simple_bind(mx.cpu(), data=g["in/data"].shape, type_dict={"data": "float16"})
    for k in ("data", "bn_gamma", "bn_beta"):
        assert exe.arg_dict[k].dtype == g[f"in/{k}"].dtype
        exe.arg_dict[k][:] = g[f"in/{k}"]
    for k in ("bn_moving_mean", "bn_moving_var"):
        assert exe.aux_dict[k].dtype == np.float32
        exe.aux_dict[k][:] = g[f"aux/{k}"]
    outputs = exe.forward(is_train=True)
    for i, o in enumerate(outputs):
        assert o.dtype == g[f"out/{i}"].dtype
        np.testing.assert_allclose(o.asnumpy().astype(np.float64), g[f"out/{i}"], rtol=2e-3, atol=2e-3)
    exe.backward([mx.nd.array(g["head"], dtype="float16"), mx.nd.zeros(3), mx.nd.zeros(3)])
    for k in ("data", "bn_gamma", "bn_beta"):
        got = exe.grad_dict[k]
        assert got.dtype == g[f"grad/{k}"].dtype
        np.testing.assert_allclose(got.asnumpy().astype(np.float64), g[f"grad/{k}"], rtol=5e-3, atol=5e-3)
    for k in ("bn_moving_mean", "bn_moving_var"):
        np.testing.assert_allclose(exe.aux_dict[k].asnumpy(), g[f"aux_after/{k}"], rtol=1e-3, atol=1e-4)


def test_batchnorm_refuses_integer_data_and_mismatched_parameter_types():
    sym = _bn_net()
    with pytest.raises(mx.base.DTypeError, match="data must be float16, bfloat16, float32 or float64, got int32"):
        sym.infer_type(data="int32")
    with pytest.raises(mx.base.DTypeError, match="'bn_gamma'.*given float16 but inferred float32"):
        sym.infer_type(data="float16", bn_gamma="float16")
    with pytest.warns(UserWarning, match="Cannot decide type"):  # MXNet warns, naming data and beta
        assert sym.infer_type(bn_gamma="float32") == (None, None, None)  # MXNet: not decided by gamma
