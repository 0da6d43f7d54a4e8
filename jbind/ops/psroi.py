"""Position-sensitive ROI pooling (MXNet 1.9.1's contrib/psroi_pooling.cc, from R-FCN), NCHW.

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
