"""`mx.gluon.Trainer`: applies an optimizer to a set of Parameters.

The update of all parameters is one compiled call: the optimizer's pure `step_tree` over
every parameter at once, jitted per optimizer setting (learning rates, weight decays and
update counts are traced arguments, so changing them compiles nothing).
"""
from __future__ import annotations

import os
import tempfile

import jax
import jax.numpy as jnp

from .. import kvstore as _kv
from .. import optimizer as opt
from ..base import MXNetError
from ._parameter_dict import ParameterDict
from ._util import GluonAssertionError
from .parameter import Parameter

__all__ = ["Trainer"]

_KVSTORES = (None, False, "device", "local")


class Trainer:
    """Applies an optimizer to `params` (a ParameterDict, a dict name -> Parameter, or a list).

    Args:
        optimizer: an optimizer name (with `optimizer_params`) or an `mx.optimizer.Optimizer`.
        kvstore: 'device' or 'local' (or such a KVStore; gradients of a parameter on
            several contexts are summed), or None; jbind has no distributed kvstore here.
        update_on_kvstore: as MXNet's: with several contexts and None, True (the
            kvstore's updater, shared with the Trainer, holds the states); then `update` and
            `allreduce_grads` are errors. The arithmetic is the same either way.
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
            p._trainer = self
        if isinstance(kvstore, _kv.KVStore) and kvstore.type in _KVSTORES:
            pass
        elif not (isinstance(kvstore, str) and kvstore in _KVSTORES) and kvstore not in (None, False):
            raise MXNetError(f"Trainer: kvstore {kvstore!r} is not supported by jbind's Trainer "
                             "(use 'device', 'local' or None)")
        self._kvstore = None
        self._kv_initialized = False
        self._params_to_init = list(self._params)
        if compression_params is not None:
            raise MXNetError("Trainer: gradient compression needs a distributed kvstore, which jbind's Trainer "
                             "does not have")
        self._kvstore_type = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._compression_params = compression_params
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad
        self._jit: dict = {}

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

    def _init_kvstore(self) -> None:
        """Decide, as MXNet does on the first step, whether a kvstore is used (several contexts)."""
        ctxs = {str(c) for p in self._params for c in p.list_ctx()}
        if self._kvstore_type and len(ctxs) > 1:
            given = self._kvstore_type
            self._kvstore = given if isinstance(given, _kv.KVStore) else _kv.create(given)
            if self._update_on_kvstore is None:
                self._update_on_kvstore = True
            if self._update_on_kvstore:
                self._kvstore._set_updater(self._updater)
        self._kv_initialized = True
        self._params_to_init = []

    def _reset_kvstore(self) -> None:
        """Drop the kvstore (parameters were reloaded); the next step decides again."""
        self._kvstore = None
        self._kv_initialized = False
        self._params_to_init = list(self._params)

    def _check_not_on_kvstore(self, what) -> None:
        if not self._kv_initialized:
            self._init_kvstore()
        if self._update_on_kvstore:
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
        self._optimizer.rescale_grad = self._scale / batch_size
        todo = self._fresh(ignore_stale_grad)
        self._allreduce(todo)
        self._update(todo)

    def allreduce_grads(self) -> None:
        """Sum each parameter's gradients across its contexts (for `update`, e.g. after clipping)."""
        self._check_not_on_kvstore("allreduce_grads")
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
            stale = [d.context for d in p.list_data() if not d._fresh_grad]
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

    @staticmethod
    def _allreduce(params) -> None:
        for p in params:
            grads = p.list_grad()
            if len(grads) < 2:
                continue
            total = grads[0]._data
            for g in grads[1:]:
                total = total + g.as_in_context(grads[0].context)._data
            grads[0]._data = total
            for g in grads[1:]:
                g._data = grads[0].as_in_context(g.context)._data

    def _update(self, params) -> None:
        scaler = getattr(self, "_amp_loss_scaler", None)
        if scaler is not None and scaler.has_overflow(self._params):
            for p in params:
                for d in p.list_data():
                    d._fresh_grad = False
            return  # AMP: an overflowing step is skipped (the scaler has lowered the scale)
        if not params:
            return
        indices = [self._param2idx[p.name] for p in params]
        upd, optim = self._updater, self._optimizer
        for i, p in zip(indices, params):
            if i not in upd.states:
                upd.states[i] = optim.create_state_multi_precision(i, p.list_data()[0])
                upd.states_synced[i] = True
        states = [upd.states[i] for i in indices]
        lrs, wds, ts = optim.prepare(indices)
        weights = [p.list_data()[0]._data for p in params]
        grads = [p.list_grad()[0]._data for p in params]
        new_w, new_s = self._compiled()(weights, grads, [optim._functional_state(s) for s in states],
                                        jnp.asarray(lrs, jnp.float32), jnp.asarray(wds, jnp.float32),
                                        jnp.asarray(ts, jnp.int32))
        for p, w, s, ns in zip(params, new_w, states, new_s):
            optim._store_state(s, ns)
            first, *rest = p.list_data()
            first._data = w
            for d in rest:
                d._data = first.as_in_context(d.context)._data.copy()
            for d in (first, *rest):
                d._fresh_grad = False

    def _compiled(self):
        optim = self._optimizer
        key = (id(optim), optim.fingerprint())
        fn = self._jit.get(key)
        if fn is None:
            self._jit.clear()

            def run(weights, grads, states, lrs, wds, ts):
                out = [optim.step(w, g, s, lrs[k], wds[k], ts[k])
                       for k, (w, g, s) in enumerate(zip(weights, grads, states))]
                return [o[0] for o in out], [o[1] for o in out]
            fn = self._jit[key] = jax.jit(run)
        return fn

    # --- states -----------------------------------------------------------------------------
    def save_states(self, fname) -> None:
        """Write the optimizer and its states to `fname` (MXNet's format, written atomically)."""
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
        _states.load_file(self._updater, fname)
        self._optimizer = self._updater.optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))  # _scale stays this Trainer's
        if self._kvstore is not None and self._update_on_kvstore:
            self._kvstore._set_updater(self._updater)
        self._jit.clear()
