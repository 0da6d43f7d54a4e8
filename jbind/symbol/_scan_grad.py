"""The gradient of a rolled recurrence (see rolled.py) with its weight gradients after the loop.

JAX's transpose of a `lax.scan` accumulates the cotangent of every loop-invariant input
inside the backward loop: for the h2h FullyConnected of an LSTM cell that is a
(4H x N) @ (N x H) product and an add per step. Here each FullyConnected of the step whose
weight (and bias) are loop-invariant gets a zero "probe" added to its output, one per step:
the backward loop then emits the cotangent of that output per step, as it does for any
per-step input, and the weight's gradient is one product over all steps after the loop,
`dW = sum_t ct_t^T x_t` (`db = sum_t ct_t`), the form cuDNN and PyTorch use. The weight
itself enters the loop as a constant, multiplied in its transposed form (`x @ W^T` made
once outside the loop: XLA:CPU runs `[N, K] @ [K, U]` faster than contracting both
operands' last axes), with the backward's `ct @ W` in the same fast form.

`JBIND_SCAN_WEIGHT_GRAD=0` (or `set_enabled(False)`) keeps JAX's own transpose; the
setting is part of the compile-cache key (rolled.cache_suffix).
"""
from __future__ import annotations

import os

import jax
import jax.numpy as jnp
from jax import lax

_state = {"on": os.environ.get("JBIND_SCAN_WEIGHT_GRAD", "1") != "0"}


def set_enabled(on: bool) -> bool:
    """Weight gradients of rolled loops after the loop (default on); returns the old value."""
    old, _state["on"] = _state["on"], bool(on)
    return old


def cache_suffix() -> str:
    return "" if _state["on"] else "+scangrad0"


@jax.custom_vjp
def _dot_nn(x, wt, w):
    """x @ wt (wt = w.T, made outside the loop); the gradient with respect to x is g @ w."""
    return x @ wt


_dot_nn.defvjp(lambda x, wt, w: (x @ wt, w), lambda w, g: (g @ w, None, None))


def hoistable(run, ops, shapes, g, tm) -> list:
    """Body positions of FullyConnected nodes with invariant weight and bias, a per-step
    data input and a float weight: [(p, weight entry, bias entry or None)]."""
    out = []
    for p in run.body:
        op = ops[tm[p]]
        if type(op).__name__ != "FullyConnected":
            continue
        d = run.bdescs[p]
        if d[0][0] == "inv" or d[1][0] != "inv" or (len(d) > 2 and d[2][0] != "inv"):
            continue
        data_shape = shapes[g.in_entries[tm[p]][0]]
        if data_shape is None or (not op.flatten and len(data_shape) != 2):
            continue
        out.append((p, d[1][1], d[2][1] if len(d) > 2 else None))
    return out


def scan(step, fcs, invs, shared, init, xs, n):
    """`lax.scan` of `step` with the weight gradients of `fcs` after the loop.

    step(carry, sl, inv, fc) -> (carry, ys, {p: the FC's 2-D input}): `sl` the step's slice
    of `xs`, `inv` {entry: array} the invariants, `fc` {p: x -> the FC's output}. `shared`:
    invariants that the step also reads other than as a hoisted FC's weight or bias (their
    gradient for those reads stays in the loop). Returns (final carry, stacked ys)."""
    entries = sorted(invs)
    only_fc = {e for _, w, b in fcs for e in (w, b) if e is not None}
    explicit = [e for e in entries if e not in only_fc or e in shared]
    order = [p for p, _, _ in fcs]

    def fc_weights(vals):
        """(weight, its transpose, bias) of each hoisted FC: made outside the loop."""
        return [(vals[w], vals[w].T, vals[b] if b is not None else None) for _, w, b in fcs]

    def fc_closures(weights, probes):
        out = {}
        for j, ((p, _, _), (wv, wt, bv)) in enumerate(zip(fcs, weights)):
            def apply(x, wv=wv, wt=wt, bv=bv, j=j):
                y = _dot_nn(x.reshape(x.shape[0], -1), wt, wv)
                y = y if bv is None else y + bv
                return y if probes is None else y + probes[j]
            out[p] = apply
        return out

    @jax.custom_vjp
    def run(inv_vals, init, xs):
        vals = dict(zip(entries, inv_vals))
        fc = fc_closures(fc_weights(vals), None)

        def body(carry, sl):
            c, ys, _ = step(carry, sl, vals, fc)
            return c, ys
        return lax.scan(body, init, xs, length=n)

    def fwd(inv_vals, init, xs):
        vals = dict(zip(entries, inv_vals))

        def probed(zs, init, xs, other):
            local = {**vals, **dict(zip(explicit, other))}
            weights = fc_weights({**local, **{e: lax.stop_gradient(vals[e]) for e in only_fc}})

            def body(carry, sl):
                sl, z = sl
                c, ys, xin = step(carry, sl, local, fc_closures(weights, z))
                return c, (ys, tuple(lax.stop_gradient(xin[p]) for p in order))
            final, (ys, xin) = lax.scan(body, init, (xs, zs), length=n)
            return (final, ys), xin

        fc = fc_closures(fc_weights(vals), None)
        zs = tuple(jnp.zeros(s.shape, s.dtype) for s in _probe_shapes(step, fcs, vals, init, xs, n, fc))
        out, pullback, xin = jax.vjp(probed, zs, init, xs, tuple(vals[e] for e in explicit), has_aux=True)
        return out, (pullback, xin)

    def bwd(res, ct):
        pullback, xin = res
        ct_z, ct_init, ct_xs, ct_other = pullback(ct)
        grads = dict(zip(explicit, ct_other))
        for j, (p, w, b) in enumerate(fcs):
            x2 = xin[j].reshape(-1, xin[j].shape[-1])
            cz = ct_z[j].reshape(x2.shape[0], -1)
            dw = lax.dot_general(cz, x2, (((0,), (0,)), ((), ())))
            grads[w] = dw if w not in grads else grads[w] + dw
            if b is not None:
                db = jnp.sum(cz, axis=0)
                grads[b] = db if b not in grads else grads[b] + db
        return tuple(grads[e] for e in entries), ct_init, ct_xs

    run.defvjp(fwd, bwd)
    return run(tuple(invs[e] for e in entries), init, xs)


def _probe_shapes(step, fcs, vals, init, xs, n, fc):
    """Each hoisted FC's output shape stacked over the steps (from one abstract step)."""
    def one(init, xs):
        _, _, xin = step(init, jax.tree_util.tree_map(lambda a: a[0], xs), vals, fc)
        return [xin[p] for p, _, _ in fcs]
    xin = jax.eval_shape(one, init, xs)
    return [jax.ShapeDtypeStruct((n, x.shape[0], vals[w].shape[0]), jnp.result_type(x.dtype, vals[w].dtype))
            for x, (_, w, _) in zip(xin, fcs)]
