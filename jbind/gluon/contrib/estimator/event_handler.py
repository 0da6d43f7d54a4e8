"""The Estimator's event handlers, as `mxnet.gluon.contrib.estimator.event_handler` (1.9.1).

Handlers run in ascending `priority` within each event (0 when a handler has none):
GradientUpdateHandler (-2000), then MetricHandler and ValidationHandler (-1000), then the
user's, and LoggingHandler last (+inf).
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as MetricLoss
from ..._util import GluonValueError
from ._checkpoint import CheckpointHandler
from ._events import EventHandler  # noqa: F401
from ._events import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, TrainBegin, TrainEnd, check_event_handlers,
                      monitor_op, worst_value)
from .utils import _check_metrics

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd", "StoppingHandler",
           "MetricHandler", "ValidationHandler", "LoggingHandler", "CheckpointHandler", "EarlyStoppingHandler",
           "GradientUpdateHandler"]

_check_event_handlers = check_event_handlers   # MXNet's private name


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops training after `max_epoch` epochs or `max_batch` batches (the Estimator's, read
    at train begin)."""

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch, self.max_batch = max_epoch, max_batch
        self.current_batch = self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch, self.max_batch = estimator.max_epoch, estimator.max_batch
        self.current_batch = self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets `metrics` at epoch begin and updates them at batch end: a `metric.Loss` with
    the batch's losses, any other metric with (label, pred)."""

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority   # before the handlers that read the metrics

    def epoch_begin(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        pred, label, loss = kwargs["pred"], kwargs["label"], kwargs["loss"]
        for metric in self.metrics:
            if isinstance(metric, MetricLoss):
                metric.update(0, loss)
            else:
                metric.update(label, pred)


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Calls `eval_fn(val_data=, batch_axis=, event_handlers=)` every `epoch_period` epochs
    and, if set, every `batch_period` batches."""

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000, event_handlers=None):
        self.val_data, self.eval_fn = val_data, eval_fn
        self.epoch_period, self.batch_period = epoch_period, batch_period
        self.current_batch = self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = self.current_epoch = 0

    def _validate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis, event_handlers=self.event_handlers)

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._validate(estimator)

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._validate(estimator)


def _metrics_text(metrics) -> str:
    return ", ".join("%s: %.4f" % metric.get() for metric in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs the optimizer, the learning rate and `metrics` through `estimator.logger`: at
    each epoch's end with log_interval='epoch', also every `log_interval` batches with an int."""

    def __init__(self, log_interval="epoch", metrics=None, priority=np.inf):
        if not (log_interval == "epoch" or (isinstance(log_interval, int) and log_interval > 0)):
            raise GluonValueError(f"log_interval must be either an integer or string 'epoch' (a positive integer), "
                                  f"got {log_interval!r}")
        self.metrics = _check_metrics(metrics)
        self.batch_index = self.current_epoch = self.processed_samples = 0
        self.priority = priority   # last: every other handler has updated its state
        self.log_interval = log_interval
        self.log_interval_time = 0
        self.train_start = self.epoch_start = self.batch_start = time.time()

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info("Training begin: using optimizer %s with current learning rate %.4f ",
                              type(trainer.optimizer).__name__, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = self.batch_index = self.processed_samples = 0
        self.log_interval_time = 0

    def train_end(self, estimator, *args, **kwargs):
        msg = "Train finished using total %ds with %d epochs. " % (time.time() - self.train_start, self.current_epoch)
        estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.log_interval_time += time.time() - self.batch_start
            self.processed_samples += kwargs["batch"][0].shape[0]
            if self.batch_index % self.log_interval == 0:
                msg = "[Epoch %d][Batch %d][Samples %s] time/interval: %.3fs " % (
                    self.current_epoch, self.batch_index, self.processed_samples, self.log_interval_time)
                self.log_interval_time = 0
                estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(", "))
        self.batch_index += 1

    def epoch_begin(self, estimator, *args, **kwargs):
        self.epoch_start = time.time()
        # the Estimator names its metrics 'training ...' / 'validation ...'
        if any("training" in metric.name for metric in self.metrics):
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f", self.current_epoch,
                                  estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator, *args, **kwargs):
        msg = "[Epoch %d] Finished in %.3fs, " % (self.current_epoch, time.time() - self.epoch_start)
        estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops training when `monitor` has not improved by more than `min_delta` for `patience`
    epochs in a row (compared with `baseline` first, if given); `mode` is 'min', 'max' or 'auto'."""

    def __init__(self, monitor, min_delta=0, patience=0, mode="auto", baseline=None):
        if not isinstance(monitor, EvalMetric):
            raise GluonValueError("Please provide one of the metric objects from estimator.train_metrics and "
                                  f"estimator.val_metrics as monitor (got {monitor!r}).")
        if isinstance(monitor, CompositeEvalMetric):
            raise GluonValueError("CompositeEvalMetric is not supported for EarlyStoppingHandler, please specify a "
                                  "simple metric instead.")
        self.monitor, self.baseline, self.patience = monitor, baseline, patience
        self.monitor_op = monitor_op(mode, monitor, "EarlyStopping")
        self.min_delta = min_delta if self.monitor_op is np.greater else -min_delta
        self.wait = self.stopped_epoch = self.current_epoch = 0
        self.stop_training = False
        self.best = worst_value(self.monitor_op)

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = self.stopped_epoch = self.current_epoch = 0
        self.stop_training = False
        self.best = self.baseline if self.baseline is not None else worst_value(self.monitor_op)

    def epoch_end(self, estimator, *args, **kwargs):
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn(RuntimeWarning(f"{name} is not updated, make sure you pass one of the metric objects from "
                                         "estimator.train_metrics and estimator.val_metrics as monitor."),
                          stacklevel=2)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best, self.wait = value, 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch, self.stop_training = self.current_epoch, True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHandler: early stopping due to %s not improving",
                                  self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Calls `estimator.trainer.step(batch size)` at each batch end, the batch size being the
    summed first dimension of the batch's losses."""

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs["loss"]
        losses = loss if isinstance(loss, (list, tuple)) else [loss]
        estimator.trainer.step(sum(l.shape[0] for l in losses))
