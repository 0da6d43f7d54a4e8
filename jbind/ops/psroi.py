"""Position-sensitive ROI pooling (MXNet 1.9.1's contrib/psroi_pooling.cc, from R-FCN) and
rotated ROI align (contrib/rroi_align.cc), NCHW.

Bin (ph, pw) of ROI r and output channel d averages channel (d * G + gh) * G + gw of the
ROI's image over the bin's rows and columns, with gh = floor(ph * G / P) and gw likewise
(G: group_size, P: pooled_size). As in MXNet, ROI corners are rounded (halves away from
zero) before scaling, the ROI's far edge is one pixel past its corner, a ROI is at least
0.1 map pixels wide, bin edges are floor / ceil'd and clipped to the map, and an empty bin
gives 0. Bins are masks over the map: one einsum, whose transpose is MXNet's backward
(each element of a bin gets the bin's gradient / its area); the ROIs get no gradient.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import ShapeError, fmt_shape
from ._base import Op, frozen, register
from .elemwise import _round  # C's std::round: halves away from zero


@register
@frozen
class _contrib_PSROIPooling(Op):
    """data (N, output_dim * G * G, H, W), rois (R, 5) rows [batch_index, x1, y1, x2, y2] ->
    (R, output_dim, pooled_size, pooled_size)."""
    spatial_scale: float
    output_dim: int
    pooled_size: int
    group_size: int = 0

    def __post_init__(self):
        if self.output_dim < 1 or self.pooled_size < 1 or self.group_size < 0:
            raise ValueError(f"output_dim={self.output_dim} and pooled_size={self.pooled_size} must be "
                             f"positive, group_size={self.group_size} not negative")
        if not self.spatial_scale > 0:
            raise ValueError(f"spatial_scale={self.spatial_scale} must be positive")

    def arguments(self):
        return ("data", "rois")

    def _group(self):
        return self.group_size or self.pooled_size

    def infer_shape(self, ins, outs):
        data, rois = ins
        g, p, d = self._group(), self.pooled_size, self.output_dim
        if data is not None:
            if len(data) != 4:
                raise ShapeError(f"data {fmt_shape(data)} must be 4-D (batch, channel, height, width)")
            if data[1] and data[1] != d * g * g:
                raise ShapeError(f"data {fmt_shape(data)} must have output_dim * group_size^2 = "
                                 f"{d} * {g}^2 = {d * g * g} channels")
        if rois is not None and (len(rois) != 2 or rois[1] not in (0, 5)):
            raise ShapeError(f"rois {fmt_shape(rois)} must be 2-D (num_rois, 5), rows "
                             "[batch_index, x1, y1, x2, y2]")
        r = (rois[0] if rois is not None else 0) or (outs[0][0] if outs[0] is not None else 0)
        return [data, (r, 5) if r else rois], [(r, d, p, p) if r else None], []

    def infer_type(self, ins, outs):
        t = next((t for t in list(ins) + list(outs) if t is not None), None)
        return [t, t], [t], []

    def lower(self, ins, aux, is_train, key):
        data, rois = ins
        out_dtype = data.dtype
        work = jnp.promote_types(data.dtype, jnp.float32)
        x = data.astype(work)
        r = jax.lax.stop_gradient(rois.astype(work))
        n, _, h, w = x.shape
        g, p, d = self._group(), self.pooled_size, self.output_dim
        scale = jnp.asarray(self.spatial_scale, work)
        b = jnp.clip(jnp.trunc(r[:, 0]).astype(jnp.int32), 0, n - 1)
        x0, y0 = _round(r[:, 1]) * scale, _round(r[:, 2]) * scale
        x1, y1 = (_round(r[:, 3]) + 1) * scale, (_round(r[:, 4]) + 1) * scale
        bin_w = jnp.maximum(x1 - x0, 0.1) / p
        bin_h = jnp.maximum(y1 - y0, 0.1) / p
        steps = jnp.arange(p, dtype=work)

        def edges(start, size, limit):  # (R, P) first and last-plus-one pixel of each bin
            lo = jnp.clip(jnp.floor(steps[None, :] * size[:, None] + start[:, None]), 0, limit)
            hi = jnp.clip(jnp.ceil((steps[None, :] + 1) * size[:, None] + start[:, None]), 0, limit)
            return lo, hi
        hs, he = edges(y0, bin_h, h)
        ws, we = edges(x0, bin_w, w)
        rows = jnp.arange(h, dtype=work)
        cols = jnp.arange(w, dtype=work)
        mh = ((rows[None, None, :] >= hs[..., None]) & (rows[None, None, :] < he[..., None])).astype(work)
        mw = ((cols[None, None, :] >= ws[..., None]) & (cols[None, None, :] < we[..., None])).astype(work)
        area = (he - hs)[:, :, None] * (we - ws)[:, None, :]          # (R, P, P)
        grp = np.clip((np.arange(p) * g) // p, 0, g - 1)
        maps = x[b].reshape(-1, d, g, g, h, w)[:, :, grp][:, :, :, grp]  # (R, D, P, P, H, W)
        total = jnp.einsum("rdpqhw,rph,rqw->rdpq", maps, mh, mw, precision=jax.lax.Precision.HIGHEST)
        out = jnp.where(area[:, None] > 0, total / jnp.where(area > 0, area, 1)[:, None], 0)
        return [out.astype(out_dtype)], aux


@register
@frozen
class _contrib_RROIAlign(Op):
    """Rotated ROI align (MXNet 1.9.1's contrib/rroi_align.cc): data (N, C, H, W), rois
    (R, 6) rows [batch_index, center_x, center_y, width, height, angle in degrees] ->
    (R, C, ph, pw). Each bin averages a grid of bilinear samples (sampling_ratio per side,
    or ceil(roi size / bins) when sampling_ratio <= 0, which varies per ROI: the grid is a
    loop to the largest one, masked per ROI). MXNet has no gradient for it; neither here."""
    pooled_size: tuple[int, ...]
    spatial_scale: float
    sampling_ratio: int = -1

    def __post_init__(self):
        p = tuple(self.pooled_size)
        if len(p) != 2 or any(d < 1 for d in p):
            raise ValueError(f"pooled_size {fmt_shape(p)} must be 2 positive dims (height, width)")

    def arguments(self):
        return ("data", "rois")

    def infer_shape(self, ins, outs):
        data, rois = ins
        if data is not None and len(data) != 4:
            raise ShapeError(f"data {fmt_shape(data)} must be 4-D (batch, channel, height, width)")
        if rois is not None and (len(rois) != 2 or rois[1] not in (0, 6)):
            raise ShapeError(f"rois {fmt_shape(rois)} must be 2-D (num_rois, 6), rows "
                             "[batch_index, center_x, center_y, width, height, angle]")
        r = rois[0] if rois is not None else 0
        c = data[1] if data is not None else 0
        return [data, (r, 6) if r else rois], [(r, c) + tuple(self.pooled_size) if r and c else None], []

    def infer_type(self, ins, outs):
        t = next((t for t in list(ins) + list(outs) if t is not None), None)
        return [t, t], [t], []

    def lower(self, ins, aux, is_train, key):
        data, rois = (jax.lax.stop_gradient(a.astype(jnp.float32)) for a in ins)
        n, c, h, w = data.shape
        ph_n, pw_n = self.pooled_size
        b = jnp.clip(jnp.trunc(rois[:, 0]).astype(jnp.int32), 0, n - 1)
        cw, ch, rw, rh = (rois[:, k] * jnp.float32(self.spatial_scale) for k in range(1, 5))
        theta = rois[:, 5] * jnp.float32(np.pi / 180.0)
        rw, rh = jnp.maximum(rw, 1.0), jnp.maximum(rh, 1.0)
        bin_h, bin_w = rh / ph_n, rw / pw_n
        if self.sampling_ratio > 0:
            gh = gw = jnp.full(rois.shape[:1], self.sampling_ratio, jnp.int32)
        else:
            gh, gw = jnp.ceil(rh / ph_n).astype(jnp.int32), jnp.ceil(rw / pw_n).astype(jnp.int32)
        maps = data[b]                                                   # (R, C, H, W)
        ph = jnp.arange(ph_n, dtype=jnp.float32)[None, :, None]
        pw = jnp.arange(pw_n, dtype=jnp.float32)[None, None, :]
        cos, sin = jnp.cos(theta)[:, None, None], jnp.sin(theta)[:, None, None]
        col = lambda v: v[:, None, None]  # noqa: E731
        rows = jnp.arange(rois.shape[0])[:, None, None]
        most_w = jnp.max(gw) if rois.shape[0] else 0

        def sample(i, total):
            iy, ix = i // most_w, i % most_w
            yy = col(-rh / 2) + ph * col(bin_h) + (iy + 0.5) * col(bin_h / gh)
            xx = col(-rw / 2) + pw * col(bin_w) + (ix + 0.5) * col(bin_w / gw)
            x = xx * cos + yy * sin + col(cw)
            y = yy * cos - xx * sin + col(ch)
            inside = (y >= -1.0) & (y <= h) & (x >= -1.0) & (x <= w) & col((iy < gh) & (ix < gw))
            y, x = jnp.maximum(y, 0.0), jnp.maximum(x, 0.0)
            yl, xl = jnp.floor(y).astype(jnp.int32), jnp.floor(x).astype(jnp.int32)
            y = jnp.where(yl >= h - 1, jnp.float32(h - 1), y)
            x = jnp.where(xl >= w - 1, jnp.float32(w - 1), x)
            yl, xl = jnp.minimum(yl, h - 1), jnp.minimum(xl, w - 1)
            yh, xh = jnp.minimum(yl + 1, h - 1), jnp.minimum(xl + 1, w - 1)
            ly, lx = y - yl, x - xl
            hy, hx = 1.0 - ly, 1.0 - lx

            def at(yi, xi):  # (R, ph, pw, C)
                return maps[rows, :, yi, xi]
            val = ((hy * hx)[..., None] * at(yl, xl) + (hy * lx)[..., None] * at(yl, xh)
                   + (ly * hx)[..., None] * at(yh, xl) + (ly * lx)[..., None] * at(yh, xh))
            return total + jnp.where(inside[..., None], val, 0.0)

        steps = jnp.max(gh) * most_w if rois.shape[0] else 0
        total = jax.lax.fori_loop(0, steps, sample, jnp.zeros((rois.shape[0], ph_n, pw_n, c), jnp.float32))
        out = total / (gh * gw).astype(jnp.float32)[:, None, None, None]
        return [jnp.moveaxis(out, -1, 1).astype(ins[0].dtype)], aux
