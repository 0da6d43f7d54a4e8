"""Convolution forms that XLA:CPU runs faster than its own convolution, and the rule that
picks one per shape.

XLA:CPU (jaxlib 0.10) has two weak cases, measured by `benchmarks/conv_sweep.py`:

- grouped convolution (`feature_group_count > 1`): a 3x3 depthwise convolution runs
  10-150x slower than the same arithmetic written as one shifted, strided slice per
  kernel tap, scaled per channel and summed (`taps`);
- dense convolutions whose output is small in space (7x7 and below, and the 2x2 cliff
  with padding 1), where gathering the taps into one patch tensor and running one
  `dot_general` (im2col, `patches`) runs at matmul speed.

Every form is plain `jax.numpy` / `lax` (slices, pads, products, `dot_general`), so
`jax.grad` differentiates it and the backward pass inherits the same shapes. All forms
take data channels-first, `(N, C, *spatial)`, and MXNet's weight `(F, C/groups, *k)`.
Set `JBIND_CONV_FORM=native` (or `taps`, `patches`) to force one form, e.g. to compare.
"""
from __future__ import annotations

import math
import os

import jax.numpy as jnp
from jax import lax

FORMS = ("native", "taps", "patches")

# The rule (see benchmarks/RESULTS.md, "Convolution forms"): depthwise convolutions take
# `taps` when the kernel has at most _TAPS_MAX_K taps; dense (and grouped) convolutions
# with more than one tap take `patches` when the output has at most _PATCH_MAX_OUT
# positions per image. Everything else stays on XLA's convolution.
_TAPS_MAX_K = 49
_PATCH_MAX_OUT = 64


def choose(x_shape, w_shape, groups, stride, dilate, pad) -> str:
    """The form for one convolution: 'native', 'taps' or 'patches' (channels-first shapes)."""
    forced = os.environ.get("JBIND_CONV_FORM", "").strip().lower()
    if forced in FORMS:
        return forced
    c, k = x_shape[1], w_shape[2:]
    ntaps = math.prod(k)
    out = math.prod(_out_sizes(x_shape[2:], k, stride, dilate, pad))
    if groups > 1 and groups == c and ntaps <= _TAPS_MAX_K:
        return "taps"
    if groups == 1 and ntaps > 1 and out <= _PATCH_MAX_OUT:
        return "patches"
    return "native"


def _out_sizes(sp, k, stride, dilate, pad):
    return [(x + 2 * p - d * (kk - 1) - 1) // s + 1 for x, kk, s, d, p in zip(sp, k, stride, dilate, pad)]


def _tap_slices(x, k, stride, dilate, pad):
    """One strided slice of the padded `x` per kernel tap, row-major over the taps; each
    is `(N, C, *out)`."""
    nsp = len(k)
    if any(pad):
        x = jnp.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out = _out_sizes(x.shape[2:], k, stride, dilate, (0,) * nsp)
    n, c = x.shape[:2]
    taps = []
    for idx in _taps(k):
        start = [0, 0] + [i * d for i, d in zip(idx, dilate)]
        limit = [n, c] + [st + s * (o - 1) + 1 for st, s, o in zip(start[2:], stride, out)]
        taps.append(lax.slice(x, start, limit, [1, 1, *stride]))
    return taps


def _taps(k):
    if not k:
        return [()]
    return [(i, *rest) for i in range(k[0]) for rest in _taps(k[1:])]


def conv_taps(x, w, stride, dilate, pad):
    """Depthwise convolution (groups == C, weight `(C*m, 1, *k)`) as a sum over kernel taps
    of a strided slice times a per-channel weight."""
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
    taps = _tap_slices(x, k, stride, dilate, pad)
    out = taps[0].shape[2:]
    p = jnp.stack(taps, axis=2)  # (N, C, K, *out)
    hi = lax.Precision.HIGHEST
    if groups == 1:  # (F, N, *out): with N = 1 the move to (N, F, *out) is free
        y = lax.dot_general(w.reshape(f, cg, ntaps), p, (((1, 2), (1, 2)), ((), ())), precision=hi)
        return jnp.moveaxis(y, 0, 1)
    p = p.reshape(n, groups, cg, ntaps, *out)
    wg = w.reshape(groups, f // groups, cg, ntaps)
    # (G, F/G, N, *out): batch over groups, contract channels and taps
    y = lax.dot_general(wg, p, (((2, 3), (2, 3)), ((0,), (1,))), precision=hi)
    return jnp.moveaxis(y.reshape(f, n, *out), 0, 1)


def conv_native(x, w, stride, dilate, pad, groups=1):
    """XLA's own convolution, channels-first."""
    nsp = x.ndim - 2
    sp = "DHW"[3 - nsp:]
    return lax.conv_general_dilated(x, w, stride, [(p, p) for p in pad], rhs_dilation=dilate,
                                    dimension_numbers=("NC" + sp, "OI" + sp, "NC" + sp),
                                    feature_group_count=groups, precision=lax.Precision.HIGHEST)


def conv(x, w, stride, dilate, pad, groups=1, form=None):
    """Channels-first convolution in the form `choose` picks (or `form`)."""
    form = form or choose(x.shape, w.shape, groups, stride, dilate, pad)
    if form == "taps" and groups == x.shape[1]:
        return conv_taps(x, w, stride, dilate, pad)
    if form == "patches":
        return conv_patches(x, w, stride, dilate, pad, groups)
    return conv_native(x, w, stride, dilate, pad, groups)
