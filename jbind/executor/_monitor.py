"""Executor monitoring (MXNet's `set_monitor_callback`): the values of every node.

The executor's own program is one compiled function with no intermediate results, so
monitoring runs a second program over the same inputs, key and counter (the same
values, random draws included): the graph lowered node by node (`make_forward(probed=True)`)
returning every entry. For backward, a zero "probe" is added to each input edge of every
op node and the program is differentiated with respect to the probes: the gradient of a
probe is what that node's backward hands to that input, MXNet's `NAME_backward_output{k}`.
Aux updates and gradients of these runs are dropped: monitoring changes no state.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..ndarray.ndarray import NDArray
from ..symbol._node import topo_order
from ..symbol.infer import DTYPE, SHAPE, entry_values
from ..symbol.lower import make_forward, matmul_precision


def _backward_nodes(g, diff):
    """Op nodes with a backward in MXNet's graph: those that depend on a differentiated argument."""
    dep = [False] * g.num_entries
    for k, vi in enumerate(g.arg_index):
        dep[g.offsets[vi]] = bool(diff[k])
    out = []
    for ni, node in enumerate(g.nodes):
        if node.op is None:
            continue
        hit = any(dep[e] for e in g.in_entries[ni][:node.num_args()])
        for k in range(node.num_outputs()):
            dep[g.offsets[ni] + k] = hit
        if hit:
            out.append(ni)
    return out[::-1]


class Monitor:
    """The monitoring programs of one executor (built on first use)."""

    def __init__(self, exe):
        g = exe._g
        self.g = g
        # The names come from this executor's own symbol: `g` is memoized by structure and
        # may carry the names of another symbol built the same way (a second Gluon block).
        self.nodes = topo_order(exe._symbol._heads)
        arg_shapes = dict(exe._key_parts[1][:len(g.arg_names)])
        self.shapes = entry_values(exe._symbol, SHAPE, arg_shapes)
        self.dtypes = entry_values(exe._symbol, DTYPE, dict(exe._key_parts[2][:len(g.arg_names)]))
        self.forward = make_forward(g, self.shapes, probed=True)
        self.back_nodes = _backward_nodes(g, exe._diff)
        self.edges = [(ni, k) for ni in self.back_nodes for k in range(g.nodes[ni].num_args())]
        self.no_head = exe._loss_heads
        self._fwd = jax.jit(self._run_forward, static_argnums=(4,))
        self._bwd = jax.jit(self._run_backward)

    # --- the programs --------------------------------------------------------------------
    def _run_forward(self, args, aux, key, counter, is_train):
        k = jax.random.fold_in(jax.random.wrap_key_data(key), counter)
        return self.forward(args, aux, k, is_train)[2]

    def _run_backward(self, args, aux, key, counter, heads):
        k = jax.random.fold_in(jax.random.wrap_key_data(key), counter)
        g = self.g
        probes = {}
        for ni, i in self.edges:
            e = g.in_entries[ni][i]
            if np.issubdtype(self.dtypes[e], np.inexact):
                probes[(ni, i)] = jnp.zeros(self.shapes[e], self.dtypes[e])

        def f(p):
            outs, _, _ = self.forward(args, aux, k, True, p)
            return outs

        with jax.default_matmul_precision(matmul_precision()):
            outs, vjp = jax.vjp(f, probes)
            it = iter(heads)
            cot = []
            for o, skip in zip(outs, self.no_head):
                if not jnp.issubdtype(o.dtype, jnp.inexact):
                    cot.append(np.zeros(o.shape, dtype=jax.dtypes.float0))
                else:
                    cot.append(jnp.ones_like(o) if skip else next(it).astype(o.dtype))
            (grads,) = vjp(tuple(cot))
        return grads

    # --- what the callback sees ------------------------------------------------------------
    def forward_entries(self, last, monitor_all):
        args, aux, key, counter, is_train = last
        vals = self._fwd(args, aux, key, counter, bool(is_train))
        g, out = self.g, []
        var_of = {g.offsets[vi]: n.name for vi, n in enumerate(self.nodes) if n.op is None}
        for ni, node in enumerate(self.nodes):
            if node.op is None:
                continue
            if monitor_all:  # as MXNet's: a variable input under its own name, then as the op's input
                for name, e in zip(node.op.monitor_input_names(), g.in_entries[ni]):
                    if e in var_of:
                        out.append((var_of[e], vals[e]))
                    out.append((f"{node.name}_{name}", vals[e]))
            for k in range(node.num_outputs()):
                out.append((node.output_name(k), vals[g.offsets[ni] + k]))
        return out

    def backward_entries(self, last, heads):
        args, aux, key, counter, _ = last
        grads = self._bwd(args, aux, key, counter, tuple(heads))
        g, out = self.g, []
        for ni in self.back_nodes:
            node = self.nodes[ni]
            n = node.num_args()
            for i in range(n):
                name = f"{node.name}_backward_output" + ("" if n == 1 else str(i))
                val = grads.get((ni, i))
                if val is None:  # an integer input: no gradient
                    e = g.in_entries[ni][i]
                    val = jnp.zeros(self.shapes[e], self.dtypes[e])
                out.append((name, val))
        return out


def report(callback, entries):
    for name, value in entries:
        callback(name, NDArray(value))
