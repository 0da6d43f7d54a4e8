"""Checks the Estimator and its handlers share: metric lists, metrics a handler refers to,
and the metric suggested for a loss."""
from __future__ import annotations

from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ..._util import GluonValueError
from ...loss import SoftmaxCrossEntropyLoss

__all__: list = []


def _check_metrics(metrics) -> list:
    """`metrics` (an EvalMetric, a CompositeEvalMetric, a list of them, or None) as a flat list."""
    if isinstance(metrics, CompositeEvalMetric):
        return [m for metric in metrics.metrics for m in _check_metrics(metric)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    if metrics is None:
        return []
    if not isinstance(metrics, (list, tuple)) or not all(isinstance(m, EvalMetric) for m in metrics):
        raise GluonValueError(f"metrics must be a Metric or a list of Metric, refer to mxnet.metric.EvalMetric: "
                              f"{metrics!r}")
    return list(metrics)


def _check_handler_metric_ref(handler, known_metrics) -> None:
    """Every metric held in an attribute of `handler` whose name contains 'metric' must be one
    of `known_metrics` (a handler's `monitor` is not checked, as in MXNet 1.9.1)."""
    for attribute in dir(handler):
        if "metric" not in attribute:
            continue
        reference = getattr(handler, attribute, None)
        for metric in reference if isinstance(reference, (list, tuple)) else [reference]:
            if isinstance(metric, EvalMetric):
                _check_metric_known(handler, metric, known_metrics)


def _check_metric_known(handler, metric, known_metrics) -> None:
    if metric not in known_metrics:
        raise GluonValueError(f"Event handler {type(handler).__name__} refers to a metric instance {metric} outside "
                              "of the known training and validation metrics. Please use the metrics from "
                              "estimator.train_metrics and estimator.val_metrics instead.")


def _suggest_metric_for_loss(loss):
    """Accuracy for a softmax cross-entropy loss; None (no suggestion) for any other."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None
