"""MXNet 1.9.1's `_image_*` operators on tensors: `_image_normalize` (`mx.sym.image.normalize`)
and `_image_to_tensor`."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..base import ShapeError, fmt_shape
from ._base import Op, register


@register
class _image_normalize(Op):
    """(data - mean[c]) / std[c] per channel c of a (C, H, W) or (N, C, H, W) tensor; a
    one-element mean or std applies to every channel. Gradient: head / std[c]."""
    mean: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
    std: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0)

    def _channels(self, shape):
        if len(shape) not in (3, 4):
            raise ShapeError(f"data must be (C, H, W) or (N, C, H, W), got {fmt_shape(shape)}")
        c = shape[-3]
        for name, v in (("mean", self.mean), ("std", self.std)):
            if c and len(v) != 1 and len(v) < c:
                raise ShapeError(f"{name} has {len(v)} values for {c} channels")
        return c

    def infer_shape(self, ins, outs):
        d = ins[0] if ins[0] is not None else outs[0]
        if d is not None:
            self._channels(d)
        return [d], [d], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        c = self._channels(x.shape)
        per = [(v * c if len(v) == 1 else v[:c]) for v in (self.mean, self.std)]
        mean, std = (jnp.asarray(v, x.dtype).reshape(c, 1, 1) for v in per)
        return [(x - mean) / std], aux


@register
class _image_to_tensor(Op):
    """An (H, W, C) or (N, H, W, C) image (any dtype, 0..255) as float32 (C, H, W) /
    (N, C, H, W) in [0, 1]."""

    def infer_shape(self, ins, outs):
        d = ins[0]
        if d is None:
            return [None], [None], []
        if len(d) not in (3, 4):
            raise ShapeError(f"data must be (H, W, C) or (N, H, W, C), got {fmt_shape(d)}")
        return [d], [(*d[:-3], d[-1], d[-3], d[-2])], []

    def infer_type(self, ins, outs):
        return [ins[0]], [np.dtype(np.float32)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [jnp.moveaxis(x.astype(jnp.float32), -1, -3) / 255.0], aux
