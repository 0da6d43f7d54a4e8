"""`mx.gluon.Trainer`: applies an optimizer to a set of Parameters.

The update of all parameters is one compiled call: the optimizer's pure `step_tree` over
every parameter at once, jitted per optimizer setting (learning rates, weight decays and
update counts are traced arguments, so changing them compiles nothing).
"""
from __future__ import annotations

import os
import tempfile

import jax

from .. import kvstore as _kv
from .. import optimizer as opt
from ..base import MXNetError
from ..optimizer._packed import pack_rates, unpack_rates
from ._parameter_dict import ParameterDict
from ._trainer_kv import check_kvstore_arg, decide_kvstore
from ._util import GluonAssertionError, check
from .parameter import Parameter

__all__ = ["Trainer"]

class Trainer:
    """Applies an optimizer to `params` (a ParameterDict, a dict name -> Parameter, or a list).

    Args:
        optimizer: an optimizer name (with `optimizer_params`) or an `mx.optimizer.Optimizer`.
        kvstore: 'device' or 'local' (or such a KVStore; gradients of a parameter on
            several contexts are summed), a `KVStoreBase` store or registered name (driven
            through `broadcast` / `pushpull`), or None; no distributed kvstore here.
        update_on_kvstore: as MXNet's (see `_trainer_kv`): with several contexts and None,
            True for jbind's stores (the kvstore's updater, shared with the Trainer, holds
            the states); then `update` and `allreduce_grads` are errors. Row_sparse weights
            always live in the kvstore (read them with `Parameter.row_sparse_data`).
        compression_params: must be None (no distributed kvstore here).
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device", compression_params=None,
                 update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = list(params.values())
        if not isinstance(params, (list, tuple)):
            raise MXNetError(f"First argument must be a list or dict of Parameters, got {type(params).__name__}.")
        self._params, self._param2idx = [], {}
        for i, p in enumerate(params):
            if not isinstance(p, Parameter):
                raise MXNetError(f"First argument must be a list or dict of Parameters, got list of {type(p)}.")
            if p.name in self._param2idx:
                raise MXNetError(f"Parameter {p.name!r} is given to the Trainer twice")
            self._param2idx[p.name] = i
            self._params.append(p)
            p._set_trainer(self)
        check_kvstore_arg(kvstore)
        if compression_params is not None:
            raise MXNetError("Trainer: gradient compression needs a distributed kvstore, which jbind's Trainer "
                             "does not have")
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._compression_params = compression_params
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad
        self._jit: dict = {}
        self._reset_kvstore()

    def _init_optimizer(self, optimizer, optimizer_params) -> None:
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise MXNetError("optimizer_params must be None if optimizer is an instance of Optimizer "
                                 "instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updater = opt.get_updater(self._optimizer)

    def _contexts(self) -> list:
        contexts = None
        for p in self._params:
            ctx = p.list_ctx()
            check(contexts is None or contexts == ctx, f"All Parameters must be initialized on the same set of "
                  f"contexts, but Parameter {p.name} is initialized on {ctx!s} while previous Parameters are "
                  f"initialized on {contexts!s}.")
            contexts = ctx
        return contexts or []

    def _init_kvstore(self) -> None:
        """Decide, as MXNet does on the first step, the kvstore and where weights are updated."""
        kv, update = decide_kvstore(self._kvstore_params["kvstore"], self._kvstore_params["update_on_kvstore"],
                                    len(self._contexts()), self._params)
        if kv is not None and update:
            if isinstance(kv, _kv.KVStore):
                kv._set_updater(self._updater)   # one updater: the states are the Trainer's too
            else:
                kv.set_optimizer(self._optimizer)
        self._kvstore, self._update_on_kvstore = kv, update
        self._kv_initialized = True

    def _init_params(self) -> None:
        """Put the initialized parameters into the kvstore (a row_sparse weight lives there; a
        store of another kind gets every weight broadcast); deferred ones wait."""
        waiting = []
        for p in self._params_to_init:
            if p._deferred_init:
                waiting.append(p)
            elif self._kvstore is not None:
                arrays = p._check_and_get(p._data, list)
                idx = self._param2idx[p.name]
                if p._stype != "default":
                    self._kvstore.init(idx, arrays[0])
                elif not isinstance(self._kvstore, _kv.KVStore):
                    self._kvstore.broadcast(idx, arrays[0], arrays)
        self._params_to_init = waiting

    def _reset_kvstore(self) -> None:
        """Drop the kvstore (parameters were reloaded); the next step decides again."""
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _row_sparse_pull(self, parameter, out, row_id, full_idx=False) -> None:
        """Write the rows `row_id` of a row_sparse weight (all of it with `full_idx`) into `out`."""
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()
        idx = self._param2idx[parameter.name]
        if full_idx:
            self._kvstore.pull(idx, out=out, ignore_sparse=False)
        else:
            self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id)

    def _check_not_on_kvstore(self, what) -> None:
        if not self._kv_initialized:
            self._init_kvstore()
        if self._kvstore is not None and self._update_on_kvstore:
            raise GluonAssertionError(f"{what}() when parameters are updated on kvstore is not supported. "
                                      "Try setting `update_on_kvstore` to False when creating trainer.")

    @property
    def _updaters(self) -> list:
        return [self._updater]

    @property
    def optimizer(self):
        """The optimizer this Trainer applies."""
        return self._optimizer

    @property
    def learning_rate(self) -> float:
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr) -> None:
        """Set the optimizer's learning rate."""
        self._optimizer.set_learning_rate(lr)

    # --- the step ---------------------------------------------------------------------------
    def step(self, batch_size, ignore_stale_grad=False) -> None:
        """Sum the gradients across contexts and update every parameter; gradients are
        scaled by `1 / batch_size`. A parameter whose gradient no backward refreshed since
        the last step is an error, or skipped with `ignore_stale_grad`."""
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()
        self._optimizer.rescale_grad = self._scale / batch_size
        todo = self._fresh(ignore_stale_grad)
        self._allreduce(todo)
        self._update(todo)

    def allreduce_grads(self) -> None:
        """Sum each parameter's gradients across its contexts (for `update`, e.g. after clipping)."""
        self._check_not_on_kvstore("allreduce_grads")
        if self._params_to_init:
            self._init_params()
        self._allreduce([p for p in self._params if p.grad_req != "null"])

    def update(self, batch_size, ignore_stale_grad=False) -> None:
        """Update the parameters from their (already all-reduced) gradients, scaled by `1 / batch_size`."""
        self._check_not_on_kvstore("update")
        self._optimizer.rescale_grad = self._scale / batch_size
        self._update(self._fresh(ignore_stale_grad))

    def _fresh(self, ignore_stale_grad) -> list:
        out = []
        for p in self._params:
            if p.grad_req == "null":
                continue
            stale = [d.context for d in p._check_and_get(p._data, list) if not d._fresh_grad]
            if stale and not ignore_stale_grad:
                raise MXNetError(
                    f"Gradient of Parameter `{p.name}` on context {stale[0]} has not been updated by backward "
                    "since last `step`. This could mean a bug in your model that made it only use a subset of "
                    "the Parameters (Blocks) for this iteration. If you are intentionally only using a subset, "
                    "call step with ignore_stale_grad=True to suppress this warning and skip updating of "
                    "Parameters with stale gradient")
            if not stale:
                out.append(p)
        return out

    def _on_store(self, p) -> bool:
        """Whether the kvstore, not this Trainer, updates `p`'s weight."""
        kv = self._kvstore
        return p._stype != "default" or (kv is not None and self._update_on_kvstore
                                         and not isinstance(kv, _kv.KVStore))

    def _allreduce(self, params) -> None:
        kv = self._kvstore
        for p in params:
            grads = p.list_grad()
            idx = self._param2idx[p.name]
            if p._stype != "default":
                kv.push(idx, grads)          # the store updates the row_sparse weight it holds
            elif kv is None or isinstance(kv, _kv.KVStore):
                _sum_across(grads)           # jbind's own stores: the same sum, without a copy in the store
            elif self._update_on_kvstore:
                kv.pushpull(idx, grads, out=p.list_data())
            else:
                kv.pushpull(idx, grads)

    def _update(self, params) -> None:
        scaler = getattr(self, "_amp_loss_scaler", None)
        overflow = scaler is not None and scaler.has_overflow(self._params)
        local = [] if overflow else [p for p in params if not self._on_store(p)]
        if local:
            self._update_local(local)
        for p in params:   # AMP: an overflowing step is skipped (the scaler has lowered the scale)
            for d in p._check_and_get(p._data, list):
                d._fresh_grad = False

    def _update_local(self, params) -> None:
        indices = [self._param2idx[p.name] for p in params]
        upd, optim = self._updater, self._optimizer
        held = upd.states
        for i, p in zip(indices, params):
            if i not in held:
                held[i] = optim.create_state_multi_precision(i, p.list_data()[0])
                upd.states_synced[i] = True
        states = [held[i] for i in indices]
        lrs, wds, ts = optim.prepare(indices)
        datas = [p.list_data() for p in params]
        weights = [d[0]._data for d in datas]
        grads = [p.list_grad()[0]._data for p in params]   # a row_sparse gradient: every row (no lazy update)
        packed = pack_rates(lrs, wds, ts)   # one host array: one transfer, no eager device ops
        new_w, new_s = self._compiled()(weights, grads, [optim._functional_state(s) for s in states], packed)
        for d, w, s, ns in zip(datas, new_w, states, new_s):
            optim._store_state(s, ns)
            first = d[0]
            first._data = w
            for other in d[1:]:
                other._data = first.as_in_context(other.context)._data.copy()

    def _compiled(self):
        """The update of every parameter, one jitted function per optimizer setting (the few
        most recent kept: a last batch of another size changes `rescale_grad`)."""
        optim = self._optimizer
        key = (id(optim), optim.fingerprint())
        fn = self._jit.get(key)
        if fn is None:
            def run(weights, grads, states, packed):
                lrs, wds, ts = unpack_rates(packed, len(weights))
                out = [optim.step(w, g, s, lrs[k], wds[k], ts[k])
                       for k, (w, g, s) in enumerate(zip(weights, grads, states))]
                return [o[0] for o in out], [o[1] for o in out]
            if len(self._jit) >= 4:
                self._jit.pop(next(iter(self._jit)))
            fn = self._jit[key] = jax.jit(run)
        return fn

    # --- states -----------------------------------------------------------------------------
    def save_states(self, fname) -> None:
        """Write the optimizer and its states to `fname` (MXNet's format, written atomically)."""
        if not self._kv_initialized:
            self._init_kvstore()
        if self._kvstore is not None and self._update_on_kvstore and not isinstance(self._kvstore, _kv.KVStore):
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)   # the store holds the states
            return
        data = self._updater.get_states(dump_optimizer=True)
        folder = os.path.dirname(os.path.abspath(fname))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".states.")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, fname)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def load_states(self, fname) -> None:
        """Read what `save_states` (or MXNet's) wrote: the states and, if saved, the optimizer.
        The file is data; anything but arrays, numbers and jbind's optimizers is refused."""
        from ..optimizer import _states  # noqa: PLC0415
        if not self._kv_initialized:
            self._init_kvstore()
        if self._kvstore is not None and self._update_on_kvstore and not isinstance(self._kvstore, _kv.KVStore):
            self._kvstore.load_optimizer_states(fname)
            return
        _states.load_file(self._updater, fname)
        self._optimizer = self._updater.optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))  # _scale stays this Trainer's
        if isinstance(self._kvstore, _kv.KVStore) and self._update_on_kvstore:
            self._kvstore._set_updater(self._updater)
        self._jit.clear()


def _sum_across(grads) -> None:
    """Every array of `grads` (one per context) becomes their sum."""
    if len(grads) < 2:
        return
    total = grads[0]._data
    for g in grads[1:]:
        total = total + g.as_in_context(grads[0].context)._data
    grads[0]._data = total
    for g in grads[1:]:
        g._data = grads[0].as_in_context(g.context)._data

