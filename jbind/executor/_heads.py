"""Head gradients of a backward: which outputs take one, and which a training function never reads."""
from __future__ import annotations

import jax
import jax.extend.core as jcore
import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import NDArray


def head_gradients(out_grads, no_head, names, ignored=None) -> list:
    """(output index, given array) for each output that takes a head gradient (not a loss
    head), as backward(out_grads) indexes them: one entry per output. `ignored()`: the
    outputs whose head gradient the backward never reads; a missing one is given as None."""
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
            if ignored is not None and i in ignored():
                picked.append((i, None))
                continue
            raise MXNetError(f"backward: output {names[i]!r} is not a loss, so its head gradient is "
                             "required: pass out_grads (one array per output)")
        picked.append((i, out_grads[i]))
    return picked


def ignored_heads(fn, specs, no_head) -> list:
    """Indices of the outputs (of those taking a head gradient) whose head gradient `fn`,
    a training function taking (args, aux, key, counter, head_grads, old_grads), never reads."""
    closed = jax.make_jaxpr(fn)(*specs)
    used = set()
    for eqn in closed.jaxpr.eqns:
        used.update(id(v) for v in eqn.invars if isinstance(v, jcore.Var))
    used.update(id(v) for v in closed.jaxpr.outvars if isinstance(v, jcore.Var))
    start = sum(len(jax.tree_util.tree_leaves(s)) for s in specs[:4])
    head_vars = closed.jaxpr.invars[start:start + len(specs[4])]
    outputs = [i for i, is_loss in enumerate(no_head) if not is_loss]
    return [i for i, v in zip(outputs, head_vars) if id(v) not in used]


def as_dtype(x, dtype, device):
    """Head gradient `x` as `dtype` on `device`. On the CPU a conversion happens on the host:
    `astype` on a jax.Array compiles a program per shape (a sweep over shapes paid a compile
    for every backward whose output dtype differed from its head gradient's)."""
    if x.dtype == dtype:
        return jax.device_put(x, device)
    if device.platform == "cpu":
        return jax.device_put(np.asarray(x).astype(dtype), device)
    return jax.device_put(x.astype(dtype), device)
