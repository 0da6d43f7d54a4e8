"""ROIPooling, _contrib_ROIAlign, _contrib_AdaptiveAvgPooling2D and _contrib_BilinearResize2D
(jbind/ops/roi.py, jbind/ops/resize.py) against numpy references written from MXNet 1.9.1's C++ loops
(float32 geometry, operation by operation); tests/golden/ops_roi/ holds MXNet's own values.
Behaviours marked "MXNet 1.9.1" were checked against it.
"""
import functools
import json
import math

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op, raises_naming

V = mx.sym.Variable
S = mx.sym
C = mx.sym.contrib
F32 = np.float32

# [batch_index, x1, y1, x2, y2]: inside, partly outside, beyond, a point, swapped, fractional
ROIS = np.array([
    [0, 0, 0, 11, 9], [1, 2, 3, 9, 12], [0, -4, -2, 5, 6], [1, 8, 7, 22, 20], [0, 6, 6, 6, 6],
    [1, 3.3, 1.7, 8.9, 10.2], [0, 11, 1, 3, 9], [1, 5, 7, 11, 13]])
BAD_BATCH = np.array([[2, 0, 0, 8, 8], [-1, 0, 0, 8, 8], [0, 30, 30, 40, 40], [1.7, 0, 2, 6, 9]])
EDGES = np.array([[0, -50, -18, 30, 16], [0, -18, -50, 16, 30], [0, -36, -15, 50, 53], [0, -36, -16, 50, 52]])
HUGE = np.array([[0, -40, -30, 45, 38], [0, -3, 2.5, 60, 3], [0, 2.2, -50, 3.1, 70], [0, 4, 4, 4, 4]])


# ------------------------------------------------------------------ references
def _round(v):
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def _roi_pool_ref(data, rois, pooled, scale):
    """MXNet's ROIPoolForward: rounded corners, floor / ceil bins, strict > from -FLT_MAX."""
    n, c, h, w = data.shape
    out = np.zeros((len(rois), c) + tuple(pooled))
    for r, roi in enumerate(rois.astype(F32)):
        b = int(roi[0])
        x1, y1, x2, y2 = (_round(float(F32(v) * F32(scale))) for v in roi[1:])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = F32(rh) / F32(pooled[0]), F32(rw) / F32(pooled[1])
        for i in range(pooled[0]):
            h0 = min(max(int(np.floor(F32(i) * bh)) + y1, 0), h)
            h1 = min(max(int(np.ceil(F32(i + 1) * bh)) + y1, 0), h)
            for j in range(pooled[1]):
                w0 = min(max(int(np.floor(F32(j) * bw)) + x1, 0), w)
                w1 = min(max(int(np.ceil(F32(j + 1) * bw)) + x1, 0), w)
                if h1 > h0 and w1 > w0 and 0 <= b < n:
                    out[r, :, i, j] = data[b, :, h0:h1, w0:w1].max(axis=(1, 2))
    return out


@functools.lru_cache(maxsize=None)
def _align_weights(rois_bytes, shape, pooled, scale, sample_ratio, aligned):
    """MXNet's ROIAlignForward sample by sample: weights (R, ph, pw, H, W), already divided by
    the count, and each ROI's batch index (-1: no output)."""
    rois = np.frombuffer(rois_bytes).reshape(-1, 5).astype(F32)
    n, h, w = shape
    ph, pw = pooled
    wts = np.zeros((len(rois), ph, pw, h, w), np.float64)
    batch = []
    for r, roi in enumerate(rois):
        b = int(roi[0])
        batch.append(b if 0 <= b < n else -1)
        off = F32(0.5 if aligned else 0)
        x1, y1, x2, y2 = (F32(v) * F32(scale) - off for v in roi[1:])
        rw, rh = F32(x2 - x1), F32(y2 - y1)
        if not aligned:
            rw, rh = max(rw, F32(1)), max(rh, F32(1))
        bh, bw = F32(rh / F32(ph)), F32(rw / F32(pw))
        gh = sample_ratio if sample_ratio > 0 else int(np.ceil(F32(rh / F32(ph))))
        gw = sample_ratio if sample_ratio > 0 else int(np.ceil(F32(rw / F32(pw))))
        for i in range(ph):
            for j in range(pw):
                for iy in range(gh):
                    y = F32(F32(y1 + F32(F32(i) * bh)) + F32(F32(F32(iy + 0.5) * bh) / F32(gh)))
                    for ix in range(gw):
                        x = F32(F32(x1 + F32(F32(j) * bw)) + F32(F32(F32(ix + 0.5) * bw) / F32(gw)))
                        if y < -1 or y > h or x < -1 or x > w:
                            continue
                        yy, xx = max(y, F32(0)), max(x, F32(0))
                        yl, xl = int(yy), int(xx)
                        yh, xh = yl + 1, xl + 1
                        if yl >= h - 1:
                            yl = yh = h - 1
                            yy = F32(yl)
                        if xl >= w - 1:
                            xl = xh = w - 1
                            xx = F32(xl)
                        ly, lx = yy - yl, xx - xl
                        for (a, bb, wt) in [(yl, xl, (1 - ly) * (1 - lx)), (yl, xh, (1 - ly) * lx),
                                            (yh, xl, ly * (1 - lx)), (yh, xh, ly * lx)]:
                            wts[r, i, j, a, bb] += wt / (gh * gw)
    return wts, tuple(batch)


def _roi_align_ref(data, rois, pooled, scale, sample_ratio=-1, aligned=False, position_sensitive=False):
    n, c, h, w = data.shape
    wts, batch = _align_weights(np.ascontiguousarray(rois, np.float64).tobytes(), (n, h, w), tuple(pooled),
                                scale, sample_ratio, aligned)
    ph, pw = pooled
    co = c // (ph * pw) if position_sensitive else c
    out = np.zeros((len(rois), co, ph, pw))
    for r, b in enumerate(batch):
        if b < 0:
            continue
        x = data[b].reshape(co, ph, pw, h, w) if position_sensitive else data[b][:, None, None]
        out[r] = np.einsum("cpqhw,pqhw->cpq", x, wts[r])
    return out


def _adaptive_ref(x, oh, ow):
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        h0, h1 = int(np.floor(F32(i * h) / F32(oh))), int(np.ceil(F32((i + 1) * h) / F32(oh)))
        for j in range(ow):
            w0, w1 = int(np.floor(F32(j * w) / F32(ow))), int(np.ceil(F32((j + 1) * w) / F32(ow)))
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out


def _resize_ref(x, oh, ow, align_corners=True):
    """MXNet's SpatialUpSamplingBilinearUpdateOutput, pixel by pixel."""
    n, c, h, w = x.shape
    if (oh, ow) == (h, w):
        return x.copy()

    def src(i, n_in, n_out):
        s = (F32(n_in - 1) / F32(n_out - 1) if align_corners else F32(n_in) / F32(n_out)) if n_out > 1 else F32(0)
        r = F32(s * F32(i)) if align_corners else max(F32(float(s) * (i + 0.5) - 0.5), F32(0))
        lo = int(r)
        return lo, (1 if lo < n_in - 1 else 0), float(F32(r - lo))

    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        h1, hp, hl = src(i, h, oh)
        for j in range(ow):
            w1, wp, wl = src(j, w, ow)
            out[:, :, i, j] = (1 - hl) * ((1 - wl) * x[:, :, h1, w1] + wl * x[:, :, h1, w1 + wp]) + \
                hl * ((1 - wl) * x[:, :, h1 + hp, w1] + wl * x[:, :, h1 + hp, w1 + wp])
    return out


# ------------------------------------------------------------------ samples
ALL_ROIS = np.concatenate([ROIS, BAD_BATCH])
POOL_SHAPES = {"data": (2, 2, 10, 12), "rois": ALL_ROIS.shape}
ALIGN_SHAPES = {"data": (2, 2, 10, 12), "rois": ROIS.shape}


def _pool_case(id, pooled, scale, rois=ALL_ROIS, shapes=POOL_SHAPES):
    return Case(id, lambda: S.ROIPooling(V("data"), V("rois"), pooled_size=pooled, spatial_scale=scale),
                lambda data, rois: [_roi_pool_ref(data, rois, pooled, scale)], dict(shapes),
                inputs={"rois": rois}, no_grad=("rois",))


def _align_case(id, rois=ROIS, shapes=ALIGN_SHAPES, grad=True, **kw):
    params = {{"pooled": "pooled_size", "scale": "spatial_scale"}.get(k, k): v for k, v in kw.items()}
    return Case(id, lambda: C.ROIAlign(V("data"), V("rois"), **params),
                lambda data, rois: [_roi_align_ref(data, rois, **kw)], dict(shapes, rois=rois.shape),
                inputs={"rois": rois}, no_grad=("rois",), grad=grad)


def _resize_case(id, shape, out, **kw):
    return Case(id, lambda: C.BilinearResize2D(V("x"), **kw),
                lambda x: [_resize_ref(x, *out, kw.get("align_corners", True))], {"x": shape})


X = V("x")
CASES = [
    _pool_case("roipool_2x3_half_scale", (2, 3), 0.5),
    _align_case("roialign_adaptive", pooled=(2, 3), scale=0.5),
    _align_case("roialign_ratio2_aligned", pooled=(3, 2), scale=0.5, sample_ratio=2, aligned=True,
                rois=ROIS[[0, 1, 2, 3, 5, 7]]),
    # 5 images: the gathering path (the goldens' 2 images take the batch-weighing one)
    _align_case("roialign_position_sensitive", pooled=(2, 2), scale=0.5, position_sensitive=True,
                rois=ROIS * [2.5, 1, 1, 1, 1], shapes={"data": (5, 8, 6, 5)}),
    # ROIs far larger than the map: many samples per bin, most of them beyond it (the
    # adaptive count must still divide); the window of samples that can land on the map
    _align_case("roialign_huge_rois", pooled=(1, 2), scale=1.0, rois=HUGE, shapes={"data": (1, 2, 5, 6)}),
    # samples that land on the map's border only when each product and quotient is rounded
    # as MXNet rounds it (XLA would fuse r * scale into the next subtraction as an FMA, and
    # divide by a broadcast through a rounded reciprocal)
    _align_case("roialign_fma_edge", pooled=(3, 3), scale=0.3, sample_ratio=2, rois=EDGES[:2],
                shapes={"data": (1, 2, 5, 8)}),
    _align_case("roialign_division_edge", pooled=(1, 1), scale=0.5, aligned=True, rois=EDGES[2:],
                shapes={"data": (1, 2, 10, 6)}),
    # more than 4 images: ROIAlign gathers each ROI's map instead of weighing the batch
    _align_case("roialign_many_images", pooled=(2, 2), scale=0.5, rois=ROIS * [2.5, 1, 1, 1, 1],
                shapes={"data": (5, 1, 6, 7)}),
    Case("adaptive_avg_pool", lambda: S.Group([C.AdaptiveAvgPooling2D(X, output_size=s) for s in
                                               [(), (3,), (2, 4), (6, 9)]]),
         lambda x: [_adaptive_ref(x, *s) for s in [(1, 1), (3, 3), (2, 4), (6, 9)]], {"x": (2, 2, 5, 7)}),
    _resize_case("resize_up_align_corners", (2, 2, 3, 4), (5, 7), height=5, width=7),
    _resize_case("resize_down_half_pixel", (1, 2, 7, 6), (3, 4), height=3, width=4, align_corners=False),
    _resize_case("resize_scale_half_pixel", (1, 1, 4, 6), (6, 3), scale_height=1.5, scale_width=0.5,
                 align_corners=False),
    _resize_case("resize_to_odd_up", (1, 1, 4, 5), (5, 5), mode="to_odd_up"),
    Case("resize_like", lambda: C.BilinearResize2D(V("x"), V("ref"), mode="like", align_corners=False),
         lambda x, ref: [_resize_ref(x, 6, 2, False)], {"x": (2, 1, 3, 4), "ref": (2, 3, 6, 2)}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


# ------------------------------------------------------------------ MXNet's own examples
def test_roi_pooling_matches_mxnets_example_and_npx_alias():
    x = mx.nd.arange(48).reshape((1, 1, 8, 6))
    y = mx.nd.array([[0, 0, 0, 4, 4]])
    np.testing.assert_array_equal(mx.nd.ROIPooling(x, y, (2, 2), 1.0).asnumpy(), [[[[14, 16], [26, 28]]]])
    np.testing.assert_array_equal(mx.nd.ROIPooling(x, y, pooled_size=(2, 2), spatial_scale=0.7).asnumpy(),
                                  [[[[7, 9], [19, 21]]]])
    assert mx.ops.get_op("_npx_roi_pooling") is mx.ops.get_op("ROIPooling")


def test_imperative_calls_give_mxnets_values():
    x = mx.nd.arange(48).reshape((1, 1, 8, 6))
    # MXNet 1.9.1's values
    out = mx.nd.contrib.ROIAlign(x, mx.nd.array([[0, 0.5, 1, 4.5, 6]]), (2, 2), 1.0)
    np.testing.assert_allclose(out.asnumpy(), [[[[15, 17], [30, 32]]]], rtol=1e-6)
    out = mx.nd.contrib.ROIAlign(x, mx.nd.array([[0, 0.5, 1, 4.5, 6]]), (2, 2), 1.0, sample_ratio=1, aligned=True)
    np.testing.assert_allclose(out.asnumpy(), [[[[11.5, 13.5], [26.5, 28.5]]]], rtol=1e-6)
    x2 = mx.nd.arange(12).reshape((1, 1, 3, 4))
    np.testing.assert_allclose(mx.nd.contrib.AdaptiveAvgPooling2D(x2, output_size=(2, 3)).asnumpy(),
                               [[[[2.5, 3.5, 4.5], [6.5, 7.5, 8.5]]]], rtol=1e-6)
    np.testing.assert_allclose(mx.nd.contrib.BilinearResize2D(x2, height=2, width=3).asnumpy(),
                               [[[[0, 1.5, 3], [8, 9.5, 11]]]], rtol=1e-6)
    np.testing.assert_allclose(mx.nd.contrib.BilinearResize2D(x2, height=5, width=3, align_corners=False).asnumpy(),
                               [[[[0.16666669, 1.5, 2.8333335], [1.7666668, 3.1000004, 4.4333334],
                                  [4.1666665, 5.5, 6.8333335], [6.5666676, 7.9000006, 9.233334],
                                  [8.166667, 9.5, 10.833333]]]], rtol=1e-6)
    like = mx.nd.contrib.BilinearResize2D(x2, mx.nd.zeros((1, 1, 2, 2)), mode="like")
    np.testing.assert_array_equal(like.asnumpy(), [[[[0, 3], [8, 11]]]])


# ------------------------------------------------------------------ semantics
def _pool_grad(data, rois, pooled, scale):
    exe = S.ROIPooling(V("data"), V("rois"), pooled_size=pooled, spatial_scale=scale).simple_bind(
        mx.cpu(), data=data.shape, rois=rois.shape)
    out = exe.forward(is_train=True, data=data, rois=rois)[0].asnumpy()
    exe.backward([mx.nd.ones(out.shape)])
    return out, exe.grad_dict["data"].asnumpy(), exe.grad_dict["rois"].asnumpy()


def test_roi_pooling_gradient_goes_to_the_first_maximum_and_not_to_rois():
    data = np.zeros((1, 1, 4, 4), np.float32)
    data[0, 0, 1, 2] = data[0, 0, 2, 1] = data[0, 0, 3, 3] = 5  # three ties in one bin
    rois = np.array([[0, 0, 0, 3, 3], [0, 1, 1, 3, 3], [1, 0, 0, 3, 3]], np.float32)  # the last names no image
    out, g, gr = _pool_grad(data, rois, (1, 1), 1.0)
    assert out.ravel().tolist() == [5, 5, 0]
    want = np.zeros((4, 4))
    want[1, 2] = 2  # both pooling ROIs: row-major, (1, 2) comes before (2, 1) and (3, 3)
    np.testing.assert_array_equal(g[0, 0], want)
    np.testing.assert_array_equal(gr, 0)


def test_roi_pooling_keeps_mxnets_floor_of_minus_flt_max():
    # MXNet 1.9.1 starts a bin at -FLT_MAX and keeps strictly greater values: an all -inf bin
    # gives -FLT_MAX and no gradient
    data = np.full((1, 1, 2, 2), -np.inf, np.float32)
    out, g, _ = _pool_grad(data, np.array([[0, 0, 0, 1, 1]], np.float32), (1, 1), 1.0)
    assert out.ravel().tolist() == [-np.finfo(np.float32).max]
    np.testing.assert_array_equal(g, 0)


def test_roi_pooling_rounds_halves_away_from_zero():
    # x1 = 2.5 -> 3 (half to even would give 2), x2 = 4.5 -> 5 (even: 4)
    data = np.arange(36, dtype=np.float32).reshape(1, 1, 6, 6)
    out = mx.nd.ROIPooling(mx.nd.array(data), mx.nd.array([[0, 5, 0, 9, 0]]), (1, 2), 0.5).asnumpy()
    np.testing.assert_array_equal(out, [[[[4, 5]]]])  # bins [3, 4), [4, 6) of row 0 (columns 3..5)


def test_roi_align_rois_get_no_gradient_and_bad_batch_indices_give_zeros():
    data = np.random.default_rng(0).uniform(size=(2, 1, 5, 5)).astype(np.float32)
    rois = np.array([[0, 0, 0, 3, 3], [-1, 0, 0, 3, 3], [2, 0, 0, 3, 3], [-0.5, 1, 1, 2, 2]], np.float32)
    exe = C.ROIAlign(V("data"), V("rois"), pooled_size=(2, 2), spatial_scale=1.0).simple_bind(
        mx.cpu(), data=data.shape, rois=rois.shape)
    out = exe.forward(is_train=True, data=data, rois=rois)[0].asnumpy()
    assert np.all(out[1:3] == 0) and np.all(out[0] != 0)
    np.testing.assert_allclose(out[3], _roi_align_ref(data, rois[3:], (2, 2), 1.0)[0], rtol=1e-5)  # -0.5 -> 0
    exe.backward([mx.nd.ones(out.shape)])
    np.testing.assert_array_equal(exe.grad_dict["rois"].asnumpy(), 0)
    assert exe.grad_dict["data"].asnumpy()[1].sum() == 0


def test_roi_align_empty_aligned_roi_gives_zeros():
    # MXNet 1.9.1 aborts the process (a failed CHECK in an OpenMP loop); jbind gives zeros
    out = mx.nd.contrib.ROIAlign(mx.nd.ones((1, 1, 4, 4)), mx.nd.array([[0, 1, 1, 1, 3], [0, 0, 0, 2, 2]]),
                                 (2, 2), 1.0, aligned=True).asnumpy()
    assert np.all(out[0] == 0) and np.allclose(out[1], 1)


def test_roi_ops_compile_once_for_any_roi_values():
    exe = C.ROIAlign(V("data"), V("rois"), pooled_size=(2, 2), spatial_scale=1.0).simple_bind(
        mx.cpu(), data=(1, 1, 5, 6), rois=(4, 5))
    data = np.random.default_rng(1).uniform(size=(1, 1, 5, 6))
    for rois in (HUGE, HUGE * 0.1, HUGE[::-1]):
        got = exe.forward(data=data, rois=rois)[0].asnumpy()
        np.testing.assert_allclose(got, _roi_align_ref(data.astype(F32), rois, (2, 2), 1.0), rtol=1e-4, atol=1e-6)


def test_resize_like_gets_no_gradient():
    exe = C.BilinearResize2D(V("x"), V("ref"), mode="like").simple_bind(mx.cpu(), x=(1, 1, 2, 3), ref=(1, 1, 4, 4))
    exe.forward(is_train=True, x=np.ones((1, 1, 2, 3)), ref=np.ones((1, 1, 4, 4)))
    exe.backward([mx.nd.ones((1, 1, 4, 4))])
    np.testing.assert_array_equal(exe.grad_dict["ref"].asnumpy(), 0)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy().sum(), 16, rtol=1e-6)


# ------------------------------------------------------------------ shapes, names, JSON
def test_infer_shape_matches_mxnet():
    d, r = V("data"), V("rois")
    assert S.ROIPooling(d, r, pooled_size=(2, 3), spatial_scale=0.5).infer_shape(data=(2, 3, 8, 8), rois=(4, 5)) == \
        ([(2, 3, 8, 8), (4, 5)], [(4, 3, 2, 3)], [])
    assert C.ROIAlign(d, r, pooled_size=(2, 2), spatial_scale=0.5, position_sensitive=True).infer_shape(
        data=(2, 8, 8, 8), rois=(4, 5)) == ([(2, 8, 8, 8), (4, 5)], [(4, 2, 2, 2)], [])
    # jbind also infers what it can from one input (MXNet 1.9.1 fails without rois)
    assert S.ROIPooling(d, r, pooled_size=(2, 2), spatial_scale=1).infer_shape_partial(data=(2, 3, 8, 8)) == \
        ([(2, 3, 8, 8), ()], [(0, 3, 2, 2)], [])
    P = C.AdaptiveAvgPooling2D
    for size, out in [((), (1, 1)), ((3,), (3, 3)), (3, (3, 3)), ((2, 3), (2, 3)), ((20, 3), (20, 3))]:
        assert P(V("x"), output_size=size).infer_shape(x=(2, 3, 8, 8))[1] == [(2, 3) + out]
    B = C.BilinearResize2D
    x = V("x")
    for kw, out in [(dict(height=5, width=7), (5, 7)), (dict(scale_height=1.5, scale_width=0.5), (7, 3)),
                    (dict(scale_width=1.5), (1, 1)),  # MXNet 1.9.1 reads scale_width only with scale_height
                    (dict(mode="odd_scale", scale_height=2, scale_width=0.5), (9, 3)),
                    (dict(mode="to_even_down"), (4, 6)), (dict(mode="to_even_up"), (6, 6)),
                    (dict(mode="to_odd_down"), (5, 5)), (dict(mode="to_odd_up"), (5, 7))]:
        assert B(x, **kw).infer_shape(x=(2, 3, 5, 6))[1] == [(2, 3) + out], kw
    like = B(x, V("like"), mode="like")
    assert like.list_arguments() == ["x", "like"]
    assert like.infer_shape(x=(2, 3, 5, 6), like=(1, 1, 7, 9)) == ([(2, 3, 5, 6), (1, 1, 7, 9)], [(2, 3, 7, 9)], [])
    assert B(x, mode="like", name="rs").list_arguments() == ["x", "rs_like"]
    assert B(x, height=3, width=4).infer_shape_partial(x=(2, 3, 0, 6))[1] == [(2, 3, 3, 4)]


def test_outputs_and_json_match_mxnet():
    d, r = V("data"), V("rois")
    pool = S.ROIPooling(d, r, pooled_size=(2, 2), spatial_scale=0.5, name="pool")
    assert pool.list_outputs() == ["pool_output"] and pool.list_arguments() == ["data", "rois"]
    js = json.loads(pool.tojson())
    assert js["node_row_ptr"] == [0, 1, 2, 4]  # the hidden argmax output counts, as in MXNet 1.9.1
    assert js["nodes"][2]["attrs"] == {"pooled_size": "(2, 2)", "spatial_scale": "0.5"}
    syms = [pool, C.ROIAlign(d, r, pooled_size=(2, 2), spatial_scale=0.25, sample_ratio=2, aligned=True),
            C.AdaptiveAvgPooling2D(d, output_size=3), C.BilinearResize2D(d, r, mode="like", align_corners=False),
            C.BilinearResize2D(d, scale_height=2, scale_width=0.5)]
    ops = ["ROIPooling", "_contrib_ROIAlign", "_contrib_AdaptiveAvgPooling2D", "_contrib_BilinearResize2D",
           "_contrib_BilinearResize2D"]
    for s, op in zip(syms, ops):
        again = mx.sym.load_json(s.tojson())
        assert again.tojson() == s.tojson() and f'"op": "{op}"' in s.tojson()
        assert again.list_arguments() == s.list_arguments()
    # MXNet 1.9.1's JSON of ROIAlign and AdaptiveAvgPooling2D
    mxnet = {"nodes": [{"op": "null", "name": "data", "inputs": []}, {"op": "null", "name": "rois", "inputs": []},
                       {"op": "_contrib_ROIAlign", "name": "roialign6",
                        "attrs": {"pooled_size": "(2, 2)", "spatial_scale": "0.5"}, "inputs": [[0, 0, 0], [1, 0, 0]]},
                       {"op": "_contrib_AdaptiveAvgPooling2D", "name": "aap", "attrs": {"output_size": "3"},
                        "inputs": [[2, 0, 0]]}],
             "arg_nodes": [0, 1], "node_row_ptr": [0, 1, 2, 3, 4], "heads": [[3, 0, 0]],
             "attrs": {"mxnet_version": ["int", 10901]}}
    s = mx.sym.load_json(json.dumps(mxnet))
    assert s.infer_shape(data=(2, 3, 8, 8), rois=(4, 5))[1] == [(4, 3, 3, 3)]


def test_bad_parameters_raise_naming_the_op():
    P = mx.base.ParamError
    d, r = V("data"), V("rois")
    for make, needles in [
        (lambda: S.ROIPooling(d, r, pooled_size=(2,), spatial_scale=0.5), ["ROIPooling", "pooled_size (2,)", "2 dims"]),
        (lambda: S.ROIPooling(d, r, pooled_size=(2, 0), spatial_scale=0.5), ["ROIPooling", "(2, 0)", "positive"]),
        (lambda: S.ROIPooling(d, r, pooled_size=(2, 2), spatial_scale=1.5), ["ROIPooling", "spatial_scale=1.5", "[0, 1]"]),
        (lambda: S.ROIPooling(d, r, spatial_scale=0.5), ["ROIPooling", "pooled_size", "not given"]),
        (lambda: C.ROIAlign(d, r, pooled_size=(2, 2), spatial_scale=-0.1), ["_contrib_ROIAlign", "spatial_scale"]),
        (lambda: C.AdaptiveAvgPooling2D(d, output_size=(1, 2, 3)),
         ["_contrib_AdaptiveAvgPooling2D", "(1, 2, 3)", "at most 2"]),
        (lambda: C.AdaptiveAvgPooling2D(d, output_size=0), ["_contrib_AdaptiveAvgPooling2D", "(0,)", "positive"]),
        (lambda: C.BilinearResize2D(d, height=0), ["_contrib_BilinearResize2D", "height=0"]),
        (lambda: C.BilinearResize2D(d, mode="bogus"), ["_contrib_BilinearResize2D", "mode", "'to_odd_up'"]),
        (lambda: C.BilinearResize2D(d, scale_height=2), ["_contrib_BilinearResize2D", "scale_width"]),
        (lambda: C.BilinearResize2D(d, mode="odd_scale", scale_width=2), ["odd_scale", "scale_height"]),
        (lambda: C.BilinearResize2D(d, scale_height=-1, scale_width=1), ["scale_height=-1.0", "positive"]),
    ]:
        raises_naming(make, *needles, cls=P)
    # MXNet 1.9.1: a second input is an error unless mode='like'
    raises_naming(lambda: C.BilinearResize2D(d, r), "_contrib_BilinearResize2D", cls=mx.base.MXNetError)


def test_bad_shapes_raise_naming_the_op_and_shapes():
    d, r = V("data"), V("rois")
    pool = S.ROIPooling(d, r, pooled_size=(2, 2), spatial_scale=0.5, name="p")
    raises_naming(lambda: pool.infer_shape(data=(2, 3, 8, 8), rois=(4, 4)), "ROIPooling", "(4, 4)", "(num_rois, 5)")
    raises_naming(lambda: pool.infer_shape(data=(2, 3, 8), rois=(4, 5)), "ROIPooling", "(2, 3, 8)", "4-D")
    ps = C.ROIAlign(d, r, pooled_size=(2, 2), spatial_scale=0.5, position_sensitive=True)
    raises_naming(lambda: ps.infer_shape(data=(2, 6, 8, 8), rois=(4, 5)), "_contrib_ROIAlign", "6", "multiple of")
    raises_naming(lambda: C.AdaptiveAvgPooling2D(d, output_size=2).infer_shape(data=(2, 3, 8)), "(2, 3, 8)", "4-D")
    raises_naming(lambda: C.BilinearResize2D(d, height=2).infer_shape(data=(3, 5, 6)), "(3, 5, 6)", "4-D")
    raises_naming(lambda: C.BilinearResize2D(d, r, mode="like").infer_shape(data=(2, 3, 5, 6), rois=(7, 9)),
                  "like (7, 9)", "4-D")
    # MXNet 1.9.1 infers (2, 3, 0, 0) and returns an empty array
    raises_naming(lambda: C.BilinearResize2D(d, scale_height=0.1, scale_width=0.1).infer_shape(data=(2, 3, 5, 6)),
                  "_contrib_BilinearResize2D", "output height 0", "(2, 3, 5, 6)")
    raises_naming(lambda: C.BilinearResize2D(d, mode="to_even_down").infer_shape(data=(2, 3, 1, 6)), "height 0")
    raises_naming(lambda: pool.infer_type(data="float32", rois="float64"), "ROIPooling", "float64")


def test_a_none_input_the_op_does_not_take_is_ignored():
    # MXNet's generated functions skip None inputs: BilinearResize2D(data, None, mode=...) is fine.
    s = mx.sym.contrib.BilinearResize2D(mx.sym.Variable("data"), None, scale_height=0.5, scale_width=0.5,
                                        mode="odd_scale")
    assert s.list_arguments() == ["data"] and s.infer_shape(data=(1, 1, 5, 5))[1] == [(1, 1, 3, 3)]
    with pytest.raises(mx.base.MXNetError, match="positional inputs"):
        mx.sym.contrib.BilinearResize2D(mx.sym.Variable("data"), mx.sym.Variable("x"), height=2, width=2)
