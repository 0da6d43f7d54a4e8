"""The fused training step: forward, backward and the optimizer update in one XLA call.

Module.fit uses it when nothing between the three needs the intermediate results
(one device, loss heads only, grad_req 'write'). Parameter and optimizer-state buffers
are donated, so XLA updates them in place. The separate forward() / backward() /
update() calls keep MXNet's meaning and give the same numbers.
"""
from __future__ import annotations

import weakref

import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from .. import random as _random
from ..compile import store
from ..compile._options import compile_lowered
from ..compile.cache import CACHE, CacheKey
from ..symbol.infer import SHAPE, entry_values
from ..symbol.lower import make_train
from ..symbol.rolled import cache_suffix


def fusable(exe) -> bool:
    return all(exe._loss_heads) and not any(exe._add) and any(exe._diff) and exe._monitor is None


def _compiled_step(exe, opt, param_pos, states):
    # Memoized on the executor by a tuple (cheap every step); the cache key's text is
    # built only on the first step of a configuration.
    memo = ("step", opt.fingerprint(), param_pos, cache_suffix())
    fn = exe._fns.get(memo)
    if fn is not None:
        return fn
    fp, shapes, dtypes, devs = exe._key_parts
    req = tuple(zip(exe._g.arg_names, exe._grad_req))
    tag = "step:" + repr(memo[1]) + repr(param_pos) + memo[3]
    key = CacheKey(fp, shapes, dtypes, req, tag, devs)
    fn = exe._fns[memo] = CACHE.get(key, lambda: _build(exe, opt, param_pos, states))
    return fn


def merge_args(param_pos, params, others, other_args) -> tuple:
    """The argument tuple in graph order from the trained parameters and the rest."""
    args = [None] * (len(params) + len(other_args))
    for k, v in zip(param_pos, params):
        args[k] = v
    for k, v in zip(others, other_args):
        args[k] = v
    return tuple(args)


def _build(exe, opt, param_pos, states):
    g = exe._g
    shapes = entry_values(exe._symbol, SHAPE, dict(exe._key_parts[1][:len(g.arg_names)]))
    train = make_train(g, exe._diff, exe._add, exe._loss_heads, shapes)
    diff_pos = [k for k, d in enumerate(exe._diff) if d]
    others = tuple(k for k in range(len(exe.arg_arrays)) if k not in param_pos)
    sharding = SingleDeviceSharding(exe._device)

    def jbind_step(params, other_args, aux, key, counter, opt_states, lr_wd, ts):
        # The per-parameter learning rates, decays and counts come packed in two arrays:
        # two host-to-device transfers a step instead of three per parameter.
        lrs = tuple(lr_wd[0, i] for i in range(len(param_pos)))
        wds = tuple(lr_wd[1, i] for i in range(len(param_pos)))
        ts = tuple(ts[i] for i in range(len(param_pos)))
        k = jax.random.fold_in(jax.random.wrap_key_data(key), counter)
        outs, grads, new_aux = train(merge_args(param_pos, params, others, other_args), aux, k, (), ())
        by_pos = dict(zip(diff_pos, grads))
        new_params, new_states = opt.step_tree(params, tuple(by_pos[p] for p in param_pos), opt_states,
                                               lrs, wds, ts)
        return outs, grads, new_aux, new_params, new_states

    def spec(a):
        return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)

    params = tuple(spec(exe.arg_arrays[k]._data) for k in param_pos)
    other = tuple(spec(exe.arg_arrays[k]._data) for k in others)
    aux = tuple(spec(h._data) for h in exe.aux_arrays)
    rates = jax.ShapeDtypeStruct((2, len(param_pos)), np.float32, sharding=sharding)
    counts = jax.ShapeDtypeStruct((len(param_pos),), np.int32, sharding=sharding)
    st = jax.tree.map(spec, states)
    kspec = jax.ShapeDtypeStruct((2,), np.uint32, sharding=sharding)
    cspec = jax.ShapeDtypeStruct((), np.uint32, sharding=sharding)
    jitted = jax.jit(store.named(jbind_step, "jbind_step"), donate_argnums=(0, 5))
    return compile_lowered(jitted.lower(params, other, aux, kspec, cspec, st, rates, counts), runs_often=True, tier=False)


# Buffers this module produced and nobody else holds: only these are donated. Anything
# else (shared zeros of fresh handles, arrays the user passed to set_params) is copied
# once, so donation never invalidates an array someone still holds.
_OWNED: "weakref.WeakValueDictionary[int, jax.Array]" = weakref.WeakValueDictionary()


def _own(h):
    d = h._data
    if _OWNED.get(id(d)) is not d:
        d = h._data = jax.device_put(d, may_alias=False)  # a copy, without compiling one
        _OWNED[id(d)] = d


def compile_step(exe, opt, param_pos, state_handles):
    """Compile (or find in the cache) the fused step without running it."""
    states = tuple(jax.tree.map(lambda h: h._data, s) for s in state_handles)
    return _compiled_step(exe, opt, tuple(param_pos), states)


def run_step(exe, opt, param_pos, state_handles, lrs, wds, ts):
    """One fused step on executor `exe` for the parameters at `param_pos` (argument positions).

    `state_handles`: per parameter, the optimizer state in MXNet's layout as NDArray handles
    (the Updater's), updated in place, so checkpoints and the imperative path stay in sync.
    """
    for k in param_pos:
        _own(exe.arg_arrays[k])
    for s in state_handles:
        for h in jax.tree.leaves(s):
            _own(h)
    states = tuple(jax.tree.map(lambda h: h._data, s) for s in state_handles)
    fn = _compiled_step(exe, opt, tuple(param_pos), states)
    others = tuple(exe.arg_arrays[k]._data for k in range(len(exe.arg_arrays)) if k not in param_pos)
    params = tuple(exe.arg_arrays[k]._data for k in param_pos)
    aux = tuple(h._data for h in exe.aux_arrays)
    key, counter = _random.next_draw()
    outs, grads, new_aux, new_params, new_states = fn(
        params, others, aux, key, counter, states,
        np.array((lrs, wds), np.float32).reshape(2, len(param_pos)), np.array(ts, np.int32))
    exe._set_outputs(outs)
    exe._pending = None
    exe._last = None
    exe._publish(grads, new_aux)
    for k, w in zip(param_pos, new_params):
        exe.arg_arrays[k]._data = w
        _OWNED[id(w)] = w
    for handles, new in zip(state_handles, new_states):
        for h, v in zip(jax.tree.leaves(handles), jax.tree.leaves(new)):
            h._data = v
            _OWNED[id(v)] = v
