"""BucketingModule: one Module per bucket key, all sharing the default bucket's parameters."""
from __future__ import annotations

import functools
import logging
import numbers
import threading
import warnings

import numpy as np

from ..base import MXNetError
from ..context import check_group2ctx, cpu
from .base_module import BaseModule
from .module import Module


class BucketingModule(BaseModule):
    """MXNet's `mx.mod.BucketingModule`.

    Every bucket's Module is bound with the default bucket's module as `shared_module`,
    so all buckets hold the same ParamStore (no parameter copies) and share the optimizer;
    compiled functions come from the cache keyed by bucket shapes.
    """

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=None, work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise MXNetError("BucketingModule needs a default_bucket_key")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._first_gen = self._call_sym_gen(default_bucket_key)
        self._data_names = list(data_names) if data_names is not None else []
        self._label_names = list(label_names) if label_names is not None else []
        self._state_names = list(state_names) if state_names is not None else []
        self._fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        self._context = context if context is not None else cpu()
        check_group2ctx(group2ctxs, self._context)
        self._work_load_list = work_load_list
        self._buckets: dict = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._grad_req = None
        self._symbol = symbol
        self._declared: list = []  # bucket keys declared by the iterator or precompile()
        self._bind_lock = threading.RLock()
        self._precompile_job = None  # the last precompile()'s job
        self._loaded_params = None  # (arg, aux) read by load(), set at the first bind

    def _call_sym_gen(self, key):
        out = self._sym_gen(key)
        if not (isinstance(out, tuple) and len(out) == 3):
            raise MXNetError("sym_gen must return (symbol, data_names, label_names)")
        return out

    def _new_module(self, symbol, data_names, label_names):
        return Module(symbol, data_names, label_names, logger=self.logger, context=self._context,
                      work_load_list=self._work_load_list, fixed_param_names=self._fixed_param_names,
                      state_names=self._state_names)

    # --- properties ------------------------------------------------------------------------
    @property
    def default_bucket_key(self):
        return self._default_bucket_key

    @property
    def data_names(self):
        return self._curr_module.data_names if self.binded else self._data_names

    @property
    def output_names(self):
        return self._curr_module.output_names if self.binded else self._symbol.list_outputs()

    @property
    def data_shapes(self):
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        return self._curr_module.symbol if self._curr_module is not None else self._symbol

    @property
    def buckets(self) -> dict:
        """bucket key -> Module (jbind extension, for inspection)."""
        return dict(self._buckets)

    # --- parameters ------------------------------------------------------------------------
    def get_params(self):
        if not (self.binded and self.params_initialized):
            raise MXNetError("get_params needs a bound module with initialized parameters")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def _assign_params(self, arg_params, aux_params, allow_extra):
        self._curr_module.set_params(arg_params, aux_params, allow_missing=True, force_init=True,
                                     allow_extra=allow_extra)

    def init_params(self, initializer=None, arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        if not self.binded:
            raise MXNetError("call bind before initializing the parameters")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                                      allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    # --- binding ---------------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        if self.params_initialized:
            arg_params, aux_params = self.get_params() if self.binded else self._loaded_params
        if force_rebind:
            self.binded = False
            self._buckets = {}
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise MXNetError("shared_module for BucketingModule is not supported")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True
        self._grad_req = grad_req
        # The first bind reuses the graph __init__ generated for the same key.
        gen, self._first_gen = self._first_gen, None
        symbol, data_names, label_names = gen or self._call_sym_gen(self._default_bucket_key)
        module = self._new_module(symbol, data_names, label_names)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind=False,
                    shared_module=None, grad_req=grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make `bucket_key` current, binding it (sharing the default bucket's module) if new."""
        if not self.binded:
            raise MXNetError("call bind before switching bucket")
        module = self._buckets.get(bucket_key)
        if module is None:
            module = self._bucket_module(bucket_key, data_shapes, label_shapes)
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def _bucket_module(self, bucket_key, data_shapes, label_shapes):
        """The bucket's module, bound now if new, without making it current. Safe from a
        background thread: sym_gen (whose cells keep state) and binding run under a lock."""
        with self._bind_lock:
            module = self._buckets.get(bucket_key)
            if module is not None:
                return module
            self._check_declared(bucket_key)
            symbol, data_names, label_names = self._call_sym_gen(bucket_key)
            module = self._new_module(symbol, data_names, label_names)
            default = self._buckets[self._default_bucket_key]
            module.bind(data_shapes, label_shapes, default.for_training, default.inputs_need_grad,
                        force_rebind=False, shared_module=default, grad_req=self._grad_req)
            if self.optimizer_initialized and default.optimizer_initialized:
                module.borrow_optimizer(default)
            self._buckets[bucket_key] = module
            return module

    def _check_declared(self, key):
        """A key beyond every declared bucket is a data error (a sentence too long for
        the buckets), not a new bucket to compile: say so (jbind; MXNet binds it)."""
        if not self._declared:
            return
        try:
            too_big = all(key > k for k in self._declared)
        except TypeError:  # keys that don't compare (tuples of mixed types): no check
            return
        if too_big:
            raise MXNetError(f"bucket key {key!r} is larger than every declared bucket "
                             f"{sorted(self._declared)}; add a bucket at least that large, or drop longer "
                             "samples in the data iterator")

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        if self.optimizer_initialized and not force_init:
            warnings.warn("optimizer already initialized, ignoring.", stacklevel=2)
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params, force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def _bucket_shapes(self, key):
        """A bucket's data and label shapes: the default bucket's, with its key's dims replaced."""
        default = self._buckets[self._default_bucket_key]

        def swap(desc):
            layout = getattr(desc, "layout", None) or ""
            if "T" in layout:  # the time axis of an NT / TN / NTC layout
                axes = [layout.index("T")]
            else:  # every non-batch axis equal to the default key
                batch = layout.index("N") if "N" in layout else 0
                axes = [i for i, d in enumerate(desc.shape) if d == self._default_bucket_key and i != batch]
            shape = list(desc.shape)
            for a in axes:
                shape[a] = key
            return (desc.name, tuple(shape))
        data = [swap(d) for d in default.data_shapes]
        label = [swap(d) for d in (default.label_shapes or [])]
        return data, label or None

    def precompile(self, bucket_keys, shapes_fn=None, wait=False):
        """Bind every bucket in `bucket_keys` and compile its training step on background
        threads (jbind extension). `shapes_fn(key) -> (data_shapes, label_shapes)` gives a
        bucket's shapes; by default the default bucket's shapes with the key's dims replaced
        (right for (batch, seq_len) buckets). Returns a PrecompileJob; `wait=True` waits."""
        from .precompile import PrecompileJob
        if not self.binded:
            raise MXNetError("bind the module before precompile()")
        bucket_keys = list(bucket_keys)
        self._declare(bucket_keys)

        def bound(key):  # runs on the job's threads: binding is background work too
            data, label = shapes_fn(key) if shapes_fn is not None else self._bucket_shapes(key)
            module = self._bucket_module(key, data, label)
            if self.optimizer_initialized and not module.optimizer_initialized:
                module.borrow_optimizer(self._buckets[self._default_bucket_key])
            return module
        job = PrecompileJob({key: functools.partial(bound, key) for key in bucket_keys}, logger=self.logger)
        if wait:
            job.wait()
        self._precompile_job = job
        return job

    def _before_training(self, train_data):
        # Precompile the other buckets once the first batch has run (from the second
        # train_step on), so the first batch does not share the CPU with every other
        # bucket's compile or load.
        # An iterator that knows its batch order (`upcoming_buckets()`, jbind extension)
        # gets its buckets compiled in the order it needs them, each epoch only those
        # it will visit; otherwise every declared bucket, largest first.
        keys = getattr(train_data, "buckets", None)
        self._pending_precompile = sorted(set(keys), reverse=True) if keys else None
        self._upcoming = getattr(train_data, "upcoming_buckets", None) if keys else None
        self._precompiled: set = set()
        self._stepped = False
        if keys:
            self._declare(keys)

    def _before_epoch(self, train_data):
        self._ask_upcoming = True

    def _next_precompile(self):
        """Bucket keys to compile now (None: nothing new)."""
        if self._upcoming is None:
            keys, self._pending_precompile = self._pending_precompile, None
            return keys
        if not getattr(self, "_ask_upcoming", True) or len(self._precompiled) >= len(self._declared):
            return None
        self._ask_upcoming = False
        keys = [k for k in self._upcoming() if k not in self._precompiled]
        self._precompiled.update(keys)
        return keys or None

    def _declare(self, keys):
        self._declared = list(dict.fromkeys(list(self._declared) + list(keys) + [self._default_bucket_key]))

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Bind the next batch's bucket ahead of time (as MXNet does)."""
        if not self.binded:
            return
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self.switch_bucket(original, None, None)

    # --- computation -----------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        if not (self.binded and self.params_initialized):
            raise MXNetError("forward needs a bound module with initialized parameters")
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        if not (self.binded and self.params_initialized and self.optimizer_initialized):
            raise MXNetError("update needs bind, init_params and init_optimizer first")
        self._params_dirty = True
        self._curr_module.update()

    def train_step(self, data_batch):
        if getattr(self, "_pending_precompile", None) is not None:
            self._precompiled.add(data_batch.bucket_key)
            if self._stepped:  # the first batch runs alone; later ones overlap the compiles
                keys = self._next_precompile()
                if keys:
                    self.precompile(keys)
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data, data_batch.provide_label)
        self._params_dirty = True
        self._curr_module.train_step(data_batch)
        self._stepped = True

    def get_outputs(self, merge_multi_context=True):
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        return self._curr_module.get_states(merge_multi_context)

    def set_states(self, states=None, value=None):
        self._curr_module.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        self._curr_module.install_monitor(mon)

    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Save as MXNet does: every bound bucket's symbol as `prefix-KEY-symbol.json`, the
        bucket keys as `prefix.buckets` (an int32 NDArray, so the keys must be ints) and the
        shared parameters as `prefix-%04d.params`. jbind also writes the default bucket's
        symbol as `prefix-symbol.json`, so `mx.model.load_checkpoint` reads it too."""
        if not self._buckets:
            raise MXNetError("an empty BucketingModule cannot be saved")
        keys = list(self._buckets)
        if not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) for k in keys):
            raise MXNetError(f"save_checkpoint: bucket keys {keys} must be ints (they are saved as an int32 "
                             "array, as MXNet does)")
        from ..ndarray import array, save
        for key in keys:
            self._buckets[key].symbol.save("%s-%s-symbol.json" % (prefix, key), remove_amp_cast=remove_amp_cast)
        save("%s.buckets" % prefix, array(np.asarray(keys, np.int32), dtype=np.int32))
        self._symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
        self.save_params("%s-%04d.params" % (prefix, epoch))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule with the parameters of `prefix-%04d.params` (MXNet's `load`).

        `sym_gen` and `default_bucket_key` are required, as in MXNet; `kwargs` go to the
        constructor. The parameters are set when the module is bound; the buckets listed in
        `prefix.buckets` are checked against the saved `prefix-KEY-symbol.json` files then
        made by `sym_gen` as they are used (MXNet also rebuilds them)."""
        from ..model import load_params
        from ..ndarray import load
        from ..symbol import load as load_symbol
        if sym_gen is None:
            raise MXNetError("sym_gen is required for loading a BucketingModule")
        if default_bucket_key is None:
            raise MXNetError("default_bucket_key is required for loading a BucketingModule")
        saved = load("%s.buckets" % prefix, any_layout=True)
        if len(saved) != 1 or saved[0].ndim != 1:
            raise MXNetError(f"{prefix}.buckets: expected one 1-d array of bucket keys")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key in saved[0].asnumpy().astype(np.int64).tolist():
            args = load_symbol("%s-%s-symbol.json" % (prefix, key)).list_arguments()
            made = mod._call_sym_gen(key)[0].list_arguments()
            if args != made:
                raise MXNetError(f"{prefix}-{key}-symbol.json: its arguments {args} differ from those sym_gen({key}) "
                                 f"makes {made}")
        mod._loaded_params = load_params(prefix, epoch)
        mod.params_initialized = True
        return mod
