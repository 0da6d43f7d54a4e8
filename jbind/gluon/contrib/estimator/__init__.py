"""`mx.gluon.contrib.estimator`: Estimator (a training loop for Gluon), its event handlers
and BatchProcessor, as MXNet 1.9.1's."""
from . import batch_processor, estimator, event_handler, utils  # noqa: F401
from .batch_processor import BatchProcessor
from .estimator import Estimator
from .event_handler import (BatchBegin, BatchEnd, CheckpointHandler, EarlyStoppingHandler, EpochBegin, EpochEnd,
                            GradientUpdateHandler, LoggingHandler, MetricHandler, StoppingHandler, TrainBegin,
                            TrainEnd, ValidationHandler)

__all__ = ["BatchBegin", "BatchEnd", "BatchProcessor", "CheckpointHandler", "EarlyStoppingHandler", "EpochBegin",
           "EpochEnd", "Estimator", "GradientUpdateHandler", "LoggingHandler", "MetricHandler", "StoppingHandler",
           "TrainBegin", "TrainEnd", "ValidationHandler", "batch_processor", "estimator", "event_handler", "utils"]
