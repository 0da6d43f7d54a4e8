"""Estimator: Gluon's high-level training loop, as `mxnet.gluon.contrib.estimator` (1.9.1).

`fit` runs `batch_processor.fit_batch` on each batch of a DataLoader and calls the event
handlers around it; the parameter update, the metrics, validation, logging and the stop
condition are handlers too (added by default unless the user gives one of that kind).
"""
from __future__ import annotations

import copy
import logging
import numbers
import sys
import warnings

from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as MetricLoss
from ..._util import GluonValueError, check
from ...data import DataLoader
from ...loss import Loss as GluonLoss
from ...trainer import Trainer
from ...utils import split_and_load
from ._events import BatchBegin, BatchEnd, EpochBegin, EpochEnd, TrainBegin, TrainEnd, check_event_handlers
from .batch_processor import BatchProcessor
from .event_handler import GradientUpdateHandler, LoggingHandler, MetricHandler, StoppingHandler, ValidationHandler
from .utils import _check_handler_metric_ref, _check_metrics, _suggest_metric_for_loss

__all__ = ["Estimator"]

_NOT_A_LOADER = ("Estimator only support input as Gluon DataLoader. Alternatively, you can transform your DataIter "
                 "or any NDArray into Gluon DataLoader. Refer to gluon.data.DataLoader")


class Estimator:
    """Trains `net` with `loss` on Gluon DataLoaders.

    Args:
        net: the Block to train; initialized here (with `initializer`, on `context`) unless
            every parameter already is.
        loss: a `gluon.loss.Loss`.
        train_metrics / val_metrics: an EvalMetric or a list of them. Without train metrics,
            Accuracy (for SoftmaxCrossEntropyLoss) and a `metric.Loss` of the loss are used;
            without val metrics, copies of the train metrics. Their names get the prefixes
            'training ' / 'validation '.
        trainer: a `gluon.Trainer`; by default SGD with learning rate 0.001 (with a warning).
        context: a Context or a list of them; by default gpu(0) if there is a GPU, else cpu().
        val_net / val_loss: used by `evaluate` instead of `net` / `loss`.
        batch_processor: an object with `fit_batch` and `evaluate_batch` (a BatchProcessor).

    `logger` is a `logging.Logger` of its own writing INFO and above to the `sys.stdout` of
    construction time; add handlers to it to log elsewhere.
    """

    logger = None

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None, trainer=None,
                 context=None, val_net=None, val_loss=None, batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = self.max_batch = None
        self.batch_axis = 0

    # --- checks made at construction ----------------------------------------------------------
    def _check_loss(self, loss):
        if not isinstance(loss, GluonLoss):
            raise GluonValueError(f"loss must be a Loss, refer to gluon.loss.Loss:{loss!r}")
        return loss

    def _check_context(self, context):
        gpus = [gpu(i) for i in range(num_gpus())]
        if not context:
            if len(gpus) > 1:
                warnings.warn("You have multiple GPUs, gpu(0) will be used by default.To utilize all your GPUs, "
                              "specify context as a list of gpus, e.g. context=[mx.gpu(0), mx.gpu(1)] ",
                              stacklevel=3)
            return [gpus[0]] if gpus else [cpu()]
        if isinstance(context, Context):
            context = [context]
        if not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
            raise GluonValueError("context must be a Context or a list of Context, for example mx.cpu() or "
                                  f"[mx.gpu(0), mx.gpu(1)], refer to mxnet.Context:{context!r}")
        for ctx in context:
            check(ctx in gpus or str(ctx).startswith("cpu"), f"{ctx} is not available, please make sure your "
                  f"context is in one of: mx.cpu(), {', '.join(str(g) for g in gpus)}")
        return context

    def _is_initialized(self) -> bool:
        for param in self.net.collect_params().values():
            try:
                param.list_ctx()
            except RuntimeError:
                return False
        return True

    def _initialize(self, initializer) -> None:
        if not self._is_initialized():   # parameters already initialized keep their values
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. You don't need to pass "
                          "initializer if you already initialized your net. You can use "
                          "net.initialize(init=your_initializer, force_reinit=True)to force re-initialize.",
                          stacklevel=3)

    def _check_trainer(self, trainer):
        if not trainer:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate 0.001 is used.",
                          stacklevel=3)
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise GluonValueError(f"Trainer must be a Gluon Trainer instance, refer to gluon.Trainer:{trainer!r}")
        return trainer

    def _check_batch_processor(self, batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not (callable(getattr(batch_processor, "fit_batch", None))
                and callable(getattr(batch_processor, "evaluate_batch", None))):
            raise GluonValueError("Customized Batch Processor must contain fit_batch() and evaluate_batch() methods")
        return batch_processor

    def _add_default_training_metrics(self) -> None:
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            self._train_metrics.append(MetricLoss(self.loss.name.rstrip("1234567890")))
        for metric in self._train_metrics:   # handlers tell training from validation metrics by name
            metric.name = "training " + metric.name

    def _add_validation_metrics(self) -> None:
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(metric) for metric in self._train_metrics]
        for metric in self._val_metrics:
            if "training" in metric.name:
                metric.name = metric.name.replace("training", "validation")
            else:
                metric.name = "validation " + metric.name

    @property
    def train_metrics(self) -> list:
        return self._train_metrics

    @property
    def val_metrics(self) -> list:
        return self._val_metrics

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    # --- the loops ----------------------------------------------------------------------------
    def evaluate(self, val_data, batch_axis=0, event_handlers=None) -> None:
        """Run `batch_processor.evaluate_batch` on every batch of `val_data` (a DataLoader).

        A MetricHandler and a LoggingHandler of `val_metrics` are added unless
        `event_handlers` has one of that kind."""
        if not isinstance(val_data, DataLoader):
            raise GluonValueError(_NOT_A_LOADER)
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)
        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None, batch_axis=0) -> None:
        """Train for `epochs` passes over `train_data` or for `batches` batches (give exactly one).

        Besides `event_handlers`, a StoppingHandler and, unless one of that kind is given, a
        GradientUpdateHandler, a MetricHandler of `train_metrics`, a ValidationHandler (when
        `val_data` is given) and a LoggingHandler are used. `batch_axis` is the axis along
        which a batch is split across the contexts."""
        if not isinstance(train_data, DataLoader):
            raise GluonValueError(_NOT_A_LOADER)
        if (not epochs) == (not batches):
            raise GluonValueError("Fit only support exactly one type of iteration, train by number of epochs or "
                                  "number of batches.Please specify one and only one of: epochs or batches.")
        count = epochs or batches
        if not isinstance(count, numbers.Integral) or count < 1:
            raise GluonValueError(f"fit: {'epochs' if epochs else 'batches'} must be a positive integer, got "
                                  f"{count!r}")
        self.max_epoch, self.max_batch, self.batch_axis = epochs, batches, batch_axis
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = self._categorize_handlers(handlers)
        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            seen = 0
            for batch in train_data:
                seen += 1
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                stop = [h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss) for h in batch_end]
                if any(stop):
                    break
            stop = [handler.epoch_end(self) for handler in epoch_end]
            if any(stop):
                break
            if not seen and self.max_batch:
                raise GluonValueError(f"fit: train_data gave no batch, so {self.max_batch} batches can never be "
                                      "reached")
        for handler in train_end:
            handler.train_end(self)

    # --- handlers -----------------------------------------------------------------------------
    def _finish_handlers(self, handlers, added, known_metrics) -> list:
        """`handlers` + `added`, checked to refer to known metrics when both are non-empty, in
        ascending priority (stable: the user's first among equals)."""
        mixing = bool(handlers) and bool(added)
        handlers.extend(added)
        if mixing:
            for handler in handlers:
                _check_handler_metric_ref(handler, known_metrics)
        handlers.sort(key=lambda handler: getattr(handler, "priority", 0))
        return handlers

    def _prepare_default_handlers(self, val_data, event_handlers) -> list:
        handlers = check_event_handlers(event_handlers)

        def missing(kind):
            return not any(isinstance(h, kind) for h in handlers)

        added = [StoppingHandler(self.max_epoch, self.max_batch)]
        if missing(GradientUpdateHandler):
            added.append(GradientUpdateHandler())
        if missing(MetricHandler):
            added.append(MetricHandler(metrics=self.train_metrics))
        if missing(ValidationHandler) and val_data:
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if missing(LoggingHandler):
            added.append(LoggingHandler(metrics=self.train_metrics))
        return self._finish_handlers(handlers, added, set(self.train_metrics + self.val_metrics))

    def _prepare_default_validation_handlers(self, event_handlers) -> list:
        handlers = check_event_handlers(event_handlers)
        added = []
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        return self._finish_handlers(handlers, added, set(self.val_metrics))

    def _categorize_handlers(self, event_handlers):
        """(train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end): the
        handlers of each event, by the mixins they subclass."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in event_handlers if isinstance(h, kind)] for kind in kinds)
