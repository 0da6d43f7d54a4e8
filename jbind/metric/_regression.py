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
    """Pearson correlation of each batch ('macro' average; 'micro' is not supported)."""

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        if average != "macro":
            raise NotImplementedError("PearsonCorrelation: only average='macro' is supported")
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, labels, preds) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _np(label), _np(pred)
            check_label_shapes(label, pred, False, True)
            corr = numpy.corrcoef(pred.ravel().astype(numpy.float64), label.ravel().astype(numpy.float64))[0, 1]
            self._add(corr, 1)
