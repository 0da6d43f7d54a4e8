"""Initial optimizer states made on the host, without compiling.

`init_state` is usually constants shaped like the weight (zeros for momentum, ones for a
running product). Made through `jax.numpy` one parameter at a time, each distinct weight
shape compiled a small XLA program (17 for resnet18, about 0.15 s of CPU each); in one
jitted call they still cost one compile. When the traced `init_state` only broadcasts and
converts constants, this evaluates it with numpy and puts the arrays beside each weight.
"""
from __future__ import annotations

import jax
import numpy as np
from jax.extend import core as jcore


def host_states(init_state, arrays):
    """`[init_state(a) for a in arrays]` computed on the host, each leaf on its array's
    device and committed as that array is; None where the rule does more than fill constants."""
    specs = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays)
    closed, out_shape = jax.make_jaxpr(lambda ws: tuple(init_state(w) for w in ws), return_shape=True)(specs)
    leaves = _evaluate(closed)
    if leaves is None:
        return None
    specs_out = jax.tree.leaves(out_shape)
    leaves = [np.asarray(v, dtype=o.dtype) for v, o in zip(leaves, specs_out)]
    if any(v.shape != tuple(o.shape) for v, o in zip(leaves, specs_out)):
        return None
    per = jax.tree.structure(out_shape).unflatten(leaves)
    return [jax.tree.map(lambda v, a=a: _place(v, a), s) for s, a in zip(per, arrays)]


def _place(value, like):
    return jax.device_put(value, like.sharding) if getattr(like, "committed", True) else jax.device_put(value)


def _evaluate(closed):
    jaxpr = closed.jaxpr
    if jaxpr.invars and any(not isinstance(v, jcore.Var) for v in jaxpr.invars):
        return None
    env = dict(zip(jaxpr.constvars, (np.asarray(c) for c in closed.consts)))

    def read(v):
        if isinstance(v, jcore.Literal):
            return np.asarray(v.val)
        return env.get(v)  # None for the weights themselves: a rule that reads them is not constant

    for eqn in _live(jaxpr):
        ins = [read(v) for v in eqn.invars]
        if any(x is None for x in ins) or len(eqn.outvars) != 1:
            return None
        name, p = eqn.primitive.name, eqn.params
        if name == "broadcast_in_dim" and ins[0].ndim == 0:
            out = np.full(p["shape"], ins[0])
        elif name == "convert_element_type":
            out = np.asarray(ins[0], dtype=p["new_dtype"])
        else:
            return None
        env[eqn.outvars[0]] = out
    outs = [read(v) for v in jaxpr.outvars]
    return None if any(x is None for x in outs) else outs


def _live(jaxpr):
    """The equations the outputs depend on, in order (a rule's `_tx` may compute scalars it
    never returns)."""
    need = {v for v in jaxpr.outvars if isinstance(v, jcore.Var)}
    live = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in need for v in eqn.outvars):
            live.append(eqn)
            need.update(v for v in eqn.invars if isinstance(v, jcore.Var))
    return live[::-1]
