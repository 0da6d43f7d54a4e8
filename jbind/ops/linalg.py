"""Matrix products of MXNet's linalg family: gemm (multiply-accumulate) and gemm2.

Inputs are batches of matrices of one rank n >= 2: the column index is the last axis, the
row index is `axis` (default -2), and every other axis is a batch axis both inputs share.
As in MXNet 1.9.1, only float32 and float64 are accepted.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..base import fmt_shape
from ._base import Op, register


def _row_axis(axis: int, ndim: int) -> int:
    ax = axis + ndim if axis < 0 else axis
    if not 0 <= ax < ndim - 1:
        raise ValueError(f"axis {axis} is not a row axis of inputs with {ndim} dimensions "
                         f"(it must not be the last axis)")
    return ax


def _product_shape(op, a, b) -> tuple:
    """Shape of alpha * op(A) @ op(B); 0 marks an unknown dim."""
    if len(a) < 2 or len(a) != len(b):
        raise ValueError(f"A {fmt_shape(a)} and B {fmt_shape(b)} must have the same number of "
                         f"dimensions, at least 2")
    ax = _row_axis(op.axis, len(a))
    batch = []
    for i, (x, y) in enumerate(zip(a[:-1], b[:-1])):
        if i != ax and x and y and x != y:
            raise ValueError(f"A {fmt_shape(a)} and B {fmt_shape(b)} must have the same shape except "
                             f"on the row axis {ax} and the last axis")
        batch.append(x or y)
    inner_a = a[ax] if op.transpose_a else a[-1]
    inner_b = b[-1] if op.transpose_b else b[ax]
    if inner_a and inner_b and inner_a != inner_b:
        raise ValueError(f"incompatible matrix dimensions: op(A) of A {fmt_shape(a)} has {inner_a} columns, "
                         f"op(B) of B {fmt_shape(b)} has {inner_b} rows (transpose_a={op.transpose_a}, "
                         f"transpose_b={op.transpose_b})")
    out = batch + [b[ax] if op.transpose_b else b[-1]]
    out[ax] = a[-1] if op.transpose_a else a[ax]
    return tuple(out)


def _check_dtypes(names, dtypes):
    for n, t in zip(names, dtypes):
        if t is not None and np.dtype(t) not in (np.float32, np.float64):
            raise ValueError(f"only float32 and float64 are supported; {n} is {np.dtype(t).name}")


def _product(op, a, b):
    ax = _row_axis(op.axis, a.ndim)
    a, b = jnp.swapaxes(a, ax, -2), jnp.swapaxes(b, ax, -2)
    if op.transpose_a:
        a = jnp.swapaxes(a, -1, -2)
    if op.transpose_b:
        b = jnp.swapaxes(b, -1, -2)
    y = jnp.matmul(a, b)
    if op.alpha != 1.0:
        y = y * jnp.asarray(op.alpha, y.dtype)
    return jnp.swapaxes(y, ax, -2)


class _Gemm(Op):
    def infer_type(self, ins, outs):
        _check_dtypes(self.arguments(), ins)
        return super().infer_type(ins, outs)


@register(aliases=("linalg_gemm",))
class _linalg_gemm(_Gemm):
    """out = alpha * op(A) @ op(B) + beta * C over a batch of matrices (op: transpose or not)."""
    transpose_a: bool = False
    transpose_b: bool = False
    alpha: float = 1.0
    beta: float = 1.0
    axis: int = -2

    def arguments(self):
        return ("A", "B", "C")

    def infer_shape(self, ins, outs):
        a, b, c = ins
        out = outs[0] if c is None else c
        if a is not None and b is not None:
            p = _product_shape(self, a, b)
            if out is not None and (len(out) != len(p) or any(x and y and x != y for x, y in zip(p, out))):
                raise ValueError(f"C {fmt_shape(out)} must have the shape of op(A) @ op(B), {fmt_shape(p)} "
                                 f"(A {fmt_shape(a)}, B {fmt_shape(b)})")
            out = p if out is None else tuple(x or y for x, y in zip(p, out))
        return [a, b, out], [out], []

    def lower(self, ins, aux, is_train, key):
        a, b, c = ins
        y = _product(self, a, b)
        if self.beta == 0.0:
            return [y], aux
        return [y + c * jnp.asarray(self.beta, c.dtype)], aux


@register(aliases=("linalg_gemm2",))
class _linalg_gemm2(_Gemm):
    """out = alpha * op(A) @ op(B) over a batch of matrices (op: transpose or not)."""
    transpose_a: bool = False
    transpose_b: bool = False
    alpha: float = 1.0
    axis: int = -2

    def arguments(self):
        return ("A", "B")

    def infer_shape(self, ins, outs):
        a, b = ins
        out = _product_shape(self, a, b) if a is not None and b is not None else None
        return [a, b], [out], []

    def lower(self, ins, aux, is_train, key):
        return [_product(self, ins[0], ins[1])], aux
