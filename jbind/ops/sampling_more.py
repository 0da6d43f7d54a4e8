"""`_sample_multinomial` and `_shuffle`: the random ops of MXNet 1.9.1 that draw from their
input (categories from a distribution, a permutation), beside sampling.py's."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import np_dtype
from ._base import Op, register
from .elemwise import DType, _dtype_name
from .sampling import _FLOATS, _NOTE, _draw_dtype, _out_dtype


@register(aliases=("sample_multinomial",))
class _sample_multinomial(Op):
    __doc__ = ("`shape` category indices drawn from each distribution along the last axis of `data` (which "
               "must sum to 1 there: rows that do not are sampled normalized, where MXNet 1.9.1 stops at 1 "
               "or reads past the row), in `dtype`; with `get_prob` also their log probabilities "
               "log(data[index]), in data's dtype, whose gradient is MXNet's head / data[index] at the "
               "index. 1-D data gives `shape` (or (1,)) samples." + _NOTE)
    shape: tuple[int, ...] = ()
    get_prob: bool = False
    dtype: DType = "int32"
    random = True

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dtype_name(self.dtype, ("float16", "float32", "float64", "int32", "uint8")))

    def outputs(self):
        return ("output0", "output1") if self.get_prob else ("output",)

    def _out_shape(self, d):
        if len(d) == 1:
            return tuple(self.shape) or (1,)
        return tuple(d[:-1]) + tuple(self.shape)

    def infer_shape(self, ins, outs):
        d = ins[0]
        out = None if d is None else self._out_shape(d)
        return [d], [out] * len(self.outputs()), []

    def infer_type(self, ins, outs):
        t = ins[0]
        if t is None:
            return [None], [np_dtype(self.dtype)] + [None] * self.get_prob, []
        if np.dtype(t).name not in _FLOATS:
            raise ValueError(f"data must be float16, float32 or float64, got {np.dtype(t).name}")
        return [t], [np_dtype(self.dtype)] + [t] * self.get_prob, []

    def lower(self, ins, aux, is_train, key):
        data = ins[0]
        k = data.shape[-1]
        rows = data.reshape(-1, k)
        m = int(np.prod(self.shape)) if self.shape else 1
        logits = jnp.log(jax.lax.stop_gradient(rows).astype(_draw_dtype(rows.dtype)))
        idx = jax.random.categorical(key, logits, axis=-1, shape=(m, rows.shape[0])).T
        shape = self._out_shape(data.shape)
        outs = [idx.reshape(shape).astype(_out_dtype(self.dtype))]
        if self.get_prob:
            outs.append(jnp.log(jnp.take_along_axis(rows, idx, axis=-1)).reshape(shape))
        return outs, aux


@register(aliases=("shuffle", "_npi_shuffle"))
class _shuffle(Op):
    __doc__ = ("`data` with its first axis randomly permuted. MXNet 1.9.1 has no gradient (binding with "
               "one is an error); jbind gives zero." + _NOTE)
    random = True

    def lower(self, ins, aux, is_train, key):
        return [jax.random.permutation(key, jax.lax.stop_gradient(ins[0]), axis=0)], aux
