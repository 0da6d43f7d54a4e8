"""Reductions (sum, mean, max, min, prod, norm, argmax, moments, cumsum), dot / batch_dot,
and the creation ops (zeros, ones, full, arange), on the families' shared helpers in elemwise.py.

`max`/`min` send the whole gradient to every tied element, as MXNet's mask does.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, ClassVar, Literal, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..base import ShapeError, fmt_shape, np_dtype
from ._base import Op, frozen, register
from .elemwise import _DTYPES, DType, _axes, _dtype_name, _make, _merge


# --- reductions ---------------------------------------------------------------------------
def _chooser(f):
    """max/min whose gradient goes in full to every element equal to the result (MXNet's).

    A custom_jvp, so a forward that is not differentiated computes the reduction alone."""
    def forward(x, axis):
        y = f(x, axis=axis, keepdims=True)
        # NaN wins, as in MXNet (and numpy): XLA:CPU's vectorized float32/64 max and min
        # reductions drop NaNs (jax 0.10 measured: max over 7x7x6x10x2 doubles with NaNs)
        return jnp.where(jnp.isnan(x).any(axis=axis, keepdims=True), jnp.asarray(jnp.nan, y.dtype), y)

    chosen = jax.custom_jvp(forward, nondiff_argnums=(1,))

    @chosen.defjvp
    def _jvp(axis, primals, tangents):
        (x,), (t,) = primals, tangents
        y = forward(x, axis)
        picked = x == y  # (MXNet's mask: an infinite maximum gets its gradient too)
        return y, jnp.sum(jnp.where(picked, t, jnp.zeros_like(t)), axis=axis, keepdims=True)

    def g(x, axis):
        if not jnp.issubdtype(x.dtype, jnp.inexact):
            return f(x, axis=axis, keepdims=True)
        return chosen(x, tuple(axis))
    return g


def _reduced(d, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(d))
    return tuple(n for i, n in enumerate(d) if i not in axes) or (1,)


@frozen
class _Reduce(Op):
    lists_input_names = False  # MXNet's monitors call its input NAME_input0
    axis: Optional[tuple[int, ...]] = None
    keepdims: bool = False
    exclude: bool = False
    fn: ClassVar[Callable]

    def _axes(self, ndim):
        if not self.axis:  # None or (): every axis, whatever `exclude` says
            return tuple(range(ndim))
        ax = _axes(self.axis, ndim)
        return tuple(i for i in range(ndim) if i not in ax) if self.exclude else ax

    def infer_shape(self, ins, outs):
        d = ins[0]
        return [d], [None if d is None else _reduced(d, self._axes(len(d)), self.keepdims)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        ax = self._axes(x.ndim)
        if self.name in ("max", "min") and any(x.shape[i] == 0 for i in ax):
            raise ShapeError(f"{self.name}: cannot reduce data {fmt_shape(x.shape)} over an empty axis "
                             f"(axis={self.axis}): {self.name} has no identity")
        # jnp widens small integers (sum of int32 is int64 under x64) and means them to floats;
        # MXNet keeps the input's dtype (an integer mean truncates)
        y = self.fn(x, axis=ax).astype(x.dtype)
        return [y.reshape(_reduced(x.shape, ax, self.keepdims))], aux


for _n, _f, _al in [("sum", jnp.sum, ("sum_axis",)), ("mean", jnp.mean, ()),
                    ("max", _chooser(jnp.max), ("max_axis",)), ("min", _chooser(jnp.min), ("min_axis",)),
                    ("prod", jnp.prod, ()), ("nansum", jnp.nansum, ()), ("nanprod", jnp.nanprod, ())]:
    _make(_Reduce, _n, _f, _al, f"{_n} over `axis` (all axes when None or (); the others when `exclude`).")
_make(_Reduce, "_square_sum", lambda x, axis: jnp.sum(x * x, axis=axis), (),
      "sum(data ** 2) over `axis`, as `sum` reduces (MXNet's op for row_sparse data; dense here).")


@register
class norm(Op):
    """The L1 or L2 norm of the elements over `axis` (all axes when None)."""
    ord: int = 2
    axis: Optional[tuple[int, ...]] = None
    out_dtype: Optional[DType] = None
    keepdims: bool = False

    def __post_init__(self):
        if self.ord not in (1, 2):
            raise ValueError(f"ord must be 1 or 2, got {self.ord}")
        if self.out_dtype is not None:
            object.__setattr__(self, "out_dtype", _dtype_name(
                self.out_dtype, ("float16", "float32", "float64", "int32", "int64", "int8")))

    def _axes(self, ndim):
        return _axes(self.axis, ndim) if self.axis else tuple(range(ndim))

    def infer_shape(self, ins, outs):
        d = ins[0]
        return [d], [None if d is None else _reduced(d, self._axes(len(d)), self.keepdims)], []

    def infer_type(self, ins, outs):
        if self.out_dtype:
            return [ins[0]], [np_dtype(self.out_dtype)], []
        return super().infer_type(ins, outs)

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        ax = self._axes(x.ndim)
        y = jnp.sum(jnp.abs(x), axis=ax) if self.ord == 1 else jnp.sqrt(jnp.sum(x * x, axis=ax))
        y = y.reshape(_reduced(x.shape, ax, self.keepdims))
        return [y.astype(np_dtype(self.out_dtype)) if self.out_dtype else y], aux


@frozen
class _ArgReduce(Op):
    axis: Optional[int] = None
    keepdims: bool = False
    fn: ClassVar[Callable]

    def _out(self, d):
        if self.axis is None:
            return (1,) * len(d) if self.keepdims else (1,)
        return _reduced(d, _axes((self.axis,), len(d)), self.keepdims)

    def infer_shape(self, ins, outs):
        d = ins[0]
        return [d], [None if d is None else self._out(d)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        i = self.fn(x.reshape(-1) if self.axis is None else x, axis=0 if self.axis is None else self.axis)
        return [i.astype(x.dtype).reshape(self._out(x.shape))], aux


for _n, _f in [("argmax", jnp.argmax), ("argmin", jnp.argmin)]:
    _make(_ArgReduce, _n, _f, (), f"Index of the {_n[3:]} along `axis` (flattened when None), in the "
          f"input's dtype as MXNet 1.9; no gradient.")


@register
class moments(Op):
    """Mean and (biased) variance of `data` over `axes`, which MXNet requires (pass every axis
    for global moments)."""
    axes: Optional[tuple[int, ...]] = None
    keepdims: bool = False

    def outputs(self):
        return ("output0", "output1")

    def _axes(self, ndim):
        if not self.axes:
            raise ShapeError("`axes` is required (MXNet does not support empty axes); pass every axis "
                             "for global moments")
        return _axes(self.axes, ndim, "axes")

    def infer_shape(self, ins, outs):
        d = ins[0]
        out = None if d is None else _reduced(d, self._axes(len(d)), self.keepdims)
        return [d], [out, out], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        ax = self._axes(x.ndim)
        mean = jnp.mean(x, axis=ax, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=ax, keepdims=True)
        out = _reduced(x.shape, ax, self.keepdims)
        return [mean.reshape(out), var.reshape(out)], aux


_CUMSUM_DTYPES = ("float16", "float32", "float64", "int8", "int32", "int64")


@register(aliases=("cumsum",))
class _np_cumsum(Op):
    """Cumulative sum along `axis` (over the flattened input when None) in `dtype` (default: the
    input's; bool sums in int64). MXNet 1.9.1 fails on a negative axis, so jbind refuses one."""
    axis: Optional[int] = None
    dtype: Optional[DType] = None

    def __post_init__(self):
        if self.dtype is not None:
            object.__setattr__(self, "dtype", _dtype_name(self.dtype, _CUMSUM_DTYPES))

    def arguments(self):
        return ("a",)

    def _check_axis(self, ndim):
        if not 0 <= self.axis < ndim:
            fix = (f" (MXNet 1.9.1 fails on negative axes too); give axis={self.axis % ndim}"
                   if -ndim <= self.axis < 0 else "")
            raise ShapeError(f"axis={self.axis} is out of range [0, {ndim}) for an input of {ndim} dims{fix}")

    def infer_shape(self, ins, outs):
        if self.axis is not None:
            s = _merge(["a", "output"], [ins[0], outs[0]])
            if s is not None:
                self._check_axis(len(s))
            return [s], [s], []
        d = ins[0]
        return [d], [None if d is None else (math.prod(d),)], []

    def _out_dtype(self, t):
        if self.dtype is not None:
            return np_dtype(self.dtype)
        return np.dtype(np.int64) if t is not None and np.dtype(t) == np.bool_ else t

    def infer_type(self, ins, outs):
        t = ins[0]
        if t is None and self.dtype is None:
            t = outs[0]  # same dtype both ways, as MXNet
        return [t], [self._out_dtype(t)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        dt = jax.dtypes.canonicalize_dtype(self._out_dtype(x.dtype))  # int64 is int32 without x64
        return [jnp.cumsum(x.reshape(-1) if self.axis is None else x, axis=self.axis or 0, dtype=dt)], aux


# --- dot -------------------------------------------------------------------------------------
_STYPE = Optional[Literal["csr", "default", "row_sparse"]]


@register
class dot(Op):
    """MXNet's dot: lhs viewed as 2-D (rest, k) and rhs as (k, rest); 1-D . 1-D gives shape (1,).

    transpose_a contracts lhs's first axis instead of its last; transpose_b contracts rhs's
    last axis instead of its first.
    """
    transpose_a: bool = False
    transpose_b: bool = False
    forward_stype: _STYPE = None

    def arguments(self):
        return ("lhs", "rhs")

    def _split(self, l, r):
        lk, lrest = (0, tuple(l[1:])) if self.transpose_a else (len(l) - 1, tuple(l[:-1]))
        rk, rrest = (len(r) - 1, tuple(r[:-1])) if self.transpose_b else (0, tuple(r[1:]))
        return lk, rk, lrest if len(l) > 1 else (), rrest if len(r) > 1 else ()

    def infer_shape(self, ins, outs):
        l, r = ins
        if l is None or r is None or not l or not r:
            return [l, r], [None], []
        lk, rk, lrest, rrest = self._split(l, r)
        a, b = l[lk], r[rk]
        if a and b and a != b:
            raise ShapeError(f"dot shape error: {fmt_shape(l)} X {fmt_shape(r)} (contracting {a} with {b})")
        l, r = list(l), list(r)
        l[lk] = r[rk] = a or b
        return [tuple(l), tuple(r)], [(lrest + rrest) or (1,)], []

    def lower(self, ins, aux, is_train, key):
        a, b = ins
        lk, rk, lrest, rrest = self._split(a.shape, b.shape)
        A = a.reshape(a.shape[0], -1).T if self.transpose_a else a.reshape(-1, a.shape[-1])
        B = b.reshape(-1, b.shape[-1]).T if self.transpose_b else b.reshape(b.shape[0], -1)
        return [jnp.matmul(A, B).reshape((lrest + rrest) or (1,))], aux


@register
class batch_dot(Op):
    """Batched matrix product over the last two axes; leading (batch) axes must match."""
    transpose_a: bool = False
    transpose_b: bool = False
    forward_stype: _STYPE = None

    def arguments(self):
        return ("lhs", "rhs")

    def infer_shape(self, ins, outs):
        l, r = ins
        if l is None or r is None:
            return [l, r], [None], []
        if len(l) < 3 or len(l) != len(r):
            raise ShapeError(f"batch_dot needs two N-D arrays with N >= 3, got {fmt_shape(l)} and "
                             f"{fmt_shape(r)}")
        if not l[-1] or not r[-2]:  # as MXNet: nothing is inferred before these two dims are known
            return [l, r], list(outs), []
        m, lk = l[-1:-3:-1] if self.transpose_a else l[-2:]
        rk, n = r[-1:-3:-1] if self.transpose_b else r[-2:]
        batch = _merge(["lhs batch axes", "rhs batch axes"], [l[:-2], r[:-2]])
        if lk and rk and lk != rk:
            raise ShapeError(f"batch_dot shape error: {fmt_shape(l)} X {fmt_shape(r)} "
                             f"(contracting {lk} with {rk})")
        k = lk or rk
        l2 = batch + ((k, m) if self.transpose_a else (m, k))
        r2 = batch + ((n, k) if self.transpose_b else (k, n))
        return [l2, r2], [batch + (m, n)], []

    def lower(self, ins, aux, is_train, key):
        a, b = ins
        a = jnp.swapaxes(a, -1, -2) if self.transpose_a else a
        b = jnp.swapaxes(b, -1, -2) if self.transpose_b else b
        return [jnp.matmul(a, b)], aux


# --- creation: no inputs ----------------------------------------------------------------------
class ShapedBy(Op):
    """An op without inputs whose output has the shape of its `shape` parameter (creation
    ops, samplers): () and dims of 0 are unknown (MXNet 1.x's convention), taken from the
    consumers by inference."""

    def arguments(self):
        return ()

    def infer_shape(self, ins, outs):
        given = tuple(0 if d < 0 else d for d in self.shape) or None  # -1, as 0, is an unknown dim
        return [], [_merge(["shape", "output"], [given, outs[0]])], []

    def specialize(self, out_shapes):
        s = out_shapes[0]
        return dataclasses.replace(self, shape=tuple(s)) if s is not None and tuple(s) != self.shape else self

    def _full_shape(self):
        s = tuple(self.shape)
        if not s or not all(d > 0 for d in s):
            raise ShapeError(f"{self.name}: shape {fmt_shape(self.shape)} has unknown dims; give the complete "
                             f"shape (or use the op in a graph whose other inputs determine it)")
        return s


@frozen
class _Init(ShapedBy):
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: DType = "float32"

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dtype_name(self.dtype))

    def infer_type(self, ins, outs):
        return [], [np_dtype(self.dtype)], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.full(self._full_shape(), self._fill(), np_dtype(self.dtype))], aux


@register(aliases=("zeros",))
class _zeros(_Init):
    """An array of zeros of `shape` and `dtype`."""

    def _fill(self):
        return 0


@register(aliases=("ones",))
class _ones(_Init):
    """An array of ones of `shape` and `dtype`."""

    def _fill(self):
        return 1


@register(aliases=("full",))
@frozen
class _full(_Init):
    """An array of `shape` and `dtype` filled with `value`."""
    value: float = dataclasses.field(kw_only=True)

    def _fill(self):
        return self.value


@register(aliases=("arange",))
class _arange(Op):
    """start, start + step, ... below stop (0 .. start when stop is None), each repeated `repeat` times."""
    start: float
    stop: Optional[float] = None
    step: float = 1.0
    repeat: int = 1
    infer_range: bool = False
    ctx: str = ""
    dtype: DType = "float32"

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dtype_name(self.dtype, tuple(d for d in _DTYPES if d != "bool")))
        if self.infer_range:
            raise ValueError("infer_range=True is not supported: give stop")
        if self.repeat < 1:
            raise ValueError(f"repeat must be positive, got {self.repeat}")

    def arguments(self):
        return ()

    def _range(self):
        start, stop = (0.0, self.start) if self.stop is None else (self.start, self.stop)
        if self.step == 0:
            raise ShapeError("arange does not support step=0")
        if (self.step > 0 and start >= stop) or (self.step < 0 and start <= stop):
            raise ShapeError(f"invalid range (start, stop, step) = ({start}, {stop}, {self.step})")
        return start, int(math.ceil((stop - start) / self.step))

    def infer_shape(self, ins, outs):
        return [], [(self._range()[1] * self.repeat,)], []

    def infer_type(self, ins, outs):
        return [], [np_dtype(self.dtype)], []

    def lower(self, ins, aux, is_train, key):
        start, n = self._range()
        dt = np_dtype(self.dtype)
        v = jnp.asarray(start, dt) + jnp.arange(n, dtype=dt) * jnp.asarray(self.step, dt)
        return [jnp.repeat(v, self.repeat) if self.repeat > 1 else v], aux
