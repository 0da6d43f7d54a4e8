"""One SPMD computation for an evenly split executor group.

With an even workload every device runs the same per-device graph on its slice, so the
group compiles it once as a `shard_map` over a mesh of its devices and runs it as one
XLA call, instead of one executable per device.

The layout is "stacked": every per-device array (a parameter copy, a data slice, an aux
state, an output, a gradient) is one shard of a global array concatenated on axis 0.
Building that global array from the per-device handles, and taking the handles back out
of it, copies nothing (`make_array_from_single_device_arrays` / `addressable_data`), and
each device sees exactly the arrays its own executor would have seen, so MXNet's
per-device meaning is kept: `grad_arrays[p][i]` is device i's gradient, BatchNorm's
moving statistics are per device. Inside the body nothing is differentiated through
`shard_map` itself (gradients are taken per device, so no implicit sum of replicated
parameters happens); the fused training step then sums gradients with one `psum`.
"""
from __future__ import annotations

import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from ..compile._options import compile_lowered
from .. import random as _random
from ..compile import store
from ..compile.cache import CACHE, CacheKey
from ..executor.step import _own, mark_owned, merge_args
from ..symbol.infer import SHAPE, entry_values
from ..symbol.lower import make_forward, make_train
from ..symbol.rolled import cache_suffix

AXIS = "d"
_ENABLED = [os.environ.get("JBIND_SPMD", "1") != "0"]


def spmd_enabled() -> bool:
    return _ENABLED[0]


def set_spmd(flag: bool) -> bool:
    """Turn the SPMD path for even splits on or off (env JBIND_SPMD=0); returns the old value."""
    old, _ENABLED[0] = _ENABLED[0], bool(flag)
    return old


def can_run(plan, devices, mesh_devices=None) -> bool:
    """Even split over distinct devices of one platform, every array at least 1-d."""
    if len(mesh_devices or devices) < 2 or len(set(devices)) != len(devices):
        return False
    if len({d.platform for d in devices}) != 1:
        return False
    if len({sl.stop - sl.start for sl in plan.slices}) != 1:
        return False
    p = plan.plans[0]
    return all(len(s) >= 1 for _, s in p.shapes) and all(len(s) >= 1 for s in p.out_shapes)


class SpmdRunner:
    """Runs a group's per-device graph on all its devices as one program.

    `devices` are the group's (this process's) devices; `mesh_devices`, when given, are
    every worker's devices (distributed training), of which `devices` are this
    worker's share: the program then spans all workers.
    """

    def __init__(self, symbol, plan, devices, mesh_devices=None):
        self.symbol = symbol
        self.plan = plan.plans[0]
        self.local = list(devices)
        self.devices = list(mesh_devices or devices)
        self.n = len(self.devices)
        self.distributed = mesh_devices is not None
        self.mesh = Mesh(np.array(self.devices), (AXIS,))
        self.stacked = NamedSharding(self.mesh, P(AXIS))
        self.replicated = NamedSharding(self.mesh, P())
        self._fns: dict = {}
        self._last = None
        self._states: dict = {}  # id(optimizer-state handle) -> (its array, the stacked array)

    # --- layout -------------------------------------------------------------------------
    def stack(self, arrays):
        """Per-device arrays (device i's first) -> one global array, without copying."""
        a0 = arrays[0]
        shape = (a0.shape[0] * self.n,) + tuple(a0.shape[1:])
        parts = [a if _on(a, d) else jax.device_put(a, d) for a, d in zip(arrays, self.local)]
        return jax.make_array_from_single_device_arrays(shape, self.stacked, parts)

    def unstack(self, arr):
        return [arr.addressable_data(i) for i in range(len(self.local))]

    def counters(self, counts):
        """Each device's RNG counter, as the stacked (n,) array the programs take."""
        if not self.distributed:
            return np.asarray(counts, dtype=np.uint32)
        return self.stack([jax.device_put(np.array([c], np.uint32), d) for c, d in zip(counts, self.local)])

    def _spec(self, shape, dtype):
        return jax.ShapeDtypeStruct((shape[0] * self.n,) + tuple(shape[1:]), dtype, sharding=self.stacked)

    def _key(self, tag, req=()):
        p = self.plan
        return CacheKey(self.symbol.fingerprint, p.shapes, p.dtypes, req, "spmd-" + tag + cache_suffix(),
                        tuple(str(d) for d in self.devices))

    def _shapes(self, g):
        return entry_values(self.symbol, SHAPE, dict(self.plan.shapes[:len(g.arg_names)]))

    def _arg_specs(self, g):
        p = self.plan
        n = len(g.arg_names)
        args = tuple(self._spec(s, dt) for (_, s), dt in zip(p.shapes[:n], p.np_dtypes[:n]))
        aux = tuple(self._spec(s, dt) for (_, s), dt in zip(p.shapes[n:], p.np_dtypes[n:]))
        key = jax.ShapeDtypeStruct((2,), np.uint32, sharding=self.replicated)
        counters = jax.ShapeDtypeStruct((self.n,), np.uint32, sharding=self.stacked)
        return args, aux, key, counters

    def _shard_map(self, body, n_in, n_out):
        return jax.shard_map(body, mesh=self.mesh, in_specs=n_in, out_specs=n_out, check_vma=False)

    # --- compiled programs --------------------------------------------------------------
    def compiled(self, g, mode):
        tag = mode + cache_suffix()
        fn = self._fns.get(tag)
        if fn is None:
            req = tuple(zip(g.arg_names, self.plan.grad_req)) if mode == "train" else ()
            fn = self._fns[tag] = CACHE.get(self._key(mode, req), lambda: self._build(g, mode))
        return fn

    def _build(self, g, mode):
        args, aux, key, counters = self._arg_specs(g)
        s, r = P(AXIS), P()
        if mode in ("infer", "train_fwd"):
            forward = make_forward(g, self._shapes(g))
            is_train = mode == "train_fwd"

            def body(args, aux, key, counter):
                k = jax.random.fold_in(jax.random.wrap_key_data(key), counter[0])
                return forward(args, aux, k, is_train)
            fn = self._shard_map(body, (s, s, r, s), s)
            lowered = jax.jit(store.named(fn, "jbind_spmd_forward")).lower(args, aux, key, counters)
            return compile_lowered(lowered, runs_often=True)
        p = self.plan
        train = make_train(g, p.diff, p.add, p.no_head, self._shapes(g))
        heads = tuple(self._spec(shape, np.float32 if t is None else t)
                      for shape, t, loss in zip(p.out_shapes, p.out_dtypes, p.no_head)
                      if not loss)
        n = len(g.arg_names)
        old = tuple(self._spec(p.shapes[k][1], p.np_dtypes[k]) for k in range(n) if p.diff[k] and p.add[k])

        def body(args, aux, key, counter, head_grads, old_grads):
            k = jax.random.fold_in(jax.random.wrap_key_data(key), counter[0])
            return train(args, aux, k, head_grads, old_grads)
        fn = self._shard_map(body, (s, s, r, s, s, s), s)
        lowered = jax.jit(store.named(fn, "jbind_spmd_train")).lower(args, aux, key, counters, heads, old)
        return compile_lowered(lowered, runs_often=True)

    # --- running the group --------------------------------------------------------------
    def _inputs(self, execs):
        args = tuple(self.stack([e.arg_arrays[k]._data for e in execs]) for k in range(len(execs[0].arg_arrays)))
        aux = tuple(self.stack([e.aux_arrays[k]._data for e in execs]) for k in range(len(execs[0].aux_arrays)))
        counts = [_random.next_counter() for _ in execs]
        return args, aux, _random.base_key(), counts

    def forward(self, execs, is_train):
        """Group forward as one call; fills every executor's outputs (and pending grads)."""
        g = execs[0]._g
        args, aux, key, counts = self._inputs(execs)
        counters = self.counters(counts)
        p = self.plan
        pending = None
        if not is_train:
            outs, _ = self.compiled(g, "infer")(args, aux, key, counters)
        elif any(p.diff) and all(p.no_head):
            outs, grads, new_aux = self.compiled(g, "train")(args, aux, key, counters, (), self._old(execs))
            pending = (grads, new_aux)
        else:
            outs, _ = self.compiled(g, "train_fwd")(args, aux, key, counters)
        self._last = (args, aux, key, counters) if is_train else None
        per_dev_outs = [self.unstack(o) for o in outs]
        per_pending = None
        if pending is not None:
            per_pending = ([self.unstack(x) for x in pending[0]], [self.unstack(x) for x in pending[1]])
        for i, e in enumerate(execs):
            e._set_outputs([o[i] for o in per_dev_outs])
            e._pending = None if per_pending is None else \
                (tuple(x[i] for x in per_pending[0]), tuple(x[i] for x in per_pending[1]))
            # What the executor's own backward() would need (the same arrays and RNG counter).
            e._last = (tuple(h._data for h in e.arg_arrays), tuple(h._data for h in e.aux_arrays), key,
                       counts[i], True) if is_train else None

    def _old(self, execs):
        p = self.plan
        return tuple(self.stack([e.grad_arrays[k]._data for e in execs])
                     for k in range(len(p.diff)) if p.diff[k] and p.add[k])

    def backward(self, execs, heads_per_output):
        """Group backward with head gradients (global arrays, batch on axis 0), one call."""
        from ..base import MXNetError
        if self._last is None:
            raise MXNetError("backward() needs a forward(is_train=True) first")
        g = execs[0]._g
        args, aux, key, counters = self._last
        heads = tuple(jax.device_put(h, self.stacked) for h in heads_per_output)
        for h, want in zip(heads, (s for s, loss in zip(self.plan.out_shapes, self.plan.no_head) if not loss)):
            if h.shape != (want[0] * self.n,) + tuple(want[1:]):
                raise MXNetError(f"backward: a head gradient has shape {tuple(h.shape)}; the group's output "
                                 f"is {(want[0] * self.n,) + tuple(want[1:])} ({self.n} devices x {tuple(want)})")
        outs, grads, new_aux = self.compiled(g, "train")(args, aux, key, counters, heads, self._old(execs))
        per_outs = [self.unstack(o) for o in outs]
        per_grads = [self.unstack(x) for x in grads]
        per_aux = [self.unstack(x) for x in new_aux]
        for i, e in enumerate(execs):
            e._set_outputs([o[i] for o in per_outs])
            e._pending = None
            e._publish(tuple(x[i] for x in per_grads), tuple(x[i] for x in per_aux))


def _on(a, dev) -> bool:
    try:
        return a.devices() == {dev}
    except AttributeError:
        return False


# --- the fused training step over the mesh ------------------------------------------------
def _compiled_step(runner, g, opt, param_pos, states):
    memo = ("step", opt.fingerprint(), param_pos, cache_suffix())
    fn = runner._fns.get(memo)
    if fn is None:
        req = tuple(zip(g.arg_names, runner.plan.grad_req))
        tag = "step:" + repr(memo[1]) + repr(param_pos)
        fn = runner._fns[memo] = CACHE.get(runner._key(tag, req),
                                           lambda: _build_step(runner, g, opt, param_pos, states))
    return fn


def _build_step(runner, g, opt, param_pos, states):
    p = runner.plan
    train = make_train(g, p.diff, p.add, p.no_head, runner._shapes(g))
    diff_pos = [k for k, d in enumerate(p.diff) if d]
    others = tuple(k for k in range(len(g.arg_names)) if k not in param_pos)

    def body(params, other_args, aux, key, counter, opt_states, lrs, wds, ts):
        k = jax.random.fold_in(jax.random.wrap_key_data(key), counter[0])
        outs, grads, new_aux = train(merge_args(param_pos, params, others, other_args), aux, k, (), ())
        by_pos = dict(zip(diff_pos, grads))
        # Each device differentiated its own slice; one all-reduce sums them, as MXNet's
        # kvstore push/pull did, and every device applies the same update to its copy.
        summed = jax.lax.psum(tuple(by_pos[q] for q in param_pos), AXIS)
        new_params, new_states = opt.step_tree(params, summed, opt_states, lrs, wds, ts)
        inputs = tuple(by_pos[q] for q in diff_pos if q not in param_pos)  # inputs_need_grad: per device
        return outs, summed + inputs, new_aux, new_params, new_states

    args, aux, key, counters = runner._arg_specs(g)
    s, r = P(AXIS), P()
    params = tuple(args[k] for k in param_pos)
    other = tuple(args[k] for k in others)
    st = jax.tree.map(lambda a: runner._spec(a.shape, a.dtype), states)
    scalars = tuple(jax.ShapeDtypeStruct((), np.float32, sharding=runner.replicated) for _ in param_pos)
    counts = tuple(jax.ShapeDtypeStruct((), np.int32, sharding=runner.replicated) for _ in param_pos)
    fn = runner._shard_map(body, (s, s, s, r, s, s, r, r, r), s)
    jitted = jax.jit(store.named(fn, "jbind_spmd_step"), donate_argnums=(0, 5))
    lowered = jitted.lower(params, other, aux, key, counters, st, scalars, scalars, counts)
    return compile_lowered(lowered, runs_often=True, tier=False)


def _state_stack(runner, h):
    """The stacked (one copy per device) global array of an optimizer-state handle.

    The handle itself holds device 0's copy (checkpoints and the imperative updater read
    it); the stacked array from the last step is reused while the handle still holds
    that step's result, and rebuilt from the handle otherwise.
    """
    cached = runner._states.get(id(h))
    if cached is not None and cached[0] is h._data:
        return cached[1]
    d = h._data
    copies = [d] + [jax.device_put(d, dev) for dev in runner.local[1:]]
    return runner.stack(copies)


def step_states(runner, state_handles):
    return tuple(jax.tree.map(lambda h: _state_stack(runner, h), s) for s in state_handles)


def compile_step(runner, execs, opt, param_pos, state_handles):
    states = tuple(jax.tree.map(lambda h: h._data, s) for s in state_handles)
    return _compiled_step(runner, execs[0]._g, opt, tuple(param_pos), states)


def run_step(runner, execs, opt, param_pos, state_handles, lrs, wds, ts):
    """One fused training step of the whole group: forward, backward, one gradient
    all-reduce and the optimizer update, as one XLA call over the mesh."""
    for e in execs:
        for k in param_pos:
            _own(e.arg_arrays[k])
    for s in state_handles:
        for h in jax.tree.leaves(s):
            _own(h)
    g = execs[0]._g
    states = tuple(jax.tree.map(lambda h: h._data, s) for s in state_handles)
    fn = _compiled_step(runner, g, opt, tuple(param_pos), states)
    n_args = len(g.arg_names)
    params = tuple(runner.stack([e.arg_arrays[k]._data for e in execs]) for k in param_pos)
    others = tuple(runner.stack([e.arg_arrays[k]._data for e in execs]) for k in range(n_args) if k not in param_pos)
    aux = tuple(runner.stack([e.aux_arrays[k]._data for e in execs]) for k in range(len(execs[0].aux_arrays)))
    stacked_states = step_states(runner, state_handles)
    counts = [_random.next_counter() for _ in execs]
    outs, grads, new_aux, new_params, new_states = fn(
        params, others, aux, _random.base_key(), runner.counters(counts), stacked_states,
        tuple(np.float32(x) for x in lrs), tuple(np.float32(x) for x in wds), tuple(np.int32(t) for t in ts))
    runner._last = None
    per = [[runner.unstack(x) for x in group] for group in (outs, grads, new_aux, new_params)]
    diff_pos = [k for k, d in enumerate(runner.plan.diff) if d]
    order = list(param_pos) + [q for q in diff_pos if q not in param_pos]
    grad_at = {q: i for i, q in enumerate(order)}
    for i, e in enumerate(execs):
        e._set_outputs([o[i] for o in per[0]])
        e._pending = None
        e._last = None
        for k in diff_pos:
            e.grad_arrays[k]._data = per[1][grad_at[k]][i]
        for h, a in zip(e.aux_arrays, per[2]):
            h._data = a[i]
        for k, w in zip(param_pos, per[3]):
            e.arg_arrays[k]._data = w[i]
            mark_owned(w[i])
    for handles, new in zip(state_handles, new_states):
        for h, v in zip(jax.tree.leaves(handles), jax.tree.leaves(new)):
            h._data = v.addressable_data(0)
            mark_owned(h._data)
            runner._states[id(h)] = (h._data, v)
