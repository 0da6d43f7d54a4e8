"""DataParallelExecutorGroup: one executor per context over one shared ParamStore.

Creating a group for a bucket whose shapes were seen before is a memoized plan lookup
plus handle creation: no inference, no compilation, no parameter memory.
"""
from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import numpy as np

from .. import _limits
from .._memo import Memo
from ..base import MXNetError, np_dtype
from ..executor.bind import _simple_plan
from ..executor.executor import Executor, head_gradients
from ..ndarray.ndarray import NDArray, cached_zeros
from ..symbol.graph import graph_of
from .param_store import ParamStore
from .spmd import SpmdRunner, can_run, spmd_enabled
from .slicing import batch_axis, desc_list, layout_axis, load_slices, merge_outputs, split_input_slice

_PLANS = Memo(4096)


class _GroupPlan:
    """Everything about a group that depends only on the symbol and the request."""

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names, for_training,
                 inputs_need_grad, fixed_param_names, grad_req, state_names):
        g = graph_of(symbol)
        self.arg_names, self.aux_names = list(g.arg_names), list(g.aux_names)
        missing = [p for p in param_names if p not in self.arg_names]
        if missing:
            raise MXNetError(f"param_names {missing} are not arguments of the symbol; its arguments are "
                             f"{self.arg_names}")
        if len(workload) != len(contexts):
            raise MXNetError(f"workload {list(workload)} has {len(workload)} entries for {len(contexts)} contexts")
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes]
        self.data_layouts = [batch_axis(d) for d in data_shapes]
        self.label_layouts = [batch_axis(d) for d in label_shapes]
        # as MXNet: an output's batch axis comes from its `__layout__` attribute (axis 0 if none)
        self.output_layouts = [layout_axis(symbol[k].attr("__layout__")) for k in range(len(g.heads))]
        self.batch_size = _batch_size(data_shapes + label_shapes)
        self.slices = split_input_slice(self.batch_size, workload)
        param_set, fixed = set(param_names), set(fixed_param_names)
        reqs = {}
        for name in self.arg_names:
            if not for_training:
                reqs[name] = "null"
            elif name in param_set:
                reqs[name] = "null" if name in fixed else _req_for(grad_req, name)
            elif name in self.data_names:
                reqs[name] = _req_for(grad_req, name) if inputs_need_grad else "null"
            else:
                reqs[name] = "null"
        self.grad_req = reqs
        self.param_idx = [i for i, n in enumerate(self.arg_names) if n in param_set]
        self.param_names = [self.arg_names[i] for i in self.param_idx]
        types = {d.name: np_dtype(getattr(d, "dtype", None)) for d in data_shapes + label_shapes}
        self.plans = []
        for sl in self.slices:
            shapes = {}
            for d, ax in zip(data_shapes + label_shapes, self.data_layouts + self.label_layouts):
                s = list(d.shape)
                s[ax] = sl.stop - sl.start
                shapes[d.name] = tuple(s)
            self.plans.append(_simple_plan(symbol, shapes, types, reqs))
        self.is_param = [n in param_set for n in self.arg_names]
        self.inputs = set(self.data_names) | set(self.label_names) | set(state_names)
        self.runner = None  # the SpmdRunner of an even split, made on first use


def _runner(group):
    """The group's SPMD runner, or None when its split can't run as one program."""
    if not spmd_enabled() or any(e._monitor is not None for e in group.execs):
        return None  # a monitored executor runs its own forward and backward
    p = group._p
    if p.runner is None:
        devices = group.store.devices
        p.runner = SpmdRunner(group.symbol, p, devices) if can_run(p, devices) else False
    return p.runner or None


def _req_for(grad_req, name):
    return grad_req.get(name, "write") if isinstance(grad_req, dict) else grad_req


def _batch_size(descs):
    sizes = {d.shape[batch_axis(d)] for d in descs if batch_axis(d) >= 0}
    if len(sizes) > 1:
        raise MXNetError(f"data and labels disagree on the batch size: {[(d.name, d.shape) for d in descs]}")
    if not sizes:
        raise MXNetError("no data shapes given")
    return sizes.pop()


class DataParallelExecutorGroup:
    """MXNet's executor group: the batch split over `contexts` by `workload`.

    Parameters, gradients and aux states live in `self.store` (a ParamStore); a group made
    with `shared_group` holds the very same store. MXNet's attributes (`execs`,
    `param_arrays`, `grad_arrays`, `aux_arrays`, `data_arrays`, `label_arrays`,
    `batch_size`, `slices`) are views of it.
    """

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names, for_training,
                 inputs_need_grad, shared_group=None, logger=logging, fixed_param_names=None, grad_req="write",
                 state_names=None, group2ctxs=None):
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload) if workload is not None else [1] * len(self.contexts)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        self._grad_req_arg = grad_req
        self._param_names_arg = list(param_names)
        if shared_group is not None:
            if [str(c) for c in shared_group.contexts] != [str(c) for c in self.contexts]:
                raise MXNetError(f"shared_group runs on {shared_group.contexts}, this group on {self.contexts}")
            self.store = shared_group.store
        else:
            self.store = ParamStore(self.contexts)
        self.shared_group = shared_group
        self.bind_exec(data_shapes, label_shapes, shared_group)

    # --- binding ----------------------------------------------------------------------
    def _plan(self, data_shapes, label_shapes) -> _GroupPlan:
        data_shapes = desc_list(data_shapes)
        label_shapes = desc_list(label_shapes or [])
        grad_key = self._grad_req_arg if isinstance(self._grad_req_arg, str) else \
            tuple(sorted(self._grad_req_arg.items()))
        key = (self.symbol.fingerprint, tuple(data_shapes), tuple(label_shapes), tuple(self._param_names_arg),
               tuple(self.fixed_param_names), grad_key, self.for_training, self.inputs_need_grad,
               tuple(self.workload), tuple(str(c) for c in self.contexts), tuple(self.state_names))
        plan = _PLANS.get(key)
        if plan is None:
            plan = _GroupPlan(self.symbol, self.contexts, self.workload, data_shapes, label_shapes,
                              self._param_names_arg, self.for_training, self.inputs_need_grad,
                              self.fixed_param_names, self._grad_req_arg, self.state_names)
            _PLANS.put(key, plan)
        return plan

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        p = self._plan(data_shapes, label_shapes)
        self._p = p
        self.data_shapes, self.label_shapes = p.data_shapes, p.label_shapes or None
        self.data_names, self.label_names = p.data_names, p.label_names
        self.data_layouts, self.label_layouts = p.data_layouts, p.label_layouts
        self.output_layouts = p.output_layouts
        self.arg_names, self.aux_names = p.arg_names, p.aux_names
        self.param_names = p.param_names
        self.batch_size, self.slices = p.batch_size, p.slices
        self.grad_req = p.grad_req
        store = self.store
        # MXNet's shared_data_arrays: per context, the handles of the arguments that are not
        # parameters (data, labels, states, ...), shared with every group made with this one
        # as shared_group where name, shape and dtype agree (so buckets share their inputs).
        if shared_group is not None:
            self.shared_data_arrays = shared_group.shared_data_arrays
        elif not reshape or not hasattr(self, "shared_data_arrays"):
            self.shared_data_arrays = [{} for _ in self.contexts]
        before = self.execs if reshape and hasattr(self, "execs") else []
        self.execs = []
        for i, (ctx, plan) in enumerate(zip(self.contexts, p.plans)):
            dev = store.devices[i]
            fresh = shared_group is None and not reshape  # else the parameters exist already
            _limits.check_fits(f"binding {self.symbol.name or 'a group'!r} on {ctx}",
                               plan.out_bytes + (plan.state_bytes if fresh else 0), dev)
            n = len(p.arg_names)
            args, grads, aux = [], [], []
            for k, ((name, shape), dt, req) in enumerate(zip(plan.shapes[:n], plan.np_dtypes[:n], plan.grad_req)):
                if p.is_param[k]:
                    args.append(store.param(i, name, shape, dt))
                    grads.append(store.grad(i, name, shape, dt) if req != "null" else None)
                else:
                    args.append(self._data_handle(i, name, shape, dt, dev))
                    grads.append(NDArray(cached_zeros(shape, dt, dev)) if req != "null" else None)
            for (name, shape), dt in zip(plan.shapes[n:], plan.np_dtypes[n:]):
                aux.append(store.aux_state(i, name, shape, dt))
            self.execs.append(Executor(self.symbol, ctx, args, grads, aux, plan))
        for e, old in zip(self.execs, before):  # as MXNet's Executor.reshape, a monitor carries over
            if old._monitor is not None:
                e.set_monitor_callback(old._monitor[0], old._monitor[1])
        ex = self.execs
        self.data_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(ex)] for name in self.data_names]
        self.label_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(ex)]
                             for name in self.label_names] if self.label_names else None
        self.state_arrays = [[e.arg_dict[name] for e in ex] for name in self.state_names]
        self.param_arrays = [[e.arg_arrays[i] for e in ex] for i in p.param_idx]
        self.grad_arrays = [[e.grad_arrays[i] for e in ex] for i in p.param_idx] if self.for_training else []
        self.aux_arrays = [[e.aux_arrays[i] for e in ex] for i in range(len(self.aux_names))]
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_dict[name] for e in ex] for name in self.data_names]
        else:
            self.input_grad_arrays = []

    def _data_handle(self, i, name, shape, dtype, dev):
        shared = self.shared_data_arrays[i]
        h = shared.get(name)
        if h is None or h.shape != tuple(shape) or np.dtype(h.dtype) != np.dtype(dtype):
            h = shared[name] = NDArray(cached_zeros(shape, dtype, dev))
        return h

    def reshape(self, data_shapes, label_shapes):
        """Rebind for new input shapes, keeping the same parameters (no-op if unchanged)."""
        if desc_list(data_shapes) == self.data_shapes and desc_list(label_shapes or []) == (self.label_shapes or []):
            return
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    # --- running ----------------------------------------------------------------------
    def load_batch(self, data_batch):
        """Copy `data_batch`'s data and labels, sliced by workload, into every executor."""
        load_slices(data_batch.data, self.data_arrays, self.data_layouts, "data")
        if self.label_arrays is not None and getattr(data_batch, "label", None):
            load_slices(data_batch.label, self.label_arrays, self.label_layouts, "label")

    def forward(self, data_batch, is_train=None):
        """Load `data_batch` (sliced by workload) into every executor and run forward."""
        self.load_batch(data_batch)
        if is_train is None:
            is_train = self.for_training
        runner = _runner(self)
        if runner is not None:
            runner.forward(self.execs, is_train)
            return
        for e in self.execs:
            e.forward(is_train=is_train)

    def backward(self, out_grads=None):
        if not self.for_training:
            raise MXNetError("backward() on a group bound with for_training=False")
        if out_grads is None:
            out_grads = []
        elif not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        runner = _runner(self)
        if runner is not None and all(e._last is not None for e in self.execs):
            plan = self._p.plans[0]
            if all(e._pending is not None for e in self.execs) and not out_grads:
                for e in self.execs:
                    e.backward()
                return
            if not any(plan.diff):  # as MXNet: nothing to differentiate, no head gradient needed
                for e in self.execs:
                    e._publish((), ())  # only writes the zero gradients of BlockGrad-ed arguments
                return
            dts = [np.float32 if t is None else t for t, loss in zip(plan.out_dtypes, plan.no_head) if not loss]
            axes = [ax for ax, loss in zip(self.output_layouts, plan.no_head) if not loss]
            heads = [_batch_first((gr._data if isinstance(gr, NDArray) else np.asarray(gr)).astype(t),
                                  self.slices, ax)
                     for (_, gr), t, ax in zip(head_gradients(out_grads, plan.no_head, self.symbol.list_outputs()),
                                               dts, axes)]
            runner.backward(self.execs, heads)
            return
        for i, e in enumerate(self.execs):
            sl = self.slices[i]
            grads = [_slice(g, sl, ax) for g, ax in zip(out_grads, self.output_layouts)]
            e.backward(out_grads=grads or None)

    # Outputs (and their head gradients) are split and merged on their batch axis: the
    # position of 'N' in the output's __layout__ attribute, axis 0 without one (as MXNet).
    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        end = len(self.execs[0].outputs) if end is None else end
        outputs = [[e.outputs[k] for e in self.execs] for k in range(begin, end)]
        if merge_multi_context:
            return [merge_outputs(o, ax) for o, ax in zip(outputs, self.output_layouts[begin:end])]
        return outputs

    def get_input_grads(self, merge_multi_context=True):
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads needs a group bound with inputs_need_grad=True")
        if merge_multi_context:
            return [merge_outputs(g, ax) for g, ax in zip(self.input_grad_arrays, self.data_layouts)]
        return self.input_grad_arrays

    def get_states(self, merge_multi_context=True):
        if merge_multi_context:
            return [merge_outputs(s, 0) for s in self.state_arrays]
        return self.state_arrays

    def set_states(self, states=None, value=None):
        if states is not None:
            if value is not None:
                raise MXNetError("set_states: give states or value, not both")
            for dst, src in zip(self.state_arrays, states):
                for d, s in zip(dst, src):
                    d[:] = s
        else:
            for dst in self.state_arrays:
                for d in dst:
                    d[:] = value

    def get_params(self, arg_params, aux_params):
        """Copy parameters into `arg_params` / `aux_params` (device copies averaged, as MXNet)."""
        for name, block in zip(self.param_names, self.param_arrays):
            arg_params[name] = _average(block, arg_params.get(name))
        for name, block in zip(self.aux_names, self.aux_arrays):
            aux_params[name] = _average(block, aux_params.get(name))

    def set_params(self, arg_params, aux_params, allow_extra=False):
        for e in self.execs:
            e.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        for i, e in enumerate(self.execs):
            if pre_sliced:
                labels_slice = labels[i]
            else:
                labels_slice = [_slice(lab, self.slices[i], ax) for lab, ax in
                                zip(labels, self.label_layouts or [0] * len(labels))]
            eval_metric.update(labels_slice, e.outputs)

    def install_monitor(self, mon):
        """Install `mon` (an `mx.mon.Monitor`) on every executor of the group."""
        for e in self.execs:
            mon.install(e)


def _batch_first(head, slices, axis):
    """A head gradient with its batch on `axis` -> the SPMD runner's layout: the
    per-device slices stacked on axis 0."""
    if axis == 0:
        return head
    idx = [slice(None)] * head.ndim
    parts = []
    for sl in slices:
        idx[axis] = sl
        parts.append(head[tuple(idx)])
    return (jnp if isinstance(head, jax.Array) else np).concatenate(parts, axis=0)


def _slice(arr, sl, axis):
    data = arr._data if isinstance(arr, NDArray) else arr
    idx = [slice(None)] * data.ndim
    idx[axis] = sl
    return NDArray(data[tuple(idx)]) if isinstance(arr, NDArray) else data[tuple(idx)]


def _average(block, out):
    total = block[0]._data
    dev = total.devices().pop() if hasattr(total, "devices") else None
    for h in block[1:]:
        total = total + jax.device_put(h._data, dev)
    avg = total / len(block) if len(block) > 1 else total
    cpu = jax.local_devices(backend="cpu")[0]
    # a snapshot when it is the device's own buffer, which the next step may donate
    # (a copy without compiling a program for it, as the fused step's `_own`)
    avg = jax.device_put(avg, cpu, may_alias=False if avg is block[0]._data else None)
    if out is None:
        return NDArray(avg)
    out[:] = NDArray(avg)
    return out
