"""Ordering ops: topk, sort, argsort, argmax_channel.

`axis=None` sorts the flattened input. Ties keep their index order in both directions
(a stable sort), as MXNet 1.9.1 orders them on small inputs; MXNet's order of ties on
large inputs and of NaNs is not reproduced (JAX puts NaNs last). Gradients flow through
the values only: indices, masks and argmax_channel have none.
"""
from __future__ import annotations

import math
from typing import Literal, Optional

import jax
import jax.numpy as jnp

from ..base import np_dtype
from ._base import Op, frozen, register
from .shape import _axis

IndexDType = Literal["float16", "float32", "float64", "int32", "int64", "uint8"]


def _index_dtype(name):
    return jax.dtypes.canonicalize_dtype(np_dtype(name))  # int64/float64 stay 32-bit without x64


@frozen
class _Ordering(Op):
    """Shared by topk, sort and argsort: the sorted axis and the stable order along it."""
    axis: Optional[int] = -1

    def _sorted_axis(self, d):
        """-> (shape being sorted, its sorted axis): the flattened input when axis is None."""
        if self.axis is None:
            return (math.prod(d),), 0
        return tuple(d), _axis(self.axis, len(d))

    def infer_shape(self, ins, outs):  # sort and argsort: the input's shape, or flattened
        d = ins[0]
        if d is None and self.axis is not None:
            d = outs[0]  # the same shape, inferred backward
        return [d], [None if d is None else self._sorted_axis(d)[0]], []

    def _order(self, x, ascending):
        data = x.reshape(-1) if self.axis is None else x
        ax = 0 if self.axis is None else self.axis % x.ndim
        return data, ax, jnp.argsort(data, axis=ax, stable=True, descending=not ascending)


@register
@frozen
class topk(_Ordering):
    """The k largest (`is_ascend`: smallest) elements along `axis`, in order: their indices
    (`ret_typ='indices'`, in `dtype`), values ('value'), both, or a 0/1 mask of the input's
    shape ('mask'). k < 1 takes the whole axis."""
    k: int = 1
    ret_typ: Literal["both", "indices", "mask", "value"] = "indices"
    is_ascend: bool = False
    dtype: IndexDType = "float32"

    def outputs(self):
        if self.ret_typ == "both":
            return ("output0", "output1")
        return ("output0",) if self.ret_typ == "value" else ("output",)

    def total_outputs(self):
        return 1 if self.ret_typ in ("indices", "mask") else 2  # 'value' hides its indices, as MXNet

    def infer_shape(self, ins, outs):
        d = ins[0]
        if d is None:
            return [None], [None] * len(outs), []
        shape, ax = self._sorted_axis(d)
        n = shape[ax]
        if n and self.k > n:
            raise ValueError(f"k={self.k} is more than the {n} elements of axis {self.axis} of input "
                             f"{tuple(d)}")
        if self.ret_typ == "mask":
            return [d], [d], []
        k = self.k if self.k >= 1 else n
        out = shape[:ax] + (k,) + shape[ax + 1:]
        return [d], [out] * len(outs), []

    def infer_type(self, ins, outs):
        t = ins[0]
        idx = np_dtype(self.dtype)
        return [t], {"both": [t, idx], "indices": [idx], "mask": [t], "value": [t]}[self.ret_typ], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        data, ax, order = self._order(x, self.is_ascend)
        if self.ret_typ == "mask":
            rank = jnp.argsort(order, axis=ax)  # each element's place in the order
            k = self.k if self.k >= 1 else data.shape[ax]
            return [(rank < k).astype(x.dtype).reshape(x.shape)], aux
        idx = order if self.k < 1 else jax.lax.slice_in_dim(order, 0, self.k, axis=ax)
        values = jnp.take_along_axis(data, idx, axis=ax)
        idx = idx.astype(_index_dtype(self.dtype))
        return {"both": [values, idx], "indices": [idx], "value": [values]}[self.ret_typ], aux


@register
@frozen
class sort(_Ordering):
    """A sorted copy along `axis` (flattened when None), ascending unless `is_ascend` is False.

    The gradient is the head gradient put back in place; MXNet 1.9.1's own backward of
    sort fails for an integer axis."""
    is_ascend: bool = True

    def outputs(self):
        return ("output0",)

    def total_outputs(self):
        return 2  # MXNet's hidden second output holds the indices

    def lower(self, ins, aux, is_train, key):
        data, ax, order = self._order(ins[0], self.is_ascend)
        return [jnp.take_along_axis(data, order, axis=ax)], aux


@register
@frozen
class argsort(_Ordering):
    """Indices that sort the input along `axis` (flattened when None), in `dtype`."""
    is_ascend: bool = True
    dtype: IndexDType = "float32"

    def infer_type(self, ins, outs):
        return [ins[0]], [np_dtype(self.dtype)], []

    def lower(self, ins, aux, is_train, key):
        return [self._order(ins[0], self.is_ascend)[2].astype(_index_dtype(self.dtype))], aux


@register
class argmax_channel(Op):
    """Index of the maximum along axis 1 (the first one on ties), in the input's dtype: shape
    (N, C) gives (N,), (N, C, H, W) gives (N, H, W). No gradient."""

    def infer_shape(self, ins, outs):
        d = ins[0]
        if d is None:
            return [None], [None], []
        if len(d) < 2:
            raise ValueError(f"input {tuple(d)} has no axis 1 (channel axis) to take the argmax over")
        return [d], [tuple(d[:1]) + tuple(d[2:])], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [jnp.argmax(jax.lax.stop_gradient(x), axis=1).astype(x.dtype)], aux
