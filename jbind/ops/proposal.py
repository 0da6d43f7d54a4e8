"""Region proposals of Faster R-CNN's RPN: MXNet 1.9.1's contrib.Proposal (one image) and
contrib.MultiProposal (a batch), src/operator/contrib/proposal.cc and multi_proposal.cc.

For each image: the anchors (one per ratio x scale, as MXNet's GenerateAnchors builds them
from a feature_stride-wide base box) are shifted to every feature-map cell; each anchor i
of cell (h, w), at row h * W * A + w * A + i, takes the foreground score
cls_prob[b, A + i, h, w] and is moved by bbox_pred[b, 4i:4i+4, h, w] (centre / log-size
deltas, or corner deltas with iou_loss) and clipped to the image. Cells beyond the image's
real size (im_info rows / feature_stride) and boxes narrower or lower than
rpn_min_size * im_info[b, 2] get score -1 (the latter also grow by that size). The boxes
are sorted by score (stable, highest first), the first rpn_pre_nms_top_n kept, and greedy
non-maximum suppression (IoU > threshold, MXNet's +1 pixel areas) keeps up to
rpn_post_nms_top_n of them; the output repeats the kept boxes cyclically to fill
rpn_post_nms_top_n rows [batch index, x1, y1, x2, y2], and the optional second output
their scores. All in float32, as MXNet's kernels; the gradient is zero, as MXNet's.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import ShapeError, fmt_shape
from ._base import Op, frozen, register


def anchors(stride: int, ratios, scales) -> np.ndarray:
    """(len(ratios) * len(scales), 4) base anchors around a stride-wide box at the origin,
    ratio-major, in MXNet's float32 arithmetic."""
    f = np.float32
    w = h = f(stride)
    x_ctr = y_ctr = f(0.5) * (w - f(1))
    rows = []
    for r in ratios:
        for s in scales:
            size_ratios = np.floor(w * h / f(r))
            new_w = np.floor(np.sqrt(size_ratios) + f(0.5)) * f(s)
            new_h = np.floor(new_w / f(s) * f(r) + f(0.5)) * f(s)
            rows.append([x_ctr - f(0.5) * (new_w - 1), y_ctr - f(0.5) * (new_h - 1),
                         x_ctr + f(0.5) * (new_w - 1), y_ctr + f(0.5) * (new_h - 1)])
    return np.asarray(rows, np.float32)


@frozen
class _ProposalBase(Op):
    rpn_pre_nms_top_n: int = 6000
    rpn_post_nms_top_n: int = 300
    threshold: float = 0.7
    rpn_min_size: int = 16
    scales: tuple[float, ...] = (4.0, 8.0, 16.0, 32.0)
    ratios: tuple[float, ...] = (0.5, 1.0, 2.0)
    feature_stride: int = 16
    output_score: bool = False
    iou_loss: bool = False

    def __post_init__(self):
        if not self.scales or not self.ratios:
            raise ValueError(f"scales={self.scales} and ratios={self.ratios} must not be empty")
        if self.rpn_post_nms_top_n < 1:
            raise ValueError(f"rpn_post_nms_top_n={self.rpn_post_nms_top_n} must be positive")
        if self.feature_stride < 1:
            raise ValueError(f"feature_stride={self.feature_stride} must be positive")

    def arguments(self):
        return ("cls_prob", "bbox_pred", "im_info")

    def outputs(self):
        return ("output", "score") if self.output_score else ("output",)

    def total_outputs(self):
        return 2

    def infer_type(self, ins, outs):
        for name, t in zip(self.arguments(), ins):
            if t is not None and np.dtype(t) != np.float32:
                raise ValueError(f"{name} is {np.dtype(t).name}: {self.name} takes float32 inputs")
        return [np.dtype(np.float32)] * 3, [np.dtype(np.float32)] * len(self.outputs()), []

    def infer_shape(self, ins, outs):
        cls, bbox, info = ins
        a = len(self.scales) * len(self.ratios)
        if cls is None:
            return [cls, bbox, info], [None] * len(self.outputs()), []
        if len(cls) != 4:
            raise ShapeError(f"cls_prob {fmt_shape(cls)} must be 4-D (batch, 2 * anchors, height, width)")
        if cls[1] and cls[1] != 2 * a:
            raise ShapeError(f"cls_prob {fmt_shape(cls)} must have 2 * len(scales) * len(ratios) = {2 * a} "
                             "channels (background and foreground score of each anchor)")
        n = cls[0]
        self._check_batch(n)
        want = {"bbox_pred": (n, 2 * cls[1], cls[2], cls[3]), "im_info": (n, 3)}
        for name, got in zip(("bbox_pred", "im_info"), (bbox, info)):
            w = want[name]
            if got is not None and (len(got) != len(w) or any(x and y and x != y for x, y in zip(got, w))):
                raise ShapeError(f"{name} {fmt_shape(got)} must be {fmt_shape(w)} for cls_prob {fmt_shape(cls)}")
        rows = (n or 0) * self.rpn_post_nms_top_n if self.batched else self.rpn_post_nms_top_n
        rows = rows or None
        outs = [(rows, 5), (rows, 1)][:len(self.outputs())] if rows else [None] * len(self.outputs())
        return [cls, want["bbox_pred"], want["im_info"]], outs, []

    def _check_batch(self, n):
        if not self.batched and n and n != 1:
            raise ShapeError(f"cls_prob has batch {n}: Proposal takes one image (use MultiProposal for a batch)")

    def lower(self, ins, aux, is_train, key):
        cls, bbox, info = (jax.lax.stop_gradient(x.astype(jnp.float32)) for x in ins)
        n, c, h, w = cls.shape
        a = c // 2
        base = jnp.asarray(anchors(self.feature_stride, self.ratios, self.scales))
        # built from iotas inside the program: large constant arrays make XLA's compile slow
        ys = jax.lax.broadcasted_iota(jnp.int32, (h, w, a), 0).reshape(-1)
        xs = jax.lax.broadcasted_iota(jnp.int32, (h, w, a), 1).reshape(-1)
        stride = jnp.float32(self.feature_stride)
        sx, sy = xs.astype(jnp.float32) * stride, ys.astype(jnp.float32) * stride
        boxes = jnp.tile(base, (h * w, 1)) + jnp.stack([sx, sy, sx, sy], 1)
        cells = (ys, xs)
        rois, scores = jax.vmap(lambda s, d, i: self._one(boxes, cells, s, d, i))(cls[:, a:], bbox, info)
        batch = jnp.repeat(jnp.arange(n, dtype=jnp.float32) if self.batched else jnp.zeros((n,), jnp.float32),
                           self.rpn_post_nms_top_n)
        rois = jnp.concatenate([batch[:, None], rois.reshape(-1, 4)], axis=1)
        outs = [rois, scores.reshape(-1, 1)]
        return outs[:len(self.outputs())], aux

    def _one(self, anchor, cells, score, delta, info):
        """Proposals of one image: score (A, H, W), delta (4A, H, W), info (3,) ->
        (post_nms_top_n, 4) boxes and (post_nms_top_n,) scores."""
        a, h, w = score.shape
        f32 = jnp.float32
        one = f32(1)
        s = score.transpose(1, 2, 0).reshape(-1)
        d = delta.reshape(a, 4, h, w).transpose(2, 3, 0, 1).reshape(-1, 4)
        im_h, im_w = info[0], info[1]
        if self.iou_loss:
            x1, y1, x2, y2 = (anchor[:, k] + d[:, k] for k in range(4))
        else:
            bw = anchor[:, 2] - anchor[:, 0] + one
            bh = anchor[:, 3] - anchor[:, 1] + one
            cx = anchor[:, 0] + f32(0.5) * (bw - one)
            cy = anchor[:, 1] + f32(0.5) * (bh - one)
            px, py = d[:, 0] * bw + cx, d[:, 1] * bh + cy
            pw, ph = jnp.exp(d[:, 2]) * bw, jnp.exp(d[:, 3]) * bh
            x1, y1 = px - f32(0.5) * (pw - one), py - f32(0.5) * (ph - one)
            x2, y2 = px + f32(0.5) * (pw - one), py + f32(0.5) * (ph - one)
        x1, x2 = (jnp.clip(v, 0, im_w - one) for v in (x1, x2))
        y1, y2 = (jnp.clip(v, 0, im_h - one) for v in (y1, y2))
        stride = f32(self.feature_stride)
        real_h = jnp.trunc(im_h / stride).astype(jnp.int32)
        real_w = jnp.trunc(im_w / stride).astype(jnp.int32)
        s = jnp.where((cells[0] >= real_h) | (cells[1] >= real_w), -one, s)
        min_size = f32(self.rpn_min_size) * info[2]
        small = (x2 - x1 + one < min_size) | (y2 - y1 + one < min_size)
        half = jnp.where(small, min_size / 2, f32(0))
        x1, y1, x2, y2 = x1 - half, y1 - half, x2 + half, y2 + half
        s = jnp.where(small, -one, s)

        count = s.shape[0]
        pre = min(self.rpn_pre_nms_top_n, count) if self.rpn_pre_nms_top_n > 0 else count
        post = min(self.rpn_post_nms_top_n, pre)
        neg = jnp.where(s == 0, f32(0), -s)  # -0.0 and 0.0 tie, as in C++
        order = jax.lax.sort((neg, jnp.arange(count, dtype=jnp.int32)), num_keys=1, is_stable=True)[1][:pre]
        box = jnp.stack([x1, y1, x2, y2], 1)[order]
        keep, kept = _nms(box, jnp.float32(np.float32(self.threshold)), post)
        slot = jnp.arange(self.rpn_post_nms_top_n)
        src = keep[jnp.where(slot < kept, slot, slot % kept)]
        return box[src], s[order][src]


def _nms(box, thresh, limit):
    """MXNet's greedy NMS over boxes sorted by score: -> (indices of the kept boxes, in
    order, padded to `limit`; how many were kept). Stops once `limit` are kept."""
    n = box.shape[0]
    one = jnp.float32(1)
    area = (box[:, 2] - box[:, 0] + one) * (box[:, 3] - box[:, 1] + one)
    idx = jnp.arange(n, dtype=jnp.int32)

    def cond(state):
        i, _, kept, _ = state
        return (i < n) & (kept < limit)

    def body(state):
        i, alive, kept, keep = state
        b = box[i]
        w = jnp.maximum(f0, jnp.minimum(b[2], box[:, 2]) - jnp.maximum(b[0], box[:, 0]) + one)
        h = jnp.maximum(f0, jnp.minimum(b[3], box[:, 3]) - jnp.maximum(b[1], box[:, 1]) + one)
        inter = w * h
        ovr = inter / (area[i] + area - inter)
        alive = alive & ~((idx > i) & (ovr > thresh))
        keep = keep.at[kept].set(i)
        nxt = jnp.argmax(alive & (idx > i)).astype(jnp.int32)  # the next box not suppressed (0: none)
        nxt = jnp.where(alive[nxt] & (nxt > i), nxt, jnp.int32(n))
        return nxt, alive, kept + 1, keep

    f0 = jnp.float32(0)
    state = (jnp.int32(0), jnp.ones((n,), bool), jnp.int32(0), jnp.zeros((limit,), jnp.int32))
    _, _, kept, keep = jax.lax.while_loop(cond, body, state)
    return keep, kept


@register
@frozen
class _contrib_Proposal(_ProposalBase):
    """Region proposals of one image (cls_prob's batch must be 1): output
    (rpn_post_nms_top_n, 5) rows [0, x1, y1, x2, y2], score (rpn_post_nms_top_n, 1)."""
    batched = False


@register
@frozen
class _contrib_MultiProposal(_ProposalBase):
    """Region proposals of each image of a batch of N: output (N * rpn_post_nms_top_n, 5)
    rows [image index, x1, y1, x2, y2], score (N * rpn_post_nms_top_n, 1)."""
    batched = True
