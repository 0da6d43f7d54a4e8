"""MXNet 1.9.1's `_image_*` operators on tensors: `_image_normalize` (`mx.sym.image.normalize`),
`_image_to_tensor`, `_image_crop` and the flips `_image_flip_left_right` / `_top_bottom`."""
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


def _hwc(shape):
    """Check an (H, W, C) or (N, H, W, C) image shape."""
    if len(shape) not in (3, 4):
        raise ShapeError(f"data must be (H, W, C) or (N, H, W, C), got {fmt_shape(shape)}")


@register
class _image_crop(Op):
    """The `width` x `height` window at column `x`, row `y` of an (H, W, C) or (N, H, W, C)
    image (C 1 or 3). Gradient: the head inside the window, zero elsewhere."""
    x: int
    y: int
    width: int
    height: int

    def infer_shape(self, ins, outs):
        d = ins[0]
        if d is None:
            return [None], [None], []
        _hwc(d)
        if d[-1] not in (1, 3):
            raise ShapeError(f"the image must have 1 or 3 channels, got {d[-1]} in {fmt_shape(d)}")
        if self.width <= 0 or self.height <= 0:
            raise ShapeError(f"width and height must be greater than 0, got {self.width} x {self.height}")
        if self.x < 0 or self.y < 0 or self.x + self.width > d[-2] or self.y + self.height > d[-3]:
            raise ShapeError(f"the window x={self.x}, y={self.y}, width={self.width}, height={self.height} "
                             f"does not fit in an image of height {d[-3]} and width {d[-2]}")
        return [d], [(*d[:-3], self.height, self.width, d[-1])], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [x[..., self.y:self.y + self.height, self.x:self.x + self.width, :]], aux


class _Flip(Op):
    axis_from_end = 0  # 2: the width axis, 3: the height axis

    def infer_shape(self, ins, outs):
        d = ins[0] if ins[0] is not None else outs[0]
        if d is not None:
            _hwc(d)
        return [d], [d], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.flip(ins[0], axis=-self.axis_from_end)], aux


@register
class _image_flip_left_right(_Flip):
    """An (H, W, C) or (N, H, W, C) image mirrored along its width."""
    axis_from_end = 2


@register
class _image_flip_top_bottom(_Flip):
    """An (H, W, C) or (N, H, W, C) image mirrored along its height."""
    axis_from_end = 3
