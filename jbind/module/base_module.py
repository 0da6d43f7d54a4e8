"""BaseModule: MXNet's training loop (`fit`), `score`, `predict`, shared by every module."""
from __future__ import annotations

import collections
import logging
import time

import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import NDArray, concat

BatchEndParam = collections.namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def _as_list(obj):
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _create_metric(eval_metric):
    from .. import metric
    return eval_metric if isinstance(eval_metric, metric.EvalMetric) else metric.create(eval_metric)


class BaseModule:
    """The part of MXNet's BaseModule that is independent of how computation is bound."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # --- high-level API -------------------------------------------------------------------
    def forward_backward(self, data_batch):
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None, score_end_callback=None,
              reset=True, epoch=0, sparse_row_id_fn=None):
        """Run prediction on `eval_data` and evaluate `eval_metric`; returns its name-value pairs."""
        if not (self.binded and self.params_initialized):
            raise MXNetError("score() needs a module that is bound and has initialized parameters")
        if reset:
            eval_data.reset()
        eval_metric = _create_metric(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                for cb in _as_list(batch_end_callback):
                    cb(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric, locals=locals())
            for cb in _as_list(score_end_callback):
                cb(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield (outputs without padding, batch index, batch) for each batch."""
        if not (self.binded and self.params_initialized):
            raise MXNetError("iter_predict() needs a module that is bound and has initialized parameters")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True, always_output_list=False,
                sparse_row_id_fn=None):
        """Outputs for `eval_data` (an iterator or an NDArray / numpy batch), padding removed."""
        if isinstance(eval_data, (NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                from ..ndarray.ndarray import array
                eval_data = array(eval_data)
            self.forward(_SimpleBatch([eval_data]))
            return self.get_outputs()[0]
        output_list = [[o.copy() for o in outs] for outs, _, _ in
                       self.iter_predict(eval_data, num_batch=num_batch, reset=reset,
                                         sparse_row_id_fn=sparse_row_id_fn)]
        if not output_list:
            return output_list
        if merge_batches:
            num_outputs = len(output_list[0])
            for out in output_list:
                if len(out) != num_outputs:
                    raise MXNetError("Cannot merge batches, as num of outputs is not the same in mini-batches. "
                                     "Maybe bucketing is used?")
            merged = [concat(*[out[i] for out in output_list], dim=0) for i in range(num_outputs)]
            if num_outputs == 1 and not always_output_list:
                return merged[0]
            return merged
        return output_list

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
            eval_end_callback=None, eval_batch_end_callback=None, initializer=None, arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False, begin_epoch=0,
            num_epoch=None, validation_metric=None, monitor=None, sparse_row_id_fn=None, progress=None):
        """MXNet's training loop: bind, init params and optimizer, then per batch
        forward_backward, update, update_metric and callbacks; per epoch log, sync params,
        epoch_end_callback and score on `eval_data`.

        `progress` (jbind extension): show a tqdm bar per epoch; by default only when
        standard error is a terminal.
        """
        if num_epoch is None:
            raise MXNetError("please specify number of epochs")
        if initializer is None:
            from .. import initializer as init
            initializer = init.Uniform(0.01)
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        self._before_training(train_data)
        if validation_metric is None:
            validation_metric = eval_metric
        eval_metric = _create_metric(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            self._before_epoch(train_data)
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            bar = _progress_bar(progress, epoch, train_data)
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.train_step(data_batch)
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [db.label for db in data_batch], pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                if monitor is not None:
                    monitor.toc_print()
                try:
                    next_data_batch = next(data_iter)
                except StopIteration:
                    end_of_batch = True
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals())
                    for cb in _as_list(batch_end_callback):
                        cb(params)
                if not end_of_batch:  # binds the next bucket: work for the next batch, after this one's callbacks
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                nbatch += 1
                if bar is not None:
                    bar.update(1)
            if bar is not None:
                bar.close()
            shown = self._over_workers(eval_metric)
            for name, val in shown.get_global_name_value() if hasattr(shown, "get_global_name_value") \
                    else shown.get_name_value():
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            toc = time.time()
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, toc - tic)
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            if epoch_end_callback is not None:
                for cb in _as_list(epoch_end_callback):
                    cb(epoch, self.symbol, arg_params, aux_params)
            if eval_data:
                validation_metric = _create_metric(validation_metric)
                res = self.score(eval_data, validation_metric, score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                if self._is_dist():
                    res = self._over_workers(validation_metric).get_name_value()
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    def _is_dist(self) -> bool:
        mod = getattr(self, "_curr_module", None) or self
        return bool(getattr(mod, "_dist", False))

    def _over_workers(self, metric):
        """With dist_sync, fit logs metrics over every worker's batches (jbind; MXNet
        logs each worker's own)."""
        if not self._is_dist():
            return metric
        from ..metric._base import over_all_workers
        return over_all_workers(metric)

    def train_step(self, data_batch):
        """One training step: forward_backward then update (modules may fuse them)."""
        self.forward_backward(data_batch)
        self.update()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        pass

    def _before_training(self, train_data):
        """Hook run by fit() once the optimizer exists (BucketingModule precompiles here)."""

    def _before_epoch(self, train_data):
        """Hook run by fit() at the start of every epoch."""

    # --- parameters ----------------------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True, allow_extra=False):
        """Assign parameter and aux values (MXNet's rules: without allow_missing, every one is needed)."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            import warnings
            warnings.warn("Parameters already initialized and force_init=False. set_params call ignored.",
                          stacklevel=2)
            return
        self._assign_params(arg_params, aux_params, allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def save_params(self, fname):
        """Save parameters as MXNet's `arg:`/`aux:` NDArray dict."""
        from ..ndarray import save
        arg_params, aux_params = self.get_params()
        save_dict = {f"arg:{k}": v.as_in_context(_cpu()) for k, v in arg_params.items()}
        save_dict.update({f"aux:{k}": v.as_in_context(_cpu()) for k, v in aux_params.items()})
        save(fname, save_dict)

    def load_params(self, fname):
        from ..ndarray import load
        save_dict = load(fname, any_layout=True)
        arg_params, aux_params = {}, {}
        for k, value in save_dict.items():
            kind, _, name = k.partition(":")
            if kind == "arg":
                arg_params[name] = value
            elif kind == "aux":
                aux_params[name] = value
            else:
                raise MXNetError(f"{fname}: invalid parameter name {k!r} (expected arg: or aux: prefix)")
        self.set_params(arg_params, aux_params)

    @property
    def symbol(self):
        return self._symbol


def _progress_bar(progress, epoch, train_data):
    import sys
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    from tqdm import tqdm
    total = getattr(train_data, "num_batches", None)
    return tqdm(total=total, desc=f"Epoch[{epoch}]", unit="batch", leave=False)


class _SimpleBatch:
    def __init__(self, data, label=None):
        self.data, self.label, self.pad = data, label, 0


def _cpu():
    from ..context import cpu
    return cpu()
