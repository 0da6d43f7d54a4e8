"""Bounding-box regression targets: `_contrib_box_encode` and `_contrib_box_decode`
(MXNet 1.9.1's contrib/bounding_box). Both have zero gradients, as MXNet's."""
from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

from ..base import ShapeError, fmt_shape
from ._base import Op, register


def _center(boxes):
    """Corner boxes (..., 4) -> centre x, centre y, width, height."""
    w = boxes[..., 2] - boxes[..., 0]
    h = boxes[..., 3] - boxes[..., 1]
    return boxes[..., 0] + w * 0.5, boxes[..., 1] + h * 0.5, w, h


def _check(what, shape, ndim, last4=True):
    if shape is not None and (len(shape) != ndim or (last4 and shape[-1] not in (0, 4))):
        want = f"{ndim} dims" + (", the last of size 4" if last4 else "")
        raise ShapeError(f"{what} must have {want}, got {fmt_shape(shape)}")


@register
class _contrib_box_encode(Op):
    """Regression targets of anchors (B, N, 4) towards their matched reference boxes
    refs (B, M, 4), all corner boxes: ((ref centre - anchor centre) / anchor size - mean)
    / std for x and y, (log(ref size / anchor size) - mean) / std for width and height.
    Anchors whose `samples` entry is not > 0.5 get targets 0 and masks 0 (else 1).
    Inputs samples (B, N), matches (B, N) (indices into M), means (4,), stds (4,)."""

    def arguments(self):
        return ("samples", "matches", "anchors", "refs", "means", "stds")

    def outputs(self):
        return ("targets", "masks")

    def infer_shape(self, ins, outs):
        s, m, a, r = ins[:4]
        _check("samples", s, 2, last4=False)
        _check("anchors", a, 3)
        _check("refs", r, 3)
        return [s, m, a, r, (4,), (4,)], [a, a], []

    def lower(self, ins, aux, is_train, key):
        samples, matches, anchors, refs, means, stds = (jax.lax.stop_gradient(x) for x in ins)
        idx = matches.astype(jnp.int32)
        ref = jnp.take_along_axis(refs, idx[..., None], axis=1)
        rx, ry, rw, rh = _center(ref)
        ax, ay, aw, ah = _center(anchors)
        t = jnp.stack([(rx - ax) / aw, (ry - ay) / ah, jnp.log(rw / aw), jnp.log(rh / ah)], axis=-1)
        t = (t - means) / stds
        valid = (samples > 0.5)[..., None]
        masks = jnp.broadcast_to(valid, anchors.shape).astype(anchors.dtype)
        return [jnp.where(valid, t, jnp.zeros_like(t)), masks], aux


@register
class _contrib_box_decode(Op):
    """Boxes from regression outputs data (B, N, 4) and anchors (1, N, 4) (centre boxes
    with `format='center'`, corner boxes with 'corner'): centre = data * std * anchor size
    + anchor centre, size = exp(min(data * std, clip)) * anchor size (no clip when clip
    <= 0). Returns corner boxes (B, N, 4)."""
    std0: float = 1.0
    std1: float = 1.0
    std2: float = 1.0
    std3: float = 1.0
    clip: float = -1.0
    format: Literal["corner", "center"] = "center"

    def arguments(self):
        return ("data", "anchors")

    def infer_shape(self, ins, outs):
        d, a = ins
        _check("data", d, 3)
        _check("anchors", a, 3)
        return [d, a], [d], []

    def lower(self, ins, aux, is_train, key):
        x, anchors = (jax.lax.stop_gradient(v) for v in ins)
        anchors = anchors.reshape(-1, 4)[: x.shape[1]]
        if self.format == "corner":
            ax, ay, aw, ah = _center(anchors)
        else:
            ax, ay, aw, ah = (anchors[..., k] for k in range(4))
        ox = x[..., 0] * self.std0 * aw + ax
        oy = x[..., 1] * self.std1 * ah + ay
        dw, dh = x[..., 2] * self.std2, x[..., 3] * self.std3
        if self.clip > 0:
            dw, dh = jnp.minimum(dw, self.clip), jnp.minimum(dh, self.clip)
        ow, oh = jnp.exp(dw) * aw * 0.5, jnp.exp(dh) * ah * 0.5
        return [jnp.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1)], aux
