"""Creation ops without inputs beyond zeros / ones / full / arange (jbind/ops/reduce.py):
`_eye` and `_linspace`, behind MXNet's Python `mx.nd.eye` / `mx.sym.linspace`."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..base import np_dtype
from ._base import Op, register
from .elemwise import _DTYPES, DType, _dtype_name


class _Created(Op):
    """An op without inputs whose output shape follows from its parameters."""

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dtype_name(self.dtype, _DTYPES))

    def arguments(self):
        return ()

    def infer_shape(self, ins, outs):
        return [], [self._shape()], []

    def infer_type(self, ins, outs):
        return [], [np_dtype(self.dtype)], []


@register
class _eye(_Created):
    """An N x M matrix (M = N when 0) with ones on the k-th diagonal (above the main one
    for k > 0, below for k < 0)."""
    N: int
    M: int = 0
    k: int = 0
    ctx: str = ""
    dtype: DType = "float32"

    def __post_init__(self):
        super().__post_init__()
        if self.N < 0 or self.M < 0:
            raise ValueError(f"N and M must be non-negative, got N={self.N}, M={self.M}")

    def _shape(self):
        return (self.N, self.M or self.N)

    def lower(self, ins, aux, is_train, key):
        n, m = self._shape()
        return [jnp.eye(n, m, self.k, dtype=np_dtype(self.dtype))], aux


@register
class _linspace(_Created):
    """`num` values from `start`, evenly spaced up to `stop` (included if `endpoint`):
    start + i * step, step computed in double precision as MXNet does."""
    start: float
    stop: float
    num: int
    endpoint: bool = True
    ctx: str = ""
    dtype: DType = "float32"
    # MXNet 1.9.1 declares _linspace with arange's parameters (its documentation shows
    # them); it parses and ignores these three, and so does jbind.
    step: float = 1.0
    repeat: int = 1
    infer_range: bool = False
    mxnet_order = ("start", "stop", "step", "repeat", "infer_range", "ctx", "dtype")

    def __post_init__(self):
        super().__post_init__()
        if self.num < 0:
            raise ValueError(f"num must be non-negative, got {self.num}")

    def _shape(self):
        return (self.num,)

    def lower(self, ins, aux, is_train, key):
        steps = self.num - 1 if self.endpoint else self.num
        step = (self.stop - self.start) / steps if steps > 0 else 0.0
        values = self.start + step * np.arange(self.num, dtype=np.float64)
        return [jnp.asarray(values.astype(np_dtype(self.dtype)))], aux
