"""Emission of loop plans (see rolled.py): runs become `lax.scan`, the rest node by node."""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ..base import MXNetError
from . import _scan_grad


def _op_is(op, name):
    # The two shortcuts below know SliceChannel and Concat: stacking the T slices of a
    # SliceChannel is a transpose of its input, and a Concat of T stacked steps a reshape.
    return type(op).__name__ == name


def _take(a, s0, step, n):
    if step == 1:
        return a if s0 == 0 and n == a.shape[0] else a[s0:s0 + n]
    return lax.rev(a[s0 - n + 1:s0 + 1], (0,))


def _lower(op, node, ins, is_train, key):
    try:
        return op.lower(ins, [], is_train, key)[0]
    except MXNetError:
        raise
    except Exception as e:  # as lower.py: name the node
        raise MXNetError(f"{op.name} '{node.name}': lowering failed: {type(e).__name__}: {e}") from e


class LoopPlan:
    """The lowering schedule: op nodes outside runs, and runs, in dependency order."""

    def __init__(self, cx, runs, order):
        g = self.g = cx.g
        self.order, self.shapes = order, cx.shapes
        self.arr_of = {}
        for r, run in enumerate(runs):
            run.rid = r
            for k, col in enumerate(run.ys_entries):
                for s, e in enumerate(col):
                    self.arr_of[e] = ((r, k), s)
        members = set().union(*(r.members for r in runs))
        for run in runs:
            run.xsrc = [self._source(cx, col, members) for col in run.xs]
        nodes = [u for u in order if isinstance(u, int)]
        self.concat = {}
        for u in nodes:
            if _op_is(g.nodes[u].op, "Concat") and len(g.in_entries[u]) > 1:
                src = self._source(cx, g.in_entries[u], members)
                if src[0] == "arr":
                    self.concat[u] = src
        reads = set(g.heads)
        for u in nodes:
            if u not in self.concat:
                reads.update(g.in_entries[u])
        split_users = set()
        for run in runs:
            reads.update(run.reads())
            for src in run.xsrc:
                if src[0] == "stack":
                    reads.update(src[-1])
                elif src[0] == "split":
                    split_users.add(src[1])
        self.skip = {u for u in split_users
                     if not any(g.offsets[u] + k in reads for k in range(g.nodes[u].num_outputs()))}
        self.needed = {}
        for e in reads:
            if e in self.arr_of:
                aid, s = self.arr_of[e]
                self.needed.setdefault(aid, []).append(s)

    def _source(self, cx, col, members):
        """How to stack one entry per step: a slice of a run's outputs, of a SliceChannel's
        input, or `jnp.stack`."""
        n = len(col)
        got = [self.arr_of.get(e) for e in col]
        if all(got) and len({a for a, _ in got}) == 1:
            s0, step = got[0][1], got[1][1] - got[0][1]
            if step in (1, -1) and all(s == s0 + k * step for k, (_, s) in enumerate(got)):
                return ("arr", got[0][0], s0, step, n, col)
        src = [cx.src(e) for e in col]
        ni, i0 = src[0]
        step = src[1][1] - i0
        if all(s == ni for s, _ in src) and ni not in members and step in (1, -1) and \
                _op_is(self.g.nodes[ni].op, "SliceChannel") and \
                all(i == i0 + k * step for k, (_, i) in enumerate(src)):
            return ("split", ni, i0, step, n, col)
        return ("stack", col)

    def run(self, vals, key, is_train, lower_node, ops):
        """Lower the graph into `vals`; `lower_node(ni)` lowers one node as lower.py does."""
        arrays = {}
        for u in self.order:
            if not isinstance(u, int):
                self._emit(u, vals, arrays, key, is_train, lower_node, ops)
            elif u in self.skip:
                continue
            elif u in self.concat and self.concat[u][1] in arrays:
                _, aid, s0, step, n, _ = self.concat[u]
                a = _take(arrays[aid], s0, step, n)
                d = ops[u].dim % (a.ndim - 1)
                off = self.g.offsets[u]
                vals[off] = jnp.moveaxis(a, 0, d).reshape(self.shapes[off])
            else:
                lower_node(u)

    def _value(self, src, vals, arrays, ops):
        if src[0] == "split":
            _, ni, i0, step, n, _ = src
            m = arrays.get(("split", ni))
            if m is None:
                op, data = ops[ni], vals[self.g.in_entries[ni][0]]
                ax = op.axis % data.ndim
                if not op.squeeze_axis:
                    k = op.num_outputs
                    data = data.reshape(data.shape[:ax] + (k, data.shape[ax] // k) + data.shape[ax + 1:])
                m = arrays[("split", ni)] = jnp.moveaxis(data, ax, 0)
            return _take(m, i0, step, n)
        if src[0] == "arr" and src[1] in arrays:
            return _take(arrays[src[1]], *src[2:5])
        xs = [vals[e] for e in src[-1]]
        return jnp.stack(xs) if len({x.dtype for x in xs}) == 1 else None

    def _unrolled(self, run, vals, arrays, lower_node):
        for src in run.xsrc:            # the steps read their inputs one by one
            if src[0] == "split":
                lower_node(src[1])
            elif src[0] == "arr" and src[1] in arrays:
                for e, part in zip(src[-1], lax.unstack(_take(arrays[src[1]], *src[2:5]))):
                    vals[e] = part
        for ni in sorted(run.members):
            lower_node(ni)

    def _emit(self, run, vals, arrays, key, is_train, lower_node, ops):
        xs = [self._value(src, vals, arrays, ops) for src in run.xsrc]
        if any(x is None for x in xs):
            return self._unrolled(run, vals, arrays, lower_node)
        g, n, tm = self.g, run.n, run.nodes[0]
        hv = {}
        for p in sorted(run.hoisted):
            args, axes = [], []
            for d in run.descs[p]:
                args.append(vals[d[1]] if d[0] == "inv" else xs[d[1]] if d[0] == "x" else hv[d[1:]])
                axes.append(None if d[0] == "inv" else 0)
            op, node = ops[tm[p]], g.nodes[tm[p]]
            f = lambda *a, op=op, node=node: list(_lower(op, node, list(a), is_train, None))  # noqa: E731
            hv.update(((p, i), o) for i, o in enumerate(jax.vmap(f, in_axes=tuple(axes), axis_size=n)(*args)))

        fcs = _scan_grad.hoistable(run, ops, self.shapes, g, tm) if _scan_grad._state["on"] else []
        fc_pos = {p for p, _, _ in fcs}

        def step(carry, sl, inv, fc):
            xv, hx, kv = sl
            loc, fc_in = {}, {}
            for p in run.body:
                ins = [loc[d[1]][d[2]] if d[0] == "l" else carry[d[1]] if d[0] == "c" else
                       inv[d[1]] if d[0] == "inv" else xv[d[1]] if d[0] == "x" else hx[d[1]]
                       for d in run.bdescs[p]]
                if p in fc:
                    fc_in[p] = ins[0].reshape(ins[0].shape[0], -1)
                    loc[p] = [fc[p](ins[0])]
                    continue
                k = jax.random.fold_in(key, kv[run.rpos[p]]) if p in run.rpos else None
                loc[p] = _lower(ops[tm[p]], g.nodes[tm[p]], ins, is_train, k)
            return (tuple(loc[p][i] for p, i in run.carry_list),
                    tuple(loc[p][i] for p, i in run.body_ys), fc_in)

        inv = {d[1]: vals[d[1]] for p in run.body for d in run.bdescs[p] if d[0] == "inv"}
        kv = jnp.asarray(run.keys) if run.random else None
        init, sl = tuple(vals[e] for e in run.init), (tuple(xs), tuple(hv[h] for h in run.hin), kv)
        try:
            if fcs:  # weight gradients of the step's FullyConnected layers after the loop
                shared = {d[1] for p in run.body for k, d in enumerate(run.bdescs[p])
                          if d[0] == "inv" and (p not in fc_pos or k == 0)}
                final, ys = _scan_grad.scan(step, fcs, inv, shared, init, sl, n)
            else:
                final, ys = lax.scan(lambda c, x: step(c, x, inv, {})[:2], init, sl, length=n)
        except TypeError:  # a carry whose dtype the step changes: lower it as written
            return self._unrolled(run, vals, arrays, lower_node)
        for e, c in run.final.items():
            vals[e] = final[c]
        it = iter(ys)
        for k, (p, i) in enumerate(run.ys):
            a = arrays[(run.rid, k)] = hv[(p, i)] if p in run.hoisted else next(it)
            need = self.needed.get((run.rid, k), ())
            parts = lax.unstack(a) if len(need) > 2 else None
            for s in need:
                vals[run.ys_entries[k][s]] = parts[s] if parts else a[s]
