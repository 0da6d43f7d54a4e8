"""The backward of a recorded tape from what its forward kept: no forward recomputed.

While `record()` is on, an op call runs as one compiled call that also takes the
op lowering's `jax.vjp` with respect to the inputs in the graph and returns the
pullback's residuals (`ndarray/_dispatch.py`); the node keeps them (`Node.saved`). The
backward here walks the nodes from the heads to the variables and applies each node's
pullback to its residuals, summing the cotangents an entry receives from its users. So
each op's gradient is still its own lowering's (loss heads' `custom_vjp` included), the
forward runs once per step (eagerly, as the user's program asked), and the whole walk is
one jitted function per tape structure: a training loop that records the same
computation every step compiles it once and then makes one call a step.

A hybridized block's compiled training forward keeps its residuals the same way
(`gluon/_cached_graph.py`). A node without residuals (a `Function`, a gradient recorded
by `grad(create_graph=True)`, an op that ran op by op) keeps its input values instead,
and the walk differentiates its function at them: that node alone is recomputed.

Why this design, among those weighed for issue 21:
- replaying the whole tape inside one `jax.vjp` (the previous design, kept in
  `_backward.py` for `create_graph=True` and integer variables, whose gradients must be
  functions of the variables) ran every step's forward twice, eagerly and in the replay.
  Measured in one process on the 2-layer MLP of `benchmarks/autograd_bench.py`, the
  walk over residuals took about 0.7x the replay's time at batch 32 and 0.5x at batch
  256 / width 512 (gradients bit for bit the same there);
- applying each node's pullback as its own compiled call (no structural key) costs one
  dispatch per node and per cotangent sum, and XLA fuses nothing across ops: measured
  the same way, about 2.5x the walk's time at batch 32 and 1.4x at batch 256 (slower
  than the replay on the small model). It remains the way a tape holding a `Function`
  (Python state, no key) is walked.
(Untimed, noisy figures from a loaded 2-core machine; the minima agreed with the medians.)
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._tape import inexact


def key_of(tape) -> tuple | None:
    """The structure the walk's compiled function depends on, or None where a node holds
    Python state (a `Function`): then the walk runs without jit."""
    nodes = []
    for n in tape.nodes:
        if n.saved is not None:
            nodes.append(n.saved[0].uid)   # the compiled call: op, parameters, shapes, inputs in diff
        elif not n.diff:
            nodes.append(None)
        elif n.sig is None:
            return None
        else:
            nodes.append((n.sig, n.diff, tuple((tuple(v.shape), str(v.dtype)) for v in n.vals)))
    heads = tuple(tape.nodes[h[1]].avals[h[2]] if h[0] == "n" else None for h in tape.heads)
    return (tuple(nodes), tape.wiring, tape.heads, tape.loss_heads, heads,
            tuple((tuple(v.shape), v.dtype) for v in tape.var_vals))


def saved_of(tape) -> list:
    """The walk's array arguments: per node its residuals, or its input values."""
    return [n.saved[1] if n.saved is not None else n.vals for n in tape.nodes]


def _ones(aval, g):
    shape, dtype = aval
    return jnp.ones(shape, dtype) if g is None else jnp.broadcast_to(g.astype(dtype), shape)


def _zeros(aval):
    shape, dtype = aval
    return jnp.zeros(shape, dtype) if inexact(dtype) else np.zeros(shape, jax.dtypes.float0)


def _fn_pullback(fn, diff):
    def pull(vals, cts):
        def f(*xs):
            full = list(vals)
            for j, x in zip(diff, xs):
                full[j] = x
            return list(fn(full))
        _, vjp = jax.vjp(f, *[vals[j] for j in diff])
        return vjp(list(cts))
    return pull


def grad_fn(tape, diff: tuple, given: tuple, add: tuple, jit_pulls: bool = False):
    """f(saved, head_grads, old_grads) -> the gradients of the variables `diff`; `given[h]`:
    head h has a head gradient (else ones; loss heads always ones), `add[i]`: add
    old_grads[i]. `jit_pulls`: compile each op's pullback on its own (a walk run without
    jit, for a tape holding a `Function`)."""
    pulls = []
    for n in tape.nodes:
        if n.saved is not None:
            entry = n.saved[0]
            pulls.append(entry.jitted_pull() if jit_pulls else entry.pull)
        elif n.diff:
            pulls.append(_fn_pullback(n.fn, n.diff))
        else:
            pulls.append(None)
    diffs = tuple(n.diff for n in tape.nodes)
    avals = tuple(n.avals for n in tape.nodes)
    wiring, heads, loss_heads = tape.wiring, tape.heads, tape.loss_heads
    var_avals = tuple((tuple(v.shape), v.dtype) for v in tape.var_vals)
    head_avals = tuple(avals[h[1]][h[2]] if h[0] == "n" else var_avals[h[1]] for h in heads)

    def run(saved, head_grads, old_grads):
        cts: dict = {}

        def acc(ref, g):
            k = ref[:3] if ref[0] == "n" else ref[:2]
            cts[k] = g if k not in cts else cts[k] + g
        it = iter(head_grads)
        for h, has, loss, aval in zip(heads, given, loss_heads, head_avals):
            g = next(it) if has else None
            if inexact(aval[1]):
                acc(h, _ones(aval, None if loss else g))
        for i in reversed(range(len(pulls))):
            if pulls[i] is None:
                continue
            outs = [cts.pop(("n", i, k), None) for k in range(len(avals[i]))]
            if all(o is None for o in outs):
                continue
            outs = [_zeros(a) if o is None else o for o, a in zip(outs, avals[i])]
            for j, g in zip(diffs[i], pulls[i](saved[i], outs)):
                acc(wiring[i][j], g)
        old = iter(old_grads)
        grads = [cts.get(("v", j)) for j in diff]
        grads = [_zeros(var_avals[j]) if g is None else g for g, j in zip(grads, diff)]
        return [g + next(old).astype(g.dtype) if a else g for g, a in zip(grads, add)]
    return run
