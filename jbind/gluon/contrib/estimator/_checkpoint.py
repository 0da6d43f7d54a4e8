"""CheckpointHandler: parameters and trainer states every N epochs or batches, the best
model by a monitored metric, and resuming from the newest checkpoint.

Files, in `model_dir`: '<prefix>-symbol.json' (a hybridized net's graph, after the first
batch), '<prefix>-epoch<E>batch<B>.params' / '.states' and '<prefix>-best.params' /
'.states'. Each file is written atomically (a temp file in the same folder, then
`os.replace`) by `save_parameters`, `Trainer.save_states` and `Symbol.save`; the '.states'
before the '.params', which resuming looks for, so a save cut short leaves no '.params'
without its '.states' (removal goes the other way round).
"""
from __future__ import annotations

import os
import re
import warnings

import numpy as np

from ....metric import EvalMetric
from ..._util import GluonValueError, check
from ._events import BatchEnd, EpochEnd, TrainBegin, monitor_op, worst_value

__all__ = ["CheckpointHandler"]


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves the model every `epoch_period` epochs and/or every `batch_period` batches.

    Args:
        model_dir: the folder for the files (created if missing).
        model_prefix: the start of every file name.
        monitor: an EvalMetric of the Estimator's; with `save_best`, the model is also saved
            as '<prefix>-best' whenever its value improves ('min', 'max' or 'auto' `mode`).
        verbose: 1 logs every save.
        max_checkpoints: how many epoch/batch checkpoints to keep; older ones that this
            handler wrote are removed (the best one is not counted).
        resume_from_checkpoint: at train begin, load the newest '<prefix>-epoch<E>batch<B>'
            checkpoint and shorten the Estimator's `max_epoch` / `max_batch` accordingly.
    """

    def __init__(self, model_dir, model_prefix="model", monitor=None, verbose=0, save_best=False, mode="auto",
                 epoch_period=1, batch_period=None, max_checkpoints=5, resume_from_checkpoint=False):
        if save_best and not isinstance(monitor, EvalMetric):
            raise GluonValueError("To save best model only, please provide one of the metric objects from "
                                  "estimator.train_metrics and estimator.val_metrics as monitor.")
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir, self.model_prefix = model_dir, model_prefix
        self.monitor, self.verbose, self.save_best = monitor, verbose, save_best
        self.epoch_period, self.batch_period = epoch_period, batch_period
        self.current_batch = self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints: list = []
        self.trained_epoch = self.trained_batch = -1
        if save_best:
            self.monitor_op = monitor_op(mode, monitor, "ModelCheckpoint")
            self.best = worst_value(self.monitor_op)

    def train_begin(self, estimator, *args, **kwargs):
        self.current_epoch = self.current_batch = 0
        self.trained_epoch = self.trained_batch = -1
        if self.save_best:
            self.best = worst_value(self.monitor_op)
        if self.resume_from_checkpoint:
            msg = ("To use resume from checkpoint, you must only specify the same type of period you used for "
                   "training. For example, if you are training based on number of epochs, you must save only "
                   "based on epochs, and set batch_period to None.")
            if estimator.max_batch:
                check(self.batch_period and not self.epoch_period, msg)
            if estimator.max_epoch:
                check(self.epoch_period and not self.batch_period, msg)
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    # --- saving -------------------------------------------------------------------------------
    def _save_checkpoint(self, estimator):
        epoch, batch = self.current_epoch, self.current_batch
        if self.trained_epoch >= 0:   # resumed: number on from the checkpoint loaded
            epoch += self.trained_epoch + 1
            # at an epoch end the batch count is already past the last batch
            batch += self.trained_batch + (0 if estimator.max_epoch else 1)
        prefix = "%s-epoch%dbatch%d" % (self.model_prefix, epoch, batch)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, saving model at %s with "
                                  "prefix: %s", self.current_epoch, self.current_batch + 1, self.model_dir, prefix)
        if self.save_best:
            self._save_if_best(estimator)

    def _save_if_best(self, estimator):
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn(RuntimeWarning(f"Skipping save best because {name} is not updated, make sure you pass one "
                                         "of the metric objects estimator.train_metrics and estimator.val_metrics "
                                         "as monitor"), stacklevel=3)
        elif self.monitor_op(value, self.best):
            prefix = self.model_prefix + "-best"
            self._save_params_and_trainer(estimator, prefix)
            if self.verbose > 0:
                estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f to %0.5f, updating best "
                                      "model at %s with prefix: %s", self.current_epoch, name, self.best, value,
                                      self.model_dir, prefix)
            self.best = value
        elif self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: %s did not improve from %0.5f, skipping updating "
                                  "best model", self.current_epoch, name, self.best)

    def _save_symbol(self, estimator):
        symbol_file = os.path.join(self.model_dir, self.model_prefix + "-symbol.json")
        graph = getattr(estimator.net, "_cached_graph", None)
        if graph:
            graph[1].save(symbol_file)
        else:
            estimator.logger.info("Model architecture(symbol file) is not saved, please use HybridBlock to construct "
                                  "your model, and call net.hybridize() before passing to Estimator in order to "
                                  "save model architecture as %s.", symbol_file)

    def _save_params_and_trainer(self, estimator, file_prefix):
        path = os.path.join(self.model_dir, file_prefix)
        estimator.trainer.save_states(path + ".states")
        estimator.net.save_parameters(path + ".params")
        if file_prefix == self.model_prefix + "-best":
            return
        self.saved_checkpoints.append(file_prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            old = os.path.join(self.model_dir, self.saved_checkpoints.pop(0))
            for ext in (".params", ".states"):
                if os.path.exists(old + ext):
                    os.remove(old + ext)

    # --- resuming -----------------------------------------------------------------------------
    def _checkpoints_found(self) -> list:
        """(epoch, batch) of every '<prefix>-epoch<E>batch<B>.params' in model_dir."""
        start = self.model_prefix + "-epoch"
        pattern = re.compile(re.escape(start) + r"(\d+)batch(\d+)\.params")
        found = []
        for fname in os.listdir(self.model_dir):
            if not (fname.startswith(start) and fname.endswith(".params")):
                continue
            match = pattern.fullmatch(fname)
            if match is None:
                raise GluonValueError(f"Error parsing checkpoint file {fname!r} in {self.model_dir!r}, please check "
                                      "your checkpoints have the format: "
                                      "{model_name}-epoch{epoch_number}batch{batch_number}.params, there should "
                                      "also be a .states file for each .params file")
            found.append((int(match.group(1)), int(match.group(2))))
        return found

    def _resume_from_checkpoint(self, estimator):
        found = self._checkpoints_found()
        if not found:
            what = "%d batches" % estimator.max_batch if estimator.max_batch else "%d epochs" % estimator.max_epoch
            estimator.logger.info("CheckpointHandler: No checkpoint found, training from scratch for %s", what)
            return
        epoch = max(e for e, _ in found)
        batch = max(b for e, b in found if e == epoch)
        msg = "CheckpointHandler: Checkpoint resumed from epoch %d batch %d, continue to train for " % (epoch, batch)
        if estimator.max_epoch:
            if epoch >= estimator.max_epoch - 1:
                raise GluonValueError(f"Found checkpoint with maximum number of epoch {estimator.max_epoch} reached, "
                                      "please specify resume_from_checkpoint=False (default value) if you wan to "
                                      "train from scratch.")
            estimator.max_epoch -= epoch + 1
            msg += "%d epochs " % estimator.max_epoch
        if estimator.max_batch:
            if batch >= estimator.max_batch - 1:
                raise GluonValueError(f"Found checkpoint with maximum number of batch {estimator.max_batch} reached, "
                                      "please specify resume_from_checkpoint=False (default value) if you wan to "
                                      "train from scratch.")
            estimator.max_batch -= batch + 1
            msg += "%d batches " % estimator.max_batch
        path = os.path.join(self.model_dir, "%s-epoch%dbatch%d" % (self.model_prefix, epoch, batch))
        for ext in (".params", ".states"):
            check(os.path.exists(path + ext), f"Failed to load checkpoint, {path + ext} does not exist")
        estimator.net.load_parameters(path + ".params", ctx=estimator.context)
        estimator.trainer.load_states(path + ".states")
        self.trained_epoch, self.trained_batch = epoch, batch
        estimator.logger.warning(msg)
