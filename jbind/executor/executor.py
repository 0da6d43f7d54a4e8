"""The Executor: a bound symbol with handles for its arrays and compiled functions.

Training is one compiled function (outputs, gradients and new aux states in one XLA
call). When every output is a loss head, `forward(is_train=True)` runs it at once and
`backward()` only publishes the gradients and aux states it computed; otherwise
`backward(out_grads)` runs it with the head gradients. As in MXNet, aux states
(BatchNorm's moving statistics) change when `backward()` runs.
"""
from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import SingleDeviceSharding

from .. import random as _random
from ..base import DeferredError, MXNetError
from ..compile import store
from ..compile._options import compile_lowered
from ..compile.cache import CACHE, CacheKey
from ..ndarray import _view as _nd_view
from ..ndarray.ndarray import NDArray, _placed, cached_zeros
from ..symbol.graph import graph_of
from ..symbol.infer import SHAPE, entry_values
from . import _addgrad, _draws, _flat, _heads, _monitor
from ._heads import head_gradients, ignored_heads  # noqa: F401 - head_gradients: module/executor_group
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
        self._out_dtypes = tuple(np.dtype(np.float32) if t is None else t
                                for t in plan.out_dtypes or (None,) * len(plan.out_shapes))
        self._loss_heads = plan.no_head
        # As MXNet, outputs exist (zeros) from bind on, before any forward.
        self.outputs = [_placed(None if s is None or t is None else cached_zeros(s, t, self._device), ctx)
                        for s, t in zip(plan.out_shapes, plan.out_dtypes or (None,) * len(plan.out_shapes))]
        self._fns: dict = {}
        self._pending = None      # (grads, new_aux) computed by forward, published by backward
        self._last = None         # (args, aux, counter) of the last training forward
        self._outputs_ready = False
        # read at bind time, as MXNet's graph executor does
        self._cse = os.environ.get("MXNET_ELIMINATE_COMMON_EXPR", "1") != "0"
        self._monitor = None      # (callback, monitor_all, _monitor.Monitor) once installed
        self._zero_idx = [k for k, z in enumerate(plan.zero_write) if z]
        self._diff_idx = [k for k, d in enumerate(plan.diff) if d]
        self._add_idx = [k for k in self._diff_idx if plan.add[k]]  # gradients grad_req 'add' sums into
        # arguments without a gradient whose buffer grad_req 'write' fills with zeros
        self._nograd_write = [k for k, (d, r) in enumerate(zip(plan.diff, plan.grad_req)) if not d and r == "write"]
        self._dkey = (None, None)  # (the generator's key data, its copy on this device)
        self._unused_train_fwds = 0  # training forwards run by the training function, no backward since

    def _draws_at_inference(self) -> bool:
        got = self.__dict__.get("_infer_draws")
        if got is None:
            g = graph_of(self._symbol)
            got = self._infer_draws = any(n.op is not None and n.op.draws(False) for n in g.nodes)
        return got

    # --- compiled functions -----------------------------------------------------------
    def _key(self, mode: str) -> CacheKey:
        tag = mode + cache_suffix()  # the loop-lowering switch picks another executable
        fp, shapes, dtypes, devs = self._key_parts
        req = tuple(zip(self._g.arg_names, self._grad_req)) if mode in ("train", "train_infer") else ()
        return CacheKey(fp, shapes, dtypes, req, tag, devs)

    def _compiled(self, mode: str):
        tag = mode + cache_suffix()
        fn = self._fns.get(tag)
        if fn is None:
            key = self._key(mode)
            fn = self._fns[tag] = (_flat.compiled(self, mode, Executor) or _addgrad.on_write_program(self, mode, key)
                                   or CACHE.get(key, lambda: self._build(mode)))
        return fn

    def _forward_by_train(self) -> bool:
        """Whether a training forward whose outputs take head gradients runs the training
        function (with zero head gradients) instead of a forward-only one: a backward
        usually follows and then reuses that executable, so an executor used once compiles
        one program, not two. Not once the forward-only one is compiled, nor after two
        training forwards in a row without a backward, nor where running the backward has
        visible effects (Python operators)."""
        if self._unused_train_fwds >= 2 or ("train_fwd" + cache_suffix()) in self._fns:
            return False
        host = self.__dict__.get("_host")
        if host is None:
            host = self._host = any(n.op is not None and n.op.host_code for n in self._g.nodes)
        return not host and not CACHE.has(self._key("train_fwd"))

    def _spec(self, h):
        return jax.ShapeDtypeStruct(h.shape, h.dtype, sharding=SingleDeviceSharding(self._device))

    def _build(self, mode: str, add=None):
        return compile_lowered(self._lower(mode, add), runs_often=True)

    def _lower(self, mode: str, add=None):
        """The jax `Lowered` program of `mode` ("infer", "train_fwd" or "train"), not compiled."""
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
            return jax.jit(store.named(jbind_forward, "jbind_forward")).lower(args, aux, kspec, cspec)
        fn, specs = self._train_fn(shapes, mode, add)
        return jax.jit(store.named(fn, "jbind_train")).lower(*specs)

    def _train_fn(self, shapes, mode: str = "train", add=None):
        """The training function (forward + backward) and the specs of its arguments;
        `add`: which gradients it sums into old ones (default: grad_req 'add')."""
        add = self._add if add is None else add
        train = make_train(self._g, self._diff, add, self._loss_heads, shapes, is_train=mode == "train")
        sharding = SingleDeviceSharding(self._device)
        heads = tuple(jax.ShapeDtypeStruct(s, t, sharding=sharding)
                      for s, t, is_loss in zip(self._out_shapes, self._out_dtypes, self._loss_heads) if not is_loss)
        old = tuple(self._spec(self.grad_arrays[k]) for k in range(len(self._diff)) if self._diff[k] and add[k])

        def jbind_train(args, aux, key, counter, head_grads, old_grads):
            # -> (outputs, gradients, new aux states, the next draw's counter: see `_draws`)
            k = jax.random.fold_in(jax.random.wrap_key_data(key), counter)
            return (*train(args, aux, k, head_grads, old_grads), counter + np.uint32(1))
        specs = (tuple(self._spec(h) for h in self.arg_arrays), tuple(self._spec(h) for h in self.aux_arrays),
                 jax.ShapeDtypeStruct((2,), np.uint32, sharding=sharding),
                 jax.ShapeDtypeStruct((), np.uint32, sharding=sharding), heads, old)
        return jbind_train, specs

    def _ignored_heads(self) -> frozenset:
        """Outputs whose head gradient the backward never reads (a comparison's output, one
        behind BlockGrad): as in MXNet, backward() needs no head gradient for them. Found
        by tracing the training function once, only when a head gradient is missing."""
        got = self.__dict__.get("_ignored")
        if got is None:
            shapes = entry_values(self._symbol, SHAPE, dict(self._key_parts[1][:len(self._g.arg_names)]))
            got = self._ignored = frozenset(ignored_heads(*self._train_fn(shapes), self._loss_heads))
        return got

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
        # Inference keeps counter 0 (the training stream does not depend on how often a
        # model is evaluated) unless the graph samples at inference: then each forward draws anew.
        if is_train or self._draws_at_inference():
            key, counter = _random.next_draw()
        else:
            key, counter = _random.base_key(), np.uint32(0)
        key = _draws.device_key(self, key)
        self._pending = None
        drawn = counter
        if is_train and any(self._diff):
            counter = _draws.device_counter(self._device, counter)
        try:
            if not is_train:
                outs, _ = self._compiled("infer")(args, aux, key, counter)
                self._last = (args, aux, key, counter, False)
            elif any(self._diff) and all(self._loss_heads):
                outs, grads, new_aux, nxt = self._compiled("train")(args, aux, key, counter, (), self._old_grads())
                _draws.ran(self._device, drawn, nxt)
                self._pending = (grads, new_aux)
                self._last = (args, aux, key, counter, True)
            elif any(self._diff) and self._forward_by_train():
                zeros = tuple(jax.device_put(np.zeros(s, t), self._device)
                              for s, t, is_loss in zip(self._out_shapes, self._out_dtypes, self._loss_heads) if not is_loss)
                outs, _, _, nxt = self._compiled("train")(args, aux, key, counter, zeros, self._old_grads())
                _draws.ran(self._device, drawn, nxt)
                self._unused_train_fwds += 1
                self._last = (args, aux, key, counter, True)
            else:
                outs, _ = self._compiled("train_fwd")(args, aux, key, counter)
                self._last = (args, aux, key, counter, True)
        except DeferredError as e:  # as MXNet: an op's run-time check fails when an output is read
            for h in self.outputs:
                _nd_view.fail(h, e)
            return self.outputs
        self._set_outputs(outs)
        if self._monitor is not None:
            cb, monitor_all, mon = self._monitor
            _monitor.report(cb, mon.forward_entries(self._last, monitor_all))
        return self.outputs

    def _old_grads(self):
        return tuple(self.grad_arrays[k]._data for k in self._add_idx)

    def backward(self, out_grads=None, is_train: bool = True):
        """Publish gradients (and aux updates) of the last forward.

        As in MXNet, backward() may follow `forward(is_train=False)` too: the gradients are
        then computed by the training function (Dropout and BatchNorm differentiate as in
        training) and the aux states are left as they are. Without any forward, as in
        MXNet, the gradients are those at the arrays' current values."""
        if self._last is None:
            args = tuple(h._data for h in self.arg_arrays)
            aux = tuple(h._data for h in self.aux_arrays)
            self._last = (args, aux, _random.base_key(), _random.next_counter(), False)
        self._unused_train_fwds = 0
        heads = ()
        if self._pending is None or out_grads is not None:
            if not any(self._diff):  # as MXNet: nothing to differentiate, no head gradient needed
                self._publish((), ())
                return
            heads = self._head_grads(out_grads)
            args, aux, key, counter, trained = self._last
            mode = "train" if is_train else "train_infer"  # MXNet's backward(is_train=False)
            outs, grads, new_aux, _ = self._compiled(mode)(args, aux, key, counter, heads, self._old_grads())
            if trained and is_train:
                self._set_outputs(outs)
            else:
                new_aux = aux
        else:
            grads, new_aux = self._pending
        self._pending = None
        self._publish(grads, new_aux)
        if self._monitor is not None:
            cb, _, mon = self._monitor
            _monitor.report(cb, mon.backward_entries(self._last, heads))

    def _publish(self, grads, new_aux):
        """Hand a training step's gradients and aux states to their handles."""
        ga = self.grad_arrays
        for k, g in zip(self._diff_idx, grads):
            ga[k]._data = g
        for k in self._zero_idx:  # no gradient path (BlockGrad): 'write' writes zeros, as MXNet's
            h = self.grad_arrays[k]
            h._data = cached_zeros(h.shape, h.dtype, self._device)
        for h, a in zip(self.aux_arrays, new_aux):
            h._data = a
        self._zero_integer_grads()

    def _zero_integer_grads(self):
        """An integer argument (an index, a length) has no gradient: as MXNet's backward
        does, grad_req 'write' leaves zeros in its buffer."""
        for k in self._nograd_write:
            h = self.grad_arrays[k]
            if h is not None and h._data is not None:
                h._data = cached_zeros(h._data.shape, h._data.dtype, self._device)

    def _head_grads(self, out_grads):
        heads = []
        names = self._symbol.list_outputs()
        shapes = [(s, t) for s, t, is_loss in zip(self._out_shapes, self._out_dtypes, self._loss_heads) if not is_loss]
        for (i, gr), (shape, dtype) in zip(head_gradients(out_grads, self._loss_heads, names, self._ignored_heads),
                                           shapes):
            if gr is None:  # a head gradient the backward does not read
                heads.append(jax.device_put(np.zeros(shape, dtype), self._device))
                continue
            gr = gr._data if isinstance(gr, NDArray) else jnp.asarray(gr)
            if tuple(gr.shape) != tuple(shape) and i in self._ignored_heads():
                # as MXNet, whose backward never looks at a head gradient it does not read
                heads.append(jax.device_put(np.zeros(shape, dtype), self._device))
                continue
            if tuple(gr.shape) != tuple(shape):
                raise MXNetError(f"backward: head gradient for {names[i]!r} has shape {tuple(gr.shape)}, "
                                 f"output has {tuple(shape)}")
            heads.append(_heads.as_dtype(gr, dtype, self._device))
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
        if self._monitor is not None:  # as MXNet's: the callback carries over to the new executor
            new.set_monitor_callback(self._monitor[0], self._monitor[1])
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
        """Call `callback(name, NDArray)` for each op node's outputs after every forward
        (`NAME_output`; with `monitor_all` first its inputs, `NAME_ARGUMENT` or, for ops MXNet
        lists no input names for, `NAME_input0`..., each variable input first under its own
        name too; `reshape` keeps the callback) and, after
        every backward, for the gradient each node hands to each input, in MXNet's order
        and names (`NAME_backward_output{k}`). `None` removes it.

        Monitoring runs a second, node-by-node program over the same inputs and random key
        (so the same values), which costs a second compile and run per step. Unlike MXNet,
        ops' hidden outputs (BatchNorm's mean and var, Dropout's mask) are not reported, and
        a gradient MXNet leaves uncomputed (an input no argument's gradient needs) is the
        true value where MXNet's buffer holds whatever was there."""
        if callback is None:
            self._monitor = None
            return
        mon = self._monitor[2] if self._monitor is not None else _monitor.Monitor(self)
        self._monitor = (callback, bool(monitor_all), mon)

    def get_optimized_symbol(self):
        """The bound graph after MXNet's graph passes: with `MXNET_ELIMINATE_COMMON_EXPR`
        other than '0' at bind time (the default), repeated expressions are merged (see
        `symbol._cse`). The compiled program is XLA's, whose own CSE merges them either way."""
        from ..symbol._cse import eliminate_common_expr
        return eliminate_common_expr(self._symbol) if self._cse else self._symbol.__copy__()

    def debug_str(self) -> str:
        """The graph as `Symbol.debug_str` prints it, then `Total N MB allocated`: the
        megabytes XLA allocates for one run of the program a training step (or, without
        gradients, a forward) runs: its outputs (gradients included) and temporaries, not
        the arguments. Compiles that program if no run has yet."""
        mode = "train" if any(self._diff) else "infer"
        analyze = getattr(self._compiled(mode), "memory_analysis", None)
        if analyze is None:  # a wrapper program (flat arguments, grad_req 'add'): the plain one's figures
            analyze = CACHE.get(self._key(mode), lambda: self._build(mode)).memory_analysis
        mem = analyze()
        total = (mem.output_size_in_bytes + mem.temp_size_in_bytes) if mem is not None else 0
        return f"{self._symbol.debug_str()}Total {total >> 20} MB allocated\n"
