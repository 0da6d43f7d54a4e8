"""Hypothesis strategies for random symbol graphs, each with its numpy evaluation.

A `Recipe` is a small DAG: leaves (Variables and the range their values are drawn
from), steps (one registered op, its parameters, its input values and a numpy
reference, from the builders in fuzz_ops_*.py) and heads (every step output nothing else
consumes). `recipes()` draws one; `build` makes the Symbol, `evaluate` the reference
outputs in float64.

Every value carries a conservative interval [lo, hi] and an `exact` flag (computed
without rounding from the leaves: copies, selections, comparisons, floor ...). An op
whose result jumps (floor, sign, comparisons, mod, argmax, indices) takes only exact
values, and an op with a restricted domain (log, arcsin, a divisor) only values whose
interval lies inside it, so jbind's float32 and numpy's float64 agree to a tolerance
scaled by the interval. A step drawn `bad` is invalid on purpose (an axis out of range,
a weight of the wrong shape, a kernel of 0, shapes that do not broadcast); the graph
ends there and jbind must refuse it with an MXNetError.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Optional

import numpy as np
from hypothesis import strategies as st

import jbind as mx

CAP = 1e4          # values bounded beyond this feed no further op
ANY = (-CAP, CAP)
TABLE: dict = {}   # registered op name -> builder (fuzz_ops_*.py)


def op(*names):
    """Register a builder for the named ops."""
    def reg(f):
        for n in names:
            TABLE[n] = f
        return f
    return reg


def table() -> dict:
    import fuzz_ops_layout  # noqa: F401  (registration)
    import fuzz_ops_math  # noqa: F401
    import fuzz_ops_more  # noqa: F401
    import fuzz_ops_nn  # noqa: F401
    import fuzz_ops_shape  # noqa: F401
    return TABLE


def conflict(g, shape):
    """`shape` with one dim changed so that it neither matches nor broadcasts against `shape`."""
    k = g.int(0, len(shape) - 1)
    return shape[:k] + (shape[k] + 1 if shape[k] > 1 else 2,) + shape[k + 1:]


@dataclasses.dataclass
class Leaf:
    name: str
    shape: tuple
    lo: float
    hi: float
    ints: bool = False      # integers in [lo, hi]
    given: bool = True      # shape passed to simple_bind; False: inferred (weights)

    def draw(self, rng) -> np.ndarray:
        shape = tuple(max(d, 0) for d in self.shape)  # a bad step's weight may have none
        if self.ints:
            return rng.integers(int(self.lo), int(self.hi) + 1, size=shape).astype(np.float32)
        return rng.uniform(self.lo, self.hi, size=shape).astype(np.float32)


@dataclasses.dataclass
class Val:
    shape: tuple
    lo: float
    hi: float
    exact: bool
    src: tuple              # ("leaf", index) or ("step", index, output)


@dataclasses.dataclass
class Step:
    op: str
    params: dict
    inputs: tuple           # value ids
    ref: Callable           # float64 arrays -> array, or a list of arrays for several outputs
    n_out: int = 1


@dataclasses.dataclass
class Recipe:
    leaves: list
    steps: list
    vals: list
    heads: list
    bad: Optional[str] = None   # why the last step is invalid
    live: frozenset = frozenset()  # steps the heads depend on
    last_leaves: int = 0           # leaves before this index existed before the last step was drawn
    random: bool = False           # an op draws random numbers when training (Dropout)

    def shapes(self) -> dict:
        return {lf.name: lf.shape for lf in self.leaves if lf.given and lf.name}

    def describe(self) -> str:
        lines = [f"  {lf.name}: {lf.shape} in [{lf.lo}, {lf.hi}]{' ints' if lf.ints else ''}"
                 f"{'' if lf.given else ' (inferred)'}" for lf in self.leaves if lf.name]
        for k, s in enumerate(self.steps):
            if k not in self.live:
                continue
            lines.append(f"  s{k} = {s.op}({', '.join(self._name(i) for i in s.inputs)}, {s.params})")
        lines.append(f"  heads: {[self._name(i) for i in self.heads]}" + (f"; bad: {self.bad}" if self.bad else ""))
        return "\n".join(lines)

    def _name(self, i) -> str:
        src = self.vals[i].src
        return self.leaves[src[1]].name if src[0] == "leaf" else f"s{src[1]}" + (
            f"[{src[2]}]" if self.steps[src[1]].n_out > 1 else "")


def span(f, *intervals, n=33):
    """Bounds of f over a grid of the intervals, padded: smooth functions on small boxes."""
    grids = np.meshgrid(*[np.linspace(lo, hi, n) for lo, hi in intervals], indexing="ij")
    with np.errstate(all="ignore"):
        y = np.asarray(f(*grids), dtype=np.float64)
    lo, hi = float(np.nanmin(y)), float(np.nanmax(y))
    pad = 0.01 * (hi - lo) + 1e-3
    return lo - pad, hi + pad


class Gen:
    """What a builder sees: draws, the values so far, and ways to add leaves and steps."""

    def __init__(self, draw):
        self.draw = draw
        self.r = Recipe([], [], [], [])

    # --- draws ---------------------------------------------------------------------------
    def int(self, lo, hi) -> int:
        return self.draw(st.integers(lo, hi))

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def choice(self, xs):
        return self.draw(st.sampled_from(list(xs)))

    def subset(self, xs) -> tuple:
        """A non-empty subset of `xs` (empty only if `xs` is), sorted."""
        xs = list(xs)
        picked = [x for x in xs if self.flag()]
        return tuple(sorted(picked or ([self.choice(xs)] if xs else [])))

    def perm(self, n) -> tuple:
        xs = list(range(n))
        for i in range(n - 1, 0, -1):  # Fisher-Yates: plain integer draws shrink well
            j = self.int(0, i)
            xs[i], xs[j] = xs[j], xs[i]
        return tuple(xs)

    def shape(self, ndim=(1, 4), dims=(1, 4)) -> tuple:
        return tuple(self.int(*dims) for _ in range(self.int(*ndim)))

    def axis(self, ndim, neg=True) -> int:
        a = self.int(0, ndim - 1)
        return a - ndim if neg and self.flag() else a

    # --- values ----------------------------------------------------------------------------
    def v(self, i) -> Val:
        return self.r.vals[i]

    def leaf(self, shape, lo=-2.0, hi=2.0, ints=False, given=True) -> int:
        name = f"x{len(self.r.leaves)}"
        self.r.leaves.append(Leaf(name, tuple(shape), float(lo), float(hi), ints, given))
        self.r.vals.append(Val(tuple(shape), float(lo), float(hi), True, ("leaf", len(self.r.leaves) - 1)))
        return len(self.r.vals) - 1

    def arg(self, dom=ANY, exact=False, ndim=(1, 4), shape=None, pred=None, ints=False, fresh=False,
            make_shape=None) -> int:
        """An existing value that fits (3 times in 4 when there is one), else a new leaf."""
        def fits(v):
            return (dom[0] <= v.lo and v.hi <= dom[1] and (v.exact or not exact)
                    and ndim[0] <= len(v.shape) <= ndim[1] and (shape is None or v.shape == tuple(shape))
                    and (pred is None or pred(v)))
        if not fresh:
            cands = [i for i, v in enumerate(self.r.vals) if fits(v)]
            if cands and self.int(0, 3):
                return self.choice(cands)
        if shape is None:
            shape = make_shape() if make_shape else self.shape(ndim)
        if ints:
            return self.leaf(shape, max(dom[0], -2), min(dom[1], 5), ints=True)
        lo, hi = max(dom[0], -2.0), min(dom[1], 2.0)
        return self.leaf(shape, lo, hi if hi > lo else lo + 1.0)

    def emit(self, op, params, inputs, ref, outs, exact=False, bad=None):
        """Add a step; `outs` = [(shape, lo, hi)]. None (nothing added) if a bound overflows."""
        if bad is None and not all(math.isfinite(lo) and math.isfinite(hi) and max(-lo, hi) < 1e30
                                   for _, lo, hi in outs):
            return None
        k = len(self.r.steps)
        self.r.steps.append(Step(op, dict(params), tuple(inputs), ref, len(outs)))
        ids = []
        for j, (shape, lo, hi) in enumerate(outs):
            self.r.vals.append(Val(tuple(shape or ()), float(lo), float(hi), bool(exact), ("step", k, j)))
            ids.append(len(self.r.vals) - 1)
        if bad:
            self.r.bad = bad
        return ids


class RngGen(Gen):
    """The same draws from a numpy Generator, for deterministic tests outside hypothesis."""

    def __init__(self, rng):
        super().__init__(None)
        self.rng = rng

    def int(self, lo, hi):
        return int(self.rng.integers(lo, hi + 1))

    def flag(self):
        return bool(self.rng.integers(2))

    def choice(self, xs):
        xs = list(xs)
        return xs[self.int(0, len(xs) - 1)]



def one_step(name, bad, seed) -> Recipe:
    """A graph of one `name` step (valid or not) with inputs and draws from `seed`."""
    g = RngGen(np.random.default_rng(seed))
    table()[name](g, name, bad)
    _mark_bad(g, bad)
    return _finish(g.r)


def _mark_bad(g, bad):
    if bad and g.r.steps and not g.r.bad:  # no invalid mode of its own: an unknown parameter
        g.r.steps[-1].params["bogus_param"] = 1
        g.r.bad = "unknown parameter bogus_param"


@st.composite
def recipes(draw, max_steps=5, bad_one_in=5):
    """A random graph of 1..max_steps ops from the table; one in `bad_one_in` graphs ends with
    an invalid step."""
    ops = table()
    g = Gen(draw)
    n = draw(st.integers(1, max_steps))
    for k in range(n):
        name = draw(st.sampled_from(sorted(ops)))
        bad = k == n - 1 and draw(st.integers(1, bad_one_in)) == bad_one_in
        before = len(g.r.steps)
        g.r.last_leaves = len(g.r.leaves)
        ops[name](g, name, bad)
        if len(g.r.steps) > before:
            _mark_bad(g, bad)
    if not g.r.steps:  # every draw overflowed: one copy of a leaf
        x = g.arg()
        g.emit("_copy", {}, [x], lambda a: a, [(g.v(x).shape, g.v(x).lo, g.v(x).hi)], exact=True)
    return _finish(g.r)


def _finish(r: Recipe) -> Recipe:
    used = {i for s in r.steps for i in s.inputs}
    if r.bad:
        last = len(r.steps) - 1
        r.heads = [i for i, v in enumerate(r.vals) if v.src[0] == "step" and v.src[1] == last]
    else:
        r.heads = [i for i, v in enumerate(r.vals) if v.src[0] == "step" and i not in used]
    reach, todo = set(), list(r.heads)
    while todo:
        i = todo.pop()
        if i in reach:
            continue
        reach.add(i)
        src = r.vals[i].src
        if src[0] == "step":
            todo.extend(r.steps[src[1]].inputs)
    keep = {r.vals[i].src[1] for i in reach if r.vals[i].src[0] == "leaf"}
    r.leaves = [lf if k in keep else dataclasses.replace(lf, name="") for k, lf in enumerate(r.leaves)]
    r.live = frozenset(r.vals[i].src[1] for i in reach if r.vals[i].src[0] == "step")
    if r.bad:  # the op that gave an earlier inferred leaf its shape may be cut off: give that shape
        r.leaves = [lf if lf.given or k >= r.last_leaves else dataclasses.replace(lf, given=True)
                    for k, lf in enumerate(r.leaves)]
    return r


def build(r: Recipe):
    """The Symbol of a recipe (raises what jbind raises for a bad step)."""
    leaf_syms = [mx.sym.Variable(lf.name) if lf.name else None for lf in r.leaves]
    step_syms = []

    def sym_of(i):
        src = r.vals[i].src
        if src[0] == "leaf":
            return leaf_syms[src[1]]
        s = step_syms[src[1]]
        return s if r.steps[src[1]].n_out == 1 else s[src[2]]

    for k, s in enumerate(r.steps):
        step_syms.append(getattr(mx.sym, s.op)(*[sym_of(i) for i in s.inputs], name=f"s{k}", **s.params)
                         if k in r.live else None)
    heads = [sym_of(i) for i in r.heads]
    return heads[0] if len(heads) == 1 else mx.sym.Group(heads)


def evaluate(r: Recipe, inputs: dict) -> list:
    """The heads computed by the numpy references, in float64."""
    leaf_vals = {lf.name: inputs[lf.name].astype(np.float64) for lf in r.leaves if lf.name}
    outs = []

    def val(i):
        src = r.vals[i].src
        return leaf_vals[r.leaves[src[1]].name] if src[0] == "leaf" else outs[src[1]][src[2]]

    for k, s in enumerate(r.steps):
        if k not in r.live:
            outs.append(None)
            continue
        with np.errstate(all="ignore"):
            y = s.ref(*[val(i) for i in s.inputs])
        ys = [np.asarray(a, dtype=np.float64) for a in (y if isinstance(y, list) else [y])]
        ids = [i for i, v in enumerate(r.vals) if v.src[0] == "step" and v.src[1] == k]
        for a, i in zip(ys, ids):
            assert a.shape == r.vals[i].shape, f"generator bug: s{k} {s.op} gives {a.shape}, expected " \
                                               f"{r.vals[i].shape}\n{r.describe()}"
        outs.append(ys)
    return [val(i) for i in r.heads]


def tolerance(v: Val) -> float:
    """Absolute tolerance for a head: float32 rounding, scaled by the head's bound."""
    return 2e-5 * max(1.0, abs(v.lo), abs(v.hi))
