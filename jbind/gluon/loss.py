"""`mx.gluon.loss`: MXNet 1.9.1's losses as HybridBlocks.

Each loss takes `(pred, label[, sample_weight])`; `sample_weight` is broadcast-multiplied
into the elementwise loss, the constant `weight` scales it, and the result is the mean over
every axis except `batch_axis` (one value per sample), unless a class says otherwise.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import ndarray as _nd
from ..base import MXNetError
from .block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "CTCLoss", "HuberLoss", "HingeLoss",
           "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss", "CosineEmbeddingLoss",
           "SDMLLoss"]


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    """`loss` times `sample_weight` (broadcast) and the number `weight`."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, numbers.Number):
            raise MXNetError(f"loss weight must be a number, got {type(weight).__name__}")
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    """`x` reshaped to `y`'s shape."""
    return x.reshape(y.shape) if F is _nd else F.reshape_like(x, y)


class Loss(HybridBlock):
    """Base class of the losses: `weight` (a number or None) scales the loss; `batch_axis`
    is the axis kept by the final mean."""

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def _mean(self, F, loss):
        return F.mean(loss, axis=self._batch_axis, exclude=True)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} defines no hybrid_forward")


class L2Loss(Loss):
    """`weight / 2 * (label - pred) ** 2`, averaged per sample."""

    def __init__(self, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        loss = F.square(_reshape_like(F, label, pred) - pred)
        return self._mean(F, _apply_weighting(F, loss, self._weight / 2, sample_weight))


class L1Loss(Loss):
    """`weight * |label - pred|`, averaged per sample."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        loss = F.abs(_reshape_like(F, label, pred) - pred)
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of `sigmoid(pred)` (or of `pred` itself with `from_sigmoid`)
    against labels in [0, 1]; `pos_weight` (broadcast) weighs the positive term."""

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            softplus = F.Activation(-F.abs(pred), act_type="softrelu")  # log(1 + exp(-|x|)), stable
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (softplus + F.relu(-pred))
        else:
            eps = 1e-12
            pos = F.log(pred + eps) * label
            if pos_weight is not None:
                pos = F.broadcast_mul(pos, pos_weight)
            loss = -(pos + F.log(1. - pred + eps) * (1. - label))
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of `log_softmax(pred, axis)` (or `pred` with `from_logits`) against
    class indices (`sparse_label`) or a distribution shaped like `pred`."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if F is _nd and self._sparse_label and not self._from_logits:
            # one op on NDArrays: its backward needs no (rows x classes) intermediate (ops/indexing.py)
            loss = -_nd.imperative.invoke("_pick_log_softmax", [pred, label], {"axis": self._axis, "keepdims": True})
            return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            loss = -F.sum(pred * _reshape_like(F, label, pred), axis=self._axis, keepdims=True)
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """`label * (log(label) - pred)` with `pred` log-probabilities (`from_logits`, the
    default) or scores that get `log_softmax(axis)` first."""

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class CTCLoss(Loss):
    """Connectionist temporal classification loss (the `CTCLoss` op, blank = the last
    class). `layout` of `pred`: 'NTC' or 'TNC'; `label_layout`: 'NT' or 'TN'. One value per
    sample, not averaged."""

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        if layout not in ("NTC", "TNC"):
            raise MXNetError(f"Only 'NTC' and 'TNC' layouts for pred are supported. Got: {layout}")
        if label_layout not in ("NT", "TN"):
            raise MXNetError(f"Only 'NT' and 'TN' layouts for label are supported. Got: {label_layout}")
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None, sample_weight=None):
        if self._layout == "NTC":
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        extra = [x for x in (pred_lengths, label_lengths) if x is not None]
        loss = F.CTCLoss(pred, label, *extra, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _apply_weighting(F, loss, self._weight, sample_weight)


class HuberLoss(Loss):
    """Smoothed L1: `|d| - rho/2` where `|d| > rho`, else `d**2 / (2 rho)`."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        loss = F.abs(_reshape_like(F, label, pred) - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho, (0.5 / self._rho) * F.square(loss))
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class HingeLoss(Loss):
    """`max(0, margin - pred * label)` with labels -1 / 1."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def _hinge(self, F, pred, label):
        return F.relu(self._margin - pred * _reshape_like(F, label, pred))

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        return self._mean(F, _apply_weighting(F, self._hinge(F, pred, label), self._weight, sample_weight))


class SquaredHingeLoss(HingeLoss):
    """`max(0, margin - pred * label) ** 2` with labels -1 / 1."""

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        loss = F.square(self._hinge(F, pred, label))
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class LogisticLoss(Loss):
    """`log(1 + exp(-pred * label))`; `label_format` 'signed' (-1 / 1) or 'binary' (0 / 1)."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise ValueError(f"label_format can only be signed or binary, received {label_format}.")
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        if self._label_format == "binary":
            label = 2 * label - 1
        loss = F.relu(-pred * label) + F.Activation(-F.abs(pred * label), act_type="softrelu")
        return self._mean(F, _apply_weighting(F, loss, self._weight, sample_weight))


class TripletLoss(Loss):
    """`max(0, |pred - positive|^2 - |pred - negative|^2 + margin)`, the squares summed
    over every axis but `batch_axis`."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative, sample_weight=None):
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred), axis=self._batch_axis, exclude=True)
        return _apply_weighting(F, F.relu(loss + self._margin), self._weight, sample_weight)


class PoissonNLLLoss(Loss):
    """Poisson negative log-likelihood: `exp(pred) - target * pred` (`from_logits`) or
    `pred - target * log(pred + epsilon)`, plus Stirling's term for targets > 1 with
    `compute_full`; the mean over everything (a scalar), as MXNet's."""

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * target * np.pi)
            loss = loss + F.where(target > 1, stirling, F.zeros_like(stirling))
        return F.mean(_apply_weighting(F, loss, self._weight, sample_weight))


class CosineEmbeddingLoss(Loss):
    """`1 - cos(input1, input2)` for label 1, `max(0, cos - margin)` for label -1; shape (N, 1)."""

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        label = label.reshape((-1, 1))
        x_norm = F.norm(input1, axis=-1).reshape((-1, 1))
        y_norm = F.norm(input2, axis=-1).reshape((-1, 1))
        dot = F.sum(input1 * input2, axis=-1).reshape((-1, 1))
        cos = dot / F.maximum(x_norm * y_norm, 1e-12)
        loss = (1 - cos) * (label == 1) + F.relu((label == -1) * (cos - self._margin))
        return _apply_weighting(F, loss, self._weight, sample_weight)


class SDMLLoss(Loss):
    """Smoothed deep metric learning loss over a batch of paired embeddings `(x1, x2)`:
    KL divergence between `softmax(-squared distances)` and smoothed identity labels, times
    the batch size. Needs the batch size, so it runs on NDArrays (not hybridized)."""

    def __init__(self, smoothing_parameter=0.3, weight=1., batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def hybrid_forward(self, F, x1, x2):
        if F is not _nd:
            raise MXNetError("SDMLLoss needs the batch size, which a hybridized (symbolic) forward does not know")
        n = x1.shape[0]
        gold = F.eye(n, ctx=x1.context)
        labels = gold * (1 - self.smoothing_parameter) + (1 - gold) * self.smoothing_parameter / (n - 1)
        dist = F.sum(F.square(F.broadcast_sub(F.expand_dims(x1, 1), F.expand_dims(x2, 0))), axis=2)
        return self.kl_loss(F.log_softmax(-dist, axis=1), labels) * n
