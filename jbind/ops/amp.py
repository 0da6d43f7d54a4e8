"""The casts that MXNet's automatic mixed precision (AMP) inserts: amp_cast, amp_multicast.

Both change only float32 / float16 / bfloat16 arrays and pass others through, as MXNet's
rules do; gradients are cast back to each input's dtype. Without JAX's x64 mode a float64
array is stored as float32, so at run time these casts treat it as float32 (inference
still reports MXNet's float64).
"""
from __future__ import annotations

import jax
import numpy as np

from ..base import np_dtype
from ._base import Op, register
from .elemwise import _DTYPES, DType, _dtype_name
from .shape import _unify

_AMP = ("float32", "float16", "bfloat16")  # the dtypes the AMP casts convert


def _name(t) -> str:
    return np.dtype(t).name


def _cast(x, dtype):
    return x.astype(jax.dtypes.canonicalize_dtype(dtype))  # float64 is float32 without x64


@register
class amp_cast(Op):
    """Cast to `dtype` if the input is float32, float16 or bfloat16; other dtypes pass unchanged."""
    dtype: DType

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dtype_name(self.dtype, tuple(d for d in _DTYPES if d != "bool")))

    def infer_type(self, ins, outs):
        t = ins[0]
        if t is None:
            return [None], [None], []
        return [t], [np_dtype(self.dtype) if _name(t) in _AMP else t], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [_cast(x, np_dtype(self.dtype)) if x.dtype.name in _AMP else x], aux


@register
class amp_multicast(Op):
    """Cast the float32/float16/bfloat16 ones of `num_outputs` inputs to one dtype; others pass.

    The dtype is float32 if any input is float32, else the first input's dtype (as MXNet,
    even where that is not a float); with `cast_narrow` it is float16 or bfloat16 (the last
    such input's) if any input has one, else float32. Unlike MXNet's rule, the dtypes
    that later ops require of the outputs do not take part.
    """
    num_outputs: int
    cast_narrow: bool = False
    variadic = "num_outputs"

    def __post_init__(self):
        if self.num_outputs < 1:
            raise ValueError(f"num_outputs must be positive, got {self.num_outputs}")

    def arguments(self):
        return tuple(f"data_{i}" for i in range(self.num_outputs))

    def outputs(self):
        return tuple(f"output{i}" for i in range(self.num_outputs))

    def infer_shape(self, ins, outs):
        shapes = [_unify(a, b, f"input {i} and output {i}") for i, (a, b) in enumerate(zip(ins, outs))]
        return shapes, shapes, []

    def _target(self, names):
        if self.cast_narrow:
            narrow = [n for n in names if n in ("float16", "bfloat16")]
            return narrow[-1] if narrow else "float32"
        return "float32" if "float32" in names else names[0]

    def infer_type(self, ins, outs):
        names = [None if t is None else _name(t) for t in ins]
        # the common dtype depends on every input: decided once all are known, never revised
        target = None if None in names else np_dtype(self._target(names))
        return list(ins), [target if n in _AMP else t for n, t in zip(names, ins)], []

    def lower(self, ins, aux, is_train, key):
        target = np_dtype(self._target([x.dtype.name for x in ins]))
        return [_cast(x, target) if x.dtype.name in _AMP else x for x in ins], aux
