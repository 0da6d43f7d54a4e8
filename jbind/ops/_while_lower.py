"""The lowering of `_while_loop` (ops/control_flow.py).

Two programs compute the same values: `lax.while_loop`, which stops at the first step
whose condition fails, and a `lax.scan` of `max_iterations` steps, each running the body
under `lax.cond` while the condition has held so far, which reverse-mode differentiation
can go through. The loop is a `jax.custom_vjp`: plain forwards run the while loop, and
what is differentiated runs the scan (its forward and its pullback). Step outputs are
stacked into `max_iterations` rows, the rows past the last step zeros.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ..base import MXNetError
from ._subgraph import run_sub


def predicate(p, what):
    """A one-element array as a boolean scalar."""
    if p.size != 1:
        raise MXNetError(f"{what} must be a scalar (one element), got shape {tuple(p.shape)}")
    return jnp.reshape(p, ()) != 0


class _Loop:
    """One `_while_loop` node's cond and body, as functions of its inputs."""

    def __init__(self, op, is_train):
        self.op, self.is_train = op, is_train
        self.cond, self.func = op.subgraphs
        self.var_pos = [op.func_input_locs[loc] for loc in op.func_var_locs]

    def _inputs(self, ins, locs, vars_):
        cur = list(ins)
        for p, v in zip(self.var_pos, vars_):
            cur[p] = v
        return [cur[p] for p in locs]

    def going(self, ins, vars_, k):
        p = run_sub(self.cond, self._inputs(ins, self.op.cond_input_locs, vars_), k, self.is_train)[0]
        return predicate(p, "_while_loop: the loop condition")

    def body(self, ins, vars_, k):
        """-> (step outputs, new loop variables), each variable in its input's dtype."""
        outs = run_sub(self.func, self._inputs(ins, self.op.func_input_locs, vars_), k, self.is_train)
        nod = self.op.num_out_data
        return tuple(outs[:nod]), tuple(o.astype(v.dtype) for o, v in zip(outs[nod:], vars_))

    def step_shapes(self, ins, vars_, k):
        return jax.eval_shape(lambda v: self.body(ins, v, k), vars_)[0]

    def scanned(self, ins, key):
        """The differentiable program: `max_iterations` steps, masked after the last."""
        def step(carry, i):
            alive, vars_ = carry
            k = _step_key(key, i)
            go = alive & self.going(ins, vars_, k)
            shapes = self.step_shapes(ins, vars_, k)
            ys, new = lax.cond(go, lambda v: self.body(ins, v, k),
                               lambda v: (tuple(jnp.zeros(s.shape, s.dtype) for s in shapes), v), vars_)
            return (go, new), ys

        init = (jnp.asarray(True), tuple(ins[p] for p in self.var_pos))
        (_, final), ys = lax.scan(step, init, jnp.arange(self.op.max_iterations, dtype=jnp.uint32))
        return tuple(ys) + tuple(final)

    def stopping(self, ins, key):
        """The forward-only program: stops at the first step whose condition fails."""
        n = self.op.max_iterations
        vars0 = tuple(ins[p] for p in self.var_pos)
        shapes = self.step_shapes(ins, vars0, _step_key(key, 0))
        rows = tuple(jnp.zeros((n,) + s.shape, s.dtype) for s in shapes)

        def going(state):
            i, vars_, _ = state
            return (i < n) & self.going(ins, vars_, _step_key(key, i))

        def step(state):
            i, vars_, rows_ = state
            ys, new = self.body(ins, vars_, _step_key(key, i))
            return i + 1, new, tuple(r.at[i].set(y) for r, y in zip(rows_, ys))

        _, final, rows = lax.while_loop(going, step, (jnp.uint32(0), vars0, rows))
        return rows + tuple(final)


def _step_key(key, i):
    return None if key is None else jax.random.fold_in(key, i)


def lower(op, ins, is_train, key) -> list:
    """The outputs of `_while_loop` node `op` on inputs `ins`."""
    loop = _Loop(op, is_train)

    @jax.custom_vjp
    def run(ins, key):
        return loop.stopping(ins, key)

    def forward(ins, key):
        return jax.vjp(loop.scanned, ins, key)  # the pullback (a pytree) is the residual

    run.defvjp(forward, lambda pullback, cot: pullback(cot))
    return list(run(tuple(ins), key))
