"""Legacy and specialised operators (jbind/ops/legacy.py): Convolution_v1, Pooling_v1,
_contrib_SyncBatchNorm, Correlation and IdentityAttachKLSparseReg, against numpy references.
Behaviours marked "MXNet 1.9.1" were checked against it; tests/golden/ops_legacy/ holds
MXNet's own forward and backward values."""
import copy
import json

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, raises_naming
from test_ops_conv import np_conv

V = mx.sym.Variable
S = mx.sym
P, SE = mx.base.ParamError, mx.base.ShapeError


# ------------------------------------------------------------------ references
def np_pool_v1(x, kernel=None, stride=None, pad=None, kind="max", full=False, global_pool=False):
    """MXNet 1.9.1's pooling_v1: zero-pad, windows clipped at the padded edge, 'avg' divided
    by the whole kernel's size."""
    sp = x.shape[2:]
    if global_pool:
        kernel, stride, pad = sp, (1,) * len(sp), (0,) * len(sp)
    stride = stride or (1,) * len(sp)
    pad = pad or (0,) * len(sp)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    rnd = (lambda a, b: -(-a // b)) if full else (lambda a, b: a // b)
    out_sp = [1 + rnd(sp[i] + 2 * pad[i] - kernel[i], stride[i]) for i in range(len(sp))]
    out = np.zeros(x.shape[:2] + tuple(out_sp))
    for o in np.ndindex(*out_sp):
        win = xp[(slice(None), slice(None)) + tuple(slice(o[i] * stride[i], o[i] * stride[i] + kernel[i])
                                                    for i in range(len(sp)))]
        win = win.reshape(win.shape[:2] + (-1,))
        v = win.max(-1) if kind == "max" else win.sum(-1)
        out[(slice(None), slice(None)) + o] = v / np.prod(kernel) if kind == "avg" else v
    return out


def np_corr(a, b, kernel_size=1, max_displacement=1, stride1=1, stride2=1, pad_size=0, is_multiply=True):
    """MXNet's CPU correlation loop (src/operator/correlation.cc), position by position."""
    n, c, h, w = a.shape
    k, md, p = kernel_size, max_displacement, pad_size
    border = md + k // 2
    th, tw = [-(-(d + 2 * p - 2 * border) // stride1) for d in (h, w)]
    r = md // stride2
    d = 2 * r + 1
    ap, bp = [np.pad(v, [(0, 0), (0, 0), (p, p), (p, p)]) for v in (a, b)]
    out = np.zeros((n, d * d, th, tw))
    for q in range(d * d):
        dy, dx = (q // d - r) * stride2, (q % d - r) * stride2
        for i in range(th):
            for j in range(tw):
                y1, x1 = i * stride1 + md, j * stride1 + md
                w1 = ap[:, :, y1:y1 + k, x1:x1 + k]
                w2 = bp[:, :, y1 + dy:y1 + dy + k, x1 + dx:x1 + dx + k]
                f = w1 * w2 if is_multiply else np.abs(w1 - w2)
                out[:, q, i, j] = f.sum(axis=(1, 2, 3)) / (k * k * c)
    return out


def np_bn(x, gamma, beta, eps):
    red = (0,) + tuple(range(2, x.ndim))
    shape = [1] * x.ndim
    shape[1] = -1
    mean, var = x.mean(axis=red), x.var(axis=red)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * gamma.reshape(shape) + beta.reshape(shape)
    return y, mean, var


def _kl_penalty(x, moving_avg, target=0.1, penalty=0.001, momentum=0.9):
    """MXNet 1.9.1's backward: the updated moving average, and the term it adds to the gradient."""
    new = momentum * moving_avg + (1 - momentum) * x.mean(axis=0)
    return new, penalty * (-target / new + (1 - target) / (1 - new))


# ------------------------------------------------------------------ samples
CONV_V1 = [  # id, data shape, parameters
    ("2d", (2, 3, 6, 5), dict(kernel=(3, 2), stride=(2, 1), pad=(1, 1), dilate=(1, 2), num_filter=4)),
    ("2d_group", (1, 4, 4, 4), dict(kernel=(3, 3), pad=(1, 1), num_group=2, num_filter=2, no_bias=True)),
    ("3d", (1, 2, 3, 4, 3), dict(kernel=(2, 2, 2), stride=(1, 2, 1), num_filter=2)),
]


def _conv_v1_ref(**v):
    outs = []
    for id, _, kw in CONV_V1:
        n = len(kw["kernel"])
        y = np_conv(v["x_" + id], v["x_" + id + "_w"], kw.get("stride", (1,) * n), kw.get("dilate", (1,) * n),
                    kw.get("pad", (0,) * n), kw.get("num_group", 1))
        if not kw.get("no_bias"):
            y = y + v["x_" + id + "_b"].reshape(1, -1, *[1] * n)
        outs.append(y)
    return outs


def _conv_v1_case():
    def build():
        return S.Group([S.Convolution_v1(V("x_" + id), weight=V("x_" + id + "_w"),
                                         **({} if kw.get("no_bias") else {"bias": V("x_" + id + "_b")}), **kw)
                        for id, _, kw in CONV_V1])
    return Case("conv_v1_2d_3d", build, _conv_v1_ref, {"x_" + id: s for id, s, _ in CONV_V1})


POOL_V1 = [  # parameters; all on x (1, 2, 5, 6) but the 3-D one, on z
    dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1)),
    dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", pooling_convention="full"),
    dict(kernel=(2, 3), stride=(1, 2), pool_type="sum", pooling_convention="full"),
    dict(kernel=(1, 1), global_pool=True, pool_type="avg"),
    dict(global_pool=True),
]


def _np_pool_kw(kw):
    return dict(kernel=kw.get("kernel"), stride=kw.get("stride"), pad=kw.get("pad"), kind=kw.get("pool_type", "max"),
                full=kw.get("pooling_convention") == "full", global_pool=kw.get("global_pool", False))


def _pool_v1_case():
    z_kw = dict(kernel=(2, 2, 2), stride=(1, 2, 1), pool_type="avg", pooling_convention="full")
    def build():
        x = V("x")
        return S.Group([S.Pooling_v1(x, **kw) for kw in POOL_V1] + [S.Pooling_v1(V("z"), **z_kw)])
    return Case("pool_v1_zero_padding_kernel_divisor", build,
                lambda x, z: [np_pool_v1(x, **_np_pool_kw(kw)) for kw in POOL_V1]
                + [np_pool_v1(z, **_np_pool_kw(z_kw))],
                {"x": (1, 2, 5, 6), "z": (1, 1, 3, 4, 3)}, inputs={"x": (-2.0, -0.5)})


CORR = [  # parameters, all on a, b of shape (1, 2, 5, 6)
    dict(),
    dict(kernel_size=3, max_displacement=2, stride1=2, stride2=2, pad_size=1),
    dict(max_displacement=3, stride2=2, pad_size=3),
    dict(kernel_size=3, max_displacement=1, pad_size=1, is_multiply=False),
]


def _corr_case():
    def build():
        a, b = V("a"), V("b")
        return S.Group([S.Correlation(a, b, **kw) for kw in CORR])
    return Case("correlation_multiply_and_absdiff", build,
                lambda a, b: [np_corr(a, b, **kw) for kw in CORR], {"a": (1, 2, 5, 6), "b": (1, 2, 5, 6)})


def _kl_ref_grad(x):
    # check_op's executor starts moving_avg at zero (its __init__); the head gradient is ones
    _, pen = _kl_penalty(x, np.zeros(x.shape[1]), 0.2, 0.5, 0.3)
    return {"x": np.ones_like(x) + pen}


CASES = [
    _conv_v1_case(),
    _pool_v1_case(),
    Case("sync_batch_norm_training",
         lambda: S.contrib.SyncBatchNorm(V("x"), key="k", fix_gamma=False, eps=1e-3, name="sbn"),
         lambda x, sbn_gamma, sbn_beta: [np_bn(x, sbn_gamma, sbn_beta, 1e-3)[0]],
         {"x": (3, 2, 4)}, is_train=True, grad_rtol=5e-3, grad_atol=1e-3),
    _corr_case(),
    Case("kl_sparse_reg_identity_plus_penalty",
         lambda: S.IdentityAttachKLSparseReg(V("x"), sparseness_target=0.2, penalty=0.5, momentum=0.3),
         lambda x: [x], {"x": (4, 3)}, inputs={"x": (0.1, 0.9)}, ref_grad=_kl_ref_grad, is_train=True),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


# ------------------------------------------------------------------ parameters
def test_parameters_and_defaults_match_mxnet():
    from jbind.ops import REGISTRY as R
    # MXNet 1.9.1's declared parameters, in order
    assert R["Convolution_v1"].declared_params() == (
        "kernel", "stride", "dilate", "pad", "num_filter", "num_group", "workspace", "no_bias", "cudnn_tune",
        "cudnn_off", "layout")
    assert R["Pooling_v1"].declared_params() == ("kernel", "pool_type", "global_pool", "pooling_convention",
                                                 "stride", "pad")
    assert R["_contrib_SyncBatchNorm"].declared_params() == (
        "eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var", "ndev", "key")
    assert R["Correlation"].declared_params() == ("kernel_size", "max_displacement", "stride1", "stride2",
                                                  "pad_size", "is_multiply")
    assert R["IdentityAttachKLSparseReg"].declared_params() == ("sparseness_target", "penalty", "momentum")
    c = R["Correlation"]()
    assert (c.kernel_size, c.max_displacement, c.stride1, c.stride2, c.pad_size, c.is_multiply) == (1, 1, 1, 1, 0, True)
    k = R["IdentityAttachKLSparseReg"]()
    assert (k.sparseness_target, k.penalty, k.momentum) == (0.1, 0.001, 0.9)
    b = R["_contrib_SyncBatchNorm"](key="k")
    assert (b.eps, b.momentum, b.fix_gamma, b.use_global_stats, b.output_mean_var, b.ndev) == (
        1e-3, 0.9, True, False, False, 1)
    assert R["Convolution_v1"](kernel=(3, 3), num_filter=1).workspace == 1024


def test_bad_parameters_raise_naming_the_op():
    x = V("x")
    for make, needles in [
        (lambda: S.Convolution_v1(x, kernel=(3,), num_filter=2), ["Convolution_v1", "(3,)", "2 or 3 dims"]),
        (lambda: S.Convolution_v1(x, kernel=(2, 2, 2), dilate=(1, 2, 1), num_filter=2),
         ["Convolution_v1", "dilate (1, 2, 1)", "3d"]),
        (lambda: S.Convolution_v1(x, kernel=(3, 3), num_filter=3, num_group=2), ["Convolution_v1", "num_group=2"]),
        (lambda: S.Convolution_v1(x, kernel=(3, 3), num_filter=2, layout="NCW"), ["Convolution_v1", "layout"]),
        (lambda: S.Pooling_v1(x, kernel=(3,)), ["Pooling_v1", "(3,)", "2 or 3 dims"]),
        (lambda: S.Pooling_v1(x, kernel=(2, 2), stride=(1,)), ["Pooling_v1", "stride"]),
        (lambda: S.Pooling_v1(x, kernel=(2, 2), pool_type="lp"), ["Pooling_v1", "pool_type"]),
        (lambda: S.Pooling_v1(x, kernel=(2, 2), pooling_convention="same"), ["Pooling_v1", "pooling_convention"]),
        # MXNet 1.9.1's Pooling_v1 has no p_value, count_include_pad, layout or cudnn_off
        (lambda: S.Pooling_v1(x, kernel=(2, 2), count_include_pad=False), ["Pooling_v1", "count_include_pad"]),
        (lambda: S.Pooling_v1(x, kernel=(2, 2), p_value=2), ["Pooling_v1", "p_value"]),
        (lambda: S.contrib.SyncBatchNorm(x), ["_contrib_SyncBatchNorm", "key"]),
        (lambda: S.contrib.SyncBatchNorm(x, key="k", ndev=0), ["_contrib_SyncBatchNorm", "ndev", "0"]),
        (lambda: S.contrib.SyncBatchNorm(x, key="k", axis=1), ["_contrib_SyncBatchNorm", "axis"]),
        (lambda: S.Correlation(x, x, kernel_size=2), ["Correlation", "kernel_size", "odd", "2"]),
        (lambda: S.Correlation(x, x, stride1=0), ["Correlation", "stride1", "0"]),
        (lambda: S.Correlation(x, x, max_displacement=-1), ["Correlation", "max_displacement", "-1"]),
        (lambda: S.IdentityAttachKLSparseReg(x, sparseness_target=1.5), ["IdentityAttachKLSparseReg",
                                                                         "sparseness_target", "1.5"]),
        (lambda: S.IdentityAttachKLSparseReg(x, momentum=-0.1), ["IdentityAttachKLSparseReg", "momentum"]),
    ]:
        raises_naming(make, *needles, cls=P)


# ------------------------------------------------------------------ shapes and types
def test_shapes_match_mxnet():
    x, y = V("x"), V("y")
    # MXNet 1.9.1's shape rules, weights filled in
    assert S.Convolution_v1(x, kernel=(3, 2), num_filter=4, num_group=2, name="c").infer_shape(x=(2, 6, 5, 5)) == (
        [(2, 6, 5, 5), (4, 3, 3, 2), (4,)], [(2, 4, 3, 4)], [])
    assert S.Convolution_v1(x, kernel=(3, 3), num_filter=4, layout="NHWC").infer_shape(x=(1, 5, 5, 2))[:2] == (
        [(1, 5, 5, 2), (4, 3, 3, 2), (4,)], [(1, 3, 3, 4)])
    assert S.Pooling_v1(x, kernel=(3, 3), stride=(2, 2), pooling_convention="full").infer_shape(x=(1, 2, 6, 6))[1] == \
        [(1, 2, 3, 3)]
    assert S.Pooling_v1(x, global_pool=True).infer_shape(x=(1, 2, 3, 4, 5))[1] == [(1, 2, 1, 1, 1)]
    corr = S.Correlation(x, y, kernel_size=3, max_displacement=2, stride2=2, pad_size=1, name="corr")
    assert corr.list_outputs() == ["corr_output"]
    assert corr.infer_shape(x=(1, 2, 6, 7), y=(1, 2, 6, 7)) == ([(1, 2, 6, 7)] * 2, [(1, 9, 2, 3)], [])
    wide = S.Correlation(x, y, stride1=2, max_displacement=4, stride2=3)
    assert wide.infer_shape(x=(2, 3, 11, 12), y=(2, 3, 11, 12))[1] == [(2, 9, 2, 2)]
    assert corr.infer_shape_partial(x=(1, 2, 6, 7))[0] == [(1, 2, 6, 7)] * 2  # jbind: data2 has data1's shape
    bn = S.contrib.SyncBatchNorm(x, key="k", output_mean_var=True, name="bn")
    assert bn.list_outputs() == ["bn_output", "bn_mean", "bn_var"]
    assert bn.list_arguments() == ["x", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.infer_shape(x=(2, 3, 4)) == ([(2, 3, 4), (3,), (3,)], [(2, 3, 4), (3,), (3,)], [(3,), (3,)])
    assert S.contrib.SyncBatchNorm(x, key="k", name="bn").list_outputs() == ["bn_output"]
    # MXNet 1.9.1: float16 data has float32 parameters, statistics and mean / var outputs
    f16, f32 = np.float16, np.float32
    assert bn.infer_type(x="float16") == ([f16, f32, f32], [f16, f32, f32], [f32, f32])
    kl = S.IdentityAttachKLSparseReg(x, name="kl")
    assert kl.list_auxiliary_states() == ["kl_moving_avg"]
    assert kl.infer_shape(x=(5, 3)) == ([(5, 3)], [(5, 3)], [(3,)])


def test_bad_shapes_raise_naming_the_op():
    x, y = V("x"), V("y")
    corr = S.Correlation(x, y, max_displacement=3, name="corr")
    # MXNet 1.9.1: "Correlation cannot be done with current settings"
    raises_naming(lambda: corr.infer_shape(x=(1, 2, 6, 6), y=(1, 2, 6, 6)), "Correlation", "'corr'",
                  "max_displacement=3", "(1, 2, 6, 6)", cls=SE)
    raises_naming(lambda: corr.infer_shape(x=(1, 2, 6), y=(1, 2, 6)), "Correlation", "4-D", cls=SE)
    raises_naming(lambda: corr.infer_shape(x=(1, 2, 9, 9), y=(1, 3, 9, 9)), "Correlation", "(1, 3, 9, 9)", cls=SE)
    raises_naming(lambda: S.Pooling_v1(x, kernel=(2, 2), name="p").infer_shape(x=(1, 2, 5)), "Pooling_v1", "'p'",
                  "(1, 2, 5)", cls=SE)
    raises_naming(lambda: S.Pooling_v1(x, kernel=(2, 2, 2), name="p").infer_shape(x=(1, 2, 5, 5)), "Pooling_v1",
                  "5 dims", cls=SE)
    raises_naming(lambda: S.Convolution_v1(x, kernel=(7, 7), num_filter=2, name="c").infer_shape(x=(1, 2, 5, 5)),
                  "Convolution_v1", "'c'", cls=SE)
    raises_naming(lambda: S.IdentityAttachKLSparseReg(x, name="kl").infer_shape(x=(5,)), "IdentityAttachKLSparseReg",
                  "(5,)", cls=SE)


# ------------------------------------------------------------------ semantics
def test_pooling_v1_max_sees_its_zero_padding_unlike_pooling():
    x = mx.nd.array(-np.ones((1, 1, 2, 2)))
    v1 = mx.nd.Pooling_v1(x, kernel=(2, 2), stride=(2, 2), pad=(1, 1)).asnumpy()
    now = mx.nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pad=(1, 1)).asnumpy()
    np.testing.assert_array_equal(v1, np.zeros((1, 1, 2, 2)))  # MXNet 1.9.1
    np.testing.assert_array_equal(now, -np.ones((1, 1, 2, 2)))
    # 'avg' in 'full' mode divides by the kernel size, also where the window is clipped
    full = mx.nd.Pooling_v1(mx.nd.ones((1, 1, 3, 3)), kernel=(2, 2), stride=(2, 2), pool_type="avg",
                            pooling_convention="full")
    np.testing.assert_array_equal(full.asnumpy()[0, 0], [[1, 0.5], [0.5, 0.25]])


def test_sync_batch_norm_mean_var_outputs_and_moving_stats():
    rng = np.random.default_rng(0)
    x, gamma, beta = rng.uniform(-1, 1, (4, 3, 5)), rng.uniform(0.5, 1, 3), rng.uniform(-1, 1, 3)
    bn = S.contrib.SyncBatchNorm(V("x"), key="k", fix_gamma=False, momentum=0.8, output_mean_var=True, name="bn")
    exe = bn.simple_bind(mx.cpu(), x=x.shape)
    exe.arg_dict["x"][:], exe.arg_dict["bn_gamma"][:], exe.arg_dict["bn_beta"][:] = x, gamma, beta
    mm, mv = rng.uniform(-0.5, 0.5, 3), rng.uniform(0.5, 1.5, 3)
    exe.aux_dict["bn_moving_mean"][:], exe.aux_dict["bn_moving_var"][:] = mm, mv
    y, mean, var = [o.asnumpy() for o in exe.forward(is_train=True)]
    ry, rmean, rvar = np_bn(x, gamma, beta, 1e-3)
    # MXNet 1.9.1: the batch mean and the biased variance itself (BatchNorm outputs 1/sqrt(var + eps))
    np.testing.assert_allclose(y, ry, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean, rmean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, rvar, rtol=1e-4, atol=1e-6)
    # MXNet 1.9.1 updates the moving statistics in backward, not in the forward
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), mm, rtol=1e-6)
    exe.backward([mx.nd.ones(y.shape), mx.nd.ones(mean.shape), mx.nd.ones(var.shape)])
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), 0.8 * mm + 0.2 * rmean, rtol=1e-5)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_var"].asnumpy(), 0.8 * mv + 0.2 * rvar, rtol=1e-5)
    # the mean / var outputs' head gradients are ignored (MXNet's backward reads only the output's)
    np.testing.assert_allclose(exe.grad_dict["bn_beta"].asnumpy(), np.full(3, 20.0), rtol=1e-6)
    # inference: the moving statistics (MXNet 1.9.1 leaves the mean / var outputs unwritten)
    mm2, mv2 = exe.aux_dict["bn_moving_mean"].asnumpy(), exe.aux_dict["bn_moving_var"].asnumpy()
    y, mean, var = [o.asnumpy() for o in exe.forward(is_train=False)]
    sh = (1, 3, 1)
    np.testing.assert_allclose(y, (x - mm2.reshape(sh)) / np.sqrt(mv2.reshape(sh) + 1e-3) * gamma.reshape(sh)
                               + beta.reshape(sh), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean, mm2, rtol=1e-6)
    np.testing.assert_allclose(var, mv2, rtol=1e-6)


def test_sync_batch_norm_float16_and_key():
    x = mx.nd.array(np.arange(12).reshape(4, 3), dtype="float16")
    out = mx.nd.contrib.SyncBatchNorm(x, mx.nd.ones(3), mx.nd.zeros(3), mx.nd.zeros(3), mx.nd.ones(3), key="k")
    assert out.dtype == np.float16 and out.shape == (4, 3)  # normalised in float32 (MXNet 1.9.1 fails)
    np.testing.assert_allclose(out.asnumpy(), (np.arange(12).reshape(4, 3) - 0) / np.sqrt(1 + 1e-3), rtol=1e-3)
    # the parameter `key` is a plain string for the graph, and two keys make two ops
    a, b = S.contrib.SyncBatchNorm(V("x"), key="a"), S.contrib.SyncBatchNorm(V("x"), key="b")
    assert a.fingerprint != b.fingerprint and '"key": "a"' in a.tojson()
    op = a._heads[0][0].op
    assert op.key == "a" and type(op.key) is str
    assert copy.deepcopy(op) == op and copy.deepcopy(op).hash_key() == op.hash_key()
    with pytest.raises(mx.MXNetError, match="required parameter.*key"):
        S.contrib.SyncBatchNorm(V("x"))


def test_correlation_absdiff_ties_take_mxnets_signs():
    # MXNet 1.9.1's CPU kernel: where data1 == data2 the gradient is +1/(k^2 C) for data1, -1/(k^2 C) for data2
    a = b = np.ones((1, 1, 3, 3))
    corr = S.Correlation(V("a"), V("b"), max_displacement=0, is_multiply=False)
    exe = corr.simple_bind(mx.cpu(), a=a.shape, b=b.shape)
    exe.forward(is_train=True, a=a, b=b)
    exe.backward(mx.nd.ones((1, 1, 3, 3)))
    np.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), np.ones(a.shape))
    np.testing.assert_array_equal(exe.grad_dict["b"].asnumpy(), -np.ones(a.shape))


def test_correlation_nd_and_large_displacement_compiles_small():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(1, 2, 9, 9)), rng.normal(size=(1, 2, 9, 9))
    out = mx.nd.Correlation(mx.nd.array(a), mx.nd.array(b), max_displacement=4, pad_size=4)
    assert out.shape == (1, 81, 9, 9)
    np.testing.assert_allclose(out.asnumpy(), np_corr(a, b, max_displacement=4, pad_size=4), rtol=1e-4, atol=1e-5)


def test_kl_sparse_reg_updates_moving_avg_in_backward():
    rng = np.random.default_rng(2)
    x = rng.uniform(0.1, 0.9, (5, 3))
    kl = S.IdentityAttachKLSparseReg(V("x"), sparseness_target=0.3, penalty=0.2, momentum=0.6, name="kl")
    exe = kl.simple_bind(mx.cpu(), x=x.shape)
    avg = rng.uniform(0.2, 0.6, 3)
    exe.aux_dict["kl_moving_avg"][:] = avg
    np.testing.assert_array_equal(exe.forward(is_train=False, x=x)[0].asnumpy(), x.astype(np.float32))
    exe.forward(is_train=True, x=x)
    np.testing.assert_allclose(exe.aux_dict["kl_moving_avg"].asnumpy(), avg, rtol=1e-6)  # not yet
    head = rng.uniform(-1, 1, x.shape)
    exe.backward(mx.nd.array(head))
    new, pen = _kl_penalty(x, avg, 0.3, 0.2, 0.6)
    np.testing.assert_allclose(exe.aux_dict["kl_moving_avg"].asnumpy(), new, rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), head + pen, rtol=1e-5, atol=1e-6)
    # mx.nd: identity
    np.testing.assert_array_equal(mx.nd.IdentityAttachKLSparseReg(mx.nd.array(x), mx.nd.zeros(3)).asnumpy(),
                                  x.astype(np.float32))


def test_nd_calls():
    rng = np.random.default_rng(3)
    x, w, b = rng.normal(size=(1, 2, 5, 5)), rng.normal(size=(3, 2, 3, 3)), rng.normal(size=3)
    y = mx.nd.Convolution_v1(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), kernel=(3, 3), num_filter=3)
    np.testing.assert_allclose(y.asnumpy(), np_conv(x, w, (1, 1), (1, 1), (0, 0)) + b.reshape(1, 3, 1, 1),
                               rtol=1e-4, atol=1e-5)
    p = mx.nd.Pooling_v1(mx.nd.array(x), kernel=(2, 2), stride=(2, 2), pool_type="avg", pooling_convention="full")
    np.testing.assert_allclose(p.asnumpy(), np_pool_v1(x, (2, 2), (2, 2), kind="avg", full=True), rtol=1e-5)


# ------------------------------------------------------------------ MXNet's JSON
MXNET_JSON = (  # MXNet 1.9.1: Convolution_v1 -> Pooling_v1 -> SyncBatchNorm -> sigmoid -> KL -> Correlation
    '{"nodes":[{"op":"null","name":"data","inputs":[]},{"op":"null","name":"conv_weight","attrs":{"kernel":"(3, 3)",'
    '"num_filter":"4","pad":"(1, 1)"},"inputs":[]},{"op":"null","name":"conv_bias","attrs":{"kernel":"(3, 3)",'
    '"num_filter":"4","pad":"(1, 1)"},"inputs":[]},{"op":"Convolution_v1","name":"conv","attrs":{"kernel":"(3, 3)",'
    '"num_filter":"4","pad":"(1, 1)"},"inputs":[[0,0,0],[1,0,0],[2,0,0]]},{"op":"Pooling_v1","name":"pool","attrs":'
    '{"kernel":"(2, 2)","pool_type":"avg","pooling_convention":"full","stride":"(2, 2)"},"inputs":[[3,0,0]]},'
    '{"op":"null","name":"bn_gamma","attrs":{"fix_gamma":"False","key":"bn0","ndev":"2"},"inputs":[]},{"op":"null",'
    '"name":"bn_beta","attrs":{"fix_gamma":"False","key":"bn0","ndev":"2"},"inputs":[]},{"op":"null","name":'
    '"bn_moving_mean","attrs":{"__init__":"[\\"zero\\", {}]","fix_gamma":"False","key":"bn0","ndev":"2"},"inputs":[]},'
    '{"op":"null","name":"bn_moving_var","attrs":{"__init__":"[\\"one\\", {}]","fix_gamma":"False","key":"bn0",'
    '"ndev":"2"},"inputs":[]},{"op":"_contrib_SyncBatchNorm","name":"bn","attrs":{"fix_gamma":"False","key":"bn0",'
    '"ndev":"2"},"inputs":[[4,0,0],[5,0,0],[6,0,0],[7,0,1],[8,0,1]]},{"op":"sigmoid","name":"sig","inputs":[[9,0,0]]},'
    '{"op":"null","name":"kl_moving_avg","attrs":{"__init__":"[\\"zero\\", {}]","penalty":"0.01"},"inputs":[]},'
    '{"op":"IdentityAttachKLSparseReg","name":"kl","attrs":{"penalty":"0.01"},"inputs":[[10,0,0],[11,0,1]]},'
    '{"op":"null","name":"data2","inputs":[]},{"op":"Correlation","name":"corr","attrs":{"is_multiply":"False",'
    '"kernel_size":"1","max_displacement":"1"},"inputs":[[12,0,0],[13,0,0]]}],"arg_nodes":[0,1,2,5,6,7,8,11,13],'
    '"node_row_ptr":[0,1,2,3,4,5,6,7,8,9,12,13,14,15,16,19],"heads":[[14,0,0]],'
    '"attrs":{"mxnet_version":["int",10901]}}')


def _strip_versions(nodes):
    return [dict(n, inputs=[e[:2] for e in n["inputs"]]) for n in nodes]


def test_loads_mxnets_json_and_writes_it_back():
    sym = S.load_json(MXNET_JSON)
    assert sym.list_arguments() == ["data", "conv_weight", "conv_bias", "bn_gamma", "bn_beta", "data2"]
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var", "kl_moving_avg"]
    # MXNet 1.9.1's infer_shape of this graph
    assert sym.infer_shape(data=(2, 3, 6, 6), data2=(2, 4, 3, 3)) == (
        [(2, 3, 6, 6), (4, 3, 3, 3), (4,), (4,), (4,), (2, 4, 3, 3)], [(2, 9, 1, 1)], [(4,), (4,), (4,)])
    mine, theirs = json.loads(sym.tojson()), json.loads(MXNET_JSON)
    # the same nodes, attributes and edges (jbind writes aux edges with version 0, MXNet 1)
    assert _strip_versions(mine["nodes"]) == _strip_versions(theirs["nodes"])
    assert mine["heads"] == theirs["heads"] and mine["node_row_ptr"] == theirs["node_row_ptr"]
    exe = sym.simple_bind(mx.cpu(), data=(2, 3, 6, 6), data2=(2, 4, 3, 3))
    out = exe.forward(is_train=True)[0]
    exe.backward(mx.nd.ones(out.shape))
    assert out.shape == (2, 9, 1, 1) and np.isfinite(exe.grad_dict["data"].asnumpy()).all()
