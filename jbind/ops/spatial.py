"""UpSampling, Pad and Crop: MXNet 1.x's spatial layer ops on NCHW (and NCDHW for Pad) data."""
from __future__ import annotations

import math
from typing import Literal

import jax.numpy as jnp

from ._base import Op, register
from .conv import deconv


@register(aliases=("pad",))
class Pad(Op):
    """Pad the spatial axes of 4-D or 5-D data: constant, edge (repeat the border) or
    reflect (mirror without the border, numpy's 'reflect')."""
    mode: Literal["constant", "edge", "reflect"]
    pad_width: tuple[int, ...]
    constant_value: float = 0.0

    def _pairs(self, ndim):
        if ndim not in (4, 5):
            raise ValueError(f"Pad needs 4-D or 5-D data, got {ndim} dimensions")
        if len(self.pad_width) != 2 * ndim:
            raise ValueError(f"pad_width={self.pad_width} must have 2 entries per data dimension "
                             f"({2 * ndim})")
        if any(self.pad_width[:4]):
            raise ValueError(f"pad_width={self.pad_width}: the batch and channel axes cannot be padded")
        if any(p < 0 for p in self.pad_width):
            raise ValueError(f"pad_width={self.pad_width} must not be negative")
        return [(self.pad_width[2 * i], self.pad_width[2 * i + 1]) for i in range(ndim)]

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is None:
            return [None], [None], []
        pairs = self._pairs(len(data))
        if self.mode == "reflect":
            for d, (lo, hi) in zip(data, pairs):
                if d and (lo >= d or hi >= d):
                    raise ValueError(f"mode='reflect' needs pads smaller than the axis, got {pairs} for "
                                     f"{tuple(data)}")
        return [data], [tuple(d + lo + hi if d else 0 for d, (lo, hi) in zip(data, pairs))], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        pairs = self._pairs(x.ndim)
        if self.mode == "constant":
            return [jnp.pad(x, pairs, constant_values=jnp.asarray(self.constant_value, x.dtype))], aux
        return [jnp.pad(x, pairs, mode=self.mode)], aux


@register
class Crop(Op):
    """Crop the H, W axes of NCHW data to `h_w`, or to the size of a second input
    `crop_like`, at `offset` or centred. (MXNet's deprecated layer op; `crop` is `slice`.)"""
    num_args: int
    offset: tuple[int, ...] = (0, 0)
    h_w: tuple[int, ...] = (0, 0)
    center_crop: bool = False
    variadic = "num_args"

    def __post_init__(self):
        if self.num_args not in (1, 2):
            raise ValueError(f"num_args must be 1 or 2, got {self.num_args}")
        if len(self.offset) != 2 or len(self.h_w) != 2:
            raise ValueError(f"offset={self.offset} and h_w={self.h_w} must have 2 entries")
        if self.num_args == 1 and not all(self.h_w):
            raise ValueError(f"with num_args=1, h_w must give the output size, got {self.h_w}")

    def arguments(self):
        return ("data",) if self.num_args == 1 else ("data", "crop_like")

    def _size(self, like):
        return tuple(self.h_w) if self.num_args == 1 else tuple(like[2:4])

    def _offset(self, data, size):
        if self.center_crop:
            return tuple((d - s) // 2 for d, s in zip(data[2:], size))
        return tuple(self.offset)

    def infer_shape(self, ins, outs):
        data = ins[0]
        like = ins[1] if self.num_args == 2 else None
        for s in (data, like):
            if s is not None and len(s) != 4:
                raise ValueError(f"Crop needs 4-D (NCHW) inputs, got {tuple(s)}")
        if data is None or (self.num_args == 2 and like is None):
            return list(ins), [None], []
        size = self._size(like)
        off = self._offset(data, size)
        if all(data[2:]) and all(size):
            if any(o < 0 or o + s > d for o, s, d in zip(off, size, data[2:])):
                raise ValueError(f"crop of size {size} at offset {off} does not fit in {tuple(data)}")
        return list(ins), [(data[0], data[1], *size)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        size = self._size(ins[1].shape if self.num_args == 2 else None)
        (oh, ow), (h, w) = self._offset(x.shape, size), size
        return [x[:, :, oh:oh + h, ow:ow + w]], aux


@register
class UpSampling(Op):
    """Nearest (any number of inputs, concatenated or summed) or bilinear (a grouped
    Deconvolution with a learned `weight` of shape (C, 1, 2s - s%2, 2s - s%2))."""
    mxnet_order = ('scale', 'num_filter', 'sample_type', 'multi_input_mode', 'num_args', 'workspace')
    scale: int
    sample_type: Literal["nearest", "bilinear"]
    num_args: int = 1
    num_filter: int = 0
    multi_input_mode: Literal["concat", "sum"] = "concat"
    workspace: int = 512
    variadic = "num_args"

    def __post_init__(self):
        if self.scale < 1:
            raise ValueError(f"scale must be positive, got {self.scale}")
        if self.sample_type == "bilinear" and self.num_filter < 1:
            raise ValueError("sample_type='bilinear' needs num_filter (the number of channels)")

    def arguments(self):
        if self.sample_type == "bilinear":
            return ("data", "weight")
        return tuple(f"arg{i}" for i in range(self.num_args))

    def _kernel(self):
        return 2 * self.scale - self.scale % 2, math.ceil((self.scale - 1) / 2)

    def infer_shape(self, ins, outs):
        first = ins[0]
        if first is None:
            return list(ins), [None], []
        if len(first) != 4:
            raise ValueError(f"UpSampling needs 4-D (NCHW) inputs, got {tuple(first)}")
        n, c, h, w = first
        oh, ow = h * self.scale, w * self.scale
        if self.sample_type == "bilinear":
            k, _ = self._kernel()
            if c and c % self.num_filter:
                raise ValueError(f"channels {c} must be a multiple of num_filter={self.num_filter}")
            return [first, (c, 1, k, k)], [(n, self.num_filter, oh, ow)], []
        chans = []
        for s in ins:
            if s is None:
                chans.append(0)
                continue
            if len(s) != 4:
                raise ValueError(f"UpSampling needs 4-D (NCHW) inputs, got {tuple(s)}")
            if (s[2] and oh % s[2]) or (s[3] and ow % s[3]):
                raise ValueError(f"input {tuple(s)} does not divide the output size ({oh}, {ow})")
            chans.append(s[1])
        if self.multi_input_mode == "sum":
            known = {ch for ch in chans if ch}
            if len(known) > 1:
                raise ValueError(f"multi_input_mode='sum' needs equal channels, got {chans}")
            oc = known.pop() if known else 0
        else:
            oc = sum(chans) if all(chans) else 0
        return list(ins), [(n, oc, oh, ow)], []

    def lower(self, ins, aux, is_train, key):
        if self.sample_type == "bilinear":
            x, w = ins
            k, p = self._kernel()
            s = self.scale
            return [deconv(x, w, (s, s), (1, 1), [(p, p)] * 2, self.num_filter, "NCHW")], aux
        oh, ow = ins[0].shape[2] * self.scale, ins[0].shape[3] * self.scale
        ups = [jnp.repeat(jnp.repeat(x, oh // x.shape[2], axis=2), ow // x.shape[3], axis=3) for x in ins]
        if self.multi_input_mode == "sum":
            y = ups[0]
            for u in ups[1:]:
                y = y + u
        else:
            y = jnp.concatenate(ups, axis=1) if len(ups) > 1 else ups[0]
        return [y], aux
