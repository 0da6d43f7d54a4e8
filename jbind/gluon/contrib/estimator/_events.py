"""The six events of an Estimator's loop, as mixin classes, and the checks shared by handlers.

A handler subclasses the mixins of the events it wants; `Estimator.fit` calls it at those
events only. `batch_end` and `epoch_end` return True to stop training.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._util import GluonValueError

__all__ = ["BatchBegin", "BatchEnd", "EpochBegin", "EpochEnd", "EventHandler", "TrainBegin", "TrainEnd"]


class EventHandler:
    """Base class of every event handler."""


class TrainBegin(EventHandler):
    """Called once when `fit` starts."""

    def train_begin(self, estimator, *args, **kwargs):
        pass


class TrainEnd(EventHandler):
    """Called once when `fit` ends."""

    def train_end(self, estimator, *args, **kwargs):
        pass


class EpochBegin(EventHandler):
    """Called before each pass over the data (in `evaluate` too)."""

    def epoch_begin(self, estimator, *args, **kwargs):
        pass


class EpochEnd(EventHandler):
    """Called after each pass over the data; return True to stop training."""

    def epoch_end(self, estimator, *args, **kwargs):
        return False


class BatchBegin(EventHandler):
    """Called before each batch, with `batch=`."""

    def batch_begin(self, estimator, *args, **kwargs):
        pass


class BatchEnd(EventHandler):
    """Called after each batch, with `batch=`, `pred=`, `label=`, `loss=`; return True to stop."""

    def batch_end(self, estimator, *args, **kwargs):
        return False


def check_event_handlers(handlers) -> list:
    """`handlers` (one EventHandler, a list of them, or None) as a new list."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    bad = [h for h in handlers if not isinstance(h, EventHandler)]
    if bad:
        raise GluonValueError(f"handlers must be an EventHandler or a list of EventHandler, got: {handlers} "
                              f"({bad[0]!r} is not an EventHandler)")
    return handlers


def monitor_op(mode: str, monitor, who: str):
    """`np.greater` or `np.less`: how `who` decides that `monitor`'s value improved.

    'auto' picks greater for a metric whose name holds 'acc' or 'f1' and less otherwise,
    and says so in a warning (MXNet 1.9.1 picks greater for every metric here)."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{who} mode {mode} is unknown, fallback to auto mode. CheckpointHandler will use"
                      "max mode for f1 and accuracy metric comparison and use min mode other wise",
                      RuntimeWarning, stacklevel=3)
        mode = "auto"
    if mode == "min":
        return np.less
    if mode == "max":
        return np.greater
    name = monitor.get()[0]
    if "acc" in name.lower() or "f1" in name.lower():
        warnings.warn(f"`greater` operator will be used to determine if {name} has improved. Please specify "
                      "`mode='min'` to use the `less` operator. Specify `mode='max' to disable this warning.`",
                      stacklevel=3)
        return np.greater
    warnings.warn(f"`less` operator will be used to determine if {name} has improved. Please specify "
                  "`mode='max'` to use the `greater` operator. Specify `mode='min' to disable this warning.`",
                  stacklevel=3)
    return np.less


def worst_value(op) -> float:
    """The starting 'best' for a comparison `op`: anything beats it."""
    return float("inf") if op is np.less else float("-inf")
