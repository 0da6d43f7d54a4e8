"""MXNet 1.9.1's `_contrib_quantize` and `_contrib_dequantize` (given min / max ranges).

int8 is zero-centred: q = sign(x) * min(|x| * 127 / r + 0.5, 127) with r = max(|min|,
|max|), truncated toward zero; the output range is (-r, r). uint8 maps [min, max] onto
[0, 255]: q = (x - min) * 255 / (max - min) + 0.5, truncated. Neither has a gradient.
"""
from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Op, register


class _Ranged(Op):
    def arguments(self):
        return ("data", "min_range", "max_range")

    def _ranges(self, ins):
        lo, hi = (jax.lax.stop_gradient(x).reshape(()).astype(jnp.float32) for x in ins[1:])
        return lo, hi


@register
class _contrib_quantize(_Ranged):
    """data (float32) -> (quantized data, min, max); see the module docstring."""
    out_type: Literal["int8", "uint8"] = "uint8"

    def outputs(self):
        return ("output", "min_output", "max_output")

    def infer_shape(self, ins, outs):
        return [ins[0], (1,), (1,)], [ins[0], (1,), (1,)], []

    def infer_type(self, ins, outs):
        f32 = np.dtype(np.float32)
        return [ins[0] if ins[0] is not None else f32, f32, f32], [np.dtype(self.out_type), f32, f32], []

    def lower(self, ins, aux, is_train, key):
        x = jax.lax.stop_gradient(ins[0]).astype(jnp.float32)
        lo, hi = self._ranges(ins)
        if self.out_type == "int8":
            r = jnp.maximum(jnp.abs(lo), jnp.abs(hi))
            q = jnp.sign(x) * jnp.minimum(jnp.abs(x) * (127.0 / r) + 0.5, 127.0)
            lo, hi = -r, r
        else:
            q = (x - lo) * (255.0 / (hi - lo)) + 0.5
        q = jnp.trunc(q).astype(self.out_type)
        return [q, lo.reshape(1), hi.reshape(1)], aux


@register
class _contrib_dequantize(_Ranged):
    """Quantized data (int8 / uint8) and its range -> float32; see the module docstring."""
    out_type: Literal["float32"] = "float32"

    def infer_shape(self, ins, outs):
        return [ins[0], (1,), (1,)], [ins[0]], []

    def infer_type(self, ins, outs):
        f32 = np.dtype(np.float32)
        return [ins[0], f32, f32], [f32], []

    def lower(self, ins, aux, is_train, key):
        q = jax.lax.stop_gradient(ins[0])
        lo, hi = self._ranges(ins)
        x = q.astype(jnp.float32)
        if q.dtype == jnp.int8:
            out = x * (jnp.maximum(jnp.abs(lo), jnp.abs(hi)) / 127.0)
        else:
            out = x * ((hi - lo) / 255.0) + lo
        return [out], aux
