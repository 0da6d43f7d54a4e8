"""Convolution forms that XLA:CPU runs faster than its own convolution, and the rule that
picks one per shape.

XLA:CPU (jaxlib 0.10) has two weak cases, measured by `benchmarks/conv_sweep.py`:

- grouped convolution (`feature_group_count > 1`): a 3x3 depthwise convolution runs
  10-150x slower than the same arithmetic written as one shifted, strided slice per
  kernel tap, scaled per channel and summed (`taps`); other groupings (ResNeXt's 32
  groups) run 15x faster as im2col with the groups as a batch dimension;
- dense convolutions whose output is small (7x7 and below at batch 1, the 2x2 cliff
  with padding 1 at any batch), where gathering the taps into one patch tensor and running one
  `dot_general` (im2col, `patches`) runs at matmul speed;
- small pooling windows, as slices combined elementwise (`pool_taps`), which also keep
  reduce-window out of the YNNPACK fusion that made vgg's head seconds slow at batch 2.

Every form is plain `jax.numpy` / `lax` (slices, pads, products, `dot_general`), so
`jax.grad` differentiates it and the backward pass inherits the same shapes. All forms
take data channels-first, `(N, C, *spatial)`, and MXNet's weight `(F, C/groups, *k)`.
Set `JBIND_CONV_FORM=native` (or `taps`, `patches`) before the first compile to force one
form, e.g. to compare. Other backends than the CPU keep XLA's convolution.
"""
from __future__ import annotations

import functools
import math
import os

import jax
import jax.numpy as jnp
from jax import lax

FORMS = ("native", "taps", "patches")

# The rule, read off benchmarks/conv_sweep.py (benchmarks/RESULTS.md, "Convolution
# forms"): a depthwise convolution (groups == C) with at most _TAPS_MAX_K taps takes
# `taps`; any other grouped convolution takes `patches` (one batched dot_general over the
# groups). A dense one with more than one tap takes `patches` when its output has at most
# _CLIFF_OUT positions per image (XLA's 2x2 cliff, at any batch size), or when the
# patch matrix has at most _PATCH_ROWS rows (batch x output positions) and at least
# _NARROW input channels, or at most _PATCH_ROWS_WIDE rows and at least _WIDE channels. Everything else stays on
# XLA's convolution, which wins on big outputs (7x7 at batch 16 already). A dense 1x1
# convolution always takes `patches`: one dot_general, faster than XLA's at every size measured.
_TAPS_MAX_K = 49
_CLIFF_OUT = 4
_PATCH_ROWS = 64
_PATCH_ROWS_WIDE = 256
_NARROW = 128
_WIDE = 256
# `patches` builds its patch tensor from min(taps, output positions) slices; beyond this
# many, tracing and compiling the slices costs more than XLA's convolution could lose.
_MAX_SLICES = 256


def choose(x_shape, w_shape, groups, stride, dilate, pad) -> str:
    """The form for one convolution: 'native', 'taps' or 'patches' (channels-first shapes)."""
    forced = os.environ.get("JBIND_CONV_FORM", "").strip().lower()
    if forced in FORMS:
        return forced
    if jax.default_backend() != "cpu":  # measured on XLA:CPU only; GPUs keep cuDNN's kernels
        return "native"
    c, k = x_shape[1], w_shape[2:]
    ntaps = math.prod(k)
    out = math.prod(_out_sizes(x_shape[2:], k, stride, dilate, pad))
    if groups > 1 and groups == c and ntaps <= _TAPS_MAX_K:
        return "taps"
    if min(ntaps, out) > _MAX_SLICES:
        return "native"
    if groups > 1:
        return "patches"
    if ntaps == 1:
        # a 1x1 convolution as one dot_general: XLA's convolution, with its NCHW transposes,
        # ran resnet50_v1 (mostly 1x1) at 64 x 64 batch 1 in 68 ms, as dots in 12; at 224 x 224
        # batch 1 151 -> 84 ms, batch 16 1.41 -> 1.28 s; a 64 x 64 batch-16 training step
        # 735 -> 472 ms (session 12, Intel Xeon, one core)
        return "patches"
    rows = x_shape[0] * out
    if ntaps > 1 and (out <= _CLIFF_OUT or (rows <= _PATCH_ROWS and c >= _NARROW)
                      or (rows <= _PATCH_ROWS_WIDE and c >= _WIDE)):
        return "patches"
    return "native"


def choose_pool() -> bool:
    """Whether small pooling windows run as slices (`pool_taps`): on the CPU, unless
    `JBIND_CONV_FORM=native`."""
    forced = os.environ.get("JBIND_CONV_FORM", "").strip().lower()
    return forced != "native" and jax.default_backend() == "cpu"


def _out_sizes(sp, k, stride, dilate, pad):
    return [(x + 2 * p - d * (kk - 1) - 1) // s + 1 for x, kk, s, d, p in zip(sp, k, stride, dilate, pad)]


def _padded(x, k, stride, dilate, pad):
    """`x` zero-padded by `pad`, and the output's spatial sizes."""
    if any(pad):
        x = jnp.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    return x, _out_sizes(x.shape[2:], k, stride, dilate, (0,) * len(k))


def _tap_slices(x, k, stride, dilate, pad):
    """One strided slice of the padded `x` per kernel tap, row-major over the taps; each
    is `(N, C, *out)`."""
    x, out = _padded(x, k, stride, dilate, pad)
    n, c = x.shape[:2]
    taps = []
    for idx in _taps(k):
        start = [0, 0] + [i * d for i, d in zip(idx, dilate)]
        limit = [n, c] + [st + s * (o - 1) + 1 for st, s, o in zip(start[2:], stride, out)]
        taps.append(lax.slice(x, start, limit, [1, 1, *stride]))
    return taps


def _window_patches(x, k, stride, dilate, pad):
    """The patch tensor `(N, C, K, *out)` of `_tap_slices` stacked, built instead from one
    strided slice per output position (its whole dilated window): fewer slices where the
    kernel has more taps than the output has positions (a kernel as large as the image)."""
    x, out = _padded(x, k, stride, dilate, pad)
    n, c = x.shape[:2]
    wins = []
    for pos in _taps(out):
        start = [0, 0] + [o * s for o, s in zip(pos, stride)]
        limit = [n, c] + [st + d * (kk - 1) + 1 for st, d, kk in zip(start[2:], dilate, k)]
        wins.append(lax.slice(x, start, limit, [1, 1, *dilate]).reshape(n, c, -1))
    return jnp.stack(wins, axis=3).reshape(n, c, math.prod(k), *out)


def _taps(k):
    if not k:
        return [()]
    return [(i, *rest) for i in range(k[0]) for rest in _taps(k[1:])]


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3, 4))
def conv_taps(x, w, stride, dilate, pad):
    """Depthwise convolution (groups == C, weight `(C*m, 1, *k)`) as a sum over kernel taps
    of a strided slice times a per-channel weight. Its gradient is the im2col form's
    (`conv_patches`), which the sweep measured faster than the taps' own (the same values)."""
    return _conv_taps(x, w, stride, dilate, pad)


def _conv_taps_fwd(x, w, stride, dilate, pad):
    return _conv_taps(x, w, stride, dilate, pad), (x, w)


def _conv_taps_bwd(stride, dilate, pad, res, g):
    x, w = res
    _, vjp = jax.vjp(lambda x, w: conv_patches(x, w, stride, dilate, pad, x.shape[1]), x, w)
    return vjp(g)


conv_taps.defvjp(_conv_taps_fwd, _conv_taps_bwd)


def _conv_taps(x, w, stride, dilate, pad):
    c, f, k = x.shape[1], w.shape[0], w.shape[2:]
    if f != c:  # channel multiplier m: output channel o reads input channel o // m
        x = jnp.repeat(x, f // c, axis=1)
    wt = w.reshape(f, -1)
    bshape = (1, f) + (1,) * len(k)
    y = None
    for t, s in enumerate(_tap_slices(x, k, stride, dilate, pad)):
        term = s * wt[:, t].reshape(bshape)
        y = term if y is None else y + term
    return y


def conv_patches(x, w, stride, dilate, pad, groups=1):
    """Convolution as im2col: the taps stacked into `(N, G, C/G, K, *out)` patches and
    contracted with the weight `(G, F/G, C/G, K)` in one `dot_general`."""
    n, c = x.shape[:2]
    f, cg, k = w.shape[0], w.shape[1], w.shape[2:]
    ntaps = math.prod(k)
    out = tuple(_out_sizes(x.shape[2:], k, stride, dilate, pad))
    if math.prod(out) < ntaps:   # slice per output window: a 224x224 kernel is one slice, not 50176
        p = _window_patches(x, k, stride, dilate, pad)
    else:
        p = jnp.stack(_tap_slices(x, k, stride, dilate, pad), axis=2)  # (N, C, K, *out)
    if groups == 1:  # (F, N, *out): with N = 1 the move to (N, F, *out) is free
        y = lax.dot_general(w.reshape(f, cg, ntaps), p, (((1, 2), (1, 2)), ((), ())))
        return jnp.moveaxis(y, 0, 1)
    p = p.reshape(n, groups, cg, ntaps, *out)
    wg = w.reshape(groups, f // groups, cg, ntaps)
    # (G, F/G, N, *out): batch over groups, contract channels and taps
    y = lax.dot_general(wg, p, (((2, 3), (2, 3)), ((0,), (1,))))
    return jnp.moveaxis(y.reshape(f, n, *out), 0, 1)


def conv_native(x, w, stride, dilate, pad, groups=1):
    """XLA's own convolution, channels-first."""
    nsp = x.ndim - 2
    sp = "DHW"[3 - nsp:]
    return lax.conv_general_dilated(x, w, stride, [(p, p) for p in pad], rhs_dilation=dilate,
                                    dimension_numbers=("NC" + sp, "OI" + sp, "NC" + sp),
                                    feature_group_count=groups)


def conv(x, w, stride, dilate, pad, groups=1, form=None):
    """Channels-first convolution in the form `choose` picks (or `form`)."""
    stride, dilate, pad = tuple(stride), tuple(dilate), tuple(pad)
    form = form or choose(x.shape, w.shape, groups, stride, dilate, pad)
    if form == "taps" and groups == x.shape[1]:
        return conv_taps(x, w, stride, dilate, pad)
    if form == "patches":
        return conv_patches(x, w, stride, dilate, pad, groups)
    return conv_native(x, w, stride, dilate, pad, groups)


# Pooling with at most this many taps per window runs as strided slices combined
# elementwise: faster than XLA:CPU's reduce-window forward, and it keeps the window out of
# the YNNPACK fusions that made conv -> pool -> FullyConnected -> FullyConnected take
# seconds at batch 2 (vgg's head; benchmarks/RESULTS.md, "Convolution forms").
POOL_MAX_TAPS = 9


def pool_taps(x, kind, axes, kernel, stride, padding, out):
    """'max' or 'sum' pooling of `x` over `axes` as one strided slice per window tap.
    `padding` is (lo, hi) per pooled axis; `out` the output sizes. Max pooling's gradient
    goes to the first maximum of each window in row-major order, as XLA's reduce-window
    (select-and-scatter) and MXNet's kernel give it; where windows overlap it is
    reduce-window's own gradient, which the sweep measured faster there."""
    geo = (tuple(axes), tuple(kernel), tuple(stride), tuple(tuple(p) for p in padding), tuple(out))
    if kind == "max":
        return _max_pool(x, *geo)
    y = None
    for t in _pool_slices(x, 0, *geo):
        y = t if y is None else y + t
    return y


def _pool_slices(x, init, axes, kernel, stride, padding, out):
    cfg = [(0, 0, 0)] * x.ndim
    for a, (lo, hi) in zip(axes, padding):
        cfg[a] = (lo, hi, 0)
    xp = lax.pad(x, jnp.asarray(init, x.dtype), cfg)
    taps = []
    for idx in _taps(kernel):
        start, limit, strides = [0] * x.ndim, list(xp.shape), [1] * x.ndim
        for a, i, s, o in zip(axes, idx, stride, out):
            start[a], limit[a], strides[a] = i, i + s * (o - 1) + 1, s
        taps.append(lax.slice(xp, start, limit, strides))
    return taps


def _max_of(taps):
    y = taps[0]
    for t in taps[1:]:
        y = jnp.maximum(y, t)
    return y


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3, 4, 5))
def _max_pool(x, axes, kernel, stride, padding, out):
    return _max_of(_pool_slices(x, -jnp.inf, axes, kernel, stride, padding, out))


def _max_pool_fwd(x, axes, kernel, stride, padding, out):
    return _max_pool(x, axes, kernel, stride, padding, out), x


def _max_pool_bwd(axes, kernel, stride, padding, out, x, g):
    if any(s < k for s, k in zip(stride, kernel)):  # overlapping windows: select-and-scatter
        window, strides, cfg, limit = [1] * x.ndim, [1] * x.ndim, [(0, 0)] * x.ndim, list(x.shape)
        for a, k, s, p, o in zip(axes, kernel, stride, padding, out):
            window[a], strides[a], cfg[a], limit[a] = k, s, p, o
        rw = lambda v: lax.slice(lax.reduce_window(v, -jnp.inf, lax.max, window, strides, cfg),  # noqa: E731
                                 [0] * x.ndim, limit)
        return jax.vjp(rw, x)[1](g)
    taps, vjp = jax.vjp(lambda v: _pool_slices(v, -jnp.inf, axes, kernel, stride, padding, out), x)
    y = _max_of(taps)
    taken = jnp.zeros(y.shape, bool)
    grads = []
    for t in taps:
        first = (t == y) & ~taken
        grads.append(jnp.where(first, g, jnp.zeros((), g.dtype)))
        taken = taken | first
    return vjp(grads)


_max_pool.defvjp(_max_pool_fwd, _max_pool_bwd)
