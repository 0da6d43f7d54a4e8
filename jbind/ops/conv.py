"""Convolution, Deconvolution and Pooling, with MXNet 1.x's shape rules.

Spatial geometry follows MXNet: `stride`, `dilate` and `pad` default to 1, 1 and 0 per
spatial axis; weights are laid out `(num_filter, C/num_group, *kernel)` for Convolution
and `(C, num_filter/num_group, *kernel)` for Deconvolution; the shape rules fill them in.
Convolutions run at `Precision.HIGHEST`, as MXNet's float32 kernels do (no TF32).
"""
from __future__ import annotations

import math
from typing import Literal, Optional

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..base import MXNetError
from . import _conv_fast
from ._base import Op, register

_FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
_LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}
_ConvLayout = Optional[Literal["NCW", "NCHW", "NCDHW", "NHWC", "NDHWC"]]


def _check_geometry(op, names=("stride", "dilate", "pad")):
    k = len(op.kernel)
    if not 1 <= k <= 3:
        raise ValueError(f"kernel must have 1 to 3 dimensions, got {op.kernel}")
    if any(d < 1 for d in op.kernel):
        raise ValueError(f"kernel sizes must be positive, got {op.kernel}")
    for n in names:
        v = getattr(op, n)
        if v and len(v) != k:
            raise ValueError(f"{n}={v} must have {k} entries, one per kernel dimension {op.kernel}")
        if n not in ("pad", "adj", "target_shape") and any(d < 1 for d in v):
            raise ValueError(f"{n} entries must be positive, got {v}")
    layout = getattr(op, "layout", None)
    if layout is not None and len(layout) != k + 2:
        raise ValueError(f"layout {layout} does not fit a {k}-D kernel {op.kernel}")


def _fill(v, n, default):
    return tuple(v) if v else (default,) * n


def _layout(layout, n):
    return layout or _FIRST[n]


def _to_nc(shape, layout):
    """(N, C, *spatial) from a shape in `layout`."""
    if layout[1] == "C":
        return tuple(shape)
    return (shape[0], shape[-1], *shape[1:-1])


def _from_nc(shape, layout):
    if layout[1] == "C":
        return tuple(shape)
    return (shape[0], *shape[2:], shape[1])


def _weight_layout(layout):
    """lax's kernel spec for a data layout: OIHW for NCHW, OHWI for NHWC (MXNet's)."""
    sp = layout[2:] if layout[1] == "C" else layout[1:-1]
    return "OI" + sp if layout[1] == "C" else "O" + sp + "I"


def _channel_bcast(v, layout, ndim):
    axis = 1 if layout[1] == "C" else ndim - 1
    shape = [1] * ndim
    shape[axis] = -1
    return v.reshape(shape)


def _check_data(op, data):
    n = len(op.kernel)
    if len(data) != n + 2:
        raise ValueError(f"data must have {n + 2} dimensions for a {n}-D kernel {op.kernel}, "
                         f"got {tuple(data)}")


@register
class Convolution(Op):
    """N-D convolution (1-D, 2-D, 3-D) with MXNet's parameters.

    Lowered to `lax.conv_general_dilated`, or, for shapes where XLA:CPU's convolution is
    slow (depthwise, grouped, small outputs), to slices and one `dot_general`: the same
    arithmetic; `jbind/ops/_conv_fast.py` has the rule and `JBIND_CONV_FORM` to force one.
    """
    mxnet_order = ('kernel', 'stride', 'dilate', 'pad', 'num_filter', 'num_group', 'workspace', 'no_bias',
                   'cudnn_tune', 'cudnn_off', 'layout')
    kernel: tuple[int, ...]
    num_filter: int
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    num_group: int = 1
    workspace: int = 1024
    no_bias: bool = False
    cudnn_tune: Optional[Literal["off", "limited_workspace", "fastest"]] = None
    cudnn_off: bool = False
    layout: _ConvLayout = None

    def __post_init__(self):
        _check_geometry(self)
        if self.num_filter < 1 or self.num_group < 1 or self.num_filter % self.num_group:
            raise ValueError(f"num_filter={self.num_filter} must be a positive multiple of "
                             f"num_group={self.num_group}")

    def arguments(self):
        return ("data", "weight") if self.no_bias else ("data", "weight", "bias")

    def _geometry(self):
        n = len(self.kernel)
        return _fill(self.stride, n, 1), _fill(self.dilate, n, 1), _fill(self.pad, n, 0)

    def infer_shape(self, ins, outs):
        data, bias = ins[0], (self.num_filter,)
        lay = _layout(self.layout, len(self.kernel))
        if data is None:
            return [None, ins[1], bias][:len(ins)], [None], []
        _check_data(self, data)
        n, c, *sp = _to_nc(data, lay)
        stride, dilate, pad = self._geometry()
        if c and c % self.num_group:
            raise ValueError(f"input channels {c} must be a multiple of num_group={self.num_group}")
        out_sp = []
        for k, (x, s, d, p) in enumerate(zip(sp, stride, dilate, pad)):
            dk = d * (self.kernel[k] - 1) + 1
            if x and x + 2 * p < dk:
                raise ValueError(f"kernel {self.kernel} (dilated {dk} on axis {k}) exceeds the padded "
                                 f"input {tuple(data)} with pad {pad}")
            out_sp.append((x + 2 * p - dk) // s + 1 if x else 0)
        if outs[0] is not None:  # MXNet fills the batch, and with stride 1 the size, from the output
            o = _to_nc(outs[0], lay)
            n = n or o[0]
            sp = [x or (o[2 + k] - 1 - 2 * pad[k] + dilate[k] * (self.kernel[k] - 1) + 1
                        if o[2 + k] and stride[k] == 1 else 0) for k, x in enumerate(sp)]
        weight = _from_nc((self.num_filter, c // self.num_group, *self.kernel), lay)
        data = _from_nc((n, c, *sp), lay)
        out = _from_nc((n, self.num_filter, *out_sp), lay)
        return [data, weight, bias][:len(ins)], [out], []

    def lower(self, ins, aux, is_train, key):
        x, w, *b = ins
        lay = _layout(self.layout, len(self.kernel))
        stride, dilate, pad = self._geometry()
        g = self.num_group
        if lay[1] == "C":  # XLA:CPU's weak cases take another form (jbind/ops/_conv_fast.py)
            y = _conv_fast.conv(x, w, stride, dilate, pad, g)
        elif _conv_fast.choose(_to_nc(x.shape, lay), _to_nc(w.shape, lay), g, stride, dilate, pad) != "native":
            y = _conv_fast.conv(jnp.moveaxis(x, -1, 1), jnp.moveaxis(w, -1, 1), stride, dilate, pad, g)
            y = jnp.moveaxis(y, 1, -1)
        else:
            y = lax.conv_general_dilated(x, w, stride, [(p, p) for p in pad], rhs_dilation=dilate,
                                         dimension_numbers=(lay, _weight_layout(lay), lay),
                                         feature_group_count=g)
        return [y + _channel_bcast(b[0], lay, y.ndim) if b else y], aux


def deconv(x, w, stride, dilate, pads, groups, layout):
    """Transposed convolution with MXNet's weight layout `(C, F/groups, *k)`; `pads` are
    (lo, hi) per axis as MXNet's pad and adj give them (hi = pad - adj)."""
    c, fg, *k = w.shape
    nsp = len(k)
    w = w.reshape(groups, c // groups, fg, *k).swapaxes(1, 2).reshape(groups * fg, c // groups, *k)
    w = jnp.flip(w, axis=tuple(range(2, 2 + nsp)))
    full = [(d * (kk - 1) - lo, d * (kk - 1) - hi) for kk, d, (lo, hi) in zip(k, dilate, pads)]
    return lax.conv_general_dilated(x, w, (1,) * nsp, full, lhs_dilation=stride, rhs_dilation=dilate,
                                    dimension_numbers=(layout, "OI" + layout[2:], layout),
                                    feature_group_count=groups)


@register
class Deconvolution(Op):
    """Transposed convolution. `target_shape`, when given, sets pad and adj as MXNet does.

    Channel-last layouts (NHWC, NDHWC) get MXNet's shapes (weight `(C, *kernel, F/groups)`)
    but refuse to run, as MXNet 1.9.1 on CPU does (only cuDNN ran them).
    """
    mxnet_order = ('kernel', 'stride', 'dilate', 'pad', 'adj', 'target_shape', 'num_filter', 'num_group',
                   'workspace', 'no_bias', 'cudnn_tune', 'cudnn_off', 'layout')
    kernel: tuple[int, ...]
    num_filter: int
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    adj: tuple[int, ...] = ()
    target_shape: tuple[int, ...] = ()
    num_group: int = 1
    workspace: int = 512
    no_bias: bool = True
    cudnn_tune: Optional[Literal["off", "limited_workspace", "fastest"]] = None
    cudnn_off: bool = False
    layout: _ConvLayout = None

    def __post_init__(self):
        _check_geometry(self, ("stride", "dilate", "pad", "adj", "target_shape"))
        if self.num_filter < 1 or self.num_group < 1 or self.num_filter % self.num_group:
            raise ValueError(f"num_filter={self.num_filter} must be a positive multiple of "
                             f"num_group={self.num_group}")

    def arguments(self):
        return ("data", "weight") if self.no_bias else ("data", "weight", "bias")

    def _geometry(self, sp):
        """-> stride, dilate, pad, adj for spatial input sizes `sp` (MXNet's InferPad)."""
        n = len(self.kernel)
        stride, dilate = _fill(self.stride, n, 1), _fill(self.dilate, n, 1)
        if not any(self.target_shape):
            return stride, dilate, _fill(self.pad, n, 0), _fill(self.adj, n, 0)
        pad, adj = [], []
        for x, s, d, k, t in zip(sp, stride, dilate, self.kernel, self.target_shape):
            total = s * (x - 1) + d * (k - 1) + 1 - t
            if total < 0:
                raise ValueError(f"target_shape {self.target_shape} is too big for input size {x}")
            pad.append((total + 1) // 2)
            adj.append(total % 2)
        return stride, dilate, tuple(pad), tuple(adj)

    def infer_shape(self, ins, outs):
        data, bias = ins[0], (self.num_filter,)
        if data is None:
            return [None, ins[1], bias][:len(ins)], [None], []
        _check_data(self, data)
        lay = _layout(self.layout, len(self.kernel))
        n, c, *sp = _to_nc(data, lay)
        if c and c % self.num_group:
            raise ValueError(f"input channels {c} must be a multiple of num_group={self.num_group}")
        out_sp = []
        if all(sp) or not any(self.target_shape):
            stride, dilate, pad, adj = self._geometry(sp)
            for x, s, d, k, p, a in zip(sp, stride, dilate, self.kernel, pad, adj):
                o = s * (x - 1) + d * (k - 1) + 1 - 2 * p + a if x else 0
                if x and o < 1:
                    raise ValueError(f"output size {o} is not positive (pad {pad} too large)")
                out_sp.append(o)
        else:
            out_sp = [0] * len(sp)
        if outs[0] is not None and not n:
            n = outs[0][0]
        weight = _from_nc((c, self.num_filter // self.num_group, *self.kernel), lay)
        return ([_from_nc((n, c, *sp), lay), weight, bias][:len(ins)],
                [_from_nc((n, self.num_filter, *out_sp), lay)], [])

    def lower(self, ins, aux, is_train, key):
        if self.layout is not None and self.layout[1] != "C":
            raise MXNetError(f"Deconvolution: layout {self.layout} cannot run: MXNet 1.9.1 has no CPU kernel "
                             f"for channel-last Deconvolution (its shapes are inferred); use "
                             f"{_FIRST[len(self.kernel)]}")
        x, w, *b = ins
        stride, dilate, pad, adj = self._geometry(x.shape[2:])
        y = deconv(x, w, stride, dilate, [(p, p - a) for p, a in zip(pad, adj)], self.num_group,
                   _layout(self.layout, len(self.kernel)))
        return [y + _channel_bcast(b[0], "NC", y.ndim) if b else y], aux


@register
class Pooling(Op):
    """max / avg / sum / lp pooling; `pooling_convention` 'full' rounds the output size up.

    'same' (1-D only, as in MXNet 1.9.1; no padding) gives ceil(width / stride) outputs,
    windows starting at i * stride and clipped at the right edge. MXNet 1.9.1 runs it only
    with `pad=(0, 0, 0)` and without MKLDNN; jbind also takes `pad` unset or all zeros.
    'avg' divides by the window size clipped to the padded input (count_include_pad,
    MXNet's default) or to the input itself (count_include_pad=False); in 'full' mode the
    part of a window past the padded input never counts.
    """
    kernel: tuple[int, ...] = ()
    pool_type: Literal["max", "avg", "sum", "lp"] = "max"
    global_pool: bool = False
    cudnn_off: bool = False
    pooling_convention: Literal["valid", "full", "same"] = "valid"
    stride: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    p_value: Optional[int] = None
    count_include_pad: Optional[bool] = None
    layout: Optional[Literal["NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"]] = None

    def __post_init__(self):
        same = self.pooling_convention == "same"
        if same and any(self.pad):
            raise ValueError(f"Same pooling convention disables the use of pad parameter, got pad={self.pad}")
        if not self.global_pool:
            _check_geometry(self, ("stride",) if same else ("stride", "pad"))
        if self.pool_type == "lp" and self.p_value not in (1, 2, 3):
            raise ValueError(f"pool_type='lp' needs p_value 1, 2 or 3, got {self.p_value}")

    def total_outputs(self):
        # MXNet 1.9.1 as pip ships it (oneDNN) keeps a hidden workspace output for max
        # pooling with a kernel, channels first; its JSON counts it
        channels_first = self.layout is None or self.layout in ("NCW", "NCHW", "NCDHW")
        return 2 if self.pool_type == "max" and self.kernel and channels_first else 1

    def _geometry(self, sp):
        n = len(sp)
        if self.global_pool:
            return tuple(sp), (1,) * n, (0,) * n
        pad = (0,) * n if self.pooling_convention == "same" else _fill(self.pad, n, 0)
        return self.kernel, _fill(self.stride, n, 1), pad

    def _out_size(self, x, k, s, p):
        if self.global_pool:
            return 1
        if x + 2 * p < k:
            raise ValueError(f"kernel {self.kernel} exceeds the padded input size {x} + 2*{p}")
        if self.pooling_convention == "full":
            return 1 + -(-(x + 2 * p - k) // s)
        if self.pooling_convention == "same":
            return -(-x // s)
        return 1 + (x + 2 * p - k) // s

    def _spatial_rank(self, data):
        if self.global_pool and not self.kernel:
            if len(data) < 3 or len(data) > 5:
                raise ValueError(f"data must have 3 to 5 dimensions, got {tuple(data)}")
            return len(data) - 2
        if len(data) != len(self.kernel) + 2:
            raise ValueError(f"data must have {len(self.kernel) + 2} dimensions for kernel "
                             f"{self.kernel}, got {tuple(data)}")
        return len(self.kernel)

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is None:
            return [None], [None], []
        lay = _layout(self.layout, self._spatial_rank(data))
        if self.pooling_convention == "same" and not self.global_pool and len(data) != 3:
            raise ValueError(f"Pooling: Input data should be 3D in (batch, channel, x), got {tuple(data)}. "
                             "Currently 'same' supports 1-D pooling only (as MXNet 1.9.1)")
        n, c, *sp = _to_nc(data, lay)
        kernel, stride, pad = self._geometry(sp)
        out = [self._out_size(x, k, s, p) if x else 0 for x, k, s, p in zip(sp, kernel, stride, pad)]
        return [data], [_from_nc((n, c, *out), lay)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        lay = _layout(self.layout, x.ndim - 2)
        axes = list(range(2, x.ndim)) if lay[1] == "C" else list(range(1, x.ndim - 1))
        sp = [x.shape[a] for a in axes]
        kernel, stride, pad = self._geometry(sp)
        out = [self._out_size(n, k, s, p) for n, k, s, p in zip(sp, kernel, stride, pad)]
        window, strides, padding = [1] * x.ndim, [1] * x.ndim, [(0, 0)] * x.ndim
        for a, n, k, s, p, o in zip(axes, sp, kernel, stride, pad, out):
            window[a], strides[a] = k, s
            padding[a] = (p, max(0, (o - 1) * s + k - p - n))
        pool = lambda v, init, fn: lax.reduce_window(v, init, fn, window, strides, padding)  # noqa: E731
        if (self.pool_type in ("max", "sum", "avg") and not self.global_pool
                and math.prod(kernel) <= _conv_fast.POOL_MAX_TAPS and _conv_fast.choose_pool()):
            kind = "max" if self.pool_type == "max" else "sum"
            y = _conv_fast.pool_taps(x, kind, axes, kernel, stride, [padding[a] for a in axes], out)
            if kind == "max":
                y = jnp.maximum(y, jnp.finfo(x.dtype).min)
            else:
                y = self._divide(y, sp, kernel, stride, pad, out, axes)
            return [y], aux
        if self.pool_type == "max":
            # a window wholly in the padding gives the lowest finite value, as MXNet's kernel does
            y = jnp.maximum(pool(x, -jnp.inf, lax.max), jnp.finfo(x.dtype).min)
        elif self.pool_type == "lp":
            pw = self.p_value
            y = pool(x ** pw if pw > 1 else x, 0.0, lax.add)
            y = y if pw == 1 else jnp.sqrt(y) if pw == 2 else jnp.cbrt(y)
        else:
            y = pool(x, 0.0, lax.add)
        limit = list(y.shape)
        for a, o in zip(axes, out):
            limit[a] = o
        y = lax.slice(y, [0] * x.ndim, limit)
        return [self._divide(y, sp, kernel, stride, pad, out, axes)], aux

    def _divide(self, y, sp, kernel, stride, pad, out, axes):
        if self.pool_type != "avg":
            return y
        counts = self._counts(sp, kernel, stride, pad, out)
        shape = [1] * y.ndim
        for a, o in zip(axes, out):
            shape[a] = o
        return y / jnp.asarray(counts.reshape(shape), y.dtype)

    def _counts(self, sp, kernel, stride, pad, out):
        """Per-output divisor of 'avg', as MXNet's CPU kernel computes it."""
        include = self.count_include_pad is None or self.count_include_pad
        total = np.ones((), np.float64)
        for n, k, s, p, o in zip(sp, kernel, stride, pad, out):
            start = np.arange(o) * s - p
            end = np.minimum(start + k, n + p)
            size = end - start if include else np.minimum(end, n) - np.maximum(start, 0)
            total = np.multiply.outer(total, np.maximum(size, 1))
        return total
