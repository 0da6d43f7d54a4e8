"""Loop lowering: an unrolled recurrence is lowered as one `lax.scan`.

Only the lowering changes, never the Symbol: arguments, outputs, internals and JSON are
those of the unrolled graph. XLA compiles an unrolled T-step graph in time growing with T;
a scan compiles its step once.

Recognition is structural. Node names `{cell}t{t}_{rest}` (split at the last `t{digits}_`,
so a prefix such as `net0_` is allowed) only propose step sets S_t per cell prefix; unnamed
nodes (`_plus3`) join the step they are computed from. A run of steps a..b rolls
when each step is isomorphic to the template: corresponding nodes (by `rest`, or by their
place among the step's nodes) have the same `op.hash_key()` and output shapes, and each input is
(i) a node of the same step, (ii) a node of the previous step (a carry: step a reads its
initial value), or (iii) an entry outside the family, either the same for every step
(weights) or one per step of one shape (x_t, stacked before the scan). Step nodes fed only
by (iii) and by each other (the i2h FullyConnected) are hoisted out of the scan and run
for all steps at once under `jax.vmap`. Random ops inside a step fold the node index of
that step into the key, as the unrolled lowering does, so both lowerings draw the same bits.
A run whose scan cannot be built (a carry changing dtype) is lowered node by node.
"""
from __future__ import annotations

import contextlib
import heapq
import os
import re

import jax
import numpy as np

from . import _bnfold, _heads, _scan_grad
from ._scan import LoopPlan

_STEP = re.compile(r"(?P<cell>.*)t(?P<t>\d+)_(?P<rest>.*)")
_state = {"on": os.environ.get("JBIND_LOOP_LOWERING", "1") != "0"}


def set_loop_lowering(on: bool) -> None:
    """Lower unrolled recurrences as `lax.scan` (the default; env `JBIND_LOOP_LOWERING=0` turns
    it off). Process-wide; read when an executable is built, and part of its cache key."""
    _state["on"] = bool(on)


def loop_lowering_enabled() -> bool:
    return _state["on"]


@contextlib.contextmanager
def loop_lowering(on: bool):
    """Context manager: `with loop_lowering(False): ...` binds and compiles unrolled."""
    old = _state["on"]
    _state["on"] = bool(on)
    try:
        yield
    finally:
        _state["on"] = old


def cache_suffix() -> str:
    """The compile-cache mode suffix: the lowerings differ (loops rolled or not, loss heads
    fused or not, the matmul precision), so do their executables."""
    precision = jax.config.jax_default_matmul_precision
    return ("" if _state["on"] else "+unrolled") + _heads.cache_suffix() + _bnfold.cache_suffix() + \
        _scan_grad.cache_suffix() + \
        (f"+matmul:{precision}" if precision not in (None, "float32", "highest") else "")


# ----------------------------------------------------------------------------- planning

def plan(g, shapes):
    """-> a `LoopPlan` for graph `g` with entry shapes `shapes`, or None if nothing rolls."""
    memo = g.__dict__.setdefault("_loop_plans", {})   # lives as long as the memoized Graph
    key = tuple(shapes)
    if key not in memo:
        memo[key] = _plan(g, list(shapes))
    return memo[key]


class _Ctx:
    """Per-graph facts the planner shares: entry -> node, consumers, heads."""

    def __init__(self, g, shapes):
        self.g, self.shapes = g, shapes
        self.node_of = [0] * g.num_entries
        for ni, n in enumerate(g.nodes):
            for k in range(n.num_outputs()):
                self.node_of[g.offsets[ni] + k] = ni
        self.users = [[] for _ in range(g.num_entries)]
        for ni, ents in enumerate(g.in_entries):
            for e in ents:
                self.users[e].append(ni)
        self.heads = set(g.heads)

    def src(self, e):
        ni = self.node_of[e]
        return ni, e - self.g.offsets[ni]


def _plan(g, shapes):
    if any(s is None for s in shapes):
        return None
    cx = _Ctx(g, shapes)
    runs = [r for fam in _families(cx).values() for r in _runs(cx, fam)]
    while runs:
        order, stuck = _schedule(cx, runs)
        if order is not None:
            return LoopPlan(cx, runs, order)
        runs = [r for r in runs if r not in stuck]
    return None


def _families(cx):
    """cell -> {t: [node index, ...]}: named step nodes, plus unnamed nodes fed by one step of
    one cell, or fed by a step and read only by that step (`f * c` of an encoder's state)."""
    g, fam, out = cx.g, {}, {}
    for ni, node in enumerate(g.nodes):
        if node.op is None:
            continue
        m = _STEP.fullmatch(node.name)
        if m:
            fam[ni] = (m["cell"], int(m["t"]))
            continue
        src = {fam[cx.node_of[e]] for e in g.in_entries[ni] if cx.node_of[e] in fam}
        if src and len({c for c, _ in src}) == 1:
            t = max(t for _, t in src)
            if all(s >= t - 1 for _, s in src):
                fam[ni] = (next(iter(src))[0], t)
    for ni in reversed(range(len(g.nodes))):
        if ni in fam or g.nodes[ni].op is None:
            continue
        users = {fam.get(u) for k in range(g.nodes[ni].num_outputs()) for u in cx.users[g.offsets[ni] + k]}
        if len(users) == 1 and None not in users and \
                any(fam.get(cx.node_of[e]) in users for e in g.in_entries[ni]):
            fam[ni] = users.pop()
    for ni in sorted(fam):
        c, t = fam[ni]
        out.setdefault(c, {}).setdefault(t, []).append(ni)
    return out


def _labels(cx, members, intern):
    """Label each step node: its `rest`, or its op and same-step inputs; repeats numbered."""
    g, lab, seen = cx.g, {}, {}
    for ni in members:
        node = g.nodes[ni]
        m = _STEP.fullmatch(node.name)
        if m:
            base = ("n", m["rest"])
        else:
            base = (node.op.hash_key(), tuple((lab[s], i) if s in lab else None
                                         for s, i in map(cx.src, g.in_entries[ni])))
        k = seen[base] = seen.get(base, -1) + 1
        lab[ni] = intern.setdefault((base, k), len(intern))
    return {v: k for k, v in lab.items()}


def _sig(cx, cur, prev, core):
    """A step's structure over the core labels, and its input entries (flattened)."""
    if cur is None or any(lb not in cur for lb in core):
        return None
    g, shapes = cx.g, cx.shapes
    here = {cur[lb]: p for p, lb in enumerate(core)}
    before = {prev[lb]: p for p, lb in enumerate(core) if prev is not None and lb in prev}
    items, ents = [], []
    for lb in core:
        ni = cur[lb]
        op = g.nodes[ni].op
        if op.aux_names:
            return None
        descs = []
        for e in g.in_entries[ni]:
            s, i = cx.src(e)
            descs.append(("in", here[s], i) if s in here else ("prev", before[s], i) if s in before
                         else ("ext", shapes[e]))
            ents.append(e)
        outs = tuple(shapes[g.offsets[ni] + k] for k in range(g.nodes[ni].num_outputs()))
        items.append((op.hash_key(), outs, tuple(descs)))
    return tuple(items), ents


def _runs(cx, steps):
    """Maximal runs of isomorphic consecutive steps of one family."""
    intern = {}
    labs = {t: _labels(cx, steps[t], intern) for t in steps}
    ts = sorted(steps)
    inner = ts[1:-1] if len(ts) > 2 else ts
    tmpl = labs[inner[len(inner) // 2]]
    core = [lb for lb in sorted(tmpl, key=tmpl.get) if all(lb in labs[t] for t in inner)]
    if not core:
        return []
    sigs = {t: _sig(cx, labs[t], labs.get(t - 1), core) for t in ts}
    out, i, taken = [], 0, set()
    while i < len(ts):
        t, s = ts[i], sigs[ts[i]]
        j = i
        while s is not None and j + 1 < len(ts) and ts[j + 1] == ts[j] + 1 and \
                sigs[ts[j + 1]] is not None and sigs[ts[j + 1]][0] == s[0]:
            j += 1
        if s is not None:
            a = t - 1 if t - 1 not in taken and _compatible(cx, sigs.get(t - 1), s[0]) else t
            if ts[j] > a:
                run = Run(cx, core, [[labs[u][lb] for lb in core] for u in range(a, ts[j] + 1)],
                          s[0], [sigs[u][1] for u in range(a, ts[j] + 1)])
                if run.ok:
                    out.append(run)
                    taken.update(range(a, ts[j] + 1))
        i = j + 1
    return out


def _compatible(cx, sig, tmpl):
    """Whether step a (sig) can start a run of `tmpl` steps, reading its carries' initial values."""
    if sig is None:
        return False
    init, q = {}, 0
    for (ka, sa, da), (kt, st, dt) in zip(sig[0], tmpl):
        if ka != kt or sa != st:
            return False
        for x, y in zip(da, dt):
            e = sig[1][q]
            q += 1
            if y[0] == "prev":
                if cx.shapes[e] != tmpl[y[1]][1][y[2]] or init.setdefault(y[1:], e) != e:
                    return False
            elif x != y:
                return False
    return True


class Run:
    """Steps a..b of one family, lowered as one scan."""

    def __init__(self, cx, core, nodes, tmpl, ents):
        self.nodes = nodes                      # nodes[s][p]: node of core position p at step a+s
        self.n = n = len(nodes)
        self.members = frozenset(ni for step in nodes for ni in step)
        g = cx.g
        self.carries, self.init, self.xs, self.descs = {}, [], {}, []
        q = 0
        for p, (_, _, descs) in enumerate(tmpl):
            row = []
            for d in descs:
                col = tuple(ents[s][q] for s in range(n))
                q += 1
                if d[0] == "in":
                    row.append(d)
                elif d[0] == "prev":
                    if d[1:] not in self.carries:
                        self.carries[d[1:]] = len(self.carries)
                        self.init.append(col[0])
                    row.append(("c", self.carries[d[1:]]))
                elif len(set(col)) == 1:
                    row.append(("inv", col[0]))
                else:
                    row.append(("x", self.xs.setdefault(col, len(self.xs))))
            self.descs.append(row)
        self.xs = list(self.xs)                  # per-step input columns, in xs order
        outer = [e for row in self.descs for d in row if d[0] == "inv" for e in (d[1],)]
        outer += self.init + [e for col in self.xs for e in col]
        self.ok = not any(cx.node_of[e] in self.members for e in outer)
        ops = [g.nodes[ni].op for ni in nodes[0]]
        nout = [len(op.outputs()) for op in ops]
        self.hoisted = set()
        for p, row in enumerate(self.descs):
            if not ops[p].random and not any((p, i) in self.carries for i in range(nout[p])) and \
                    all(d[0] in ("inv", "x") or (d[0] == "in" and d[1] in self.hoisted) for d in row):
                self.hoisted.add(p)
        self.random = [p for p in range(len(core)) if ops[p].random]
        self.keys = np.array([[step[p] for p in self.random] for step in nodes], np.uint32)
        # Outputs read outside the run: from the final carry when only the last step's is.
        self.final, self.ys = {}, []
        for p in range(len(core)):
            for i in range(nout[p]):
                used = [s for s in range(n) if _outside(cx, g.offsets[nodes[s][p]] + i, self.members)]
                if used == [n - 1] and (p, i) in self.carries:
                    self.final[g.offsets[nodes[-1][p]] + i] = self.carries[(p, i)]
                elif used:
                    self.ys.append((p, i))
        self.ys_entries = [[g.offsets[nodes[s][p]] + i for s in range(n)] for p, i in self.ys]
        self.body_ys = [pi for pi in self.ys if pi[0] not in self.hoisted]
        self.body = [p for p in range(len(core)) if p not in self.hoisted]
        self.hin, self.bdescs = {}, {}
        for p in self.body:
            self.bdescs[p] = [("h", self.hin.setdefault(d[1:], len(self.hin))) if d[0] == "in" and
                              d[1] in self.hoisted else ("l",) + d[1:] if d[0] == "in" else d
                              for d in self.descs[p]]
        self.hin = list(self.hin)
        self.carry_list = sorted(self.carries, key=self.carries.get)
        self.rpos = {p: k for k, p in enumerate(self.random)}

    def reads(self):
        """Entries this run reads from outside itself."""
        return {d[1] for row in self.descs for d in row if d[0] == "inv"} | set(self.init)


def _outside(cx, e, members):
    return e in cx.heads or any(u not in members for u in cx.users[e])


def _schedule(cx, runs):
    """Units (op nodes outside runs, and runs) in dependency order; or (None, runs in a cycle)."""
    g = cx.g
    unit = {}
    for r, run in enumerate(runs):
        for ni in run.members:
            unit[ni] = ~r
    succ, indeg, first = {}, {}, {}
    for ni, node in enumerate(g.nodes):
        if node.op is None:
            continue
        u = unit.get(ni, ni)
        first.setdefault(u, ni)
        indeg.setdefault(u, 0)
        for e in g.in_entries[ni]:
            s = cx.node_of[e]
            v = unit.get(s, s)
            if g.nodes[s].op is not None and v != u and u not in succ.setdefault(v, set()):
                succ[v].add(u)
                indeg[u] = indeg.get(u, 0) + 1
    heap = [(first[u], u) for u, d in indeg.items() if d == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, u = heapq.heappop(heap)
        order.append(runs[~u] if u < 0 else u)
        for v in succ.get(u, ()):
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(heap, (first[v], v))
    if len(order) < len(indeg):
        done = {id(u) for u in order if isinstance(u, Run)}
        return None, [r for r in runs if id(r) not in done]
    return order, []
