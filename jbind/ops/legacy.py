"""Operators that older or specialised MXNet 1.x checkpoints use: the deprecated
Convolution_v1 and Pooling_v1, contrib SyncBatchNorm, FlowNet's Correlation and
IdentityAttachKLSparseReg (MXNet 1.9.1's src/operator/*_v1-inl.h, contrib/sync_batch_norm-inl.h,
correlation-inl.h, identity_attach_KL_sparse_reg-inl.h).
"""
from __future__ import annotations

import math
from typing import Literal, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..base import fmt_shape
from ._base import Op, frozen, register
from .conv import Convolution, Pooling, _check_geometry
from .norm import BatchNorm


@register
@frozen
class Convolution_v1(Convolution):
    """MXNet's deprecated convolution: Convolution's parameters and arithmetic, for 2-D or 3-D
    kernels only (data 4-D or 5-D) and without dilation in 3-D, as MXNet 1.9.1's shape rule.
    MXNet 1.9.1 runs only 2-D NCHW on CPU; jbind also runs 3-D and channel-last layouts."""
    layout: Optional[Literal["NCHW", "NHWC", "NCDHW", "NDHWC"]] = None

    def __post_init__(self):
        if len(self.kernel) not in (2, 3):
            raise ValueError(f"kernel {fmt_shape(self.kernel)} must have 2 or 3 dims "
                             f"({len(self.kernel)}D convolution not supported)")
        super().__post_init__()
        if len(self.kernel) == 3 and any(d != 1 for d in self.dilate):
            raise ValueError(f"dilate {fmt_shape(self.dilate)}: dilate is not supported in 3d convolution")


@register
@frozen
class Pooling_v1(Op):
    """MXNet's deprecated pooling: max, avg or sum over 2-D (or 3-D) windows of zero-padded
    data, 'valid' or 'full' (ceil) output sizes (Pooling's geometry). Unlike Pooling, the
    padding is zeros that max pooling sees, and 'avg' always divides by the kernel's size
    (global: the spatial size), also for windows clipped at the edge in 'full' mode.
    MXNet 1.9.1 runs only 2-D kernels (4-D data) on CPU; jbind also runs 3-D ones."""
    kernel: tuple[int, ...] = ()
    pool_type: Literal["max", "avg", "sum"] = "max"
    global_pool: bool = False
    pooling_convention: Literal["valid", "full"] = "valid"
    stride: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    _geometry = Pooling._geometry
    _out_size = Pooling._out_size

    def __post_init__(self):
        if not self.global_pool:
            if len(self.kernel) not in (2, 3):
                raise ValueError(f"kernel {fmt_shape(self.kernel)} must have 2 or 3 dims (or set global_pool)")
            _check_geometry(self, ("stride", "pad"))

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is None:
            return [None], [None], []
        if not 4 <= len(data) <= 5:
            raise ValueError(f"data must be 4-D (batch, channel, y, x) or 5-D (batch, channel, d, y, x), "
                             f"got {fmt_shape(data)}")
        if not self.global_pool and len(data) != len(self.kernel) + 2:
            raise ValueError(f"data must have {len(self.kernel) + 2} dims for kernel {fmt_shape(self.kernel)}, "
                             f"got {fmt_shape(data)}")
        n, c, *sp = data
        kernel, stride, pad = self._geometry(sp)
        out = [self._out_size(x, k, s, p) if x else 0 for x, k, s, p in zip(sp, kernel, stride, pad)]
        return [data], [(n, c, *out)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        sp = x.shape[2:]
        kernel, stride, pad = self._geometry(sp)
        out = [self._out_size(n, k, s, p) for n, k, s, p in zip(sp, kernel, stride, pad)]
        # zero padding (part of the data), then the part of 'full' windows past it (never counted)
        x = jnp.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
        extra = [(0, 0), (0, 0)] + [(0, max(0, (o - 1) * s + k - n - 2 * p))
                                    for n, k, s, p, o in zip(sp, kernel, stride, pad, out)]
        window, strides = (1, 1, *kernel), (1, 1, *stride)
        if self.pool_type == "max":
            y = lax.reduce_window(x, np.array(-np.inf, x.dtype), lax.max, window, strides, extra)
            y = jnp.maximum(y, jnp.finfo(x.dtype).min)
        else:
            y = lax.reduce_window(x, np.zeros((), x.dtype), lax.add, window, strides, extra)
        y = y[(slice(None), slice(None)) + tuple(slice(0, o) for o in out)]
        if self.pool_type == "avg":
            y = y / jnp.asarray(math.prod(kernel), x.dtype)
        return [y], aux


@register
@frozen
class _contrib_SyncBatchNorm(Op):
    """Batch normalisation over axis 1, its statistics synchronised across `ndev` devices in
    MXNet. jbind runs it as BatchNorm over the batch its executor sees (one device: MXNet's
    result). As MXNet's: training normalises with the batch mean and biased variance and
    outputs them as `mean` and `var` (the variance itself, not BatchNorm's 1/sqrt(var + eps));
    the moving statistics update when `backward()` runs; fix_gamma treats gamma as 1 (its
    gradient is 0); float16 data has float32 gamma, beta, statistics and mean / var outputs.
    Inference and use_global_stats use the moving statistics; their mean / var outputs
    (which MXNet leaves unwritten) are the moving statistics.
    """
    key: str  # required (MXNet's): the synchronisation key
    eps: float = 1e-3
    momentum: float = 0.9
    fix_gamma: bool = True
    use_global_stats: bool = False
    output_mean_var: bool = False
    ndev: int = 1
    mxnet_order = ("eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var", "ndev", "key")
    aux_names = ("moving_mean", "moving_var")
    input_var_attrs = BatchNorm.input_var_attrs

    def __post_init__(self):
        if self.ndev < 1:
            raise ValueError(f"ndev must be positive, got {self.ndev}")

    def _bn(self):
        return BatchNorm(eps=self.eps, momentum=self.momentum, fix_gamma=self.fix_gamma,
                         use_global_stats=self.use_global_stats, output_mean_var=True, axis=1)

    def arguments(self):
        return ("data", "gamma", "beta")

    def outputs(self):
        return ("output", "mean", "var") if self.output_mean_var else ("output",)

    def total_outputs(self):
        return 3

    def infer_shape(self, ins, outs):
        data = ins[0] if ins[0] is not None else outs[0]
        if data is not None and len(data) < 2:
            raise ValueError(f"data must have at least 2 dims (batch, channel, ...), got {fmt_shape(data)}")
        return BatchNorm.infer_shape(self._bn(), ins, outs)

    def infer_type(self, ins, outs):
        return BatchNorm.infer_type(self._bn(), ins, outs)

    def lower(self, ins, aux, is_train, key):
        train = is_train and not self.use_global_stats
        (y, mean, _), new_aux = self._bn().lower(ins, aux, train, key)
        if not self.output_mean_var:
            return [y], new_aux
        if train:
            x = ins[0].astype(mean.dtype)
            red = (0,) + tuple(range(2, x.ndim))
            var = jnp.mean(jnp.square(x - jnp.expand_dims(mean, red)), axis=red)
        else:
            var = aux[1]
        return [y, mean, lax.stop_gradient(var)], new_aux


@register
@frozen
class Correlation(Op):
    """FlowNet's correlation of two (N, C, H, W) maps. Output channel q = p * D + o (D = 2R + 1,
    R = max_displacement // stride2) compares the kernel_size x kernel_size window of padded
    data1 at (i * stride1 + max_displacement, j * stride1 + max_displacement) with that of
    padded data2 displaced by ((p - R) * stride2, (o - R) * stride2): the sum over the window
    and the channels of data1 * data2 (is_multiply) or |data1 - data2|, divided by
    kernel_size^2 * C. Output (N, D^2, ceil((H + 2 pad - 2 border) / stride1), same for W),
    border = max_displacement + kernel_size // 2. The gradient of |a - b| takes sign +1 for
    data1 (-1 for data2) where a == b, as MXNet's CPU kernel.
    """
    kernel_size: int = 1
    max_displacement: int = 1
    stride1: int = 1
    stride2: int = 1
    pad_size: int = 0
    is_multiply: bool = True

    def __post_init__(self):
        if self.kernel_size < 1 or self.kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be a positive odd number, got {self.kernel_size}")
        for n in ("stride1", "stride2"):
            if getattr(self, n) < 1:
                raise ValueError(f"{n} must be positive, got {getattr(self, n)}")
        for n in ("max_displacement", "pad_size"):
            if getattr(self, n) < 0:
                raise ValueError(f"{n} must be non-negative, got {getattr(self, n)}")

    def arguments(self):
        return ("data1", "data2")

    def total_outputs(self):
        return 3  # MXNet's hidden tmp1 and tmp2: the padded inputs, channel last

    def _grid(self):
        r = self.max_displacement // self.stride2
        return r, 2 * r + 1

    def _top(self, h, w):
        border = self.max_displacement + self.kernel_size // 2
        return tuple(-(-(n + 2 * self.pad_size - 2 * border) // self.stride1) for n in (h, w))

    def infer_shape(self, ins, outs):
        known = None
        for s in ins:
            if s is None:
                continue
            if len(s) != 4:
                raise ValueError(f"data1 and data2 must be 4-D (batch, channel, height, width), got {fmt_shape(s)}")
            if known is not None and any(a and b and a != b for a, b in zip(known, s)):
                raise ValueError(f"data1 {fmt_shape(ins[0])} and data2 {fmt_shape(ins[1])} must have one shape")
            known = tuple(s) if known is None else tuple(a or b for a, b in zip(known, s))
        if known is None:
            return [None, None], [None], []
        n, _, h, w = known
        top = [t if d else 0 for t, d in zip(self._top(h, w), (h, w))]
        if any(d and t < 1 for d, t in zip((h, w), top)):
            raise ValueError(f"Correlation cannot be done with current settings: neighborhood and kernel "
                             f"(max_displacement={self.max_displacement}, kernel_size={self.kernel_size}) "
                             f"don't fit in data {fmt_shape(known)} padded by {self.pad_size}")
        return [known, known], [(n, self._grid()[1] ** 2, *top)], []

    def lower(self, ins, aux, is_train, key):
        a, b = ins
        n, c, h, w = a.shape
        p, k, s1, s2, md = self.pad_size, self.kernel_size, self.stride1, self.stride2, self.max_displacement
        th, tw = self._top(h, w)
        r, d = self._grid()
        pads = [(0, 0), (0, 0), (p, p), (p, p)]
        a, b = jnp.pad(a, pads), jnp.pad(b, pads)
        hc, wc = (th - 1) * s1 + k, (tw - 1) * s1 + k  # the extent the windows of data1 cover
        a = a[:, :, md:md + hc, md:md + wc]
        offs = jnp.asarray([(md + (i // d - r) * s2, md + (i % d - r) * s2) for i in range(d * d)], jnp.int32)

        def one(off):
            bb = lax.dynamic_slice(b, (jnp.int32(0), jnp.int32(0), off[0], off[1]), (n, c, hc, wc))
            f = a * bb if self.is_multiply else jnp.where(a >= bb, a - bb, bb - a)
            f = jnp.sum(f, axis=1)
            return lax.reduce_window(f, np.zeros((), f.dtype), lax.add, (1, k, k), (1, s1, s1), "VALID")

        y = jnp.moveaxis(jax.vmap(one)(offs), 0, 1)
        return [y / jnp.asarray(k * k * c, y.dtype)], aux


@jax.custom_vjp
def _kl_identity(x, avg, penalty_grad):
    return x


def _kl_fwd(x, avg, penalty_grad):
    return x, (avg.shape, penalty_grad)


def _kl_bwd(res, g):
    shape, penalty_grad = res
    return g + penalty_grad.astype(g.dtype), jnp.zeros(shape, g.dtype), jnp.zeros_like(penalty_grad)


_kl_identity.defvjp(_kl_fwd, _kl_bwd)


@register
@frozen
class IdentityAttachKLSparseReg(Op):
    """Identity forward; backward adds MXNet's KL sparseness penalty to the gradient:
    penalty * (-t / m + (1 - t) / (1 - m)) per column, t = sparseness_target and m the moving
    average of the batch mean of each column, `moving_avg = momentum * moving_avg +
    (1 - momentum) * mean(data, axis 0)`, updated (and published) when `backward()` runs.
    For data of more than 2 dims the mean is over every axis but 1 (MXNet 1.9.1 fails there:
    its moving_avg has C entries, its mean C * H * W).
    """
    sparseness_target: float = 0.1
    penalty: float = 0.001
    momentum: float = 0.9
    aux_names = ("moving_avg",)
    input_var_attrs = {"moving_avg": {"__init__": '["zero", {}]'}}

    def __post_init__(self):
        for n in ("sparseness_target", "momentum"):
            v = getattr(self, n)
            if not 0 <= v <= 1:
                raise ValueError(f"{n} must be in [0, 1], got {v}")

    def infer_shape(self, ins, outs):
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:
            return [None], [None], [None]
        if len(data) < 2:
            raise ValueError(f"data must have at least 2 dims (batch, units), got {fmt_shape(data)}")
        return [data], [data], [(data[1],)]

    def lower(self, ins, aux, is_train, key):
        x, (avg,) = ins[0], aux
        if not is_train:
            return [x], aux
        red = (0,) + tuple(range(2, x.ndim))
        m = self.momentum
        new = m * avg + (1 - m) * lax.stop_gradient(jnp.mean(x, axis=red)).astype(avg.dtype)
        t = self.sparseness_target
        pen = self.penalty * (-t / new + (1 - t) / (1 - new))
        pen = jnp.expand_dims(pen, red) * jnp.ones_like(x)
        return [_kl_identity(x, avg, lax.stop_gradient(pen))], [new]
