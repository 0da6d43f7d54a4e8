"""The fused training step: forward, backward and the optimizer update in one XLA call.

Module.fit uses it when nothing between the three needs the intermediate results
(one device, loss heads only, grad_req 'write'). Parameter and optimizer-state buffers
are donated, so XLA updates them in place. The separate forward() / backward() /
update() calls keep MXNet's meaning and give the same numbers.

The random key, the draw counter, and the per-parameter update counts, learning rates
and decays travel packed in one uint32 array (`pack_rates`), and the program returns
that array as the next step will most likely want it: a step that finds it so sends
nothing to the device besides the batch (a transfer costs about what a small model's
whole step runs). What depends only on the configuration (the compiled
program, the positions of the other arguments) is a `_Step`, memoized on the executor.
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
from ..optimizer._packed import Predicted, increment, pack_rates, rates_spec, unpack_rates
from ..symbol.infer import SHAPE, entry_values
from ..symbol.lower import make_train
from ..symbol.rolled import cache_suffix


def fusable(exe) -> bool:
    return all(exe._loss_heads) and not any(exe._add) and any(exe._diff) and exe._monitor is None


class _Step:
    """One configuration's compiled step and the argument positions it reads."""

    __slots__ = ("fn", "param_pos", "others", "next")

    def __init__(self, fn, param_pos, others, device):
        self.fn, self.param_pos, self.others = fn, param_pos, others
        self.next = _predicted(device, len(param_pos))


# (device, number of parameters) -> the packed numbers the next fused step there likely
# takes: shared by every executor (every bucket) stepping on that device.
_NEXT: dict = {}


def _predicted(device, n) -> Predicted:
    p = _NEXT.get((device, n))
    if p is None:
        p = _NEXT.setdefault((device, n), Predicted(_increment(n)))
    return p


def _increment(n):
    return increment(n, lead=(0, 0, 1))  # the key stays, the counter moves on


def _step_of(exe, opt, param_pos, states) -> _Step:
    # Memoized on the executor by a tuple (cheap every step); the cache key's text is
    # built only on the first step of a configuration.
    memo = ("step", opt.fingerprint(), param_pos, cache_suffix())
    st = exe._fns.get(memo)
    if st is not None:
        return st
    fp, shapes, dtypes, devs = exe._key_parts
    req = tuple(zip(exe._g.arg_names, exe._grad_req))
    tag = "step:" + repr(memo[1]) + repr(param_pos) + memo[3]
    key = CacheKey(fp, shapes, dtypes, req, tag, devs)
    fn = CACHE.get(key, lambda: _build(exe, opt, param_pos, states))
    others = tuple(k for k in range(len(exe.arg_arrays)) if k not in param_pos)
    st = exe._fns[memo] = _Step(fn, param_pos, others, exe._device)
    return st


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
    n = len(param_pos)
    inc = _increment(n)

    def jbind_step(params, other_args, aux, packed, opt_states):
        lrs, wds, ts = unpack_rates(packed, n, start=3)
        k = jax.random.fold_in(jax.random.wrap_key_data(packed[:2]), packed[2])
        outs, grads, new_aux = train(merge_args(param_pos, params, others, other_args), aux, k, (), ())
        by_pos = dict(zip(diff_pos, grads))
        new_params, new_states = opt.step_tree(params, tuple(by_pos[p] for p in param_pos), opt_states,
                                               lrs, wds, ts)
        return outs, grads, new_aux, new_params, new_states, packed + inc

    def spec(a):
        return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding)

    params = tuple(spec(exe.arg_arrays[k]._data) for k in param_pos)
    other = tuple(spec(exe.arg_arrays[k]._data) for k in others)
    aux = tuple(spec(h._data) for h in exe.aux_arrays)
    packed = rates_spec(n, lead=3, sharding=sharding)
    st = jax.tree.map(spec, states)
    jitted = jax.jit(store.named(jbind_step, "jbind_step"), donate_argnums=(0, 4))
    return compile_lowered(jitted.lower(params, other, aux, packed, st), runs_often=True, tier=False)


# Buffers this module produced and nobody else holds: only these are donated. Anything
# else (shared zeros of fresh handles, arrays the user passed to set_params) is copied
# once, so donation never invalidates an array someone still holds. id -> weak reference
# (checked against the array itself, so a reused id is never mistaken for it); dead
# entries are swept when the table grows.
_OWNED: dict = {}
_SWEEP_AT = [4096]


def mark_owned(a) -> None:
    """Record `a` as a buffer a fused step produced (donatable by the next one)."""
    _OWNED[id(a)] = weakref.ref(a)
    if len(_OWNED) > _SWEEP_AT[0]:
        for k in [k for k, r in _OWNED.items() if r() is None]:
            del _OWNED[k]
        _SWEEP_AT[0] = max(4096, 2 * len(_OWNED))


def _own(h):
    d = h._data
    r = _OWNED.get(id(d))
    if r is None or r() is not d:
        d = h._data = jax.device_put(d, may_alias=False)  # a copy, without compiling one
        mark_owned(d)


def compile_step(exe, opt, param_pos, state_handles):
    """Compile (or find in the cache) the fused step without running it."""
    states = tuple(jax.tree.map(lambda h: h._data, s) for s in state_handles)
    return _step_of(exe, opt, tuple(param_pos), states).fn


def run_step(exe, opt, param_pos, state_handles, lrs, wds, ts):
    """One fused step on executor `exe` for the parameters at `param_pos` (argument positions).

    `state_handles`: per parameter, the optimizer state in MXNet's layout as NDArray handles
    (the Updater's), updated in place, so checkpoints and the imperative path stay in sync.
    """
    arg_arrays = exe.arg_arrays
    weights = [arg_arrays[k] for k in param_pos]
    slots, tree = jax.tree.flatten(tuple(state_handles))
    for h in weights:
        _own(h)
    for h in slots:
        _own(h)
    states = tree.unflatten([h._data for h in slots])
    st = _step_of(exe, opt, tuple(param_pos), states)
    key, counter = _random.next_draw()
    buf = pack_rates(lrs, wds, ts, lead=(*key, counter))
    outs, grads, new_aux, new_params, new_states, nxt = st.fn(
        tuple(h._data for h in weights), tuple(arg_arrays[k]._data for k in st.others),
        tuple(h._data for h in exe.aux_arrays), st.next.pick(buf), states)
    st.next.after(buf, nxt)
    exe._set_outputs(outs)
    exe._pending = None
    exe._last = None
    exe._publish(grads, new_aux)
    for h, w in zip(weights, new_params):
        h._data = w
        mark_owned(w)
    for h, v in zip(slots, jax.tree.leaves(new_states)):
        h._data = v
        mark_owned(v)
