"""The Optimizer base class, its registry and the Updater, as `mxnet.optimizer` (MXNet 1.9.1).

Every optimizer is one pure rule with two faces:

* functional, for compiled training steps (`jax.jit` over a whole pytree of parameters):
  `init_state(weight) -> state` and
  `step(weight, grad, state, lr, wd, t) -> (new_weight, new_state)`, where `lr` and `wd`
  are this parameter's effective rate and decay (multipliers applied) and `t` is its
  1-based update count; `prepare(indices)` does MXNet's host-side bookkeeping and returns
  them;
* imperative, MXNet's API (_imperative.py): `create_state(index, weight)` returns NDArrays laid out as
  MXNet's, and `update(index, weight, grad, state)` writes the new weight and states into
  those handles.

Both run the same `step`. The rule itself is an optax chain built by `_tx(lr, wd, t)`;
the state is MXNet's layout (None, an array, or a tuple of arrays), mapped to and from
the chain's state by `_from_mx` / `_to_mx`. Static hyperparameters (momentum, betas,
rescale_grad, clip_gradient, ...) are read when `step` is traced; `fingerprint()` names
them, so a compiled step can be keyed on it.
"""
from __future__ import annotations

import collections
import copy
import logging
import warnings

import jax
import numpy as np
from ._lazy import optax

from ..compile._options import cpu_options
from ..base import MXNetError
from ._packed import Predicted, increment, pack_rates, unpack_rates
from ..ndarray import NDArray
from ._imperative import ImperativeAPI

__all__ = ["Optimizer", "Updater", "create", "get_updater", "register"]


class Optimizer(ImperativeAPI):
    """Base class of all optimizers (MXNet 1.x arguments and semantics).

    Args:
        rescale_grad: multiplies the gradient before anything else (often 1/batch_size).
        param_idx2name: index -> parameter name; names not ending in `_weight`/`_gamma` get
            wd_mult 0, and lr_mult/wd_mult may then be given by name.
        wd: weight decay, added to the gradient as `wd * weight` (L2, not decoupled).
        clip_gradient: clip the (rescaled) gradient into [-c, c].
        learning_rate: the rate; default 0.01 unless `lr_scheduler` gives one.
        lr_scheduler: an `mx.lr_scheduler.LRScheduler`, called with `num_update`.
        sym: a Symbol whose `__lr_mult__` / `__wd_mult__` attributes set the multipliers.
        begin_num_update: the update count to start from.
        multi_precision: for float16 weights, keep a float32 master copy of the weight in
            the state, `(rule state, master)`, update the master in float32 and store it
            rounded to float16 in the weight, as MXNet.
        param_dict: index -> object with `lr_mult` / `wd_mult` (Gluon parameters).
    """

    opt_registry: dict = {}
    _hyper: tuple = ()           # static hyperparameter attributes besides rescale_grad/clip_gradient
    _clip_when_set = False       # MXNet's Python-level rules clip when `clip_gradient is not None`

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0, clip_gradient=None, learning_rate=None,
                 lr_scheduler=None, sym=None, begin_num_update=0, multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if self.lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if self.lr_scheduler is not None and learning_rate is not None:
            if self.lr_scheduler.base_lr != learning_rate:
                logging.warning("learning rate from ``lr_scheduler`` has been overwritten by "
                                "``learning_rate`` in optimizer.")
                self.lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult: dict = {}
        self.wd_mult: dict = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self._jit_cache: dict = {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # --- registry -------------------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Register an optimizer class under its lower-cased name (for `create_optimizer`)."""
        if not isinstance(klass, type):
            raise TypeError(f"register expects a class, got {klass!r}")
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            old = Optimizer.opt_registry[name]
            warnings.warn(f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is overriding existing "
                          f"optimizer {old.__module__}.{old.__name__}", stacklevel=2)
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs) -> "Optimizer":
        """Instantiate the optimizer registered as `name` (case-insensitive)."""
        if name.lower() in Optimizer.opt_registry:
            return Optimizer.opt_registry[name.lower()](**kwargs)
        raise ValueError(f"Cannot find optimizer {name}")

    # --- learning rate and multipliers ----------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note that "
                              "set_learning_rate can mutate the value of the learning rate of the optimizer "
                              "only when the LRScheduler of the optimizer is undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale):
        """[DEPRECATED] Use set_lr_mult."""
        raise DeprecationWarning

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Per-parameter rate multipliers by name or index; symbol `__lr_mult__` attributes first."""
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = _mult(name, "__lr_mult__", attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Per-parameter decay multipliers; named parameters not ending in _weight/_gamma get 0."""
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not (n.endswith("_weight") or n.endswith("_gamma")):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = _mult(name, "__wd_mult__", attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id: int) -> None:
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index) -> None:
        counts, num = self._index_update_count, self.num_update
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            c = counts[idx] = counts.get(idx, self.begin_num_update) + 1
            num = max(c, num)
        self.num_update = num

    def _mult(self, indices, base, mults, attr):
        out, params, names = [], self.param_dict, self.idx2name
        for index in indices:
            if index in params:
                out.append(base * getattr(params[index], attr))
            elif index in mults:
                out.append(base * mults[index])
            else:
                out.append(base * mults.get(names[index], 1.0) if index in names else base)
        return out

    def _get_lrs(self, indices) -> list:
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return self._mult(indices, lr, self.lr_mult, "lr_mult")

    def _get_lr(self, index) -> float:
        return self._get_lrs([index])[0]

    def _get_wds(self, indices) -> list:
        return self._mult(indices, self.wd, self.wd_mult, "wd_mult")

    def _get_wd(self, index) -> float:
        return self._get_wds([index])[0]

    def prepare(self, indices) -> tuple:
        """Count one update of each index; return `(lrs, wds, ts)` for `step`, as MXNet computes them."""
        indices = list(indices)
        self._update_count(indices)
        return self._get_lrs(indices), self._get_wds(indices), [self._index_update_count[i] for i in indices]

    # --- the functional rule --------------------------------------------------------------------
    def _tx(self, lr, wd, t) -> optax.GradientTransformation:
        raise NotImplementedError(f"{type(self).__name__} has no update rule")

    def _clip(self) -> list:
        c = self.clip_gradient
        if (c is not None) if self._clip_when_set else (c and c > 0):
            return [optax.clip(c)]
        return []

    def _to_mx(self, leaves: list):
        """The chain's state leaves -> MXNet's state layout (default: a tuple)."""
        return tuple(leaves)

    def _from_mx(self, state) -> list:
        return jax.tree.leaves(state)

    def _finish(self, new_weight):
        return new_weight

    def fingerprint(self) -> tuple:
        """What a traced `step` depends on besides its arguments."""
        return (type(self).__name__, self.rescale_grad, self.clip_gradient, bool(self.multi_precision)) + \
            tuple(getattr(self, k) for k in self._hyper)

    def _keeps_master(self, weight) -> bool:
        """multi_precision on a float16 weight: the state holds a float32 master copy."""
        return bool(self.multi_precision) and np.dtype(weight.dtype) == np.float16

    def init_state(self, weight: jax.Array):
        """The initial state of one parameter, in MXNet's layout (None, an array or a tuple);
        `(rule state, float32 master copy)` under multi_precision for a float16 weight."""
        if self._keeps_master(weight):
            master = weight.astype(np.float32)
            return (self._init_state(master), master)
        return self._init_state(weight)

    def step(self, weight: jax.Array, grad: jax.Array, state, lr, wd, t):
        """One update of one parameter: `(weight, grad, state, lr, wd, t) -> (new_weight, new_state)`.

        Pure, so it runs under `jax.jit`; `lr`, `wd` (multipliers applied) and `t` (this
        parameter's 1-based update count) may be Python numbers or traced scalars. Under
        multi_precision a float16 weight's rule runs on the float32 master copy and gradient.
        """
        if self._keeps_master(weight):
            inner, master = state
            new_master, new_inner = self._step(master, grad.astype(np.float32), inner, lr, wd, t)
            return new_master.astype(weight.dtype), (new_inner, new_master)
        return self._step(weight, grad, state, lr, wd, t)

    def _init_state(self, weight: jax.Array):
        """The rule's initial state for `weight` (no master copy)."""
        return self._to_mx(jax.tree.leaves(self._tx(0.0, 0.0, 1).init(weight)))

    def _step(self, weight: jax.Array, grad: jax.Array, state, lr, wd, t):
        """The rule's update, on arrays of one dtype."""
        tx = self._tx(lr, wd, t)
        want = jax.eval_shape(tx.init, weight)
        treedef = jax.tree.structure(want)
        leaves = self._from_mx(state)
        if len(leaves) != treedef.num_leaves:
            raise MXNetError(
                f"{type(self).__name__} keeps {treedef.num_leaves} state array(s) "
                f"{[tuple(x.shape) for x in jax.tree.leaves(want)]} per parameter, but the state of "
                f"a {tuple(weight.shape)} parameter holds {len(leaves)} {[tuple(x.shape) for x in leaves]}: "
                "were the optimizer states saved by another optimizer or with other settings (momentum)?")
        updates, new = tx.update(grad, jax.tree.unflatten(treedef, leaves), weight)
        new_weight = self._finish(optax.apply_updates(weight, updates))
        new_leaves = [n.astype(o.dtype) for n, o in zip(jax.tree.leaves(new), leaves)]
        return new_weight, self._to_mx(new_leaves)

    def init_states(self, weights):
        """`init_state` over a pytree of parameters (e.g. a dict name -> array)."""
        return jax.tree.map(self.init_state, weights)

    def step_tree(self, weights, grads, states, lrs, wds, t):
        """`step` over a pytree of parameters -> `(new_weights, new_states)`.

        `states` is what `init_states` returned; `lrs`, `wds` and `t` are trees shaped like
        `weights` or single values shared by every parameter.
        """
        leaves, treedef = jax.tree.flatten(weights)

        def per(x):
            single = not isinstance(x, (dict, list, tuple)) and jax.tree.structure(x).num_leaves == 1
            return [x] * len(leaves) if single else treedef.flatten_up_to(x)

        out = [self.step(*a) for a in zip(leaves, per(grads), treedef.flatten_up_to(states), per(lrs), per(wds),
                                           per(t))]
        return (jax.tree.unflatten(treedef, [o[0] for o in out]),
                jax.tree.unflatten(treedef, [o[1] for o in out]))

    def _jitted(self, kind: str, make):
        """The jitted `kind` function for the current hyper-parameters; a changed fingerprint
        (momentum, clipping, ... set after creation) drops the stale programs. jbind's own
        optimizers, whose fingerprint names everything a traced step reads, share the
        function with every other instance of the class with the same fingerprint (a script
        that makes an optimizer per run, or per parameter group, compiles once)."""
        fp = self.fingerprint()
        fn = self._jit_cache.get((kind, fp))
        if fn is None:
            for k in [k for k in self._jit_cache if k[1] != fp]:
                del self._jit_cache[k]
            cls = type(self)
            key = (cls, kind, fp) if cls.__module__.startswith(__package__ + ".") else None
            try:
                fn = _SHARED.get(key) if key is not None else None
            except TypeError:   # an unhashable hyperparameter: this instance's own program
                key = None
            if fn is None:
                # traced on a frozen copy: later changes to this instance change its fingerprint,
                # never what the shared program computes
                fn = jax.jit(make(copy.copy(self) if key is not None else self), compiler_options=cpu_options())
                if key is not None:
                    _SHARED[key] = fn
                    while len(_SHARED) > _SHARED_MAX:
                        _SHARED.popitem(last=False)
            self._jit_cache[(kind, fp)] = fn
        return fn

    def _compiled_step(self):
        return self._jitted("one", lambda opt: opt.step)

    def _batch_step(self):
        def make(opt):
            def run(weights, grads, states, packed):  # -> (weights, states, the next update's packed rates)
                inc = increment(len(weights))
                return (*opt.step_tree(weights, grads, states, *unpack_rates(packed, len(weights))), packed + inc)
            return run
        return self._jitted("batch", make)

    def _can_batch(self, weights, grads) -> bool:
        """Every update is this class's functional `step` on dense arrays with per-parameter
        state, so a list of them can run as one compiled call with the same numbers."""
        return (self._functional_update() and all(type(a) is NDArray for a in weights)
                and all(type(a) is NDArray for a in grads))

    def _state_per_parameter(self) -> bool:
        """Each parameter's state is its own: no state shared across parameters (Nadam's
        m_schedule), so `step_tree` over many parameters is the imperative updates' math."""
        cls = type(self)
        return (cls._functional_state is Optimizer._functional_state
                and cls._store_state is Optimizer._store_state)

    def _functional_update(self) -> bool:
        """`update` is this class's functional `step` (not a Python rule such as SGLD's or a
        user subclass's) with per-parameter state: a compiled step may run it instead."""
        cls = type(self)
        return (cls.update is Optimizer.update and cls.update_multi_precision is Optimizer.update_multi_precision
                and self._state_per_parameter())

    def update_batch(self, indices, weights, grads, states) -> None:
        """`update` of several parameters, as one compiled call where `_can_batch` allows
        (each index counted, and its rate and decay taken, as `update` does)."""
        if len(indices) < 2 or not self._can_batch(weights, grads):
            for i, w, g, s in zip(indices, weights, grads, states):
                self.update_multi_precision(i, w, g, s)
            return
        lrs, wds, ts = self.prepare(list(indices))
        # the base class's state mapping (`_can_batch`), over every parameter at once
        slots, tree = jax.tree.flatten(tuple(states))
        buf, ws = pack_rates(lrs, wds, ts), tuple(w._data for w in weights)
        table = self.__dict__.setdefault("_next_rates", {})  # indices -> Predicted (not pickled)
        nxt = table.get(tuple(indices))
        where = ws[0].sharding
        if nxt is None or (nxt.dev is not None and nxt.dev.sharding != where):
            nxt = table[tuple(indices)] = Predicted(increment(len(ws)))
        new_weights, new_states, dev = self._batch_step()(
            ws, tuple(g._data for g in grads), tree.unflatten([h._data for h in slots]), nxt.pick(buf, where))
        nxt.after(buf, dev)
        for w, nw in zip(weights, new_weights):
            w._data = nw
        for h, v in zip(slots, jax.tree.leaves(new_states)):
            h._data = v

    def __getstate__(self):
        ret = self.__dict__.copy()
        ret.pop("param_dict", None)
        ret.pop("_jit_cache", None)
        ret.pop("_next_rates", None)
        return ret

    def __setstate__(self, state):
        self.__dict__ = state
        self.param_dict = {}
        self._jit_cache = {}


# (class, kind, fingerprint) -> jitted step of jbind's own optimizers, shared by instances
_SHARED: "collections.OrderedDict" = collections.OrderedDict()
_SHARED_MAX = 128

register = Optimizer.register
create = Optimizer.create_optimizer


def _mult(name: str, key: str, text) -> float:
    """A symbol's `__lr_mult__` / `__wd_mult__` attribute (data, from a symbol file) as a float."""
    try:
        return float(text)
    except (TypeError, ValueError):
        raise MXNetError(f"variable {name!r}: its {key} attribute {str(text)[:40]!r} is not a number") from None
