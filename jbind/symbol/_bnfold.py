"""Inference: a BatchNorm whose data is a Convolution's output is folded into that convolution.

With the moving statistics (inference, or `use_global_stats`), BatchNorm is a per-channel
affine map, `y = (x - mean) * s + beta` with `s = gamma / sqrt(var + eps)` (gamma taken as
1 under `fix_gamma`). After a convolution it moves into the convolution's parameters:

    conv(x, W) + b  ->  BN  ==  conv(x, W * s[:, None, ...]) + ((b - mean) * s + beta)

so the compiled program runs the convolution and one bias add, not the convolution and
then a pass of subtract, multiply and add over its output. The folded weight is computed
inside the program from the same arguments and aux states (the executor's inputs do not
change), which costs a pass over the weight instead of one over the activation: folding
pays where the convolution's output has more elements than its weight, and only such
pairs fold (a per-shape choice; at batch 32 nearly all do, at batch 1 the late, small
spatial layers of a ResNet keep their BatchNorm).

Only the inference forward folds (`is_train=False`: `bind(for_training=False)`,
`forward(is_train=False)`), only where the convolution's output is read by this BatchNorm
alone and is no graph output, and only for a BatchNorm without `output_mean_var` whose
axis is the convolution's channel axis and whose data and parameters share a dtype.
The values are those of the unfolded lowering up to float rounding. Off by default: on
XLA:CPU the folded and unfolded programs have the same fusions and ran equally fast on
resnet18_v1 (benchmarks/RESULTS.md). `JBIND_BN_FOLD=1` (or `set_bn_fold(True)`) turns it
on; the switch is part of the compile-cache key.
"""
from __future__ import annotations

import bisect
import math
import os

import jax
import jax.numpy as jnp

from .graph import reader_counts

_state = {"on": os.environ.get("JBIND_BN_FOLD", "0") not in ("0", "")}


def set_bn_fold(on: bool) -> bool:
    """Fold inference BatchNorm into the preceding Convolution (default off); returns the old value."""
    old, _state["on"] = _state["on"], bool(on)
    return old


def cache_suffix() -> str:
    return "+bnfold" if _state["on"] else ""


def _channel_axis(conv) -> int:
    return conv.layout.index("C") if conv.layout else 1


def plan(g, shapes) -> dict:
    """{BatchNorm node: its Convolution node} for the pairs that may fold (needs `shapes`)."""
    if not _state["on"] or shapes is None:
        return {}
    readers = reader_counts(g)
    pairs = {}
    for ni, node in enumerate(g.nodes):
        op = node.op
        if type(op).__name__ != "BatchNorm" or op.output_mean_var:
            continue
        src = g.in_entries[ni][0]
        ci = bisect.bisect_left(g.offsets, src)   # the node whose first output is src, if any
        if ci >= len(g.nodes) or g.offsets[ci] != src or readers[src] != 1:
            continue
        conv = g.nodes[ci].op
        if type(conv).__name__ not in ("Convolution", "Convolution_v1"):
            continue
        out, weight = shapes[src], shapes[g.in_entries[ci][1]]
        if out is None or weight is None:
            continue
        ndim = len(out)
        axis = op.axis + ndim if op.axis < 0 else op.axis
        if axis != _channel_axis(conv) or math.prod(out) <= math.prod(weight):
            continue
        pairs[ni] = ci
    return pairs


def lower(bn, conv, conv_ins, bn_ins, bn_aux):
    """The folded convolution's output, or None where the dtypes do not allow the fold."""
    x, w, *b = conv_ins
    _, gamma, beta = bn_ins
    mean, var = bn_aux
    if not (x.dtype == w.dtype == gamma.dtype == mean.dtype) or not jnp.issubdtype(x.dtype, jnp.floating):
        return None
    scale = jax.lax.rsqrt(var + bn.eps)
    if not bn.fix_gamma:
        scale = scale * gamma
    w = w * scale.reshape((-1,) + (1,) * (w.ndim - 1))       # the output channel leads the weight in every layout
    shift = (b[0] - mean) * scale + beta if b else beta - mean * scale
    (y,), _ = conv.lower([x, w, shift], [], False, None)   # the shift is the bias, with or without no_bias
    return y
