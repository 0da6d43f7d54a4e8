"""Regression metrics: MAE, MSE, RMSE, Pearson correlation."""
from __future__ import annotations

import numpy

from ._base import EvalMetric, _np, alias, check_label_shapes, register


class _Regression(EvalMetric):
    """Per-batch mean error over (N, 1)-shaped label and prediction; one instance per batch."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _np(label), _np(pred)
            label = label.reshape(label.shape[0], 1) if label.ndim == 1 else label
            pred = pred.reshape(pred.shape[0], 1) if pred.ndim == 1 else pred
            self._add(self._err(label, pred), 1)


@register
class MAE(_Regression):
    """Mean absolute error, averaged over batches."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _err(label, pred):
        return numpy.abs(label - pred).mean()


@register
class MSE(_Regression):
    """Mean squared error, averaged over batches."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _err(label, pred):
        return ((label - pred) ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error of each batch, averaged over batches."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _err(label, pred):
        return numpy.sqrt(((label - pred) ** 2.0).mean())


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation: 'macro' averages each batch's; 'micro' is one correlation over
    every batch, streamed as MXNet 1.9.1 streams it (Welford means and squared deviations;
    the co-moment of each batch taken against the label mean after the batch and the
    prediction mean before it)."""

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        if average not in ("macro", "micro"):
            raise ValueError(f"PearsonCorrelation: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def reset(self) -> None:
        super().reset()
        # count, mean, sum of squared deviations of labels and of predictions; co-moment
        self._label_stats = self._pred_stats = (0, 0.0, 0.0)
        self._comoment = 0.0

    @staticmethod
    def _welford(values, stats):
        count, mean, m2 = stats
        count += len(values)
        delta = values - mean
        mean += numpy.sum(delta / count)
        return count, mean, m2 + numpy.sum(delta * (values - mean))

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _np(label), _np(pred)
            check_label_shapes(label, pred, False, True)
            label, pred = label.ravel().astype(numpy.float64), pred.ravel().astype(numpy.float64)
            if self.average == "macro":
                self._add(numpy.corrcoef(pred, label)[0, 1], 1)
                continue
            self._label_stats = self._welford(label, self._label_stats)
            self._comoment += numpy.sum((label - self._label_stats[1]) * (pred - self._pred_stats[1]))
            self._pred_stats = self._welford(pred, self._pred_stats)
            self.num_inst += 1
            self.global_num_inst += 1

    def _micro(self):
        n = self._label_stats[0]
        return self._comoment / ((n - 1) * numpy.sqrt(self._pred_stats[2] / (n - 1)) *
                                 numpy.sqrt(self._label_stats[2] / (n - 1)))

    def get(self):
        if self.average == "macro" or self.num_inst == 0:
            return super().get()
        return (self.name, self._micro())

    def get_global(self):
        if self.average == "macro" or self.global_num_inst == 0:
            return super().get_global()
        return (self.name, self._micro())
