"""A Module's training step as one compiled call: forward, backward and the optimizer
update fused (jbind/executor/step.py on one device, jbind/module/spmd.py over a mesh of
the group's devices or, with a dist kvstore, of every worker's devices)."""
from __future__ import annotations

import time

from ..executor.step import compile_step as compile_one, fusable, run_step as run_one
from . import spmd
from .executor_group import _runner


def step_runner(mod):
    """The SPMD runner of the fused step: over every worker's devices with a dist
    kvstore, over the group's devices for an even split, else None (one device)."""
    g = mod._exec_group
    if not mod._dist:
        return _runner(g)
    p = g._p
    if getattr(p, "dist_runner", None) is None:
        from .. import distributed
        mesh = distributed.worker_devices(g.store.devices)
        p.dist_runner = spmd.SpmdRunner(g.symbol, p, g.store.devices, mesh) \
            if spmd.can_run(p, g.store.devices, mesh) else False
    return p.dist_runner or None


def can_fuse(mod) -> bool:
    """Nothing between forward, backward and update needs the intermediate results, and
    the optimizer's update is its functional step with per-parameter state (Nadam's shared
    schedule, SGLD's noise and Python subclasses' rules update imperatively)."""
    g = mod._exec_group
    opt = mod._optimizer
    return (mod.optimizer_initialized and (len(g.execs) == 1 or step_runner(mod) is not None)
            and hasattr(opt, "step_tree") and getattr(opt, "_functional_update", lambda: True)()
            and fusable(g.execs[0]))


def step_params(mod):
    """(optimizer indices, argument positions, optimizer-state handles) of trained parameters."""
    g = mod._exec_group
    opt, updater = mod._optimizer, mod._updater
    opt._set_current_context(mod._context[0].device_id)
    indices, positions, states = [], [], []
    for i, (k, weights, grads) in enumerate(zip(g._p.param_idx, g.param_arrays, g.grad_arrays)):
        if grads[0] is None:
            continue
        if i not in updater.states:
            updater.states[i] = opt.create_state_multi_precision(i, weights[0])
            updater.states_synced[i] = True
        indices.append(i)
        positions.append(k)
        states.append(updater.states[i])
    return indices, positions, states


def run(mod, data_batch, runner) -> None:
    """One fused step on `data_batch` (`runner`: `step_runner(mod)`)."""
    g = mod._exec_group
    mod._reshape_for(data_batch)
    g.load_batch(data_batch)
    mod._params_dirty = True
    indices, positions, states = step_params(mod)
    lrs, wds, ts = mod._optimizer.prepare(indices)
    if runner is not None:
        spmd.run_step(runner, g.execs, mod._optimizer, positions, states, lrs, wds, ts)
    else:
        run_one(g.execs[0], mod._optimizer, positions, states, lrs, wds, ts)


def compile_training(mod) -> float:
    """Compile what a training step of `mod` runs (the fused step, or forward+backward);
    seconds spent (0 if it was cached). Safe from a background thread."""
    t0 = time.perf_counter()
    g = mod._exec_group
    if can_fuse(mod):
        _, positions, states = step_params(mod)
        runner = step_runner(mod)
        if runner is not None:
            spmd.compile_step(runner, g.execs, mod._optimizer, positions, states)
        else:
            compile_one(g.execs[0], mod._optimizer, positions, states)
    else:
        for e in g.execs:
            e._compiled("train")
    return time.perf_counter() - t0
