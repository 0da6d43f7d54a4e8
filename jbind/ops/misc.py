"""Small MXNet 1.9.1 operators without a family of their own: `_identity_with_attr_like_rhs`,
`all_finite` / `multi_all_finite`, `_contrib_index_array`, `_contrib_quadratic`,
`_contrib_allclose`, `BatchNorm_v1` (MXNet's first BatchNorm, the parameters of
today's without axis), `_slice_assign` / `_slice_assign_scalar` (`_crop_assign*`), and
MXNet 0.x's `fill_element_0index` (and `choose_element_0index`, `pick`'s alias)."""
from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..base import ShapeError, fmt_shape
from ._base import ALIASES, Op, frozen, register
from .indexing import slice as slice_op
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
        axes = self._axes(len(shape))
        if not axes:  # a 0-d input (or axes=()): no index to give
            return [jnp.zeros(shape + (0,), dt)], aux
        grids = jnp.meshgrid(*[jnp.arange(n, dtype=dt) for n in shape], indexing="ij")
        return [jnp.stack([grids[a] for a in axes], axis=-1)], aux


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
    mxnet_order = ("eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var")


@register(aliases=("_crop_assign",))
@frozen
class _slice_assign(slice_op):
    """lhs with lhs[begin:end:step] replaced by rhs (rhs has the slice's shape)."""

    def arguments(self):
        return ("lhs", "rhs")

    def infer_shape(self, ins, outs):
        lhs = ins[0] if ins[0] is not None else outs[0]
        if lhs is None:
            return list(ins), list(outs), []
        _, (part,), _ = super().infer_shape([lhs], [None])
        return [lhs, part], [lhs], []

    def infer_type(self, ins, outs):
        t = next((x for x in (ins[0], outs[0], ins[1]) if x is not None), None)
        return [t, t], [t], []

    def lower(self, ins, aux, is_train, key):
        lhs, rhs = ins
        return [lhs.at[self._slices(lhs.ndim)].set(rhs.astype(lhs.dtype))], aux


@register(aliases=("_crop_assign_scalar",))
@frozen
class _slice_assign_scalar(slice_op):
    """data with data[begin:end:step] set to `scalar`."""
    scalar: float = 0.0
    mxnet_order = ("scalar", "begin", "end", "step")

    def infer_shape(self, ins, outs):
        d = ins[0] if ins[0] is not None else outs[0]
        if d is not None:
            super().infer_shape([d], [None])  # checks the slice
        return [d], [d], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [x.at[self._slices(x.ndim)].set(jnp.asarray(self.scalar).astype(x.dtype))], aux


class _RowPick(Op):
    """lhs (n, k) and one index per row, rhs (n,) (MXNet 0.x's legacy op; its sibling
    choose_element_0index is `pick`'s alias)."""

    def infer_shape(self, ins, outs):
        lhs, rhs = ins[0], ins[-1]
        if lhs is not None and len(lhs) != 2:
            raise ShapeError(f"lhs must be 2-D, got {fmt_shape(lhs)}")
        n = lhs[0] if lhs is not None else (rhs[0] if rhs is not None else 0)
        return lhs, n

    def _rows(self, lhs, rhs):
        idx = jnp.clip(jax.lax.stop_gradient(rhs).astype(jnp.int32), 0, lhs.shape[1] - 1)
        return jnp.arange(lhs.shape[0]), idx


@register
class fill_element_0index(_RowPick):
    """lhs with lhs[i, rhs[i]] = mhs[i]."""

    def arguments(self):
        return ("lhs", "mhs", "rhs")

    def infer_shape(self, ins, outs):
        lhs, n = super().infer_shape(ins, outs)
        vec = (n,) if n else None
        return [lhs, vec, vec], [lhs], []

    def lower(self, ins, aux, is_train, key):
        lhs, mhs, rhs = ins
        return [lhs.at[self._rows(lhs, rhs)].set(mhs.astype(lhs.dtype))], aux


@register
class _histogram(Op):
    """Counts of data in bins, as numpy.histogram: `bin_cnt` equal bins over `range`
    (data's min and max when None), or the edges given as the input `bins`. Bins are
    [e_i, e_i+1), the last one closed; values outside are not counted. Outputs the counts
    (int64; int32 without JAX's x64 mode) and the edges (data's dtype). No gradient."""
    bin_cnt: Optional[int] = None
    range: Optional[tuple[float, ...]] = None

    def __post_init__(self):
        if self.bin_cnt is not None and self.bin_cnt < 1:
            raise ValueError(f"bin_cnt must be positive, got {self.bin_cnt}")
        if self.range is not None and (len(self.range) != 2 or self.range[0] > self.range[1]):
            raise ValueError(f"range must be (low, high) with low <= high, got {self.range}")

    def arguments(self):
        return ("data",) if self.bin_cnt is not None else ("data", "bins")

    def outputs(self):
        return ("hist", "bin_edges")

    def infer_shape(self, ins, outs):
        if self.bin_cnt is not None:
            return list(ins), [(self.bin_cnt,), (self.bin_cnt + 1,)], []
        bins = ins[1]
        if bins is not None and (len(bins) != 1 or bins[0] == 1):
            raise ShapeError(f"bins must be 1-D with at least 2 edges, got {fmt_shape(bins)}")
        n = bins[0] if bins is not None and bins[0] else None
        return list(ins), [None if n is None else (n - 1,), bins], []

    def infer_type(self, ins, outs):
        t = ins[0]
        return list(ins), [jax.dtypes.canonicalize_dtype(np.int64), t], []

    def lower(self, ins, aux, is_train, key):
        x = jax.lax.stop_gradient(ins[0]).reshape(-1)
        if self.bin_cnt is not None:
            lo, hi = (self.range if self.range is not None else (jnp.min(x), jnp.max(x)))
            lo, hi = jnp.asarray(lo, x.dtype), jnp.asarray(hi, x.dtype)
            hi = jnp.where(hi > lo, hi, lo + 1)  # numpy widens an empty range
            n = self.bin_cnt
            edges = lo + (hi - lo) * jnp.arange(n + 1, dtype=x.dtype) / n
            idx = jnp.floor((x - lo) * n / (hi - lo)).astype(jnp.int32)
        else:
            edges = jax.lax.stop_gradient(ins[1]).astype(x.dtype)
            n = edges.shape[0] - 1
            lo, hi = edges[0], edges[-1]
            idx = jnp.searchsorted(edges, x, side="right").astype(jnp.int32) - 1
        idx = jnp.where(x == hi, n - 1, idx)
        inside = (x >= lo) & (x <= hi)
        dt = jax.dtypes.canonicalize_dtype(np.int64)
        hist = jnp.zeros(n, dt).at[jnp.clip(idx, 0, n - 1)].add(inside.astype(dt))
        return [hist, edges], aux


@register
class multi_sum_sq(Op):
    """The sum of squares of each of `num_arrays` arrays, as one float32 vector. No gradient."""
    num_arrays: int = 1
    variadic = "num_arrays"

    def infer_type(self, ins, outs):
        return list(ins), [np.dtype(np.float32)], []

    def arguments(self):
        return tuple(f"array{i}" for i in range(self.num_arrays))

    def infer_shape(self, ins, outs):
        return list(ins), [(self.num_arrays,)], []

    def lower(self, ins, aux, is_train, key):
        sq = [jnp.sum(jnp.square(jax.lax.stop_gradient(x).astype(jnp.float32))) for x in ins]
        return [jnp.stack(sq)], aux


# MXNet 0.x's choose_element_0index(lhs, rhs) is pick(lhs, rhs) (axis -1) by another name.
ALIASES["choose_element_0index"] = "pick"
