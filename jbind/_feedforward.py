"""MXNet 1.x's legacy training API, `mx.model.FeedForward` (deprecated there too), over `mx.mod.Module`."""
from __future__ import annotations

import logging
import time
import warnings

import numpy as np

from . import io
from . import ndarray as nd
from .base import MXNetError
from .callback import LogValidationMetricsCallback
from .context import Context, cpu
from .initializer import Uniform
from .module.base_module import BatchEndParam
from .symbol import Symbol

from .model import load_checkpoint, save_checkpoint

_log = logging.getLogger("jbind.model")


def _callbacks(callbacks, *args) -> None:
    """Call one callback, each of a list, or none."""
    for cb in callbacks if isinstance(callbacks, list) else [callbacks] if callbacks else []:
        cb(*args)


def _name(desc) -> str:
    return desc.name if isinstance(desc, io.DataDesc) else desc[0]


class FeedForward:
    """MXNet 1.x's legacy model class (deprecated there too: use `mx.mod.Module`).

    Trains, evaluates and saves a single-data, single-output network. Parameters are
    initialized as MXNet's FeedForward does (the initializer called with each name, in
    `list_arguments()` order, then the aux states: MXNet's draws after `mx.random.seed`);
    each batch then runs through a `mx.mod.Module` (one compiled training step), with
    MXNet's optimizer settings (`rescale_grad = 1 / batch_size` for an optimizer given
    by name), epochs, callbacks and logging.

    Args:
        symbol: the network, or `sym_gen(bucket_key) -> Symbol` for bucketing data.
        ctx: a Context or a list of them (batches are split over them); default cpu().
        num_epoch: train until this epoch.
        epoch_size: batches per epoch; default one pass over the data.
        optimizer: an optimizer's name or an `mx.optimizer.Optimizer`.
        initializer: what `fit` initializes missing parameters with.
        numpy_batch_size: batch size for numpy / NDArray inputs.
        arg_params: name -> NDArray of the weights to start from.
        aux_params: name -> NDArray of the auxiliary states to start from.
        allow_extra_params: drop entries of arg_params / aux_params the symbol lacks
            (otherwise `predict` refuses them, as MXNet).
        begin_epoch: the first epoch's number.
        **kwargs: the optimizer's parameters (learning_rate, momentum, wd, ...).

    Differs from MXNet: `predict` and `score` always use the current parameters (MXNet
    keeps the first predictor's copy, so after a second `fit` it predicts with stale
    weights); an NDArray label of shape (n, 1) is taken as (n,) (MXNet refuses it); with
    a `sym_gen`, buckets of any shape train (through a BucketingModule; MXNet 1.9.1's
    executor manager fails to reshape its shared inputs for a bucket of another size).
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
                 initializer=Uniform(0.01), numpy_batch_size=128, arg_params=None, aux_params=None,
                 allow_extra_params=False, begin_epoch=0, **kwargs):
        warnings.warn("mxnet.model.FeedForward has been deprecated. Please use mxnet.mod.Module instead.",
                      DeprecationWarning, stacklevel=2)
        if isinstance(symbol, Symbol):
            self.symbol, self.sym_gen = symbol, None
        elif callable(symbol):
            self.symbol, self.sym_gen = None, symbol
        else:
            raise TypeError(f"FeedForward: symbol must be a Symbol or a function bucket_key -> Symbol, "
                            f"got {type(symbol).__name__}")
        self.arg_params = arg_params
        self.aux_params = aux_params
        self.allow_extra_params = allow_extra_params
        self.argument_checked = False
        if self.sym_gen is None:
            self._check_arguments()
        if ctx is None:
            ctx = [cpu()]
        elif isinstance(ctx, Context):
            ctx = [ctx]
        self.ctx = list(ctx)
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.kwargs = kwargs.copy()
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = numpy_batch_size
        self._pred_exec = None
        self._pred_key = None
        self.begin_epoch = begin_epoch

    def _check_arguments(self) -> None:
        """Check the symbol (unique names) and drop extra parameters if allowed."""
        if self.argument_checked:
            return
        self.argument_checked = True
        arg_names = set(self.symbol.list_arguments())  # raises on duplicated names
        aux_names = set(self.symbol.list_auxiliary_states())
        if self.allow_extra_params:
            if self.arg_params:
                self.arg_params = {k: v for k, v in self.arg_params.items() if k in arg_names}
            if self.aux_params:
                self.aux_params = {k: v for k, v in self.aux_params.items() if k in aux_names}

    def _init_params(self, inputs, overwrite=False):
        """New parameter arrays: copied from arg_params / aux_params where given, else
        filled by the initializer in MXNet's order. -> (arg_names, param_names, aux_names)."""
        inputs = [x if isinstance(x, io.DataDesc) else io.DataDesc(*x) for x in inputs]
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**{x.name: tuple(x.shape) for x in inputs})
        if arg_shapes is None:
            raise MXNetError(f"FeedForward: the input shapes {[(x.name, x.shape) for x in inputs]} do not "
                             "determine every parameter's shape")
        arg_types, _, aux_types = self.symbol.infer_type(**{x.name: x.dtype for x in inputs})
        arg_names = self.symbol.list_arguments()
        input_names = {x.name for x in inputs}
        param_names = [n for n in arg_names if n not in input_names]
        aux_names = self.symbol.list_auxiliary_states()
        new_args = {n: nd.zeros(s, dtype=t) for n, s, t in zip(arg_names, arg_shapes, arg_types)
                    if n not in input_names}
        new_auxs = {n: nd.zeros(s, dtype=t) for n, s, t in zip(aux_names, aux_shapes, aux_types)}
        for new, given in ((new_args, self.arg_params), (new_auxs, self.aux_params)):
            for name, arr in new.items():
                if given and name in given and not overwrite:
                    if tuple(given[name].shape) != tuple(arr.shape):
                        raise MXNetError(f"FeedForward: parameter {name!r} was given with shape "
                                         f"{tuple(given[name].shape)} but the symbol needs {tuple(arr.shape)}")
                    arr[:] = given[name]
                else:
                    self.initializer(name, arr)  # a plain name, as MXNet (its legacy initializer path)
        self.arg_params, self.aux_params = new_args, new_auxs
        return arg_names, param_names, aux_names

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_pred_exec"] = state["_pred_key"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    # --- inputs ----------------------------------------------------------------------------
    def _init_iter(self, X, y, is_train):
        """A DataIter for X: numpy / NDArray inputs become an NDArrayIter (shuffled with
        the last batch rolled over for training, as MXNet's)."""
        if isinstance(X, (np.ndarray, nd.NDArray)):
            if y is None:
                if is_train:
                    raise ValueError("y must be specified when X is numpy.ndarray")
                y = np.zeros(X.shape[0])
            if not isinstance(y, (np.ndarray, nd.NDArray)):
                raise TypeError("y must be ndarray when X is numpy.ndarray")
            if X.shape[0] != y.shape[0]:
                raise ValueError(f"The numbers of data points and labels not equal: X has {X.shape[0]}, "
                                 f"y has {y.shape[0]}")
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.reshape((y.shape[0],))
            if y.ndim != 1:
                raise ValueError(f"Label must be 1D or 2D (with 2nd dimension being 1), got shape {tuple(y.shape)}")
            batch_size = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return io.NDArrayIter(X, y, batch_size, shuffle=True, last_batch_handle="roll_over")
            return io.NDArrayIter(X, y, batch_size, shuffle=False)
        if not isinstance(X, io.DataIter):
            raise TypeError(f"X must be DataIter, NDArray or numpy.ndarray, got {type(X).__name__}")
        return X

    def _init_eval_iter(self, eval_data):
        """eval_data as a DataIter: a DataIter, or a (data, label) pair of arrays or lists."""
        if eval_data is None:
            return None
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            data, label = eval_data
            if data is None:
                raise ValueError("Eval data is NONE")
            if label is None and isinstance(data, io.DataIter):
                return data
            data = np.array(data) if isinstance(data, list) else data
            label = np.array(label) if isinstance(label, list) else label
            return self._init_iter(data, label, is_train=True)
        if not isinstance(eval_data, io.DataIter):
            raise TypeError("Eval data must be DataIter, or NDArray/numpy.ndarray/list pair "
                            "(i.e. tuple/list of length 2)")
        return eval_data

    # --- inference -------------------------------------------------------------------------
    def _predictor(self, X):
        """An inference executor on ctx[0] for X's shapes, holding the current parameters."""
        if self.symbol is None or self.arg_params is None:
            raise MXNetError("FeedForward has no parameters yet: call fit(), or give arg_params "
                             "(FeedForward.load does)")
        arg_names = set(self.symbol.list_arguments())
        shapes = {n: tuple(v.shape) for n, v in self.arg_params.items() if n in arg_names}
        types = {n: np.dtype(v.dtype) for n, v in self.arg_params.items() if n in arg_names}
        for desc in X.provide_data:
            shapes[_name(desc)] = tuple(desc[1])
            types[_name(desc)] = np.dtype(getattr(desc, "dtype", np.float32))
        key = (sorted(shapes.items()), sorted((n, t.name) for n, t in types.items()))
        if self._pred_exec is None or self._pred_key != key:
            self._pred_exec = self.symbol.simple_bind(self.ctx[0], grad_req="null", type_dict=types, **shapes)
            self._pred_key = key
        self._pred_exec.copy_params_from(self.arg_params, self.aux_params)
        return self._pred_exec

    def _batches(self, X, num_batch, reset):
        """(executor, batch) after the forward of each batch of X."""
        if reset:
            X.reset()
        exe = self._predictor(X)
        data_arrays = [exe.arg_dict[_name(d)] for d in X.provide_data]
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                return
            for dst, src in zip(data_arrays, batch.data):
                dst[:] = src
            exe.forward(is_train=False)
            yield exe, batch

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """The outputs for X (a DataIter, or numpy / NDArray data), padding removed, on ctx[0].

        Returns:
            A numpy array (a list of them for several outputs); with `return_data`,
            (outputs, data, label) with the inputs as read from X.
        """
        X = self._init_iter(X, None, is_train=False)
        outputs, data, label = [], [], []
        for exe, batch in self._batches(X, num_batch, reset):
            real = X.batch_size - (batch.pad or 0)  # sliced on the host: no program per slice
            outputs.append([o.asnumpy()[:real] for o in exe.outputs])
            if return_data:
                data.append([x.asnumpy()[:real] for x in batch.data])
                label.append([x.asnumpy()[:real] for x in batch.label or []])
        if not outputs:
            raise MXNetError("predict: the data iterator gave no batch")

        def merged(parts):
            out = [np.concatenate(col) for col in zip(*parts)]
            return out[0] if len(out) == 1 else out
        if return_data:
            return merged(outputs), merged(data), merged(label)
        return merged(outputs)

    def score(self, X, eval_metric="acc", num_batch=None, batch_end_callback=None, reset=True):
        """`eval_metric`'s value over X (numpy X is scored against zero labels, as in MXNet)."""
        from . import metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        X = self._init_iter(X, None, is_train=False)
        for i, (exe, batch) in enumerate(self._batches(X, num_batch, reset)):
            eval_metric.update(batch.label, exe.outputs)
            _callbacks(batch_end_callback, BatchEndParam(epoch=0, nbatch=i, eval_metric=eval_metric,
                                                         locals=locals()))
        return eval_metric.get()[1]

    # --- training --------------------------------------------------------------------------
    def fit(self, X, y=None, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", logger=None, work_load_list=None, monitor=None,
            eval_end_callback=LogValidationMetricsCallback(), eval_batch_end_callback=None):
        """Train from `begin_epoch` to `num_epoch`, as MXNet's FeedForward.

        Args:
            X: a DataIter, or numpy / NDArray data (then `y` holds the labels; batches of
                `numpy_batch_size`, shuffled with numpy's global RNG at every reset, the last
                incomplete batch rolled over into the next epoch).
            y: labels for array X, 1-D or (n, 1).
            eval_data: a DataIter or a (data, label) pair, scored after every epoch.
            eval_metric: a metric, its name or a function; used for training and eval_data.
            epoch_end_callback: `cb(epoch, symbol, arg_params, aux_params)` (or a list).
            batch_end_callback: `cb(BatchEndParam)` after each batch; `nbatch` counts from 1.
            kvstore: 'local', 'device' or 'dist_sync' (or a KVStore).
            logger: where to log; default the `logging` module.
            work_load_list: relative batch shares of the contexts.
            monitor: an `mx.mon.Monitor`, passed to Module.install_monitor.
            eval_end_callback: `cb(BatchEndParam)` after scoring eval_data.
            eval_batch_end_callback: `cb(BatchEndParam)` after each eval_data batch.
        """
        from . import metric
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        if self.sym_gen is not None:
            self.symbol = self.sym_gen(data.default_bucket_key)
            self._check_arguments()
        self.kwargs["sym"] = self.symbol
        _, param_names, _ = self._init_params(data.provide_data + data.provide_label)
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        if self.num_epoch is None:
            raise TypeError("FeedForward.fit needs num_epoch (give it to the constructor)")
        logger = logging if logger is None else logger
        mod = self._module(data, work_load_list, logger)
        idx2name = dict(enumerate(param_names))
        self.kwargs["param_idx2name"] = idx2name
        mod.init_optimizer(kvstore=kvstore, optimizer=self._make_optimizer(data.batch_size, kvstore, idx2name))
        if monitor is not None:
            mod.install_monitor(monitor)
        logger.info("Start training with %s", str(self.ctx))
        self._pred_exec = self._pred_key = None
        _train(self, mod, data, eval_data, eval_metric, epoch_end_callback, batch_end_callback, logger,
               eval_end_callback, eval_batch_end_callback)

    def _module(self, data, work_load_list, logger):
        """A Module (BucketingModule for sym_gen) bound for `data`, holding the parameters."""
        from .module import BucketingModule, Module
        data_names = [_name(d) for d in data.provide_data]
        label_names = [_name(d) for d in data.provide_label]
        if self.sym_gen is None:
            mod = Module(self.symbol, data_names, label_names, logger=logger, context=self.ctx,
                         work_load_list=work_load_list)
        else:
            default_key = data.default_bucket_key

            def gen(key):
                return (self.symbol if key == default_key else self.sym_gen(key)), data_names, label_names
            mod = BucketingModule(gen, default_bucket_key=default_key, logger=logger, context=self.ctx,
                                  work_load_list=work_load_list)
        mod.bind(data.provide_data, data.provide_label, for_training=True)
        mod.init_params(arg_params=self.arg_params, aux_params=self.aux_params)
        return mod

    def _make_optimizer(self, batch_size, kvstore, idx2name):
        """MXNet's: by name, with rescale_grad 1 / (global) batch size and the kwargs; an
        Optimizer object as it is (idx2name filled in if empty)."""
        from . import optimizer as opt
        if isinstance(self.optimizer, opt.Optimizer):
            if not self.optimizer.idx2name:
                self.optimizer.idx2name = idx2name.copy()
            return self.optimizer
        if not isinstance(self.optimizer, str):
            raise TypeError(f"FeedForward: optimizer must be a name or an mx.optimizer.Optimizer, "
                            f"got {type(self.optimizer).__name__}")
        kv_type = kvstore if isinstance(kvstore, str) else getattr(kvstore, "type", "") or ""
        if "dist" in kv_type and "_async" not in kv_type:
            from . import distributed
            batch_size *= distributed.num_workers()
        return opt.create(self.optimizer, rescale_grad=1.0 / batch_size, **self.kwargs)

    # --- files -----------------------------------------------------------------------------
    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """Write `prefix-symbol.json` and `prefix-%04d.params` (epoch: default num_epoch)."""
        if epoch is None:
            epoch = self.num_epoch
        if epoch is None:
            raise MXNetError("FeedForward.save needs an epoch: give epoch=, or num_epoch to the constructor")
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params,
                        remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward from a checkpoint, starting at `begin_epoch=epoch`; kwargs go to the constructor."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params, begin_epoch=epoch,
                           **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
               initializer=Uniform(0.01), eval_data=None, eval_metric="acc", epoch_end_callback=None,
               batch_end_callback=None, kvstore="local", logger=None, work_load_list=None,
               eval_end_callback=LogValidationMetricsCallback(), eval_batch_end_callback=None, **kwargs):
        """Construct a FeedForward and `fit` it (kwargs go to the constructor); returns it."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size, optimizer=optimizer,
                            initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric, epoch_end_callback=epoch_end_callback,
                  batch_end_callback=batch_end_callback, kvstore=kvstore, logger=logger,
                  work_load_list=work_load_list, eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model


def _train(model, mod, train_data, eval_data, eval_metric, epoch_end_callback, batch_end_callback, logger,
           eval_end_callback, eval_batch_end_callback):
    """MXNet's FeedForward loop: epochs of `epoch_size` batches (resetting the iterator
    when it runs out), parameters copied back into model.arg_params / aux_params (in
    place) when an epoch callback wants them and after the last epoch, eval_data scored
    after every epoch."""
    epoch_size = model.epoch_size
    train_data.reset()
    for epoch in range(model.begin_epoch, model.num_epoch):
        tic = time.time()
        eval_metric.reset()
        nbatch = 0
        while True:
            exhausted = True
            for batch in train_data:
                mod.train_step(batch)
                mod.update_metric(eval_metric, batch.label)
                nbatch += 1
                _callbacks(batch_end_callback, BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                                             locals=locals()))
                if epoch_size is not None and nbatch >= epoch_size:
                    exhausted = False
                    break
            if exhausted:
                logger.info("Epoch[%d] Resetting Data Iterator", epoch)
                train_data.reset()
            if epoch_size is None or nbatch >= epoch_size:
                break
        logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
        if epoch_end_callback or epoch + 1 == model.num_epoch:
            arg_params, aux_params = mod.get_params()
            for mine, trained in ((model.arg_params, arg_params), (model.aux_params, aux_params)):
                for name, arr in mine.items():
                    src = trained[name]
                    arr[:] = src if src.dtype == arr.dtype else src.astype(arr.dtype)
        _callbacks(epoch_end_callback, epoch, model.symbol, model.arg_params, model.aux_params)
        if eval_data:
            eval_metric.reset()
            eval_data.reset()
            total = 0
            for i, batch in enumerate(eval_data):
                mod.forward(batch, is_train=False)
                mod.update_metric(eval_metric, batch.label)
                _callbacks(eval_batch_end_callback, BatchEndParam(epoch=epoch, nbatch=i, eval_metric=eval_metric,
                                                                  locals=locals()))
                total += 1
            _callbacks(eval_end_callback, BatchEndParam(epoch=epoch, nbatch=total, eval_metric=eval_metric,
                                                        locals=locals()))
            eval_data.reset()
