"""Resizing (MXNet 1.9.1's contrib/adaptive_avg_pooling.cc and bilinear_resize.cc), NCHW.

AdaptiveAvgPooling2D's cells and BilinearResize2D's taps are a (rows x H) matrix and a
(columns x W) matrix around the map: one einsum, whose transpose is MXNet's backward. The
matrices are built with MXNet's float32 arithmetic, so that rounding at cell boundaries
lands where MXNet's does.
"""
from __future__ import annotations

import math
from typing import Literal, Optional

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..base import ShapeError, fmt_shape
from ._base import Op, frozen, register

_HI = lax.Precision.HIGHEST


# ------------------------------------------------------------------ adaptive average pooling
def _adaptive_matrix(n_in, n_out):
    """(n_out, n_in): 1/k over cell i's rows [floor(i * n_in / n_out), ceil((i + 1) * n_in / n_out)),
    MXNet's START_IND / END_IND (in float32)."""
    m = np.zeros((n_out, n_in), np.float32)
    f32 = np.float32
    for i in range(n_out):
        lo = int(np.floor(f32(i * n_in) / f32(n_out)))
        hi = int(np.ceil(f32((i + 1) * n_in) / f32(n_out)))
        m[i, lo:hi] = f32(1) / f32(hi - lo)
    return m


@register
@frozen
class _contrib_AdaptiveAvgPooling2D(Op):
    """Average pooling of (N, C, H, W) to (N, C) + output_size: cell i of n over H rows
    averages rows [floor(i * H / n), ceil((i + 1) * H / n)) (cells may overlap). output_size:
    () for 1 x 1, (s,) for s x s, or (height, width)."""
    output_size: tuple[int, ...] = ()

    def __post_init__(self):
        s = tuple(self.output_size)
        if len(s) > 2:
            raise ValueError(f"output_size {fmt_shape(s)} must have at most 2 dims (height, width)")
        if any(d < 1 for d in s):
            raise ValueError(f"output_size {fmt_shape(s)} must be positive")

    def _size(self):
        s = tuple(self.output_size)
        return (1, 1) if not s else (s[0], s[0]) if len(s) == 1 else s

    def infer_shape(self, ins, outs):
        x = ins[0]
        if x is None:
            o = outs[0]
            return [None if o is None else tuple(o[:2]) + (0, 0)], [None if o is None else tuple(o)], []
        if len(x) != 4:
            raise ShapeError(f"data {fmt_shape(x)} must be 4-D (batch, channel, height, width)")
        return [tuple(x)], [tuple(x[:2]) + self._size()], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        oh, ow = self._size()
        my = jnp.asarray(_adaptive_matrix(x.shape[2], oh), x.dtype)
        mx_ = jnp.asarray(_adaptive_matrix(x.shape[3], ow), x.dtype)
        return [jnp.einsum("ph,nchw,qw->ncpq", my, x, mx_, precision=_HI)], aux


# ------------------------------------------------------------------ bilinear resize
_MODES = ("size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up")


def _resize_matrix(n_in, n_out, align_corners):
    """(n_out, n_in) bilinear taps, MXNet's area_pixel_compute_scale / _source_index in float32."""
    m = np.zeros((n_out, n_in), np.float32)
    if n_out == 0:
        return m
    if n_in == n_out:
        return np.eye(n_out, dtype=np.float32)
    f32 = np.float32
    if n_out > 1:
        scale = f32(n_in - 1) / f32(n_out - 1) if align_corners else f32(n_in) / f32(n_out)
    else:
        scale = f32(0)
    for i in range(n_out):
        if align_corners:
            src = f32(scale * f32(i))
        else:
            src = f32(float(scale) * (i + 0.5) - 0.5)  # MXNet: float * double, then to float
            src = f32(0) if src < 0 else src
        lo = int(src)
        step = 1 if lo < n_in - 1 else 0
        frac = f32(src - f32(lo))
        m[i, lo] += f32(1) - frac
        m[i, lo + step] += frac
    return m


@register
@frozen
class _contrib_BilinearResize2D(Op):
    """Bilinear resize of (N, C, H, W) to (N, C, height, width). mode 'size': height, width,
    or int(scale_height * H) and int(scale_width * W) when scale_height is given (MXNet reads
    scale_width only then); 'odd_scale': as 'size' with scales, but an odd dim d becomes
    int((d - 1) * scale) + 1; 'like': the size of the second input `like` (no gradient);
    'to_even_down' / 'to_even_up' / 'to_odd_down' / 'to_odd_up': each dim to the nearest even
    or odd size below or above (unchanged if it already is). align_corners maps the corner
    pixels' centres onto each other (src = dst * (in - 1) / (out - 1)); otherwise
    src = (dst + 0.5) * in / out - 0.5, at least 0. An output dim of 1 samples row 0."""
    height: int = 1
    width: int = 1
    scale_height: Optional[float] = None
    scale_width: Optional[float] = None
    mode: Literal[_MODES] = "size"
    align_corners: bool = True

    def __post_init__(self):
        for what in ("height", "width"):
            if getattr(self, what) < 1:
                raise ValueError(f"{what}={getattr(self, what)} must be at least 1")
        if self.mode == "size" and self.scale_height is not None and self.scale_width is None:
            raise ValueError("mode='size' with scale_height needs scale_width too (MXNet reads both)")
        if self.mode == "odd_scale" and (self.scale_height is None or self.scale_width is None):
            raise ValueError("mode='odd_scale' needs both scale_height and scale_width")
        for what in ("scale_height", "scale_width"):
            v = getattr(self, what)
            if v is not None and not (v > 0 and math.isfinite(v)):
                raise ValueError(f"{what}={v} must be positive")

    def arguments(self):
        return ("data", "like") if self.mode == "like" else ("data",)

    def _out(self, h, w, like):
        """The output's (height, width) for data dims h, w (0: unknown)."""
        m = self.mode
        if m == "size":
            if self.scale_height is not None:
                return (int(np.float32(self.scale_height) * np.float32(h)) if h else 0,
                        int(np.float32(self.scale_width) * np.float32(w)) if w else 0)
            return self.height, self.width
        if m == "odd_scale":
            def one(d, s):
                if not d:
                    return 0
                s = np.float32(s)
                return int(np.float32(d) * s) if d % 2 == 0 else int(np.float32(d - 1) * s) + 1
            return one(h, self.scale_height), one(w, self.scale_width)
        if m == "like":
            return (like[2], like[3]) if like is not None else (0, 0)
        even = m.startswith("to_even")
        step = 1 if m.endswith("up") else -1

        def to(d):
            return d if not d or (d % 2 == 0) == even else d + step
        return to(h), to(w)

    def infer_shape(self, ins, outs):
        x = ins[0]
        like = ins[1] if self.mode == "like" else None
        if x is not None and len(x) != 4:
            raise ShapeError(f"data {fmt_shape(x)} must be 4-D (batch, channel, height, width)")
        if like is not None and len(like) != 4:
            raise ShapeError(f"like {fmt_shape(like)} must be 4-D (batch, channel, height, width): "
                             "mode='like' resizes to its dims 2 and 3")
        h, w = (x[2], x[3]) if x is not None else (0, 0)
        oh, ow = self._out(h, w, like)
        o = outs[0]
        n, c = (x[0], x[1]) if x is not None else (0, 0)
        if o is not None and len(o) == 4:
            n, c = n or o[0], c or o[1]
        src = like if self.mode == "like" else x
        for what, d, k in (("height", oh, 2), ("width", ow, 3)):
            if (src is not None and src[k] and d < 1) or d > 32767:
                raise ShapeError(f"the output {what} {d} (data {fmt_shape(x)}, mode {self.mode!r}) must be "
                                 "in [1, 32767] (MXNet keeps it in an int16)")
        out = (n, c, oh, ow)
        ins_out = [tuple(x) if x is not None else ((n, c, 0, 0) if n or c else None)]
        if self.mode == "like":
            ins_out.append(tuple(like) if like is not None else None)
        return ins_out, [out if any(out) else None], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        like = ins[1].shape if self.mode == "like" else None
        oh, ow = self._out(x.shape[2], x.shape[3], like)
        my = jnp.asarray(_resize_matrix(x.shape[2], oh, self.align_corners), x.dtype)
        mx_ = jnp.asarray(_resize_matrix(x.shape[3], ow, self.align_corners), x.dtype)
        return [jnp.einsum("ph,nchw,qw->ncpq", my, x, mx_, precision=_HI)], aux
