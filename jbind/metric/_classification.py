"""Classification metrics: accuracy, top-k, F1, MCC, perplexity, cross-entropy."""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy

from ..ndarray import NDArray
from ..ndarray.ndarray import _device_of
from ._base import EvalMetric, _np, on_host, alias, check_label_shapes, register


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of correct predictions; predictions of another shape are argmax'ed over `axis`."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _np(label), _np(pred)
            if pred.shape != label.shape:
                pred = numpy.argmax(pred, axis=self.axis)
            pred = pred.astype("int32").ravel()
            label = label.astype("int32").ravel()
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), len(pred))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the `top_k` highest predictions (top_k > 1)."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        if not self.top_k > 1:
            raise ValueError("Please use Accuracy if top_k is no more than 1")
        self.name += "_%d" % self.top_k

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            pred = _np(pred).astype("float32")
            if pred.ndim > 2:
                raise ValueError("Predictions should be no more than 2 dims")
            pred = numpy.argpartition(pred, -self.top_k)
            label = _np(label).astype("int32")
            check_label_shapes(label, pred)
            correct = 0
            if pred.ndim == 1:
                correct = (pred.flat == label.flat).sum()
            else:
                num_classes = pred.shape[1]
                for j in range(min(num_classes, self.top_k)):
                    correct += (pred[:, num_classes - 1 - j].flat == label.flat).sum()
            self._add(int(correct), pred.shape[0])
            if pred.ndim == 1:  # MXNet counts 1-D hits locally only
                self.global_sum_metric -= int(correct)


class _BinaryStats:
    """True/false positive/negative counts, local and global (MXNet's _BinaryClassificationMetrics)."""

    _KEYS = ("tp", "fp", "fn", "tn")

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred) -> None:
        pred, label = _np(pred), _np(label).astype("int32")
        pred_label = numpy.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError("F1/MCC currently only supports binary classification.")
        pt, lt = pred_label == 1, label == 1
        for k, v in zip(self._KEYS, ((pt & lt).sum(), (pt & ~lt).sum(), (~pt & lt).sum(), (~pt & ~lt).sum())):
            self.local[k] += int(v)
            self.glob[k] += int(v)

    @staticmethod
    def fscore(c) -> float:
        precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] > 0 else 0.0
        recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] > 0 else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0

    @staticmethod
    def matthewscc(c) -> float:
        if not sum(c.values()):
            return 0.0
        tp, fp, fn, tn = (float(c[k]) for k in ("tp", "fp", "fn", "tn"))
        denom = 1.0
        for t in filter(lambda t: t != 0.0, [tp + fp, tp + fn, tn + fp, tn + fn]):
            denom *= t
        return (tp * tn - fp * fn) / math.sqrt(denom)

    def local_reset_stats(self) -> None:
        self.local = dict.fromkeys(self._KEYS, 0)

    def reset_stats(self) -> None:
        self.local_reset_stats()
        self.glob = dict.fromkeys(self._KEYS, 0)


class _BinaryMetric(EvalMetric):
    """F1 / MCC: 'macro' averages per batch, 'micro' computes over everything seen."""

    _score = None

    def __init__(self, name, output_names=None, label_names=None, average="macro"):
        self.average = average
        self.metrics = _BinaryStats()
        EvalMetric.__init__(self, name=name, output_names=output_names, label_names=label_names,
                            has_global_stats=True)

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self.metrics.update_binary_stats(label, pred)
        m, score = self.metrics, type(self)._score
        if self.average == "macro":
            self._add(score(m.local), 1)
            self.global_sum_metric += score(m.glob) - score(m.local)
            m.reset_stats()
        else:
            self.sum_metric = score(m.local) * sum(m.local.values())
            self.global_sum_metric = score(m.glob) * sum(m.glob.values())
            self.num_inst = sum(m.local.values())
            self.global_num_inst = sum(m.glob.values())

    def reset(self) -> None:
        super().reset()
        self.metrics.reset_stats()

    def reset_local(self) -> None:
        super().reset_local()
        self.metrics.local_reset_stats()


@register
class F1(_BinaryMetric):
    """F1 score of a binary classification (predictions are (N, 2) scores)."""

    _score = staticmethod(_BinaryStats.fscore)

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classification."""

    _score = staticmethod(_BinaryStats.matthewscc)

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@functools.partial(jax.jit, static_argnums=(2, 3))
def _perplexity_terms(pred, label, axis, use_ignore, ignore_label):
    """(sum of log max(1e-10, p[label]) over kept labels, number ignored), float32 as MXNet."""
    label = label.reshape(-1)
    pred = jnp.moveaxis(pred, axis, -1).reshape(label.size, -1)
    idx = jnp.clip(label.astype(jnp.int32), 0, pred.shape[1] - 1)
    picked = jnp.take_along_axis(pred, idx[:, None], axis=1)[:, 0]
    if use_ignore:
        ignore = (label == ignore_label).astype(picked.dtype)
        picked = picked * (1 - ignore) + ignore
        n_ignored = ignore.sum(dtype=jnp.float32)
    else:
        n_ignored = jnp.float32(0)
    return jnp.log(jnp.maximum(jnp.float32(1e-10), picked)).sum(dtype=jnp.float32), n_ignored


@register
class Perplexity(EvalMetric):
    """exp(mean -log p(label)), skipping labels equal to `ignore_label` (None: keep all).

    `pred` holds probabilities along `axis`; p is floored at 1e-10, sums are float32 as
    MXNet's NDArray ops.
    """

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None, label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds) -> None:
        if len(labels) != len(preds):
            raise ValueError(f"{len(labels)} labels but {len(preds)} predictions")
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            if isinstance(pred, NDArray) and not on_host(pred) and len(pred._data.devices()) == 1:
                # Pick on the device: only one probability per label comes back, not the
                # whole (batch x vocabulary) matrix. (In host memory numpy reads it in place.)
                lab = label._data if isinstance(label, NDArray) else numpy.asarray(label)
                lab = jax.device_put(lab, _device_of(pred._data))  # labels are in host memory
                if lab.size != pred.size / pred.shape[self.axis]:
                    raise ValueError(f"shape mismatch: {lab.shape} vs. {pred.shape}")
                ign = numpy.float32(0 if self.ignore_label is None else self.ignore_label)
                terms = _perplexity_terms(pred._data, lab, self.axis % pred.ndim, self.ignore_label is not None, ign)
                l_sum, n_ignored = (float(x) for x in jax.device_get(terms))
                loss -= l_sum
                num += lab.size - int(n_ignored)
                continue
            label, pred = _np(label), _np(pred)
            if label.size != pred.size / pred.shape[-1]:
                raise ValueError(f"shape mismatch: {label.shape} vs. {pred.shape}")
            label = label.reshape((label.size,))
            pred = numpy.moveaxis(pred, self.axis, -1).reshape(label.size, -1)
            picked = pred[numpy.arange(label.size), numpy.clip(label.astype("int64"), 0, pred.shape[1] - 1)]
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(picked.dtype)
                num -= float(ignore.sum(dtype=numpy.float32))
                picked = picked * (1 - ignore) + ignore
            loss -= float(numpy.log(numpy.maximum(numpy.float32(1e-10), picked)).sum(dtype=numpy.float32))
            num += picked.size
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


@register
@alias("ce")
class CrossEntropy(EvalMetric):
    """Mean -log(p[label] + eps) over samples; `pred` is (N, classes) probabilities."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _np(label).ravel(), _np(pred)
            if label.shape[0] != pred.shape[0]:
                raise ValueError(f"{label.shape[0]} labels but {pred.shape[0]} predictions")
            prob = pred[numpy.arange(label.shape[0]), numpy.int64(label)]
            self._add((-numpy.log(prob + self.eps)).sum(), label.shape[0])


@register
@alias("nll_loss")
class NegativeLogLikelihood(CrossEntropy):
    """Same computation as CrossEntropy, named 'nll-loss'."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps=eps, name=name, output_names=output_names, label_names=label_names)


@register
class PCC(EvalMetric):
    """The multi-class Matthews correlation coefficient (MXNet's PCC) of a confusion
    matrix accumulated over updates: (n * trace - sum_k rows_k * cols_k) /
    sqrt(sum_k rows_k (n - rows_k) * sum_k cols_k (n - cols_k)); NaN when either sum is 0.
    Predictions are class scores (arg-maxed on axis 1) or class indices shaped as the labels.
    `get()` is the coefficient of the matrix since `reset_local()`, `get_global()` since `reset()`."""

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    @staticmethod
    def _pcc(cmat) -> float:
        n = cmat.sum()
        x, y = cmat.sum(axis=1), cmat.sum(axis=0)
        cov_xx, cov_yy = numpy.sum(x * (n - x)), numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        return float(numpy.sum(cmat.diagonal() * n - x * y) / (cov_xx * cov_yy) ** 0.5)

    def _grow(self, k):
        pad = ((0, k - self.k), (0, k - self.k))
        self.lcm, self.gcm = numpy.pad(self.lcm, pad), numpy.pad(self.gcm, pad)
        self.k = k

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _np(label).astype(numpy.int64).reshape(-1)
            pred = _np(pred)
            pred = (pred.argmax(axis=1) if pred.size != label.size else pred).astype(numpy.int64).reshape(-1)
            n = int(max(pred.max(initial=0), label.max(initial=0))) + 1
            if n > self.k:
                self._grow(n)
            bcm = numpy.zeros((self.k, self.k))
            numpy.add.at(bcm, (pred, label), 1)
            self.lcm += bcm
            self.gcm += bcm
            self.num_inst += 1
            self.global_num_inst += 1
        self.sum_metric = self._pcc(self.lcm) * self.num_inst
        self.global_sum_metric = self._pcc(self.gcm) * self.global_num_inst

    def reset(self) -> None:
        super().reset()
        self.gcm = numpy.zeros((self.k, self.k))
        self.lcm = numpy.zeros((self.k, self.k))

    def reset_local(self) -> None:
        super().reset_local()
        self.lcm = numpy.zeros((self.k, self.k))
