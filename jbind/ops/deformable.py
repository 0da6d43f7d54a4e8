"""Deformable convolution (MXNet 1.9.1's contrib.DeformableConvolution,
src/operator/contrib/deformable_convolution*, its CPU kernel in nn/deformable_im2col.h), 2-D,
NCHW.

Output position (y, x), kernel tap (i, j), deformable group g reads the data of g's channels
at the fractional point

    (y * stride_h - pad_h + i * dilate_h + offset[n, g*2K + 2(i*kw + j),     y, x],
     x * stride_w - pad_w + j * dilate_w + offset[n, g*2K + 2(i*kw + j) + 1, y, x])

(K = kh * kw) by bilinear interpolation; a point outside [0, H) x [0, W) reads 0, and one in
the last row or column reads that row or column (MXNet's CPU kernel does not blend it with
the zero padding beyond). The sampled columns are then convolved with the weight as an
ordinary (grouped) convolution, plus the bias. The gradients are those of this expression,
for data, offset, weight and bias alike.
"""
from __future__ import annotations

from typing import Literal, Optional

import jax.numpy as jnp

from ..base import ShapeError, fmt_shape
from ._base import Op, float_types, frozen, register
from .conv import _check_geometry, _fill


@register
@frozen
class _contrib_DeformableConvolution(Op):
    """data (N, C, H, W), offset (N, num_deformable_group * 2 * kh * kw, Ho, Wo), weight
    (num_filter, C / num_group, kh, kw), bias (num_filter,) -> (N, num_filter, Ho, Wo)."""
    mxnet_order = ('kernel', 'stride', 'dilate', 'pad', 'num_filter', 'num_group', 'num_deformable_group',
                   'workspace', 'no_bias', 'layout')
    kernel: tuple[int, ...]
    num_filter: int
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    num_group: int = 1
    num_deformable_group: int = 1
    workspace: int = 1024
    no_bias: bool = False
    layout: Optional[Literal["NCW", "NCHW", "NCDHW"]] = None

    def __post_init__(self):
        _check_geometry(self)
        if len(self.kernel) != 2:
            raise ValueError(f"kernel {self.kernel}: only 2-D deformable convolution is implemented, as in MXNet")
        if self.layout not in (None, "NCHW"):
            raise ValueError(f"layout {self.layout} does not fit a 2-D kernel; use NCHW")
        if self.num_filter < 1 or self.num_group < 1 or self.num_filter % self.num_group:
            raise ValueError(f"num_filter={self.num_filter} must be a positive multiple of num_group={self.num_group}")
        if self.num_deformable_group < 1:
            raise ValueError(f"num_deformable_group={self.num_deformable_group} must be positive")

    def arguments(self):
        return ("data", "offset", "weight") if self.no_bias else ("data", "offset", "weight", "bias")

    def _geometry(self):
        return _fill(self.stride, 2, 1), _fill(self.dilate, 2, 1), _fill(self.pad, 2, 0)

    def infer_type(self, ins, outs):
        return float_types(self, ins, outs)

    def infer_shape(self, ins, outs):
        data, offset = ins[0], ins[1]
        bias = (self.num_filter,)
        if data is None:
            return [None, offset, ins[2], bias][:len(ins)], [None], []
        if len(data) != 4:
            raise ShapeError(f"data {fmt_shape(data)} must be 4-D (batch, channel, height, width)")
        n, c, h, w = data
        g, dg = self.num_group, self.num_deformable_group
        if c and (c % g or c % dg):
            raise ShapeError(f"data {fmt_shape(data)}: its {c} channels must be a multiple of num_group={g} "
                             f"and of num_deformable_group={dg}")
        (kh, kw), (sh, sw), (dh, dw), (ph, pw) = self.kernel, *self._geometry()
        out_sp = []
        for x, k, s, d, p, axis in ((h, kh, sh, dh, ph, "height"), (w, kw, sw, dw, pw, "width")):
            span = d * (k - 1) + 1
            if x and x + 2 * p < span:
                raise ShapeError(f"kernel {self.kernel} (dilated {span} in {axis}) exceeds the padded data "
                                 f"{fmt_shape(data)} with pad {(ph, pw)}")
            out_sp.append((x + 2 * p - span) // s + 1 if x else 0)
        want = (n, dg * 2 * kh * kw, *out_sp)
        if offset is not None and (len(offset) != 4 or any(a and b and a != b for a, b in zip(offset, want))):
            raise ShapeError(f"offset {fmt_shape(offset)} must be {fmt_shape(want)}: (batch, num_deformable_group "
                             f"* 2 * kh * kw, output height, output width) for data {fmt_shape(data)}")
        weight = (self.num_filter, c // g if c else 0, kh, kw)
        return [data, want, weight, bias][:len(ins)], [(n, self.num_filter, *out_sp)], []

    def lower(self, ins, aux, is_train, key):
        x, off, wt, *b = ins
        n, c, h, w = x.shape
        kh, kw = self.kernel
        (sh, sw), (dh, dw), (ph, pw) = self._geometry()
        dg, g = self.num_deformable_group, self.num_group
        ho, wo = off.shape[2:]
        k = kh * kw
        off = off.reshape(n, dg, k, 2, ho, wo)
        base_y = (jnp.arange(ho) * sh - ph)[:, None] + (jnp.arange(kh) * dh)[:, None, None]   # (kh, ho, 1)
        base_x = (jnp.arange(wo) * sw - pw)[None, :] + (jnp.arange(kw) * dw)[:, None, None]   # (kw, 1, wo)
        base_y = jnp.broadcast_to(base_y[:, None], (kh, kw, ho, wo)).reshape(k, ho, wo)
        base_x = jnp.broadcast_to(base_x[None], (kh, kw, ho, wo)).reshape(k, ho, wo)
        py = base_y.astype(x.dtype) + off[:, :, :, 0]                                      # (n, dg, k, ho, wo)
        px = base_x.astype(x.dtype) + off[:, :, :, 1]
        cols = _bilinear(x.reshape(n, dg, c // dg, h * w), py, px, h, w)                   # (n, dg, c/dg, k, ho*wo)
        cols = cols.reshape(n, g, c // g, k, ho * wo)
        wg = wt.reshape(g, self.num_filter // g, c // g, k)
        y = jnp.einsum("gfck,ngckp->ngfp", wg, cols).reshape(n, self.num_filter, ho, wo)
        return [y + b[0].reshape(1, -1, 1, 1) if b else y], aux


def _bilinear(data, py, px, h, w):
    """data (n, dg, cg, h*w) sampled at points (n, dg, k, ho, wo) -> (n, dg, cg, k, ho*wo),
    MXNet's CPU im2col_bilinear: zero outside [0, h) x [0, w), the last row / column held."""
    n, dg, k, ho, wo = py.shape
    valid = (py >= 0) & (px >= 0) & (py < h) & (px < w)
    y0 = jnp.floor(py)
    x0 = jnp.floor(px)
    ly = jnp.where(y0 >= h - 1, 0, py - y0)
    lx = jnp.where(x0 >= w - 1, 0, px - x0)
    y0i = jnp.clip(y0, 0, h - 1).astype(jnp.int32)
    x0i = jnp.clip(x0, 0, w - 1).astype(jnp.int32)
    y1i = jnp.minimum(y0i + 1, h - 1)
    x1i = jnp.minimum(x0i + 1, w - 1)
    zero = jnp.zeros_like(ly)
    corners = [(y0i, x0i, (1 - ly) * (1 - lx)), (y0i, x1i, (1 - ly) * lx),
               (y1i, x0i, ly * (1 - lx)), (y1i, x1i, ly * lx)]
    out = 0
    for yi, xi, wgt in corners:
        idx = (yi * w + xi).reshape(n, dg, 1, k * ho * wo)
        vals = jnp.take_along_axis(data, jnp.broadcast_to(idx, (n, dg, data.shape[2], k * ho * wo)), axis=3)
        wgt = jnp.where(valid, wgt, zero).reshape(n, dg, 1, k * ho * wo)
        out = out + vals * wgt
    return out.reshape(n, dg, data.shape[2], k, ho * wo)
