"""InstanceNorm, LayerNorm, L2Normalization and LRN, with MXNet 1.x's outputs.

MXNet declares hidden outputs for these (LayerNorm's mean and std, L2Normalization's
norm, LRN's tmp_norm); `total_outputs` counts them so the JSON layout matches.
"""
from __future__ import annotations

from typing import Literal

import jax.numpy as jnp
from jax import lax

from ._base import Op, register


def _axis(axis, ndim):
    ax = axis + ndim if axis < 0 else axis
    if not 0 <= ax < ndim:
        raise ValueError(f"axis {axis} is out of range for data with {ndim} dimensions")
    return ax


@register
class InstanceNorm(Op):
    """Normalise each (sample, channel) over the spatial axes; then `gamma`, `beta` per channel."""
    eps: float = 1e-3

    def arguments(self):
        return ("data", "gamma", "beta")

    def total_outputs(self):
        return 3

    def infer_shape(self, ins, outs):
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:
            c = ins[1] if ins[1] is not None else ins[2]
            return [None, c, c], [None], []
        if len(data) < 3:
            raise ValueError(f"data must have at least 3 dimensions (N, C, spatial...), got {tuple(data)}")
        c = (data[1],)
        return [data, c, c], [data], []

    def lower(self, ins, aux, is_train, key):
        x, gamma, beta = ins
        red = tuple(range(2, x.ndim))
        bshape = (1, -1) + (1,) * (x.ndim - 2)
        mean = jnp.mean(x, axis=red, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=red, keepdims=True)
        y = (x - mean) * lax.rsqrt(var + self.eps) * gamma.reshape(bshape) + beta.reshape(bshape)
        return [y], aux


class MeanStdNorm(Op):
    """Normalisations with gamma and beta whose `output_mean_var` adds the mean and std
    outputs (MXNet's JSON always counts three): LayerNorm, GroupNorm."""

    def arguments(self):
        return ("data", "gamma", "beta")

    def outputs(self):
        return ("output", "mean", "std") if self.output_mean_var else ("output",)

    def total_outputs(self):
        return 3


@register
class LayerNorm(MeanStdNorm):
    """Normalise over `axis`; `output_mean_var` adds the mean and std = sqrt(var + eps).

    As in MXNet, gradients flowing into the mean and std outputs are ignored.
    """
    axis: int = -1
    eps: float = 1e-5
    output_mean_var: bool = False

    def infer_shape(self, ins, outs):
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:
            c = ins[1] if ins[1] is not None else ins[2]
            return [None, c, c], [None] * len(outs), []
        ax = _axis(self.axis, len(data))
        c = (data[ax],)
        stat = tuple(1 if i == ax else d for i, d in enumerate(data))
        return [data, c, c], [data, stat, stat][:len(outs)], []

    def lower(self, ins, aux, is_train, key):
        x, gamma, beta = ins
        ax = _axis(self.axis, x.ndim)
        bshape = [1] * x.ndim
        bshape[ax] = -1
        mean = jnp.mean(x, axis=ax, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=ax, keepdims=True)
        std = jnp.sqrt(var + self.eps)
        y = (x - mean) / std * gamma.reshape(bshape) + beta.reshape(bshape)
        if not self.output_mean_var:
            return [y], aux
        return [y, lax.stop_gradient(mean), lax.stop_gradient(std)], aux


@register
class L2Normalization(Op):
    """x / sqrt(sum(x**2) + eps) over all but the batch axis (instance), axis 1 (channel)
    or the axes after 1 (spatial)."""
    eps: float = 1e-10
    mode: Literal["instance", "channel", "spatial"] = "instance"

    def total_outputs(self):
        return 2

    def infer_shape(self, ins, outs):
        data = ins[0] if ins[0] is not None else outs[0]
        need = {"instance": 2, "channel": 2, "spatial": 3}[self.mode]
        if data is not None and len(data) < need:
            raise ValueError(f"mode={self.mode!r} needs data with at least {need} dimensions, "
                             f"got {tuple(data)}")
        return [data], [data], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        red = {"instance": tuple(range(1, x.ndim)), "channel": (1,),
               "spatial": tuple(range(2, x.ndim))}[self.mode]
        norm = jnp.sqrt(jnp.sum(jnp.square(x), axis=red, keepdims=True) + self.eps)
        return [x / norm], aux


@register
class LRN(Op):
    """Local response normalisation across channels:
    x * (knorm + alpha / nsize * sum of x**2 over `nsize` neighbouring channels) ** -beta."""
    mxnet_order = ('alpha', 'beta', 'knorm', 'nsize')
    nsize: int
    alpha: float = 1e-4
    beta: float = 0.75
    knorm: float = 2.0

    def __post_init__(self):
        if self.nsize < 1 or self.nsize % 2 == 0:
            raise ValueError(f"nsize must be a positive odd number, got {self.nsize}")

    def total_outputs(self):
        return 2

    def infer_shape(self, ins, outs):
        data = ins[0] if ins[0] is not None else outs[0]
        if data is not None and len(data) != 4:
            raise ValueError(f"LRN needs 4-D (NCHW) data, got {tuple(data)}")
        return [data], [data], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        h = self.nsize // 2
        window = lax.reduce_window(jnp.square(x), 0.0, lax.add, (1, self.nsize, 1, 1),
                                   (1, 1, 1, 1), [(0, 0), (h, h), (0, 0), (0, 0)])
        norm = self.knorm + (self.alpha / self.nsize) * window
        return [x * norm ** (-self.beta)], aux
