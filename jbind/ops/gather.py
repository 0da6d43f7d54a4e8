"""N-d indexing ops: gather_nd, scatter_nd, batch_take, ravel_multi_index, unravel_index.

Float indices are truncated toward zero, as MXNet's casts. Out-of-range indices cannot
raise inside a compiled graph: gather_nd clips them there (MXNet 1.9.1 raises IndexError,
which jbind's mx.nd.gather_nd also does), scatter_nd drops them (MXNet writes out of
bounds), batch_take clips them (as MXNet). Indices get no gradient.
"""
from __future__ import annotations

import math
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Op, register
from .shape import _index_types, _int_index, _unify


def _index_rows(idx, what):
    """M of an indices shape (M, Y...) of gather_nd / scatter_nd; ValueError below 2 dims."""
    if len(idx) < 2:
        raise ValueError(f"indices {tuple(idx)} must have at least 2 dims: (M, ...) with M the number "
                         f"of {what} axes indexed")
    return idx[0]


def _check_bounds(idx, dims):
    """MXNet's IndexError for concrete indices (mx.nd); a traced graph clips instead."""
    if isinstance(idx, jax.core.Tracer):
        return
    v = np.asarray(idx)
    for j, n in enumerate(dims):
        bad = (v[j] > n - 1) | (v[j] < -n)
        if bad.any():
            raise IndexError(f"gather_nd: index {v[j][bad].flat[0]:g} is out of bounds for axis {j} "
                             f"with size {n}")


@register
class gather_nd(Op):
    """out[y...] = data[indices[0, y...], ..., indices[M-1, y...]] for indices of shape
    (M, Y...): output shape Y... + data.shape[M:]. Negative indices count from the end."""
    imperative_jit = False  # mx.nd checks concrete indices: MXNet's IndexError

    def arguments(self):
        return ("data", "indices")

    def infer_shape(self, ins, outs):
        data, idx = ins
        if data is None or idx is None:
            return [data, idx], [None], []
        m = _index_rows(idx, "data")
        if m > len(data):
            raise ValueError(f"indices {tuple(idx)} index {m} axes but data {tuple(data)} has {len(data)}")
        return [data, idx], [tuple(idx[1:]) + tuple(data[m:]) if m else None], []

    infer_type = staticmethod(_index_types)

    def lower(self, ins, aux, is_train, key):
        data, idx = ins
        dims = data.shape[:idx.shape[0]]
        _check_bounds(idx, dims)
        # MXNet adds the size to a negative index before truncating it (-0.5 is the last row)
        rows = [jnp.clip(_int_index(jnp.where(v < 0, v + n, v)), 0, n - 1) for v, n in zip(idx, dims)]
        return [data[tuple(rows)]], aux


@register
class scatter_nd(Op):
    """A zero array of `shape` with out[indices[0, y...], ..., indices[M-1, y...], ...] =
    data[y..., ...]; data has shape indices.shape[1:] + shape[M:]. Out-of-range indices
    (negative ones too) are dropped; with duplicate indices one write wins, as in MXNet."""
    shape: tuple[int, ...]

    def arguments(self):
        return ("data", "indices")

    def infer_shape(self, ins, outs):
        data, idx = ins
        out = tuple(self.shape)
        if idx is None:
            return [data, idx], [out], []
        m = _index_rows(idx, "output")
        if m > len(out):
            raise ValueError(f"indices {tuple(idx)} index {m} axes but shape={out} has {len(out)}")
        want = tuple(idx[1:]) + out[m:]
        data = _unify(data, want, f"data must have shape indices.shape[1:] + shape[{m}:] = {want} "
                                  f"(indices {tuple(idx)}, shape={out})")
        return [data, idx], [out], []

    infer_type = staticmethod(_index_types)

    def lower(self, ins, aux, is_train, key):
        data, idx = ins
        rows = tuple(jnp.where((v < 0) | (v >= n), n, v) for v, n in zip(_int_index(idx), self.shape))
        return [jnp.zeros(self.shape, data.dtype).at[rows].set(data, mode="drop")], aux


@register
class batch_take(Op):
    """out[i] = a[i, indices[i]] for 2-D `a` and int32 indices holding a.shape[0] elements
    (output in the indices' shape); indices are clipped to [0, a.shape[1]).

    Unlike MXNet 1.9.1, `a` gets a gradient (MXNet has none) and `a` of more than 2 dims
    raises (MXNet reads past its end)."""

    def arguments(self):
        return ("a", "indices")

    def infer_shape(self, ins, outs):
        a, idx = ins
        idx = _unify(idx, outs[0], "indices and output")
        if a is not None and len(a) != 2:
            raise ValueError(f"a {tuple(a)} must be 2-D")
        if a is not None and idx is not None and a[0] and all(idx) and math.prod(idx) != a[0]:
            raise ValueError(f"indices {tuple(idx)} must hold one index per row of a {tuple(a)}, "
                             f"{a[0]} in all")
        return [a, idx], [idx], []

    def infer_type(self, ins, outs):
        t = ins[0] if ins[0] is not None else outs[0]
        return [t, np.dtype(np.int32)], [t], []

    def lower(self, ins, aux, is_train, key):
        a, idx = ins
        j = jnp.clip(_int_index(idx).reshape(-1), 0, a.shape[1] - 1)
        return [a[jnp.arange(a.shape[0]), j].reshape(idx.shape)], aux


@register(aliases=("ravel_multi_index",))
class _ravel_multi_index(Op):
    """Flat indices of the columns of `data` (shape (len(shape), N)) into an array of `shape`,
    in data's dtype; shape[0] may be -1. Out-of-range entries are not checked (as MXNet)."""
    shape: Optional[tuple[int, ...]] = None

    def infer_shape(self, ins, outs):
        if not self.shape:
            raise ValueError("`shape` (the shape the multi-indices index into) must be given")
        d = ins[0] if ins[0] is not None or outs[0] is None else (len(self.shape), outs[0][0])
        if d is None:
            return [None], [None], []
        if len(d) != 2 or (d[0] and d[0] != len(self.shape)):
            raise ValueError(f"data {tuple(d)} must be 2-D with one row per dim of shape={self.shape}")
        return [(len(self.shape), d[1])], [(d[1],)], []

    def lower(self, ins, aux, is_train, key):
        x = jax.lax.stop_gradient(ins[0])
        flat = jnp.zeros(x.shape[1:], x.dtype)
        for row, n in zip(x, self.shape):
            flat = jnp.trunc(flat * n + row)  # MXNet truncates the running sum at each step
        return [flat], aux


@register(aliases=("unravel_index",))
class _unravel_index(Op):
    """Multi-indices (shape (len(shape), N)) of the 1-D flat indices `data` into an array of
    `shape`, in data's dtype; shape[0] may be -1. Division truncates toward zero, as MXNet."""
    shape: Optional[tuple[int, ...]] = None

    def infer_shape(self, ins, outs):
        if not self.shape or 0 in self.shape[1:]:
            raise ValueError(f"`shape`={self.shape} must be given, with no 0 after the first dim")
        d = ins[0] if ins[0] is not None or outs[0] is None else tuple(outs[0][1:])
        if d is None:
            return [None], [None], []
        if len(d) != 1:  # MXNet 1.9.1 writes past its output for other ranks
            raise ValueError(f"data {tuple(d)} must be 1-D")
        return [d], [(len(self.shape),) + tuple(d)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        flat, rows = _int_index(jax.lax.stop_gradient(x)), []
        for n in reversed(self.shape[1:]):
            q = jax.lax.div(flat, jnp.asarray(n, flat.dtype))
            rows.append(flat - q * n)
            flat = q
        return [jnp.stack([flat] + rows[::-1]).astype(x.dtype)], aux
