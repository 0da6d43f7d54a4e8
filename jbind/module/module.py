"""Module: a symbol bound over one or more contexts, with parameters and an optimizer."""
from __future__ import annotations

import logging
import warnings

import jax
import numpy as np

from ..base import MXNetError
from ..context import Context, check_group2ctx, cpu
from ..io_util import atomic_write_bytes
from ..ndarray.ndarray import NDArray, zeros
from .base_module import BaseModule
from . import fused_step
from .executor_group import DataParallelExecutorGroup


def _make_kvstore(kvstore, num_device, updater):
    """The module's KVStore object, as MXNet's `_create_kvstore` chooses it: None on one
    device (unless dist), else the named store. A local store does no work here (the fused
    step sums the devices' gradients itself, which is what it did); it holds the module's
    updater, so `mod._kvstore._updater.states` are the optimizer states, as in MXNet."""
    if kvstore is None or not isinstance(kvstore, str):
        return kvstore
    from .. import kvstore as kv
    store = kv.create(kvstore)  # checks the name
    if store.type.startswith("dist"):
        return store
    if num_device == 1:
        return None
    store._set_updater(updater)
    return store


def _declared_stype(attrs) -> str:
    """A variable's storage type from its attributes (MXNet writes '1'/'2', jbind the name)."""
    st = attrs.get("__storage_type__", "default")
    return {"0": "default", "1": "row_sparse", "2": "csr"}.get(st, st)


def _parse_data_desc(names, shapes, what):
    if shapes is None:
        return None
    descs = _to_desc(shapes)
    got = [d.name for d in descs]
    if sorted(got) != sorted(names):
        raise MXNetError(f"{what} provided by {what}_shapes don't match names specified by {what}_names "
                         f"({got} vs. {list(names)})")
    return descs


def _to_desc(shapes):
    from ..io import DataDesc
    out = []
    for d in shapes:
        if isinstance(d, DataDesc):
            out.append(d)
        elif hasattr(d, "name") and hasattr(d, "shape"):
            out.append(DataDesc(d.name, tuple(d.shape), getattr(d, "dtype", np.float32),
                                getattr(d, "layout", "NCHW")))
        else:
            out.append(DataDesc(d[0], tuple(d[1])))
    return out


class Module(BaseModule):
    """MXNet's `mx.mod.Module`: bind, init_params, init_optimizer, forward/backward/update, fit."""

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",), logger=logging,
                 context=None, work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        context = cpu() if context is None else context
        self._context = [context] if isinstance(context, Context) else list(context)
        check_group2ctx(group2ctxs, self._context)
        self._work_load_list = list(work_load_list) if work_load_list is not None else [1] * len(self._context)
        if len(self._work_load_list) != len(self._context):
            raise MXNetError(f"work_load_list has {len(self._work_load_list)} entries for "
                             f"{len(self._context)} contexts")
        self._symbol = symbol
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        arg_names = symbol.list_arguments()
        for what, names, strict in (("data", data_names, True), ("state", state_names, True),
                                    ("fixed_param", fixed_param_names, True), ("label", label_names, False)):
            bad = [n for n in names if n not in arg_names]
            if bad and strict:
                raise ValueError(f"You created Module with Module(..., {what}_names={names}) but input with name "
                                 f"{bad[0]!r} is not found in symbol.list_arguments(). Did you mean one of:\n\t"
                                 + "\n\t".join(arg_names))
            if bad:
                warnings.warn(f"Module: label name(s) {bad} not found in the symbol's arguments", stacklevel=2)
        self._data_names, self._label_names = data_names, label_names
        self._state_names, self._fixed_param_names = state_names, fixed_param_names
        input_names = set(data_names + label_names + state_names)
        self._param_names = [x for x in arg_names if x not in input_names]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._dist = False           # a dist_sync kvstore: the fused step spans every worker
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from `prefix-symbol.json` and `prefix-%04d.params` (and `.states`)."""
        from ..model import load_checkpoint
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Write `prefix-symbol.json`, `prefix-%04d.params` and optionally `.states` (atomically)."""
        self._symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
        self.save_params("%s-%04d.params" % (prefix, epoch))
        self.logger.info('Saved checkpoint to "%s-%04d.params"', prefix, epoch)
        if save_optimizer_states:
            self.save_optimizer_states("%s-%04d.states" % (prefix, epoch))

    # --- properties ------------------------------------------------------------------------
    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        self._need("binded")
        return self._data_shapes

    @property
    def label_shapes(self):
        self._need("binded")
        return self._label_shapes

    @property
    def output_shapes(self):
        self._need("binded")
        g = self._exec_group
        shapes = []
        for name, k in zip(self._output_names, range(len(self._output_names))):
            s = list(g.execs[0].outputs[k].shape) if g.execs[0].outputs[k]._data is not None \
                else list(g.execs[0]._out_shapes[k])
            if len(g.execs) > 1 and s:
                s[0] = sum(e._out_shapes[k][0] for e in g.execs)
            shapes.append((name, tuple(s)))
        return shapes

    _NEEDS = {"binded": "bound (call bind)", "params_initialized": "initialized (call init_params)",
              "optimizer_initialized": "given an optimizer (call init_optimizer)"}

    def _need(self, what):
        if not getattr(self, what):
            raise MXNetError(f"this call needs the module to be {self._NEEDS[what]} first")

    # --- parameters ------------------------------------------------------------------------
    def get_params(self):
        self._need("binded")
        self._need("params_initialized")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=None, arg_params=None, aux_params=None, allow_missing=False,
                    force_init=False, allow_extra=False):
        """Initialize parameters from `arg_params`/`aux_params`, else with `initializer`."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. init_params call ignored.",
                          stacklevel=2)
            return
        self._need("binded")
        if initializer is None and arg_params is None and aux_params is None:
            from ..initializer import Uniform
            initializer = Uniform(0.01)
        from ..initializer import InitDesc
        g = self._exec_group
        attrs = self._symbol.attr_dict()
        if self._arg_params is None:
            # as MXNet's: a parameter declared sparse (`var(stype='row_sparse')`) is handed out
            # in that storage type; on the device it is computed with as a dense array
            self._arg_params = {name: zeros(block[0].shape, dtype=block[0].dtype,
                                            stype=_declared_stype(attrs.get(name, {})))
                                for name, block in zip(g.param_names, g.param_arrays)}
        if self._aux_params is None:
            self._aux_params = {name: zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(g.aux_names, g.aux_arrays)}

        def _impl(desc, arr, cache):
            if cache is not None:
                if desc in cache:
                    src = cache[desc]
                    if src is not arr:
                        if tuple(src.shape) != tuple(arr.shape):
                            raise MXNetError(f"parameter {str(desc)!r} has shape {tuple(src.shape)} but the "
                                             f"bound symbol needs {tuple(arr.shape)}")
                        arr[:] = src
                    return
                if not allow_missing:
                    raise RuntimeError(f"{desc} is not presented")
            if initializer is not None:
                initializer(desc, arr)

        for name, arr in sorted(self._arg_params.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            _impl(InitDesc(name, attrs.get(name, None)), arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        g.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def _assign_params(self, arg_params, aux_params, allow_extra):
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # --- binding ---------------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        if force_rebind:
            self.binded = False
            self._exec_group = None
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        if not for_training and inputs_need_grad:
            raise MXNetError("inputs_need_grad=True needs for_training=True")
        self._data_shapes = _parse_data_desc(self._data_names, data_shapes, "data")
        self._label_shapes = _parse_data_desc(self._label_names, label_shapes, "label") \
            if label_shapes else None
        shared_group = None
        if shared_module is not None:
            if not (shared_module.binded and shared_module.params_initialized):
                raise MXNetError("shared_module must be bound and have initialized parameters")
            shared_group = shared_module._exec_group
            if len(shared_group.execs) != len(self._context):
                raise MXNetError("shared_module runs on a different number of contexts")
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, self._data_shapes, self._label_shapes or [],
            self._param_names, for_training, inputs_need_grad, shared_group, logger=self.logger,
            fixed_param_names=self._fixed_param_names, grad_req=grad_req, state_names=self._state_names)
        self.binded = True
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            self._exec_group.set_params(self._arg_params, self._aux_params)
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)

    def reshape(self, data_shapes, label_shapes=None):
        self._need("binded")
        self._data_shapes = _parse_data_desc(self._data_names, data_shapes, "data")
        self._label_shapes = _parse_data_desc(self._label_names, label_shapes, "label") if label_shapes else None
        self._exec_group.reshape(self._data_shapes, self._label_shapes or [])

    # --- optimizer -------------------------------------------------------------------------
    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.01),),
                       force_init=False):
        self._need("binded")
        self._need("params_initialized")
        if self.optimizer_initialized and not force_init:
            warnings.warn("optimizer already initialized, ignoring...", stacklevel=2)
            return
        from .. import optimizer as opt
        if self._params_dirty:
            self._sync_params_from_devices()
        kv_type = kvstore if isinstance(kvstore, str) or kvstore is None else getattr(kvstore, "type", "local")
        self._dist = bool(kv_type) and kv_type.startswith("dist")
        if self._dist and "async" in kv_type:
            raise MXNetError(f"kvstore {kv_type!r}: only synchronous training (dist_sync) is supported")
        batch_size = self._exec_group.batch_size
        if self._dist:
            from .. import distributed
            batch_size *= distributed.num_workers()  # MXNet: rescale by the global batch
            self._broadcast_params()
        idx2name = dict(enumerate(self._exec_group.param_names))
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", 1.0 / batch_size)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **optimizer_params)
        else:
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        self._optimizer = optimizer
        self._updater = opt.get_updater(optimizer)
        self._kvstore = _make_kvstore(kvstore, len(self._context), self._updater)
        self._update_on_kvstore = False
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _broadcast_params(self):
        """Every worker starts from rank 0's parameters (MXNet's kvstore.init + pull)."""
        from .. import distributed
        arg, aux = self.get_params()
        names = sorted(arg) + sorted(aux)
        values = distributed.broadcast_from_rank0([(arg.get(n) if n in arg else aux[n]).asnumpy() for n in names])
        got = dict(zip(names, values))
        self.set_params({n: got[n] for n in arg}, {n: got[n] for n in aux}, force_init=True)

    def borrow_optimizer(self, shared_module):
        if not shared_module.optimizer_initialized:
            raise MXNetError("borrow_optimizer: the shared module has no optimizer")
        self._dist = shared_module._dist
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        self._need("optimizer_initialized")
        atomic_write_bytes(fname, self._updater.get_states())

    def load_optimizer_states(self, fname):
        self._need("optimizer_initialized")
        from ..optimizer._states import load_file
        load_file(self._updater, fname)

    # --- computation -----------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        self._need("binded")
        self._need("params_initialized")
        self._reshape_for(data_batch)
        self._exec_group.forward(data_batch, is_train)

    def _reshape_for(self, data_batch):
        curr = tuple(d.shape for d in self._data_shapes)
        new = tuple(tuple(d.shape) for d in data_batch.data)
        if curr != new:
            if getattr(data_batch, "provide_data", None):
                new_dshape = data_batch.provide_data
            else:
                new_dshape = [(d.name, s) for d, s in zip(self._data_shapes, new)]
            if getattr(data_batch, "provide_label", None):
                new_lshape = data_batch.provide_label
            elif getattr(data_batch, "label", None) and self._label_shapes:
                new_lshape = [(d.name, tuple(lab.shape)) for d, lab in zip(self._label_shapes, data_batch.label)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)

    def backward(self, out_grads=None):
        self._need("binded")
        self._need("params_initialized")
        self._exec_group.backward(out_grads=out_grads)

    def train_step(self, data_batch):
        """forward_backward + update; one compiled call (the fused step) where possible."""
        if not self._can_fuse():
            return super().train_step(data_batch)
        fused_step.run(self, data_batch, fused_step.step_runner(self))

    def compile_training(self):
        """Compile what a training step of this module runs (the fused step, or forward+backward);
        returns seconds spent (0 if it was cached). Safe to call from a background thread."""
        return fused_step.compile_training(self)

    def _can_fuse(self) -> bool:
        return fused_step.can_fuse(self)

    def update(self):
        """Apply the optimizer: gradients summed over devices, one update, every device's copy set."""
        self._need("binded")
        self._need("params_initialized")
        self._need("optimizer_initialized")
        self._params_dirty = True
        g = self._exec_group
        totals = {}
        for i, (weights, grads) in enumerate(zip(g.param_arrays, g.grad_arrays)):
            if grads[0] is None:
                continue
            total = grads[0]._data
            if len(grads) > 1:
                dev0 = weights[0]._data.devices().pop()
                for gr in grads[1:]:
                    total = total + jax.device_put(gr._data, dev0)
            totals[i] = total
        if self._dist and totals:
            from .. import distributed
            keys = list(totals)
            device = g.param_arrays[keys[0]][0]._data.devices().pop()
            totals = dict(zip(keys, distributed.allreduce_sum([totals[i] for i in keys], device)))
        keys = list(totals)
        self._updater(keys, [NDArray(totals[i]) for i in keys], [g.param_arrays[i][0] for i in keys])
        for i in keys:
            weights = g.param_arrays[i]
            for w in weights[1:]:
                w[:] = weights[0]

    def get_outputs(self, merge_multi_context=True):
        self._need("binded")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._need("binded")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        self._exec_group.install_monitor(mon)
