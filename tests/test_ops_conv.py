"""Convolution, pooling and layer-normalisation ops against numpy references
(forward, and gradients by finite differences); MXNet's own values are in
tests/test_zoo_golden.py."""
import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op

V = mx.sym.Variable


def np_conv(x, w, stride, dilate, pad, groups=1):
    nsp = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    k, f, c = w.shape[2:], w.shape[0], x.shape[1]
    out_sp = [(x.shape[2 + i] - dilate[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    out = np.zeros((x.shape[0], f, *out_sp))
    cg, fg = c // groups, f // groups
    for idx in np.ndindex(*k):
        sl = tuple(slice(idx[i] * dilate[i], idx[i] * dilate[i] + stride[i] * (out_sp[i] - 1) + 1, stride[i])
                   for i in range(nsp))
        patch = x[(slice(None), slice(None)) + sl]
        for g in range(groups):
            out[:, g * fg:(g + 1) * fg] += np.einsum("nc...,fc->nf...", patch[:, g * cg:(g + 1) * cg],
                                                     w[g * fg:(g + 1) * fg, :, *idx])
    return out


def np_deconv(x, w, stride, dilate, pad, adj, groups=1):
    """The transpose of np_conv: scatter every input into the output (MXNet's weight (C, F/g, k))."""
    nsp, (n, c), k, fg = x.ndim - 2, x.shape[:2], w.shape[2:], w.shape[1]
    full = [stride[i] * (x.shape[2 + i] - 1) + dilate[i] * (k[i] - 1) + 1 for i in range(nsp)]
    out_sp = [full[i] - 2 * pad[i] + adj[i] for i in range(nsp)]
    buf = np.zeros((n, fg * groups, *[max(full[i], pad[i] + out_sp[i]) for i in range(nsp)]))
    cg = c // groups
    for idx in np.ndindex(*k):
        sl = tuple(slice(idx[i] * dilate[i], idx[i] * dilate[i] + stride[i] * (x.shape[2 + i] - 1) + 1,
                         stride[i]) for i in range(nsp))
        for g in range(groups):
            buf[(slice(None), slice(g * fg, (g + 1) * fg)) + sl] += np.einsum(
                "nc...,cf->nf...", x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg, :, *idx])
    return buf[(slice(None), slice(None)) + tuple(slice(pad[i], pad[i] + out_sp[i]) for i in range(nsp))]


def np_pool(x, kernel, stride, pad, kind="max", full=False, include_pad=True, p=2):
    """MXNet's CPU pooling, window by window."""
    sp = x.shape[2:]
    rnd = (lambda a, b: -(-a // b)) if full else (lambda a, b: a // b)
    out_sp = [1 + rnd(sp[i] + 2 * pad[i] - kernel[i], stride[i]) for i in range(len(sp))]
    out = np.zeros(x.shape[:2] + tuple(out_sp))
    for o in np.ndindex(*out_sp):
        start = [o[i] * stride[i] - pad[i] for i in range(len(sp))]
        end = [min(start[i] + kernel[i], sp[i] + pad[i]) for i in range(len(sp))]
        lo = [max(s, 0) for s in start]
        hi = [min(e, n) for e, n in zip(end, sp)]
        win = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))]
        win = win.reshape(win.shape[:2] + (-1,))
        if kind == "max":
            v = win.max(-1)
        elif kind == "lp":
            v = (win ** p).sum(-1) ** (1.0 / p)
        else:
            v = win.sum(-1)
            if kind == "avg":
                v = v / np.prod([b - a for a, b in zip(*((start, end) if include_pad else (lo, hi)))])
        out[(slice(None), slice(None)) + o] = v
    return out


def _bshape(ndim, axis):
    s = [1] * ndim
    s[axis] = -1
    return s


def np_norm(x, gamma, beta, red, eps, axis=1):
    mean = x.mean(axis=red, keepdims=True)
    var = x.var(axis=red, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma.reshape(_bshape(x.ndim, axis)) + beta.reshape(
        _bshape(x.ndim, axis))


def np_lrn(x, nsize, alpha, beta, knorm):
    h = nsize // 2
    sq = np.pad(x * x, [(0, 0), (h, h), (0, 0), (0, 0)])
    s = sum(sq[:, i:i + x.shape[1]] for i in range(nsize))
    return x * (knorm + alpha / nsize * s) ** -beta


def _to_last(a):
    return np.moveaxis(a, 1, -1)


def _from_last(a):
    return np.moveaxis(a, -1, 1)


def conv_case(id, shape, groups=1, no_bias=False, layout=None, **kw):
    n = len(kw["kernel"])
    stride, dilate, pad = (kw.get(k, (d,) * n) for k, d in (("stride", 1), ("dilate", 1), ("pad", 0)))

    def ref(data, c_weight, c_bias=None):
        if layout:
            data, c_weight = _from_last(data), _from_last(c_weight)
        y = np_conv(data, c_weight, stride, dilate, pad, groups)
        y = y if c_bias is None else y + c_bias.reshape(_bshape(y.ndim, 1))
        return [_to_last(y) if layout else y]
    return Case(id, lambda: mx.sym.Convolution(V("data"), num_group=groups, no_bias=no_bias, layout=layout,
                                               name="c", **kw), ref, {"data": shape})


def deconv_case(id, shape, groups=1, no_bias=True, **kw):
    n = len(kw["kernel"])
    stride, dilate, pad, adj = (kw.get(k, (d,) * n) for k, d in (("stride", 1), ("dilate", 1), ("pad", 0),
                                                                  ("adj", 0)))

    def ref(data, d_weight, d_bias=None):
        y = np_deconv(data, d_weight, stride, dilate, pad, adj, groups)
        return [y if d_bias is None else y + d_bias.reshape(_bshape(y.ndim, 1))]
    return Case(id, lambda: mx.sym.Deconvolution(V("data"), num_group=groups, no_bias=no_bias, name="d",
                                                 **kw), ref, {"data": shape})


def pool_case(id, shape, kernel, stride=None, pad=None, pool_type="max", convention="valid", include=None,
              layout=None, **kw):
    n = len(kernel)
    s, p = stride or (1,) * n, pad or (0,) * n

    def ref(data):
        x = _from_last(data) if layout else data
        y = np_pool(x, kernel, s, p, pool_type, convention == "full", include is not False,
                    kw.get("p_value", 2))
        return [_to_last(y) if layout else y]
    return Case(id, lambda: mx.sym.Pooling(V("data"), kernel=kernel, stride=stride or (), pad=pad or (),
                                           pool_type=pool_type, pooling_convention=convention, layout=layout,
                                           count_include_pad=include, name="p", **kw),
                ref, {"data": shape}, inputs={"data": (0.5, 2.0)} if pool_type == "lp" else {})


POS = {"ln_gamma": (0.5, 2.0), "in_gamma": (0.5, 2.0), "bn_gamma": (0.5, 2.0)}

CASES = [
    conv_case("conv1d", (2, 2, 7), kernel=(3,), stride=(2,), pad=(1,), num_filter=3),
    conv_case("conv2d_dilate", (1, 2, 6, 5), kernel=(3, 2), stride=(2, 1), pad=(1, 0), dilate=(1, 2),
              num_filter=3),
    conv_case("conv2d_group_nobias", (1, 4, 4, 4), groups=2, no_bias=True, kernel=(3, 3), num_filter=4),
    conv_case("conv3d", (1, 2, 3, 4, 3), kernel=(2, 2, 2), stride=(1, 2, 1), pad=(0, 1, 0), num_filter=2),
    conv_case("conv2d_nhwc", (1, 5, 4, 2), layout="NHWC", kernel=(3, 3), pad=(1, 1), num_filter=3),
    deconv_case("deconv2d_adj_bias", (1, 2, 3, 3), no_bias=False, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                adj=(1, 0), num_filter=3),
    deconv_case("deconv1d_group_dilate", (2, 4, 4), groups=2, kernel=(3,), stride=(2,), dilate=(2,),
                num_filter=4),
    deconv_case("deconv3d", (1, 2, 2, 2, 3), kernel=(2, 1, 2), stride=(2, 1, 1), num_filter=2),
    Case("deconv_target_shape", lambda: mx.sym.Deconvolution(V("data"), kernel=(3, 3), stride=(2, 2),
                                                             target_shape=(6, 5), num_filter=2, name="d"),
         lambda data, d_weight: [np_deconv(data, d_weight, (2, 2), (1, 1), (1, 1), (1, 0))],
         {"data": (1, 2, 3, 3)}),
    pool_case("pool_max", (2, 2, 5, 5), (3, 3), (2, 2)),
    pool_case("pool_max_full_pad", (1, 2, 6, 6), (3, 2), (2, 2), (1, 1), convention="full"),
    pool_case("pool_avg_pad", (1, 2, 5, 5), (3, 3), (2, 2), (1, 1), "avg"),
    pool_case("pool_avg_exclude_pad", (1, 2, 5, 5), (3, 3), (2, 2), (1, 1), "avg", include=False),
    pool_case("pool_avg_full", (1, 2, 6, 6), (3, 3), (2, 2), (1, 1), "avg", "full"),
    pool_case("pool_avg_full_exclude", (1, 2, 6, 6), (3, 3), (2, 2), (1, 1), "avg", "full", include=False),
    pool_case("pool_sum_1d", (2, 2, 7), (3,), (2,), None, "sum"),
    pool_case("pool_lp3_3d", (1, 1, 4, 3, 4), (2, 2, 2), (2, 1, 2), None, "lp", p_value=3),
    pool_case("pool_max_nhwc", (1, 5, 4, 2), (2, 2), (2, 1), layout="NHWC"),
    Case("pool_global_avg", lambda: mx.sym.Pooling(V("data"), global_pool=True, pool_type="avg", name="p"),
         lambda data: [data.mean(axis=(2, 3), keepdims=True)], {"data": (2, 3, 3, 4)}),
    Case("upsampling_nearest_concat",
         lambda: mx.sym.UpSampling(V("a"), V("b"), scale=2, sample_type="nearest", name="u"),
         lambda a, b: [np.concatenate([a.repeat(2, 2).repeat(2, 3), b], axis=1)],
         {"a": (1, 2, 2, 3), "b": (1, 1, 4, 6)}),
    Case("upsampling_nearest_sum", lambda: mx.sym.UpSampling(V("a"), V("b"), scale=2, sample_type="nearest",
                                                             multi_input_mode="sum", name="u"),
         lambda a, b: [a.repeat(2, 2).repeat(2, 3) + b.repeat(2, 2).repeat(2, 3)],
         {"a": (1, 2, 2, 2), "b": (1, 2, 2, 2)}),
    Case("upsampling_bilinear", lambda: mx.sym.UpSampling(V("data"), scale=2, sample_type="bilinear",
                                                          num_filter=2, name="u"),
         lambda data, u_weight: [np_deconv(data, u_weight, (2, 2), (1, 1), (1, 1), (0, 0), groups=2)],
         {"data": (1, 2, 2, 3)}),
    Case("instancenorm", lambda: mx.sym.InstanceNorm(V("data"), eps=1e-3, name="in"),
         lambda data, in_gamma, in_beta: [np_norm(data, in_gamma, in_beta, (2, 3), 1e-3)],
         {"data": (2, 3, 2, 3)}, inputs=POS, grad_rtol=5e-3, grad_atol=1e-3),
    Case("layernorm", lambda: mx.sym.LayerNorm(V("data"), name="ln"),
         lambda data, ln_gamma, ln_beta: [np_norm(data, ln_gamma, ln_beta, -1, 1e-5, -1)],
         {"data": (3, 4)}, inputs=POS, grad_rtol=5e-3, grad_atol=1e-3),
    # MXNet ignores the gradients of mean and std (tests/test_zoo_golden.py checks it)
    Case("layernorm_mean_std", lambda: mx.sym.LayerNorm(V("data"), axis=1, output_mean_var=True, name="ln"),
         lambda data, ln_gamma, ln_beta: [np_norm(data, ln_gamma, ln_beta, 1, 1e-5),
                                          data.mean(1, keepdims=True),
                                          np.sqrt(data.var(1, keepdims=True) + 1e-5)],
         {"data": (2, 3, 2)}, inputs=POS, grad=False),
    *[Case(f"l2norm_{m}", lambda m=m: mx.sym.L2Normalization(V("data"), mode=m, name="l2"),
           lambda data, red=red: [data / np.sqrt((data ** 2).sum(axis=red, keepdims=True) + 1e-10)],
           {"data": (2, 3, 2, 2)})
      for m, red in (("instance", (1, 2, 3)), ("channel", (1,)), ("spatial", (2, 3)))],
    Case("lrn", lambda: mx.sym.LRN(V("data"), nsize=3, alpha=0.1, beta=0.75, knorm=1.5, name="lrn"),
         lambda data: [np_lrn(data, 3, 0.1, 0.75, 1.5)], {"data": (1, 4, 2, 2)}),
    *[Case(f"pad_{m}", lambda m=m: mx.sym.Pad(V("data"), mode=m, pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                                              constant_value=0.5, name="p"),
           lambda data, m=m: [np.pad(data, [(0, 0), (0, 0), (1, 2), (2, 1)], mode=m,
                                     **({"constant_values": 0.5} if m == "constant" else {}))],
           {"data": (1, 2, 3, 4)}) for m in ("constant", "edge", "reflect")],
    Case("pad_5d", lambda: mx.sym.pad(V("data"), mode="edge", pad_width=(0, 0, 0, 0, 1, 0, 0, 1, 1, 1),
                                      name="p"),
         lambda data: [np.pad(data, [(0, 0), (0, 0), (1, 0), (0, 1), (1, 1)], mode="edge")],
         {"data": (1, 1, 2, 2, 3)}),
    Case("crop_offset", lambda: mx.sym.Crop(V("data"), h_w=(2, 3), offset=(1, 2), name="c"),
         lambda data: [data[:, :, 1:3, 2:5]], {"data": (1, 2, 4, 6)}),
    Case("crop_like_center", lambda: mx.sym.Crop(V("data"), V("like"), center_crop=True, name="c"),
         lambda data, like: [data[:, :, 1:4, 1:3]], {"data": (2, 1, 5, 5), "like": (1, 1, 3, 2)}),
    Case("batchnorm_axis_last", lambda: mx.sym.BatchNorm(V("data"), axis=-1, fix_gamma=False, name="bn"),
         lambda data, bn_gamma, bn_beta: [np_norm(data, bn_gamma, bn_beta, (0, 1), 1e-3, -1)],
         {"data": (4, 2, 3)}, inputs=POS, is_train=True, grad_rtol=5e-3, grad_atol=1e-3),
    Case("batchnorm_axis2", lambda: mx.sym.BatchNorm(V("data"), axis=2, fix_gamma=False, name="bn"),
         lambda data, bn_gamma, bn_beta: [np_norm(data, bn_gamma, bn_beta, (0, 1, 3), 1e-3, 2)],
         {"data": (3, 2, 2, 2)}, inputs=POS, is_train=True, grad_rtol=5e-3, grad_atol=1e-3),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_shape_rules_fill_in_weights():
    data = V("data")
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=6, num_group=2, name="c")
    assert conv.infer_shape(data=(2, 4, 8, 8)) == ([(2, 4, 8, 8), (6, 2, 3, 3), (6,)], [(2, 6, 6, 6)], [])
    nhwc = mx.sym.Convolution(data, kernel=(3, 3), num_filter=6, layout="NHWC", name="c")
    assert nhwc.infer_shape(data=(2, 8, 8, 4))[0][1] == (6, 3, 3, 4)
    # Deconvolution's weight is (in, out/group, k...)
    dec = mx.sym.Deconvolution(data, kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_filter=6, num_group=3,
                               name="d")
    assert dec.infer_shape(data=(1, 9, 5, 5)) == ([(1, 9, 5, 5), (9, 2, 4, 4)], [(1, 6, 10, 10)], [])
    # the batch size, and with stride 1 the spatial size, flow back from the output
    arg, _, _ = (conv + V("y")).infer_shape_partial(data=(0, 4, 0, 8), y=(5, 6, 6, 6))
    assert arg[0] == (5, 4, 8, 8)


def test_pooling_window_wholly_in_padding():
    """MXNet gives the lowest float32 for max and 0 for avg/sum where a 'full' window sees no data."""
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 1, 5)
    want = {"max": [1, 3, 5, np.finfo(np.float32).min], "avg": [0.5, 2.5, 4.5, 0], "sum": [1, 5, 9, 0]}
    for kind, w in want.items():
        p = mx.sym.Pooling(V("x"), kernel=(1, 2), stride=(1, 2), pad=(0, 1), pool_type=kind,
                           pooling_convention="full", name="p")
        out = p.simple_bind(mx.cpu(), x=x.shape, grad_req="null").forward(x=x)[0].asnumpy()
        np.testing.assert_array_equal(out.ravel(), np.array(w, np.float32))


@pytest.mark.parametrize("convention,size", [("valid", 2), ("full", 3)])
def test_pooling_output_size(convention, size):
    p = mx.sym.Pooling(V("data"), kernel=(3, 3), stride=(2, 2), pooling_convention=convention, name="p")
    assert p.infer_shape(data=(1, 1, 6, 6))[1] == [(1, 1, size, size)]


def test_pooling_same_is_1d_only_as_in_mxnet():
    p = mx.sym.Pooling(V("x"), kernel=(3,), stride=(2,), pooling_convention="same", name="p")
    assert p.infer_shape(x=(1, 2, 7))[1] == [(1, 2, 4)]  # ceil(7 / 2); values: tests/golden/zoo
    p2 = mx.sym.Pooling(V("x"), kernel=(3, 3), stride=(2, 2), pooling_convention="same", name="p")
    with pytest.raises(mx.MXNetError, match="Input data should be 3D"):
        p2.infer_shape(x=(1, 1, 6, 6))


def test_channel_last_deconvolution_infers_but_refuses_to_run():
    """MXNet 1.9.1 infers NHWC Deconvolution's shapes, then fails on CPU at forward."""
    d = mx.sym.Deconvolution(V("x"), kernel=(3, 3), num_filter=2, layout="NHWC", name="d")
    assert d.infer_shape(x=(1, 4, 4, 3)) == ([(1, 4, 4, 3), (3, 3, 3, 2)], [(1, 6, 6, 2)], [])
    d3 = mx.sym.Deconvolution(V("x"), kernel=(2, 2, 2), num_filter=2, layout="NDHWC", name="d")
    assert d3.infer_shape(x=(1, 2, 4, 4, 3))[1] == [(1, 3, 5, 5, 2)]
    exe = d.simple_bind(mx.cpu(), x=(1, 4, 4, 3))
    with pytest.raises(mx.MXNetError, match="layout NHWC cannot run.*use NCHW"):
        exe.forward()
    with pytest.raises(mx.MXNetError, match="layout"):
        mx.sym.Deconvolution(V("x"), kernel=(3,), num_filter=2, layout="NWC")  # MXNet: invalid value


@pytest.mark.parametrize("build,match", [
    (lambda: mx.sym.Pooling(V("x"), kernel=(2,), pad=(1,), pooling_convention="same"), "disables the use of pad"),
    (lambda: mx.sym.Pooling(V("x"), kernel=(2, 2), pool_type="lp"), "p_value"),
    (lambda: mx.sym.Convolution(V("x"), kernel=(3, 3), stride=(1,), num_filter=2), "stride"),
    (lambda: mx.sym.Convolution(V("x"), kernel=(3,), num_filter=3, num_group=2), "num_group"),
    (lambda: mx.sym.LRN(V("x"), nsize=4), "odd"),
    (lambda: mx.sym.Crop(V("x"), num_args=1), "h_w"),
])
def test_bad_parameters_are_refused(build, match):
    with pytest.raises(mx.MXNetError, match=match):
        build()


@pytest.mark.parametrize("build,shape,match", [
    (lambda: mx.sym.Convolution(V("x"), kernel=(5, 5), num_filter=2, name="c"), (1, 1, 3, 3), "exceeds"),
    (lambda: mx.sym.Convolution(V("x"), kernel=(3, 3), num_filter=2, name="c"), (1, 2, 5), "4 dimensions"),
    (lambda: mx.sym.Pad(V("x"), mode="reflect", pad_width=(0, 0, 0, 0, 3, 0, 0, 0)), (1, 1, 3, 3), "smaller"),
    (lambda: mx.sym.Crop(V("x"), h_w=(4, 4), offset=(1, 0)), (1, 1, 4, 4), "does not fit"),
])
def test_shape_errors_name_the_op(build, shape, match):
    with pytest.raises(mx.MXNetError, match=match):
        build().infer_shape(x=shape)


def test_positional_bias_none_with_no_bias():
    # MXNet's Convolution(data, weight, bias=None, no_bias=True): the None bias is not an input
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    conv = mx.sym.Convolution(x, w, None, num_filter=2, kernel=(1, 1), no_bias=True)
    assert conv.list_arguments() == ["x", "w"]
    exe = conv.bind(mx.cpu(), {"x": mx.nd.ones((1, 3, 2, 2)), "w": mx.nd.ones((2, 3, 1, 1))})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), np.full((1, 2, 2, 2), 3.0))
    with pytest.raises(mx.base.MXNetError, match="3 positional inputs"):
        mx.sym.Convolution(x, w, x, num_filter=2, kernel=(1, 1), no_bias=True)
