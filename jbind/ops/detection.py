"""MXNet 1.9.1's box operators of SSD-style detection (src/operator/contrib/multibox_prior*,
bounding_box*): anchors (MultiBoxPrior), pairwise IoU (box_iou), non-maximum suppression
(box_nms) and greedy bipartite matching.

Boxes are 'corner' [xmin, ymin, xmax, ymax] or 'center' [x, y, width, height]. Float
parameters are MXNet's float32 values, compared in the data's dtype, and the IoU is
computed in MXNet's order of float operations, so thresholds cut where MXNet's do.
MultiBoxPrior, box_iou and bipartite_matching pass zero gradients, as MXNet's; box_nms
passes the head gradient of each kept row back to that row's place in the input.
"""
from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from ..base import ShapeError, fmt_shape
from ._base import Op, float_types, frozen, register

BoxFormat = Literal["corner", "center"]


def _param(v, dtype):
    """A float parameter as MXNet holds it (float32), in the data's dtype."""
    return jnp.asarray(np.float32(v), dtype)


def _pick(cond, a, b):
    return jnp.where(cond, a, b)


def _intersect(a1, a2, b1, b2, fmt):
    """Overlap along one axis (MXNet's Intersect): (start, end) or (center, extent) pairs."""
    if fmt == "corner":
        left, right = _pick(a1 > b1, a1, b1), _pick(a2 < b2, a2, b2)
    else:
        al, ar, bl, br = a1 - a2 / 2, a1 + a2 / 2, b1 - b2 / 2, b1 + b2 / 2
        left, right = _pick(bl > al, bl, al), _pick(br < ar, br, ar)
    w = right - left
    return _pick(w > 0, w, jnp.zeros_like(w))


def _area(box, fmt):
    """Box area (MXNet's BoxArea): zero for a negative width or height."""
    w, h = (box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]) if fmt == "corner" else (box[..., 2], box[..., 3])
    return _pick((w < 0) | (h < 0), jnp.zeros_like(w), w * h)


def _overlap(a, b, fmt):
    """Intersection of boxes a and b (broadcast), MXNet's product of the two axes' overlaps."""
    return (_intersect(a[..., 0], a[..., 2], b[..., 0], b[..., 2], fmt)
            * _intersect(a[..., 1], a[..., 3], b[..., 1], b[..., 3], fmt))


def _check_batched(what, shape, least=2):
    if shape is not None and len(shape) < least:
        raise ShapeError(f"{what} {fmt_shape(shape)} must have at least {least} dims")


# ---------------------------------------------------------------------------- MultiBoxPrior
@register(aliases=("_npx_multibox_prior",))
@frozen
class MultiBoxPrior(Op):
    """Anchor boxes (1, H * W * (len(sizes) + len(ratios) - 1), 4), corner format, for data
    (N, C, H, W): per position (row-major), first every size at ratios[0], then sizes[0] at
    every further ratio. Width size * H / W * sqrt(ratio), height size / sqrt(ratio); centers
    (r + offsets[0]) * steps[0], (c + offsets[1]) * steps[1], steps 1/H, 1/W where a step is
    not positive. `clip` clips to [0, 1]. No gradient to data (zeros, as MXNet)."""
    name = "_contrib_MultiBoxPrior"
    sizes: tuple[float, ...] = (1.0,)
    ratios: tuple[float, ...] = (1.0,)
    clip: bool = False
    steps: tuple[float, ...] = (-1.0, -1.0)
    offsets: tuple[float, ...] = (0.5, 0.5)

    def __post_init__(self):
        for what in ("sizes", "ratios"):
            if not getattr(self, what):
                raise ValueError(f"{what} must not be empty")
        for what in ("steps", "offsets"):
            if len(getattr(self, what)) != 2:
                raise ValueError(f"{what} {getattr(self, what)} must have 2 values (y, x)")
        if not all(0 <= o <= 1 for o in self.offsets):
            raise ValueError(f"offsets {self.offsets} must lie in [0, 1]")
        if np.float32(self.steps[0]) * np.float32(self.steps[1]) < 0:
            raise ValueError(f"steps {self.steps}: give both step_y and step_x (or neither: -1)")

    def num_anchors(self) -> int:
        return len(self.sizes) + len(self.ratios) - 1

    def infer_type(self, ins, outs):
        return float_types(self, ins, outs)

    def infer_shape(self, ins, outs):
        d = ins[0]
        if d is None:
            return [None], [None], []
        d = tuple(d)
        if len(d) < 4:
            raise ShapeError(f"data {fmt_shape(d)} must be 4-D (batch, channel, y, x)")
        out = (1, d[2] * d[3] * self.num_anchors(), 4) if d[2] and d[3] else None
        return [d], [out], []

    def anchors(self, height: int, width: int) -> np.ndarray:
        """The anchors as MXNet's float32 loop computes them: (H * W * anchors, 4)."""
        f = np.float32
        step_y, step_x = f(self.steps[0]), f(self.steps[1])
        if step_y <= 0 or step_x <= 0:
            step_y, step_x = f(1) / f(height), f(1) / f(width)
        ratio_roots = np.sqrt(np.asarray(self.ratios, np.float32))
        sizes = np.asarray(self.sizes, np.float32)
        # (size, sqrt(ratio)) per anchor at one position, in MXNet's order
        pairs = [(s, ratio_roots[0]) for s in sizes] + [(sizes[0], r) for r in ratio_roots[1:]]
        s = np.array([p[0] for p in pairs], np.float32)
        r = np.array([p[1] for p in pairs], np.float32)
        half_w = s * f(height) / f(width) * r / f(2)
        half_h = s / r / f(2)
        cy = (np.arange(height, dtype=np.float32) + f(self.offsets[0])) * step_y
        cx = (np.arange(width, dtype=np.float32) + f(self.offsets[1])) * step_x
        cy, cx = cy[:, None, None], cx[None, :, None]
        box = np.stack(np.broadcast_arrays(cx - half_w, cy - half_h, cx + half_w, cy + half_h), axis=-1)
        box = box.reshape(-1, 4)
        return np.clip(box, f(0), f(1)) if self.clip else box

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [jnp.asarray(self.anchors(x.shape[2], x.shape[3])[None], x.dtype)], aux


# ---------------------------------------------------------------------------- box_iou
@register
@frozen
class box_iou(Op):
    """Pairwise IoU of boxes lhs (..., 4) and rhs (..., 4): shape lhs.shape[:-1] +
    rhs.shape[:-1], zero where boxes do not overlap. Zero gradients, as MXNet."""
    name = "_contrib_box_iou"
    format: BoxFormat = "corner"

    def arguments(self):
        return ("lhs", "rhs")

    def infer_type(self, ins, outs):
        return float_types(self, ins, outs)

    def infer_shape(self, ins, outs):
        for what, s in zip(("lhs", "rhs"), ins):
            _check_batched(what, s)
            if s is not None and s[-1] and s[-1] != 4:
                raise ShapeError(f"the last dim of {what} {fmt_shape(s)} must be 4 (one box)")
        lhs, rhs = ins
        out = None if lhs is None or rhs is None else tuple(lhs[:-1]) + tuple(rhs[:-1])
        return [lhs, rhs], [out], []

    def lower(self, ins, aux, is_train, key):
        lhs, rhs = (jax.lax.stop_gradient(v) for v in ins)
        a = lhs.reshape(lhs.shape[:-1] + (1,) * (rhs.ndim - 1) + (4,))
        inter = _overlap(a, rhs, self.format)
        la, ra = _area(a, self.format), _area(rhs, self.format)
        iou = _pick(inter <= 0, jnp.zeros_like(inter), inter / (la + ra - inter))
        return [iou], aux


# ---------------------------------------------------------------------------- box_nms
def _reformat_impl(box, fmt_from):
    """Kept rows' coordinates converted from `fmt_from` to the other format, except rows whose
    first coordinate is negative (MXNet skips those: its -1 filler, and boxes left of 0)."""
    a, b, c, d = (box[..., i] for i in range(4))
    if fmt_from == "corner":
        new = jnp.stack([(a + c) / 2, (b + d) / 2, c - a, d - b], axis=-1)
    else:
        new = jnp.stack([a - c / 2, b - d / 2, a + c / 2, b + d / 2], axis=-1)
    return jnp.where((a < 0)[..., None], box, new)


_reformat = jax.custom_vjp(_reformat_impl, nondiff_argnums=(1,))
# the gradient passes straight through: MXNet's backward ignores the conversion
_reformat.defvjp(lambda box, fmt_from: (_reformat_impl(box, fmt_from), None),
                 lambda fmt_from, res, g: (g,))


@register(aliases=("_contrib_box_non_maximum_suppression",))
@frozen
class box_nms(Op):
    """Non-maximum suppression over data (..., N, W), each row a box [.., score, .., 4
    coordinates, ..] (leading dims are batches). Rows with score > valid_thresh (and, with
    id_index >= 0, id != background_id) are sorted by score (ties: input order); of the first
    `topk` of them, each suppresses the later ones of its class (any class with
    force_suppress or id_index < 0) that overlap it with IoU > overlap_thresh. Output: the
    kept rows in that order, then rows of -1; coordinates converted to out_format. topk=0
    returns data unchanged. Gradient: each kept row's head gradient goes back to the row it
    came from (zeros elsewhere), ignoring the format conversion, as MXNet."""
    name = "_contrib_box_nms"
    overlap_thresh: float = 0.5
    valid_thresh: float = 0.0
    topk: int = -1
    coord_start: int = 2
    score_index: int = 1
    id_index: int = -1
    background_id: int = -1
    force_suppress: bool = False
    in_format: BoxFormat = "corner"
    out_format: BoxFormat = "corner"

    def __post_init__(self):
        coords = range(self.coord_start, self.coord_start + 4)
        if self.coord_start < 0:
            raise ValueError(f"coord_start={self.coord_start} must be non-negative")
        if self.score_index < 0:
            raise ValueError(f"score_index={self.score_index} must be non-negative")
        if self.score_index in coords:
            raise ValueError(f"score_index={self.score_index} falls in the coordinates "
                             f"{self.coord_start}..{self.coord_start + 3}")
        if self.id_index >= 0:
            if self.id_index in coords:
                raise ValueError(f"id_index={self.id_index} falls in the coordinates "
                                 f"{self.coord_start}..{self.coord_start + 3}")
            if self.id_index == self.score_index:
                raise ValueError(f"id_index={self.id_index} is also score_index")

    def outputs(self):
        return ("output0",)

    def total_outputs(self):
        return 2  # MXNet's hidden second output records each kept row's input position

    def infer_type(self, ins, outs):
        return float_types(self, ins, outs)

    def infer_shape(self, ins, outs):
        d, o = ins[0], outs[0]
        if d is not None and o is not None:
            if len(d) != len(o) or any(a and b and a != b for a, b in zip(d, o)):
                raise ShapeError(f"the output {fmt_shape(o)} must have data's shape {fmt_shape(d)}")
            d = tuple(a or b for a, b in zip(d, o))
        d = d if d is not None else o
        if d is None:
            return [None], [None], []
        d = tuple(d)
        _check_batched("data", d)
        width = d[-1]
        if width:
            least = 6 if self.id_index >= 0 else 5
            if width < least:
                raise ShapeError(f"data {fmt_shape(d)}: rows of {width} values are too narrow: they need a "
                                 f"score, 4 coordinates{' and an id' if least == 6 else ''} (>= {least})")
            for what, last in [("score_index", self.score_index), ("coordinates' end", self.coord_start + 3),
                               ("id_index", self.id_index)]:
                if last >= width:
                    raise ShapeError(f"{what} {last} is out of range for rows of {width} values "
                                     f"(data {fmt_shape(d)})")
        return [d], [d], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        shape = x.shape
        n, width = shape[-2], shape[-1]
        k = n if self.topk < 0 else min(n, self.topk)
        if k < 1:
            return [x], aux
        data = x.reshape((-1, n, width))
        out = jax.vmap(self._one)(data, jax.lax.stop_gradient(data))
        return [out.reshape(shape)], aux

    def _one(self, rows, consts):
        """NMS of one batch: rows (N, W) (differentiable), consts the same, not."""
        n = rows.shape[0]
        k = n if self.topk < 0 else min(n, self.topk)
        dt = consts.dtype
        score = consts[:, self.score_index]
        valid = score > _param(self.valid_thresh, dt)
        if self.id_index >= 0:
            valid &= consts[:, self.id_index] != jnp.asarray(self.background_id, dt)
        neg = -score
        neg = jnp.where(neg == 0, jnp.zeros_like(neg), neg)  # -0.0 and 0.0 tie, as in C++
        idx = jnp.arange(n, dtype=jnp.int32)
        _, _, order = jax.lax.sort((jnp.where(valid, 0, 1).astype(jnp.int32), neg, idx), num_keys=3)
        alive = valid[order][:k]
        cand = consts[order[:k]]
        box = cand[:, self.coord_start:self.coord_start + 4]
        area = _area(box, self.in_format)
        cls = cand[:, self.id_index].astype(jnp.int32) if self.id_index >= 0 and not self.force_suppress \
            else None
        thresh = _param(self.overlap_thresh, dt)
        later = jnp.arange(k)

        def step(ref, alive):
            inter = _overlap(box[ref], box, self.in_format)
            iou = inter / (area[ref] + area - inter)
            hit = (iou > thresh) & (later > ref) & alive[ref]
            if cls is not None:
                hit &= cls == cls[ref]
            return alive & ~hit

        alive = jax.lax.fori_loop(0, k, step, alive)
        kept = jnp.sum(alive)
        # the kept positions first, in score order (a stable partition)
        perm = jax.lax.sort((jnp.where(alive, 0, 1).astype(jnp.int32), later.astype(jnp.int32)), num_keys=2)[1]
        src = jnp.concatenate([order[:k][perm], jnp.zeros((n - k,), jnp.int32)])
        slot = jnp.arange(n) < kept
        picked = rows[src]
        if self.in_format != self.out_format:
            c = self.coord_start
            picked = picked.at[:, c:c + 4].set(_reformat(picked[:, c:c + 4], self.in_format))
        return jnp.where(slot[:, None], picked, jnp.full_like(picked, -1))


# ---------------------------------------------------------------------------- bipartite_matching
@register
@frozen
class bipartite_matching(Op):
    """Greedy bipartite matching of a score matrix data (..., R, C): repeatedly the best
    score (largest; `is_ascend`: smallest; ties: first in row-major order) whose row and
    column are both unmatched is matched, while it beats `threshold` (> or, ascending, <).
    With topk > 0 the matching stops after topk + 1 matches (MXNet 1.9.1 counts so).
    Outputs: each row's column (..., R) and each column's row (..., C), -1 where unmatched,
    in data's dtype. Zero gradients, as MXNet."""
    name = "_contrib_bipartite_matching"
    mxnet_order = ("is_ascend", "threshold", "topk")
    threshold: float
    is_ascend: bool = False
    topk: int = -1

    def outputs(self):
        return ("output0", "output1")

    def infer_type(self, ins, outs):
        return float_types(self, ins, outs)

    def infer_shape(self, ins, outs):
        d = ins[0]
        if d is None:
            return [None], [None, None], []
        d = tuple(d)
        _check_batched("data", d)
        return [d], [d[:-1], d[:-2] + d[-1:]], []

    def lower(self, ins, aux, is_train, key):
        x = jax.lax.stop_gradient(ins[0])
        r, c = x.shape[-2:]
        rows, cols = jax.vmap(lambda s: self._one(s, r, c))(x.reshape((-1, r * c)))
        return [rows.reshape(x.shape[:-1]).astype(x.dtype),
                cols.reshape(x.shape[:-2] + (c,)).astype(x.dtype)], aux

    def _one(self, s, r, c):
        thresh = _param(self.threshold, s.dtype)
        fill = jnp.asarray(np.inf if self.is_ascend else -np.inf, s.dtype)
        limit = self.topk + 1 if self.topk > 0 else min(r, c)

        def step(_, state):
            rm, cm, done = state
            free = ((rm == -1)[:, None] & (cm == -1)[None, :]).reshape(-1)
            masked = jnp.where(free, s, fill)
            j = (jnp.argmin(masked) if self.is_ascend else jnp.argmax(masked)).astype(jnp.int32)
            ok = free[j] & ((s[j] < thresh) if self.is_ascend else (s[j] > thresh)) & ~done
            i, jc = j // c, j % c
            rm = jnp.where(ok, rm.at[i].set(jc), rm)
            cm = jnp.where(ok, cm.at[jc].set(i), cm)
            return rm, cm, done | ~ok

        init = (jnp.full((r,), -1, jnp.int32), jnp.full((c,), -1, jnp.int32), jnp.zeros((), bool))
        rm, cm, _ = jax.lax.fori_loop(0, min(limit, r, c), step, init)
        return rm, cm
