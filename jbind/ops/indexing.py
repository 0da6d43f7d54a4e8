"""Slicing and indexing ops: slice_axis, slice, take, pick, one_hot.

Shapes follow MXNet 1.x's partial convention (see shape.py); an empty slice raises
instead of producing a zero-size dimension. Indices get no gradient.
"""
from __future__ import annotations

import builtins
from typing import Literal, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..base import DeferredError, np_dtype
from ._base import Op, register
from .shape import _axis, _index_types, _int_index


# ------------------------------------------------------------------------ slicing

@register
class slice_axis(Op):
    """data[..., begin:end, ...] on one axis; `end` None means the end of the axis."""
    axis: int
    begin: int
    end: Optional[int] = None  # required in MXNet; a default here so None survives tojson

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is None:
            return [None], [None], []
        ax = _axis(self.axis, len(data))
        n = data[ax]
        if not n:
            return [data], [data], []
        b = self.begin + n if self.begin < 0 else self.begin
        e = n if self.end is None else (self.end + n if self.end < 0 else self.end)
        if not 0 <= b < e <= n:
            raise ValueError(f"begin={self.begin}, end={self.end} is not a non-empty range of axis {ax} "
                             f"(size {n}) of input {tuple(data)}: need 0 <= begin < end <= {n}, "
                             f"negative values counting from the end")
        return [data], [data[:ax] + (e - b,) + data[ax + 1:]], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        idx = [builtins.slice(None)] * x.ndim
        idx[self.axis] = builtins.slice(self.begin, self.end)
        return [x[tuple(idx)]], aux


@register(aliases=("crop",))
class slice(Op):  # noqa: A001  (MXNet's op name)
    """data[begin[0]:end[0]:step[0], ...] with Python's rules; None entries take the default."""
    lists_input_names = False  # MXNet's monitors call its input NAME_input0
    begin: tuple[Optional[int], ...]
    end: tuple[Optional[int], ...]
    step: tuple[Optional[int], ...] = ()

    def _slices(self, ndim):
        if len(self.end) != len(self.begin) or (self.step and len(self.step) != len(self.begin)):
            raise ValueError(f"begin={self.begin}, end={self.end} and step={self.step} differ in length")
        if len(self.begin) > ndim:
            raise ValueError(f"begin={self.begin} slices more axes than the input's {ndim}")
        steps = self.step or (None,) * len(self.begin)
        if 0 in steps:
            raise ValueError(f"step={self.step} contains 0")
        return tuple(builtins.slice(b, e, s) for b, e, s in zip(self.begin, self.end, steps))

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is None:
            return [None], [None], []
        sl = self._slices(len(data))
        out = list(data)
        for k, s in enumerate(sl):
            if data[k]:
                out[k] = len(range(*s.indices(data[k])))
                if not out[k]:
                    raise ValueError(f"begin={self.begin}, end={self.end}, step={self.step} select "
                                     f"nothing from axis {k} of input {tuple(data)}")
        return [data], [tuple(out)], []

    def lower(self, ins, aux, is_train, key):
        return [ins[0][self._slices(ins[0].ndim)]], aux


@register
class take(Op):
    """Gather slices of `a` along `axis` at `indices`; out-of-range indices are clipped or
    wrapped, or with 'raise' (as MXNet: valid indices are 0 .. n-1) make the program fail
    with an MXNetError when it runs. No gradient flows to `indices`."""
    axis: int = 0
    mode: Literal["clip", "wrap", "raise"] = "clip"

    def arguments(self):
        return ("a", "indices")

    def infer_shape(self, ins, outs):
        a, idx = ins
        if a is None or idx is None:
            return [a, idx], [None], []
        ax = _axis(self.axis, len(a))
        return [a, idx], [a[:ax] + tuple(idx) + a[ax + 1:]], []

    infer_type = staticmethod(_index_types)

    def lower(self, ins, aux, is_train, key):
        a, idx = ins[0], _int_index(ins[1])
        ax = self.axis % a.ndim
        n = a.shape[ax]
        if self.mode == "raise":
            idx = _check_in_range(idx, n, "take")
        idx = jnp.mod(idx, n) if self.mode == "wrap" else jnp.clip(idx, 0, n - 1)
        return [jnp.take(a, idx, axis=ax, mode="clip")], aux


def _check_in_range(idx, n, who):
    """`idx`, through a host check that fails the running program (an MXNetError from the
    call) if an index is outside 0 .. n-1."""
    from ..compile import store
    from .custom import _fail
    if not idx.size:
        return idx
    store.unstorable()  # the executable calls back into Python: it cannot go to a file

    def check(lo, hi):  # under vmap, lo and hi hold one value per batch element
        low, high = int(np.min(lo)), int(np.max(hi))
        if low < 0 or high >= n:
            _fail(DeferredError(f"{who}: indices out of bound: {low if low < 0 else high} is not in "
                                f"[0, {n - 1}] (mode='raise')"))
        return np.zeros(np.shape(lo), idx.dtype)
    # the check's zero is added to the indices, so the gather waits for it and it is never dropped
    return idx + jax.pure_callback(check, jax.ShapeDtypeStruct((), idx.dtype), jnp.min(idx), jnp.max(idx),
                                   vmap_method="expand_dims")


@register
class pick(Op):
    """out[i, j] = data[i, index[i, j], j] along `axis`; index has data's shape without `axis`
    (or, as in MXNet, with `axis` kept as size 1 when index has data's rank)."""
    axis: Optional[int] = -1
    keepdims: bool = False
    mode: Literal["clip", "wrap"] = "clip"

    def arguments(self):
        return ("data", "index")

    def infer_shape(self, ins, outs):
        data, index = ins
        if self.axis is None:
            raise ValueError("axis=None is not supported by pick; give an axis")
        if data is None:
            return [None, index], [None], []
        ax = _axis(self.axis, len(data))
        small, kept = data[:ax] + data[ax + 1:], data[:ax] + (1,) + data[ax + 1:]
        idx_shape = kept if index is not None and len(index) == len(data) else small
        return [data, idx_shape], [kept if self.keepdims else small], []

    infer_type = staticmethod(_index_types)

    def lower(self, ins, aux, is_train, key):
        x, idx = ins[0], _int_index(ins[1])
        ax = self.axis % x.ndim
        n = x.shape[ax]
        if idx.ndim == x.ndim:  # the keepdims form of the index
            idx = jnp.squeeze(idx, ax)
        idx = jnp.mod(idx, n) if self.mode == "wrap" else jnp.clip(idx, 0, n - 1)
        y = jnp.take_along_axis(x, jnp.expand_dims(idx, ax), axis=ax)
        return [y if self.keepdims else jnp.squeeze(y, ax)], aux


@register
class one_hot(Op):
    """out[..., k] = on_value if k == indices[...] else off_value (out-of-range rows are all off)."""
    depth: int
    on_value: float = 1.0
    off_value: float = 0.0
    dtype: Literal["float16", "float32", "float64", "int32", "int64", "int8", "uint8"] = "float32"

    def __post_init__(self):
        if self.depth < 0:  # depth 0 is allowed, as in MXNet: a zero-size result
            raise ValueError(f"depth must not be negative, got {self.depth}")

    def arguments(self):
        return ("indices",)

    def infer_shape(self, ins, outs):
        idx = ins[0]
        if idx is None and outs[0] is not None:
            idx = outs[0][:-1]
        return [idx], [None if idx is None else tuple(idx) + (self.depth,)], []

    def infer_type(self, ins, outs):
        return [ins[0]], [np_dtype(self.dtype)], []

    def lower(self, ins, aux, is_train, key):
        idx = _int_index(ins[0])
        hit = idx[..., None] == jnp.arange(self.depth, dtype=idx.dtype)
        dt = jax.dtypes.canonicalize_dtype(np_dtype(self.dtype))  # float64 is float32 without x64
        return [jnp.where(hit, jnp.asarray(self.on_value, dt), jnp.asarray(self.off_value, dt))], aux


@register(private=True)
class _pick_log_softmax(pick):
    """`pick(log_softmax(data, axis), index, axis, keepdims)` (mode clip) as one op: each
    row's log-probability of its class, for Gluon's SoftmaxCrossEntropyLoss on NDArrays
    (jbind's own op, not MXNet's: `imperative.invoke` only, never in a graph).

    The two ops recorded one by one keep the (rows x classes) log_softmax for the backward
    and build the gradient in two passes (scatter, then log_softmax's). This op keeps only
    the data (alive anyway) and each row's log-sum-exp, and builds `g * (onehot - softmax)`
    in one pass: on a 10,000-word language model's output that is a fifth of the step."""

    def lower(self, ins, aux, is_train, key):
        x, idx = ins[0], _int_index(ins[1])
        ax = self.axis % x.ndim
        if idx.ndim == x.ndim:  # the keepdims form of the index
            idx = jnp.squeeze(idx, ax)
        idx = jnp.expand_dims(jnp.clip(idx, 0, x.shape[ax] - 1), ax)
        y = _log_prob(ax)(x, idx)
        return [y if self.keepdims else jnp.squeeze(y, ax)], aux


def _log_prob(ax):
    """f(x, idx) = log_softmax(x, ax) at idx (idx has x's rank, size 1 along ax), computed in
    float32 at least (float16 as MXNet's safe accumulation), returned in x's dtype."""
    def lse_of(x):
        w = x.astype(jnp.promote_types(x.dtype, jnp.float32))
        m = jax.lax.stop_gradient(jnp.max(w, axis=ax, keepdims=True))
        return w, m + jnp.log(jnp.sum(jnp.exp(w - m), axis=ax, keepdims=True))

    @jax.custom_vjp
    def f(x, idx):
        w, lse = lse_of(x)
        return (jnp.take_along_axis(w, idx, axis=ax) - lse).astype(x.dtype)

    def fwd(x, idx):
        w, lse = lse_of(x)
        return (jnp.take_along_axis(w, idx, axis=ax) - lse).astype(x.dtype), (x, idx, lse)

    def bwd(res, g):
        x, idx, lse = res
        g = g.astype(lse.dtype)
        dx = -g * jnp.exp(x.astype(lse.dtype) - lse)
        if ax == x.ndim - 1:  # rows x classes: add g at each row's class (a scatter, the cheaper form)
            flat = dx.reshape(-1, x.shape[ax])
            rows = jnp.arange(flat.shape[0])
            dx = flat.at[rows, idx.reshape(-1)].add(g.reshape(-1)).reshape(x.shape)
        else:
            hit = jnp.arange(x.shape[ax]).reshape([-1 if i == ax else 1 for i in range(x.ndim)]) == idx
            dx = jnp.where(hit, dx + g, dx)
        return dx.astype(x.dtype), np.zeros(idx.shape, jax.dtypes.float0)

    f.defvjp(fwd, bwd)
    return f
