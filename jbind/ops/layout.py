"""Layout ops: slice_like, reshape_like, shape_array, size_array, depth_to_space,
space_to_depth, diag.

Shapes follow MXNet 1.x's partial convention (see shape.py): None is an unknown shape,
0 an unknown dimension. As elsewhere in jbind, a rule that would give a zero-size
dimension raises instead (a diagonal `k` outside the matrix).
"""
from __future__ import annotations

import math
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..base import ShapeError, fmt_shape
from ._base import Op, frozen, register
from .shape import _axis

_INT64 = jax.dtypes.canonicalize_dtype(np.int64)  # int32 without JAX's x64 mode


def _like_types(ins, outs):
    """dtype rule of (data, like) ops: the output is data's dtype; `like` keeps its own."""
    t = ins[0] if ins[0] is not None else outs[0]
    return [t, ins[1]], [t], []


# ------------------------------------------------------------------ shape from a second input

@register
class slice_like(Op):
    """data[0:n0, 0:n1, ...] where n is `shape_like`'s size on each axis in `axes` (every
    axis when empty); `shape_like` gets a zero gradient."""
    axes: tuple[int, ...] = ()

    def arguments(self):
        return ("data", "shape_like")

    def _out(self, data, like):
        if not self.axes:
            if len(data) != len(like):
                raise ValueError(f"without `axes` data {tuple(data)} and shape_like {tuple(like)} must have "
                                 f"the same number of dims")
            axes = range(len(data))
        else:
            axes = [_axis(a, len(data), "axes") for a in self.axes]
            for a in axes:
                if a >= len(like):
                    raise ValueError(f"axes={self.axes}: axis {a} is out of range for shape_like {tuple(like)}")
        out = list(data)
        for a in axes:
            if data[a] and like[a] > data[a]:
                raise ValueError(f"axis {a}: shape_like {tuple(like)} is larger than data {tuple(data)}")
            out[a] = like[a]
        return tuple(out)

    def infer_shape(self, ins, outs):
        data, like = ins
        if data is None or like is None:
            return [data, like], [None], []
        return [data, like], [self._out(data, like)], []

    infer_type = staticmethod(_like_types)

    def lower(self, ins, aux, is_train, key):
        x, like = ins
        out = self._out(x.shape, like.shape)
        return [jax.lax.slice(x, (0,) * x.ndim, out)], aux


def _range(begin, end, ndim: int, side: str) -> tuple[int, int]:
    """MXNet's reshape_like range: None is 0 / ndim, negative values count from the end."""
    b = 0 if begin is None else begin + ndim if begin < 0 else begin
    e = ndim if end is None else end + ndim if end < 0 else end
    if not 0 <= b < e <= ndim:
        raise ValueError(f"{side}_begin={begin}, {side}_end={end} is not a non-empty range of the "
                         f"{ndim} dims of {side}")
    return b, e


@register(aliases=("_npx_reshape_like",))
class reshape_like(Op):
    """Reshape lhs, its dims [lhs_begin, lhs_end) replaced by rhs's dims [rhs_begin, rhs_end)
    (all dims by default); rhs gets a zero gradient."""
    lhs_begin: Optional[int] = None
    lhs_end: Optional[int] = None
    rhs_begin: Optional[int] = None
    rhs_end: Optional[int] = None

    def arguments(self):
        return ("lhs", "rhs")

    def _out(self, lhs, rhs):
        lb, le = _range(self.lhs_begin, self.lhs_end, len(lhs), "lhs")
        rb, re = _range(self.rhs_begin, self.rhs_end, len(rhs), "rhs")
        out = tuple(lhs[:lb]) + tuple(rhs[rb:re]) + tuple(lhs[le:])
        if all(lhs) and all(out) and math.prod(lhs) != math.prod(out):
            raise ValueError(f"cannot reshape lhs {tuple(lhs)} ({math.prod(lhs)} elements) to {out} "
                             f"({math.prod(out)} elements) taken from rhs {tuple(rhs)}")
        return out

    def infer_shape(self, ins, outs):
        lhs, rhs = ins
        if lhs is None or rhs is None:
            return [lhs, rhs], [None], []
        return [lhs, rhs], [self._out(lhs, rhs)], []

    infer_type = staticmethod(_like_types)

    def lower(self, ins, aux, is_train, key):
        x, like = ins
        return [x.reshape(self._out(x.shape, like.shape))], aux


# ---------------------------------------------------------------------- shape as data

@register(aliases=("_npx_shape_array",))
class shape_array(Op):
    """The shape of `data` as a 1-D int64 array (int32 without JAX's x64 mode); no gradient."""

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is not None and not data:
            raise ValueError("the input has no dims, so its shape would be an empty array")
        return [data], [None if data is None else (len(data),)], []

    def infer_type(self, ins, outs):
        return [ins[0]], [np.dtype(np.int64)], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.asarray(ins[0].shape, _INT64)], aux


@register
class size_array(Op):
    """The number of elements of `data` as a 1-element int64 array (int32 without JAX's x64
    mode); no gradient."""

    def infer_shape(self, ins, outs):
        return [ins[0]], [(1,)], []

    def infer_type(self, ins, outs):
        return [ins[0]], [np.dtype(np.int64)], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.asarray([ins[0].size], _INT64)], aux


# --------------------------------------------------------------- depth <-> space (NCHW)

@frozen
class _Blocks(Op):
    block_size: int

    def __post_init__(self):
        if self.block_size < 1:
            raise ValueError(f"block_size must be positive, got {self.block_size}")

    def _nchw(self, data):
        if len(data) != 4:
            raise ValueError(f"needs a 4-D input (N, C, H, W), got {tuple(data)}")
        return data

    def infer_shape(self, ins, outs):
        data = ins[0]
        return [data], [None if data is None else self._out(data)], []

    def _concrete(self, shape):
        """The output shape for real data: as MXNet, no axis of the data may be empty
        (inference cannot check it: there a 0 is an unknown size)."""
        if 0 in shape:
            raise ShapeError(f"{self.name}: data {fmt_shape(shape)} has a zero-size axis")
        return self._out(shape)


@register
class depth_to_space(_Blocks):
    """(N, C, H, W) -> (N, C / b^2, H b, W b): blocks of b x b values move out of the depth
    axis (DCR order, as MXNet)."""

    def _out(self, data):
        n, c, h, w = self._nchw(data)
        b = self.block_size
        if c % (b * b):
            raise ValueError(f"the depth dim C={c} of {tuple(data)} must be a multiple of "
                             f"block_size^2 = {b * b}")
        return (n, c // (b * b), h * b, w * b)

    def lower(self, ins, aux, is_train, key):
        x, b = ins[0], self.block_size
        out = self._concrete(x.shape)
        n, c, h, w = x.shape
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        return [y.reshape(out)], aux


@register
class space_to_depth(_Blocks):
    """(N, C, H, W) -> (N, C b^2, H / b, W / b): each b x b block of values moves into the
    depth axis (the inverse of depth_to_space)."""

    def _out(self, data):
        n, c, h, w = self._nchw(data)
        b = self.block_size
        if h % b or w % b:
            raise ValueError(f"the spatial dims H={h}, W={w} of {tuple(data)} must be multiples of "
                             f"block_size={b}")
        return (n, c * b * b, h // b, w // b)

    def lower(self, ins, aux, is_train, key):
        x, b = ins[0], self.block_size
        out = self._concrete(x.shape)
        n, c, h, w = x.shape
        y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
        return [y.reshape(out)], aux


# ------------------------------------------------------------------------------ diag

@register
class diag(Op):
    """1-D data: the square matrix with `data` on diagonal `k`. N-D data: diagonal `k` of each
    (axis1, axis2) plane, those axes removed and the diagonal appended last (numpy's diagonal).
    k > 0 is above the main diagonal, k < 0 below."""
    k: int = 0
    axis1: int = 0
    axis2: int = 1

    def _axes(self, ndim):
        a1, a2 = _axis(self.axis1, ndim, "axis1"), _axis(self.axis2, ndim, "axis2")
        if a1 == a2:
            raise ValueError(f"axis1={self.axis1} and axis2={self.axis2} name the same axis {a1}")
        return a1, a2

    def _out(self, data):
        if not data:
            raise ValueError("needs an input of at least 1 dim")
        if len(data) == 1:
            n = data[0] + abs(self.k) if data[0] else 0
            return (n, n)
        a1, a2 = self._axes(len(data))
        h, w = data[a1], data[a2]
        rest = tuple(d for i, d in enumerate(data) if i not in (a1, a2))
        if not h or not w:
            return rest + (0,)
        n = min(h + min(self.k, 0), w - max(self.k, 0))
        if n < 1:
            raise ValueError(f"k={self.k} has no diagonal in the {h} x {w} planes of axes ({a1}, {a2}) "
                             f"of input {tuple(data)}")
        return rest + (n,)

    def infer_shape(self, ins, outs):
        data = ins[0]
        return [data], [None if data is None else self._out(data)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        if x.ndim == 1:
            return [jnp.diag(x, self.k)], aux
        a1, a2 = self._axes(x.ndim)
        return [jnp.diagonal(x, self.k, a1, a2)], aux
