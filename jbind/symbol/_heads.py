"""A FullyConnected feeding only a SoftmaxOutput is lowered as one loss head.

SoftmaxOutput's gradient with respect to the logits is `r * (p - onehot(label))`, with `r`
a per-row scale (grad_scale, normalization, ignored rows). The FullyConnected's backward
then multiplies it into two GEMMs. Written out, the (rows x classes) gradient costs a
pass to build and is read by both GEMMs; distributed instead,

    dx = r * (p @ W) - r * W[label]
    dW = p.T @ (r * x) - scatter_add(label, r * x)
    db = r @ p - scatter_add(label, r)

the GEMMs read the probabilities the forward keeps anyway and the one-hot part is a row
gather and scatter. For a language model's output layer (10,000 classes) that is a tenth
of the layer's time. The values are the same up to float rounding.

Only plain heads fuse: class labels (not probabilities), no multi_output, smooth_alpha or
out_grad, a 2-D output, and an FC output nothing else reads. Anything else is lowered
node by node.
"""
from __future__ import annotations

import bisect
import os

import jax
import jax.numpy as jnp

from .graph import reader_counts

_state = {"on": os.environ.get("JBIND_HEAD_FUSION", "1") != "0"}


def set_head_fusion(on: bool) -> bool:
    """Fuse FullyConnected + SoftmaxOutput heads (default; env `JBIND_HEAD_FUSION=0` turns it
    off). Read when a graph is lowered and part of the compile-cache key; returns the old value."""
    old, _state["on"] = _state["on"], bool(on)
    return old


def cache_suffix() -> str:
    return "" if _state["on"] else "+nohead"


def plan(g) -> dict:
    """{SoftmaxOutput node: its FullyConnected node} for the heads that may fuse."""
    if not _state["on"]:
        return {}
    readers = reader_counts(g)
    pairs = {}
    for ni, node in enumerate(g.nodes):
        op = node.op
        if type(op).__name__ != "SoftmaxOutput" or op.multi_output or op.smooth_alpha or op.out_grad:
            continue
        src = g.in_entries[ni][0]
        fc = bisect.bisect_left(g.offsets, src)  # the node whose first output is src, if any
        if fc == len(g.offsets) or g.offsets[fc] != src or \
                type(g.nodes[fc].op).__name__ != "FullyConnected" or readers[src] != 1:
            continue
        pairs[ni] = fc
    return pairs


def lower(sm, fc, fc_ins, label):
    """The fused head's output, or None where these values don't fit it (then the caller
    lowers the two nodes as written)."""
    data, weight, *bias = fc_ins
    x = data.reshape(data.shape[0], -1) if fc.flatten else data
    if x.ndim != 2 or label.shape == (x.shape[0], weight.shape[0]):
        return None
    return _head(sm, x, weight, bias[0] if bias else None, label)


def _head(sm, x, w, b, label):
    def probs(x, w, b):
        y = jnp.matmul(x, w.T)
        return jax.nn.softmax(y + b if b is not None else y, axis=-1)

    @jax.custom_vjp
    def f(x, w, b, label):
        return probs(x, w, b)

    def fwd(x, w, b, label):
        p = probs(x, w, b)
        return p, (p, x, w, label)

    def bwd(res, _g):  # a loss head: the head gradient is ignored, as MXNet does
        p, x, w, label = res
        n, k = p.shape
        lab = label.reshape(-1)[:n].astype(jnp.int32)
        r = jnp.full((n,), sm.grad_scale / _denominator(sm, label), p.dtype)
        if sm.use_ignore:
            r = jnp.where(label.reshape(-1)[:n] == sm.ignore_label, 0, r)
        hit = (lab >= 0) & (lab < k)  # one_hot of an out-of-range label is all zeros
        at = jnp.where(hit, lab, 0)
        rh = jnp.where(hit, r, 0)
        dx = r[:, None] * (p @ w) - rh[:, None] * w[at]
        dw = p.T @ (r[:, None] * x) - jnp.zeros_like(w).at[at].add(rh[:, None] * x)
        db = None if b is None else r @ p - jnp.zeros((k,), p.dtype).at[at].add(rh)
        return dx.astype(x.dtype), dw.astype(w.dtype), db, jnp.zeros_like(label)

    f.defvjp(fwd, bwd)
    return f(x, w, b, label)


def _denominator(sm, label):
    if sm.normalization == "batch":
        return label.size
    if sm.normalization == "valid":
        return jnp.maximum(jnp.sum(label.reshape(-1) != sm.ignore_label), 1)
    return 1
