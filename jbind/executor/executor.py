"""The Executor: a bound symbol with handles for its arrays and compiled functions.

Training is one compiled function (outputs, gradients and new aux states in one XLA
call). When every output is a loss head, `forward(is_train=True)` runs it at once and
`backward()` only publishes the gradients and aux states it computed; otherwise
`backward(out_grads)` runs it with the head gradients. As in MXNet, aux states
(BatchNorm's moving statistics) change when `backward()` runs.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import SingleDeviceSharding

from .. import random as _random
from ..base import MXNetError
from ..compile import store
from ..compile.cache import CACHE, CacheKey
from ..ndarray.ndarray import NDArray, _placed
from ..symbol.graph import graph_of
from ..symbol.infer import SHAPE, entry_values
from ._view import alias
from .plan import Plan
from ..symbol.lower import make_forward, make_train
from ..symbol.rolled import cache_suffix


class Executor:
    """MXNet's `Executor`: `forward`, `backward`, `outputs`, `arg_dict`, `grad_dict`, `aux_dict`."""

    def __init__(self, symbol, ctx, args, grads, aux, plan: Plan):
        g = graph_of(symbol)
        self._symbol = symbol
        self._g = g
        self._ctx = ctx
        self._device = ctx.jax_device
        self.arg_arrays = list(args)
        self.grad_arrays = list(grads)
        self.aux_arrays = list(aux)
        self._plan = plan
        self._grad_req = plan.grad_req
        self.arg_dict = dict(zip(g.arg_names, self.arg_arrays))
        self.grad_dict = dict(zip(g.arg_names, self.grad_arrays))   # None where grad_req is null
        self.aux_dict = dict(zip(g.aux_names, self.aux_arrays))
        self._key_parts = (symbol.fingerprint, plan.shapes, plan.dtypes, (str(self._device),))
        self._diff = plan.diff
        self._add = plan.add
        self._out_shapes = plan.out_shapes
        self._loss_heads = plan.no_head
        self.outputs = [_placed(None, ctx) for _ in plan.out_shapes]
        self._fns: dict = {}
        self._pending = None      # (grads, new_aux) computed by forward, published by backward
        self._last = None         # (args, aux, counter) of the last training forward
        self._outputs_ready = False

    def _draws_at_inference(self) -> bool:
        got = self.__dict__.get("_infer_draws")
        if got is None:
            g = graph_of(self._symbol)
            got = self._infer_draws = any(n.op is not None and n.op.draws(False) for n in g.nodes)
        return got

    # --- compiled functions -----------------------------------------------------------
    def _compiled(self, mode: str):
        tag = mode + cache_suffix()  # the loop-lowering switch picks another executable
        fn = self._fns.get(tag)
        if fn is None:
            fp, shapes, dtypes, devs = self._key_parts
            req = tuple(zip(self._g.arg_names, self._grad_req)) if mode == "train" else ()
            key = CacheKey(fp, shapes, dtypes, req, tag, devs)
            fn = self._fns[tag] = CACHE.get(key, lambda: self._build(mode))
        return fn

    def _spec(self, h):
        return jax.ShapeDtypeStruct(h.shape, h.dtype, sharding=SingleDeviceSharding(self._device))

    def _build(self, mode: str):
        g = self._g
        shapes = entry_values(self._symbol, SHAPE, dict(self._key_parts[1][:len(g.arg_names)]))
        forward = make_forward(g, shapes)
        args = tuple(self._spec(h) for h in self.arg_arrays)
        aux = tuple(self._spec(h) for h in self.aux_arrays)
        kspec = jax.ShapeDtypeStruct((2,), np.uint32, sharding=SingleDeviceSharding(self._device))
        cspec = jax.ShapeDtypeStruct((), np.uint32, sharding=SingleDeviceSharding(self._device))
        if mode in ("infer", "train_fwd"):
            is_train = mode == "train_fwd"

            def jbind_forward(args, aux, key, counter):
                k = jax.random.fold_in(jax.random.wrap_key_data(key), counter)
                return forward(args, aux, k, is_train)
            return jax.jit(store.named(jbind_forward, "jbind_forward")).lower(args, aux, kspec, cspec).compile()
        train = make_train(g, self._diff, self._add, self._loss_heads, shapes)
        heads = tuple(jax.ShapeDtypeStruct(s, np.float32, sharding=SingleDeviceSharding(self._device))
                      for s, is_loss in zip(self._out_shapes, self._loss_heads) if not is_loss)
        old = tuple(self._spec(self.grad_arrays[k]) for k in range(len(self._diff))
                    if self._diff[k] and self._add[k])

        def jbind_train(args, aux, key, counter, head_grads, old_grads):
            k = jax.random.fold_in(jax.random.wrap_key_data(key), counter)
            return train(args, aux, k, head_grads, old_grads)
        return jax.jit(store.named(jbind_train, "jbind_train")).lower(args, aux, kspec, cspec, heads, old).compile()

    # --- running ------------------------------------------------------------------------
    def _set_outputs(self, outs):
        for h, o in zip(self.outputs, outs):
            h._data = o

    def forward(self, is_train: bool = False, **kwargs):
        """Run the forward pass; keyword arguments are copied into `arg_dict` first."""
        for name, value in kwargs.items():
            h = self.arg_dict.get(name)
            if h is None:
                raise MXNetError(f"forward: unknown argument {name!r}; arguments are {self._g.arg_names}")
            h[:] = value
        args = tuple(h._data for h in self.arg_arrays)
        aux = tuple(h._data for h in self.aux_arrays)
        key = _random.base_key()
        # Inference keeps counter 0 (the training stream does not depend on how often a
        # model is evaluated) unless the graph samples at inference: then each forward draws anew.
        counter = _random.next_counter() if is_train or self._draws_at_inference() else np.uint32(0)
        self._pending = None
        if not is_train:
            outs, _ = self._compiled("infer")(args, aux, key, counter)
            self._last = (args, aux, key, counter, False)
        elif any(self._diff) and all(self._loss_heads):
            outs, grads, new_aux = self._compiled("train")(args, aux, key, counter, (), self._old_grads())
            self._pending = (grads, new_aux)
            self._last = (args, aux, key, counter, True)
        else:
            outs, _ = self._compiled("train_fwd")(args, aux, key, counter)
            self._last = (args, aux, key, counter, True)
        self._set_outputs(outs)
        return self.outputs

    def _old_grads(self):
        return tuple(self.grad_arrays[k]._data for k in range(len(self._diff)) if self._diff[k] and self._add[k])

    def backward(self, out_grads=None, is_train: bool = True):
        """Publish gradients (and aux updates) of the last forward.

        As in MXNet, backward() may follow `forward(is_train=False)` too: the gradients are
        then computed by the training function (Dropout and BatchNorm differentiate as in
        training) and the aux states are left as they are."""
        if self._last is None:
            raise MXNetError("backward() needs a forward() first")
        if self._pending is None or out_grads is not None:
            if not any(self._diff):  # as MXNet: nothing to differentiate, no head gradient needed
                return
            heads = self._head_grads(out_grads)
            args, aux, key, counter, trained = self._last
            outs, grads, new_aux = self._compiled("train")(args, aux, key, counter, heads, self._old_grads())
            if trained:
                self._set_outputs(outs)
            else:
                new_aux = aux
        else:
            grads, new_aux = self._pending
        self._pending = None
        self._publish(grads, new_aux)

    def _publish(self, grads, new_aux):
        """Hand a training step's gradients and aux states to their handles."""
        it = iter(grads)
        for k, d in enumerate(self._diff):
            if d:
                self.grad_arrays[k]._data = next(it)
        for h, a in zip(self.aux_arrays, new_aux):
            h._data = a

    def _head_grads(self, out_grads):
        heads = []
        names = self._symbol.list_outputs()
        shapes = [s for s, is_loss in zip(self._out_shapes, self._loss_heads) if not is_loss]
        for (i, gr), shape in zip(head_gradients(out_grads, self._loss_heads, names), shapes):
            gr = gr._data if isinstance(gr, NDArray) else jnp.asarray(gr)
            if tuple(gr.shape) != tuple(shape):
                raise MXNetError(f"backward: head gradient for {names[i]!r} has shape {tuple(gr.shape)}, "
                                 f"output has {tuple(shape)}")
            heads.append(jax.device_put(gr.astype(np.float32), self._device))
        return tuple(heads)

    # --- MXNet's accessors ----------------------------------------------------------------
    @property
    def output_dict(self) -> dict:
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    @property
    def symbol(self):
        return self._symbol

    @property
    def grad_req(self) -> dict:
        return dict(zip(self._g.arg_names, self._grad_req))

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy values into this executor's argument and aux arrays (by name)."""
        for table, params, what in ((self.arg_dict, arg_params, "arguments"),
                                    (self.aux_dict, aux_params or {}, "auxiliary states")):
            for name, value in params.items():
                if name not in table:
                    if not allow_extra_params:
                        raise ValueError(f"Find name {name!r} that is not in the {what}")
                    continue
                try:
                    table[name][:] = value
                except MXNetError as e:
                    raise MXNetError(f"parameter {name!r}: {e}") from None

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs) -> "Executor":
        """A new executor for new input shapes, sharing every array whose shape is unchanged."""
        from .bind import simple_bind
        g = self._g
        arg_s, _, aux_s = self._symbol.infer_shape(**kwargs)
        if arg_s is None:
            raise MXNetError(f"reshape: shapes {kwargs} do not determine every argument's shape")
        for name, h, s in zip(g.arg_names, self.arg_arrays, arg_s):
            if h.shape != tuple(s) and name not in kwargs:
                if not partial_shaping:
                    raise MXNetError(f"reshape: new shape of argument {name!r} {tuple(s)} differs from the "
                                     f"previous {h.shape}; set partial_shaping=True to allow it")
            if int(np.prod(s)) > h.size and not allow_up_sizing:
                raise MXNetError(f"reshape: new shape of {name!r} {tuple(s)} is larger than the original "
                                 f"{h.shape}; set allow_up_sizing=True to allow it")
        same = [n for n, h, s in zip(g.arg_names, self.arg_arrays, arg_s) if h.shape == tuple(s)]
        new = simple_bind(self._symbol, self._ctx, grad_req=dict(zip(g.arg_names, self._grad_req)),
                           type_dict={n: h.dtype for n, h in self.arg_dict.items()},
                           shared_arg_names=same, shared_exec=self,
                           shapes={n: tuple(s) for n, s in zip(g.arg_names, arg_s)})
        new._share_memory_with(self)
        return new

    def _share_memory_with(self, old: "Executor"):
        """As MXNet's reshape: every array that shrank is the front of the original's."""
        for mine, theirs in ((self.arg_arrays, old.arg_arrays), (self.grad_arrays, old.grad_arrays),
                             (self.aux_arrays, old.aux_arrays)):
            for k, h in enumerate(mine):
                if h is not None and theirs[k] is not None:
                    mine[k] = alias(h, h.shape, theirs[k], theirs[k].shape)
        for k, (h, shape) in enumerate(zip(self.outputs, self._out_shapes)):
            self.outputs[k] = alias(h, shape, old.outputs[k], old._out_shapes[k])
        self.arg_dict = dict(zip(self._g.arg_names, self.arg_arrays))
        self.grad_dict = dict(zip(self._g.arg_names, self.grad_arrays))
        self.aux_dict = dict(zip(self._g.aux_names, self.aux_arrays))

    def set_monitor_callback(self, callback, monitor_all=False):
        raise MXNetError("set_monitor_callback is not supported: jbind compiles the whole graph into one "
                         "function; use symbol.get_internals() to read intermediate outputs")

    def debug_str(self) -> str:
        return f"Executor({self._symbol!r} on {self._ctx}, key {self._symbol.fingerprint[:12]})"


def head_gradients(out_grads, no_head, names) -> list:
    """(output index, given array) for each output that takes a head gradient (not a loss
    head), as backward(out_grads) indexes them: one entry per output."""
    if out_grads is None:
        out_grads = []
    elif isinstance(out_grads, (NDArray, np.ndarray, jax.Array)):
        out_grads = [out_grads]
    out_grads = list(out_grads)
    picked = []
    for i, is_loss in enumerate(no_head):
        if is_loss:
            continue
        if i >= len(out_grads) or out_grads[i] is None:
            raise MXNetError(f"backward: output {names[i]!r} is not a loss, so its head gradient is "
                             "required: pass out_grads (one array per output)")
        picked.append((i, out_grads[i]))
    return picked
