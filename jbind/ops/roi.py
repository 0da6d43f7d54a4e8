"""Region-of-interest pooling (MXNet 1.9.1's src/operator/roi_pooling.cc and
contrib/roi_align.cc), NCHW; the resizing ops that share its approach are in resize.py.

Every op here is a sum or a max over the rows and the columns of a map that separates:
ROIAlign's bilinear samples are a (rows x H) matrix and a (columns x W) matrix around the
map (one einsum, whose transpose is MXNet's backward); ROIPooling maxes over a bin's
columns, then its rows. The matrices
are built with MXNet's float32 arithmetic, operation by operation, so that rounding at bin
and sample boundaries lands where MXNet's does. ROI-dependent shapes stay static: a ROI's
bins are masks over the map, ROIAlign's data-dependent sample count a masked window.
"""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..base import ShapeError, fmt_shape
from ._base import Op, frozen, register
from .elemwise import _round  # C's std::round: halves away from zero

_FLT_MAX = float(np.finfo(np.float32).max)
_HI = lax.Precision.HIGHEST
# ROIAlign weighs the whole batch per ROI up to this many images, gathers each ROI's above
_ONE_HOT_IMAGES = 4


def _div(a, b):
    """a / b rounded once, as MXNet divides. XLA rewrites a division by a constant or by a
    broadcast into a multiplication by a rounded reciprocal, which moves bin edges and samples
    (7 / 3 * 3 > 7; 17.5 * 43 / 43 != 17.5): the divisor goes in at a's shape, behind a barrier."""
    return a / lax.optimization_barrier(jnp.broadcast_to(jnp.asarray(b, a.dtype), a.shape))


def _rounded(x):
    """x rounded to its dtype before whatever adds to it: XLA's CPU backend fuses a product
    and a sum into one FMA (one rounding; MXNet's x86 build rounds each), which moves a sample
    across a map border. A select in between keeps them apart (XLA drops barriers before
    code generation)."""
    return jnp.where(x == x, x, jnp.asarray(jnp.nan, x.dtype))


def _batch_index(rois, n):
    """MXNet's `static_cast<int>(rois[:, 0])` (toward zero), and whether it names an image."""
    b = jnp.trunc(rois[:, 0])
    valid = (b >= 0) & (b < n)
    return jnp.where(valid, b, 0).astype(jnp.int32), valid


# ------------------------------------------------------------------ the ROI ops
@frozen
class _ROIOp(Op):
    """Inputs (data, rois): data (N, C, H, W), rois (R, 5) rows [batch_index, x1, y1, x2, y2]
    in image coordinates (times spatial_scale: map coordinates); output (R, C', ph, pw)."""

    def __post_init__(self):
        p = tuple(self.pooled_size)
        if len(p) != 2:
            raise ValueError(f"pooled_size {fmt_shape(p)} must have 2 dims (height, width)")
        if any(d < 1 for d in p):
            raise ValueError(f"pooled_size {fmt_shape(p)} must be positive")
        if not 0.0 <= self.spatial_scale <= 1.0:
            raise ValueError(f"spatial_scale={self.spatial_scale} must be in [0, 1]")

    def arguments(self):
        return ("data", "rois")

    def _channels(self, c):
        return c

    def infer_shape(self, ins, outs):
        data, rois = ins
        o = outs[0]
        if data is not None and len(data) != 4:
            raise ShapeError(f"data {fmt_shape(data)} must be 4-D (batch, channel, height, width)")
        if rois is not None and (len(rois) != 2 or rois[1] not in (0, 5)):
            raise ShapeError(f"rois {fmt_shape(rois)} must be 2-D (num_rois, 5), rows "
                             "[batch_index, x1, y1, x2, y2]")
        r = (rois[0] if rois is not None else 0) or (o[0] if o is not None and len(o) == 4 else 0)
        c = self._channels(data[1]) if data is not None and data[1] else 0
        if not c and o is not None and len(o) == 4:
            c = o[1]
        out = (r, c) + tuple(self.pooled_size)
        return [data, (r, 5) if r or rois is not None else None], [out], []

    def infer_type(self, ins, outs):
        t = next((t for t in list(ins) + list(outs) if t is not None), None)
        for what, s in zip(self.arguments(), ins):
            if s is not None and t is not None and np.dtype(s) != np.dtype(t):
                raise ValueError(f"{what} has dtype {np.dtype(s).name}, but the inputs must share one "
                                 f"dtype ({np.dtype(t).name})")
        return [t, t], [t], []


@register(aliases=("_npx_roi_pooling",))
@frozen
class ROIPooling(_ROIOp):
    """Max pooling of each ROI into pooled_size bins. The ROI's corners are rounded (halves
    away from zero) to map cells after scaling, its size is at least 1 x 1; bin i of n over
    a ROI of s cells spans [floor(i * s / n), ceil((i + 1) * s / n)) from its start, clipped
    to the map. An empty bin, or a ROI whose batch index (truncated) names no image, gives 0.
    The gradient goes to each bin's first maximum (row-major), as MXNet's argmax; rois get
    none."""
    pooled_size: tuple[int, ...]
    spatial_scale: float

    def total_outputs(self):
        return 2  # MXNet's hidden second output holds the argmax

    def lower(self, ins, aux, is_train, key):
        data, rois = ins
        return [_roi_pool(tuple(self.pooled_size), float(self.spatial_scale), data, rois)], aux


def _pool_bins(rois, shape, pooled, scale, dtype):
    """Per ROI: its image, whether each bin pools, and the bins' [start, end) cells per axis."""
    n, _, h, w = shape
    r = rois.astype(dtype)
    sc = jnp.asarray(scale, dtype)
    x1, y1, x2, y2 = (_round(r[:, i] * sc).astype(jnp.int32) for i in (1, 2, 3, 4))
    b, valid = _batch_index(r, n)

    def axis(start, end, bins, size):
        extent = jnp.maximum(end - start + 1, 1)
        bin_size = _div(extent.astype(dtype), bins)
        i = jnp.arange(bins, dtype=dtype)
        lo = jnp.floor(i[None] * bin_size[:, None]).astype(jnp.int32) + start[:, None]
        hi = jnp.ceil((i[None] + 1) * bin_size[:, None]).astype(jnp.int32) + start[:, None]
        return jnp.clip(lo, 0, size), jnp.clip(hi, 0, size)

    hlo, hhi = axis(y1, y2, pooled[0], h)
    wlo, whi = axis(x1, x2, pooled[1], w)
    live = valid[:, None, None] & (hhi > hlo)[:, :, None] & (whi > wlo)[:, None, :]  # (R, ph, pw)
    return b, live, (hlo, hhi), (wlo, whi)


def _range_max_table(x):
    """Sparse table of x (N, C, H, W) along W: level k holds the max of x[..., w : w + 2**k]
    (clipped at W) and the first position of it; -> values, positions, each (N, k, W, C, H)."""
    w = x.shape[-1]
    vals, args = x, jnp.broadcast_to(jnp.arange(w, dtype=jnp.int32), x.shape)
    levels = [(vals, args)]
    k = 1
    while (1 << k) <= w:
        s = 1 << (k - 1)
        pad = [(0, 0)] * (x.ndim - 1) + [(0, s)]
        v2 = jnp.pad(vals[..., s:], pad, constant_values=-jnp.inf)
        a2 = jnp.pad(args[..., s:], pad)
        right = v2 > vals  # ties keep the left (earlier) position
        vals, args = jnp.where(right, v2, vals), jnp.where(right, a2, args)
        levels.append((vals, args))
        k += 1
    return (jnp.stack([v for v, _ in levels], 1).transpose(0, 1, 4, 2, 3),
            jnp.stack([a for _, a in levels], 1).transpose(0, 1, 4, 2, 3))


def _pool_forward(pooled, scale, data, rois):
    """-> (output, flat argmax h * W + w per (R, C, ph, pw) or -1, batch index per ROI)."""
    n, c, h, w = data.shape
    b, live, (hlo, hhi), (wlo, whi) = _pool_bins(lax.stop_gradient(rois), data.shape, pooled, scale, data.dtype)
    neg = jnp.asarray(-jnp.inf, data.dtype)
    # the max over each bin's columns, per row, from the sparse table: (R, pw, C, H)
    tv, ta = _range_max_table(data)
    log2 = jnp.asarray([0] + [int(math.floor(math.log2(i))) for i in range(1, w + 1)], jnp.int32)
    k = log2[jnp.clip(whi - wlo, 1, w)]
    left = jnp.clip(wlo, 0, w - 1)
    right = jnp.clip(whi - (1 << k), 0, w - 1)
    bb = b[:, None]
    lv, la, rv, ra = tv[bb, k, left], ta[bb, k, left], tv[bb, k, right], ta[bb, k, right]
    pick = rv > lv
    row_max = jnp.where(pick, rv, lv).transpose(0, 2, 3, 1)  # (R, C, H, pw)
    row_arg = jnp.where(pick, ra, la).transpose(0, 2, 3, 1)
    # then over the bin's rows: (R, C, ph, pw); argmax's first hit is the row-major first
    cells = jnp.arange(h)
    mh = (cells >= hlo[..., None]) & (cells < hhi[..., None])  # (R, ph, H)
    rows = jnp.where(mh[:, None, :, :, None], row_max[:, :, None, :, :], neg)
    top, h_at = jnp.max(rows, axis=3), jnp.argmax(rows, axis=3)
    w_at = jnp.take_along_axis(row_arg, h_at, axis=2)  # row_arg (R, C, H, pw) at rows h_at (R, C, ph, pw)
    # MXNet starts each bin at -FLT_MAX and keeps strictly greater values
    hit = live[:, None] & (top > -_FLT_MAX)
    out = jnp.where(live[:, None], jnp.where(hit, top, jnp.asarray(-_FLT_MAX, data.dtype)), 0)
    return out.astype(data.dtype), jnp.where(hit, h_at * w + w_at, -1), b


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _roi_pool(pooled, scale, data, rois):
    return _pool_forward(pooled, scale, data, rois)[0]


def _roi_pool_fwd(pooled, scale, data, rois):
    out, arg, b = _pool_forward(pooled, scale, data, rois)
    return out, (arg, b, data.shape, rois)


def _roi_pool_bwd(pooled, scale, res, g):
    arg, b, (n, c, h, w), rois = res
    ii = jnp.broadcast_to(b[:, None, None, None], arg.shape)
    cc = jnp.broadcast_to(jnp.arange(c)[None, :, None, None], arg.shape)
    gd = jnp.zeros((n, c, h * w), g.dtype).at[ii, cc, jnp.maximum(arg, 0)].add(jnp.where(arg >= 0, g, 0))
    return gd.reshape(n, c, h, w), jnp.zeros_like(rois)


_roi_pool.defvjp(_roi_pool_fwd, _roi_pool_bwd)


@register
@frozen
class _contrib_ROIAlign(_ROIOp):
    """Average of bilinear samples per bin (Mask R-CNN's ROIAlign), coordinates not rounded.
    A ROI's size is at least 1 x 1 (aligned=False) or its corners are shifted by -0.5
    (aligned=True, Detectron2). Each bin takes sample_ratio x sample_ratio samples, or with
    sample_ratio <= 0 ceil(bin size) per axis (adaptive: the count depends on the ROI).
    A sample beyond the map by more than one cell adds 0 (but counts); one within is clamped
    to the border. position_sensitive (R-FCN) takes bin (i, j) of output channel c from
    input channel (c * ph + i) * pw + j. The gradient is MXNet's (the samples' transpose);
    rois get none."""
    pooled_size: tuple[int, ...]
    spatial_scale: float
    sample_ratio: int = -1
    position_sensitive: bool = False
    aligned: bool = False

    def _channels(self, c):
        return c // math.prod(self.pooled_size) if self.position_sensitive else c

    def infer_shape(self, ins, outs):
        data = ins[0]
        if self.position_sensitive and data is not None and len(data) == 4 and data[1] and \
                data[1] % math.prod(self.pooled_size):
            raise ShapeError(f"position_sensitive: data's channels ({data[1]}) must be a multiple of "
                             f"pooled_size[0] * pooled_size[1] = {math.prod(self.pooled_size)} (data "
                             f"{fmt_shape(data)})")
        return super().infer_shape(ins, outs)

    def lower(self, ins, aux, is_train, key):
        data, rois = ins
        n, c, h, w = data.shape
        ph, pw = self.pooled_size
        dt = data.dtype
        r = lax.stop_gradient(rois).astype(dt)
        b, valid = _batch_index(r, n)
        off = jnp.asarray(0.5 if self.aligned else 0.0, dt)
        sc = jnp.asarray(self.spatial_scale, dt)
        x1, y1, x2, y2 = (_rounded(r[:, i] * sc) - off for i in (1, 2, 3, 4))
        ay, gy, oky = self._axis(y1, y2, ph, h, dt)
        ax, gx, okx = self._axis(x1, x2, pw, w, dt)
        live = valid & oky & okx
        count = jnp.where(live, gy * gx, 1).astype(dt)
        ps = self.position_sensitive
        if n <= _ONE_HOT_IMAGES:
            # each ROI's row weights spread over the images (zero but its own): two matmuls
            # over the whole batch, cheaper than gathering (and scattering back) every ROI's map
            pick = (b[:, None] == jnp.arange(n)[None]).astype(dt)
            a = ay[:, :, None, :] * pick[:, None, :, None]  # (R, ph, N, H)
            if ps:
                x = data.reshape(n, c // (ph * pw), ph, pw, h, w)
                t = jnp.einsum("rpnh,ncpqhw->rcpqw", a, x, precision=_HI)
                out = jnp.einsum("rcpqw,rqw->rcpq", t, ax, precision=_HI)
            else:
                t = jnp.einsum("rpnh,nchw->rpcw", a, data, precision=_HI)
                out = jnp.einsum("rpcw,rqw->rcpq", t, ax, precision=_HI)
        else:
            x = data[b]  # (R, C, H, W)
            if ps:
                x = x.reshape(x.shape[0], c // (ph * pw), ph, pw, h, w)
                out = jnp.einsum("rph,rcpqhw,rqw->rcpq", ay, x, ax, precision=_HI)
            else:
                out = jnp.einsum("rph,rchw,rqw->rcpq", ay, x, ax, precision=_HI)
        live = live[:, None, None, None]
        return [jnp.where(live, _div(out, count[:, None, None, None]), 0).astype(dt)], aux

    def _axis(self, start, end, bins, size, dt):
        """Summed bilinear weights (R, bins, size) of one axis's samples, the samples per bin
        (R,) and whether the ROI is well formed, as MXNet's pre_calc_for_bilinear_interpolate."""
        extent = end - start
        ok = extent > 0 if self.aligned else jnp.ones(extent.shape, bool)  # MXNet: a CHECK fails
        if not self.aligned:
            extent = jnp.maximum(extent, jnp.asarray(1, dt))
        bin_size = _div(extent, bins)
        if self.sample_ratio > 0:
            grid = jnp.full(extent.shape, self.sample_ratio, jnp.int32)
            window, first = self.sample_ratio, jnp.zeros(extent.shape + (bins,), jnp.int32)
        else:
            grid = jnp.ceil(bin_size).astype(jnp.int32)
            # the samples within [-1, size] of a bin number at most size + 2 (spaced more
            # than (size + 1) / (size + 2) apart when there are more): a window of them from
            # (a little before) the first one
            window = size + 5
            g = jnp.maximum(grid, 1).astype(dt)[:, None]
            bin_start = start[:, None] + jnp.arange(bins, dtype=dt)[None] * bin_size[:, None]
            t = (jnp.asarray(-1, dt) - bin_start) * g / bin_size[:, None] - 0.5
            first = jnp.clip(jnp.floor(t) - 1, 0, None)
            first = jnp.where(jnp.isfinite(first), jnp.minimum(first, 2.0 ** 30), 0).astype(jnp.int32)
        ok = ok & (grid > 0)
        i = first[..., None] + jnp.arange(window, dtype=jnp.int32)  # (R, bins, window)
        gf = jnp.maximum(grid, 1).astype(dt)[:, None, None]
        bs = bin_size[:, None, None]
        y = (start[:, None, None] + _rounded(jnp.arange(bins, dtype=dt)[None, :, None] * bs)) + \
            _div((i.astype(dt) + jnp.asarray(0.5, dt)) * bs, gf)
        keep = (i < grid[:, None, None]) & (y >= -1) & (y <= size)
        y = jnp.maximum(y, 0)
        low = jnp.floor(y).astype(jnp.int32)
        edge = low >= size - 1
        low = jnp.where(edge, size - 1, low)
        high = jnp.where(edge, size - 1, low + 1)
        y = jnp.where(edge, low.astype(dt), y)
        frac = y - low.astype(dt)
        cells = jnp.arange(size)
        wts = ((1 - frac)[..., None] * (cells == low[..., None]) + frac[..., None] * (cells == high[..., None]))
        wts = jnp.sum(jnp.where(keep[..., None], wts, 0), axis=2)  # (R, bins, size)
        return wts.astype(dt), grid, ok
