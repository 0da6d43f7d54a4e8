"""Small MXNet 1.9.1 operators without a family of their own: `_identity_with_attr_like_rhs`,
`all_finite` / `multi_all_finite`, `_contrib_index_array`, `_contrib_quadratic`,
`_contrib_allclose`, and `BatchNorm_v1` (MXNet's first BatchNorm, the parameters of
today's without axis)."""
from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..base import ShapeError, fmt_shape
from ._base import ALIASES, Op, frozen, register
from .norm import BatchNorm

# MXNet's `_grad_add` (the sum MXNet's gradient pass writes) is elementwise addition.
ALIASES["_grad_add"] = "elemwise_add"


@register
class _identity_with_attr_like_rhs(Op):
    """lhs unchanged; its shape is rhs's (shape inference flows both ways), rhs gets no gradient."""

    def arguments(self):
        return ("lhs", "rhs")

    def infer_type(self, ins, outs):
        t = ins[0] if ins[0] is not None else outs[0]
        return [t, ins[1]], [t], []

    def lower(self, ins, aux, is_train, key):
        return [ins[0]], aux


@register
class all_finite(Op):
    """[1.0] when every element of data is finite, else [0.0] (float32, shape (1,))."""
    init_output: bool = True

    def infer_shape(self, ins, outs):
        return list(ins), [(1,)], []

    def infer_type(self, ins, outs):
        return list(ins), [np.dtype(np.float32)], []

    def lower(self, ins, aux, is_train, key):
        ok = jnp.all(jnp.stack([jnp.all(jnp.isfinite(jax.lax.stop_gradient(x))) for x in ins]))
        return [ok.astype(jnp.float32).reshape(1)], aux


@register
@frozen
class multi_all_finite(all_finite):
    """all_finite over `num_arrays` arrays (inputs array0, array1, ...)."""
    mxnet_order = ("num_arrays", "init_output")
    num_arrays: int = 1
    variadic = "num_arrays"

    def arguments(self):
        return tuple(f"array{i}" for i in range(self.num_arrays))


@register
class _contrib_index_array(Op):
    """Each element's index: shape data.shape + (k,), entry [..., j] the index along
    `axes[j]` (every axis in order when axes is None). int64 in MXNet; int32 without JAX's
    x64 mode. No gradient."""
    axes: Optional[tuple[int, ...]] = None

    def _axes(self, ndim):
        axes = tuple(range(ndim)) if self.axes is None else tuple(self.axes)
        for a in axes:
            if not -ndim <= a < ndim:
                raise ShapeError(f"axis {a} is out of range for data of {ndim} dims")
        return tuple(a % ndim for a in axes)

    def infer_shape(self, ins, outs):
        d = ins[0]
        return [d], [None if d is None else tuple(d) + (len(self._axes(len(d))),)], []

    def infer_type(self, ins, outs):
        return list(ins), [jax.dtypes.canonicalize_dtype(np.int64)], []

    def lower(self, ins, aux, is_train, key):
        shape = ins[0].shape
        dt = jax.dtypes.canonicalize_dtype(np.int64)
        grids = jnp.meshgrid(*[jnp.arange(n, dtype=dt) for n in shape], indexing="ij")
        return [jnp.stack([grids[a] for a in self._axes(len(shape))], axis=-1)], aux


@register
class _contrib_quadratic(Op):
    """a * x**2 + b * x + c, elementwise."""
    a: float = 0.0
    b: float = 0.0
    c: float = 0.0

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [(self.a * x + self.b) * x + self.c], aux


@register
class _contrib_allclose(Op):
    """1 when every |a - b| <= atol + rtol * |b| (NaNs equal where `equal_nan`), else 0:
    a 0-d uint8 array. No gradient."""
    rtol: float = 1e-5
    atol: float = 1e-8
    equal_nan: bool = True

    def arguments(self):
        return ("a", "b")

    def infer_shape(self, ins, outs):
        a, b = ins
        if a is not None and b is not None and len(a) != len(b):
            raise ShapeError(f"a {fmt_shape(a)} and b {fmt_shape(b)} differ in rank")
        known = a if a is not None else b
        return [known, known], [()], []

    def infer_type(self, ins, outs):
        t = ins[0] if ins[0] is not None else ins[1]
        return [t, t], [np.dtype(np.uint8)], []

    def lower(self, ins, aux, is_train, key):
        a, b = (jax.lax.stop_gradient(x) for x in ins)
        nan_a, nan_b = jnp.isnan(a), jnp.isnan(b)
        close = (a == b) | (jnp.abs(a - b) <= self.atol + self.rtol * jnp.abs(b))
        ok = jnp.where(nan_a | nan_b, self.equal_nan & (nan_a == nan_b), close)
        return [jnp.all(ok).astype(jnp.uint8)], aux


@register
class BatchNorm_v1(BatchNorm):  # noqa: N801 - MXNet's name
    """MXNet's BatchNorm_v1: BatchNorm over axis 1 (its other parameters are today's)."""
