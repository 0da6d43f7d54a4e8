"""One compiled call per imperative op call.

`mx.nd.BatchNorm(x, ...)` lowers its op inside `jax.jit` once per (op and parameters,
train mode, input shapes, dtypes and devices, matmul precision) and then calls that
executable: one XLA call per op call instead of one dispatch (and, on first use, one
compile) per JAX primitive inside the op. Each key's program compiles once, with
`compile._options`' choice (a small program takes XLA's short pipeline); the entries live
in a bounded LRU (`LIMIT` entries); evicting one frees its executable. NDArray arithmetic
and comparisons (`elementwise`) compile the same way.

What the eager lowering did and this keeps:
- a sampling op's key is an argument (the seed's base key and the call's counter, folded
  inside), never a constant of the executable, so every call draws anew;
- aux states the op writes (BatchNorm's moving stats) come back as outputs, only those
  the lowering changed (found while tracing);
- an op with no inputs runs under `jax.default_device` of its ctx;
- errors the lowering raises while tracing reach the caller unchanged.

While `autograd.record()` is on, `call_vjp` runs a second kind of entry (keyed also by
which inputs are in autograd's graph) that takes the lowering's `jax.vjp` inside the
same compiled call and returns the pullback's residuals too, for backward to apply
without running the op again (`autograd/_saved.py`, `autograd/_pullback.py`).

Ops whose lowering reads input values on the host or keeps Python state per call
(`Op.imperative_jit = False`: gather_nd's bounds check, Custom's per-call operator) run
op by op as before; so does an op whose lowering turns out to need concrete values
(a concretization error while tracing marks its key eager).
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import jax
import numpy as np

from .. import random as _random
from ..autograd._saved import Pullback
from ..compile._options import compile_lowered, jit as small_jit, sharding_key

LIMIT = 512
_EAGER = "eager"  # cache value: run this key op by op
_CONCRETE = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
             jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError)

_cache: "OrderedDict[tuple, object]" = OrderedDict()
_lock = threading.Lock()
_stats = {"traces": 0, "hits": 0, "misses": 0}


class _Entry(Pullback):
    """One op and mode at one key's shapes: its jitted closure, compiled on the first call
    (with `compile._options`' choice for its size), and which aux states its lowering writes.

    With `diff` (indices of the inputs autograd may differentiate), the closure also
    takes the op's `jax.vjp` with respect to those inputs and returns the pullback's
    residuals (`autograd/_saved.py`), so that backward applies the pullback without
    running the op again."""
    __slots__ = ("jitted", "compiled", "changed")

    def __init__(self, op, nargs: int, is_train: bool, diff: tuple = ()):
        super().__init__()
        self.changed = ()
        self.compiled = None
        rand = op.random

        def run(datas, base, counter):
            _stats["traces"] += 1
            key = jax.random.fold_in(jax.random.wrap_key_data(base), counter) if rand else None
            aux = list(datas[nargs:])
            if not diff:
                outs, new_aux = op.lower(list(datas[:nargs]), aux, is_train, key)
                res = ()
            else:
                def f(*full):
                    outs, new_aux = op.lower(list(full[:nargs]), list(full[nargs:]), is_train, key)
                    return tuple(outs), new_aux
                outs, new_aux, res = self.vjp(f, datas, diff)
            self.changed = tuple(i for i, (a, n) in enumerate(zip(aux, new_aux)) if n is not a)
            return tuple(outs), tuple(new_aux[i] for i in self.changed), key, res

        self.jitted = jax.jit(run)

    def __call__(self, datas, base, counter):
        if self.compiled is None:  # the key holds the shapes: one executable per entry
            self.compiled = compile_lowered(self.jitted.lower(datas, base, counter))
        return self.compiled(datas, base, counter)


def call(op, datas: list, nargs: int, is_train: bool, device, ctx=None):
    """Run `op` on `datas` (arguments then aux states, jax arrays): -> (outputs, new aux
    states, None where the op left one as it was, the random key drawn or None).
    `device`: where an op without inputs puts its outputs; `ctx`: whose random generator a
    sampling op draws from (None: the current context's). The caller sets the matmul
    precision (part of the key here)."""
    return call_vjp(op, datas, nargs, is_train, device, ctx)[:3]


def call_vjp(op, datas: list, nargs: int, is_train: bool, device, ctx=None, diff: tuple = (), sig=None,
             precision=None):
    """`call`, also returning what autograd's backward needs to differentiate the call
    with respect to the inputs `diff` (indices into `datas`) without running it again:
    (the entry, whose `pull` applies the pullback, and the call's residual leaves), or
    None where the op ran op by op (then backward differentiates its lowering anew).

    `sig`: the inputs' (shape, dtype, sharding, weak type) where the caller has them;
    `precision`: the matmul precision to trace with (None: the one set now; the caller
    set it). A call that compiles or runs op by op does so under that precision."""
    if precision is None:
        precision = jax.config.jax_default_matmul_precision
    key = None
    if getattr(op, "imperative_jit", True):
        # weak_type too: a retrace would replace the entry's residual layout
        if sig is None:
            sig = tuple((d.shape, d.dtype, sharding_key(getattr(d, "sharding", None)), getattr(d, "weak_type", False))
                        for d in datas)
        key = (type(op), op.hash_key(), bool(is_train), precision, diff, sig,  # hash_key: the parameters
               None if datas else device)
        entry = _cache.get(key)
        if entry is not None:
            with _lock:
                try:
                    _cache.move_to_end(key)
                except KeyError:  # dropped meanwhile by another thread: it still runs this call
                    pass
        if entry is None:
            entry = _put(key, _Entry(op, nargs, bool(is_train), diff))
            _stats["misses"] += 1
        else:
            _stats["hits"] += 1
        if entry is not _EAGER:
            try:
                if entry.compiled is not None:
                    return _run(entry, op, datas, len(datas) - nargs, device, ctx)
                with jax.default_matmul_precision(precision):
                    return _run(entry, op, datas, len(datas) - nargs, device, ctx)
            except _CONCRETE:  # the lowering needs values: op by op from now on, for this key
                _put(key, _EAGER)
    with jax.default_matmul_precision(precision):
        return (*_eager(op, datas, nargs, is_train, device, ctx), None)


def _run(entry, op, datas, naux, device, ctx):
    base, counter = _random.next_draw(ctx) if op.random else (None, None)
    if datas:
        outs, changed, key, own = entry(datas, base, counter)
    else:
        with jax.default_device(device):
            outs, changed, key, own = entry(datas, base, counter)
    new_aux = [None] * naux
    for i, a in zip(entry.changed, changed):
        new_aux[i] = a
    saved = (entry, entry.residuals(datas, outs, own)) if entry.tree is not None else None
    return list(outs), new_aux, key, saved


def _eager(op, datas, nargs, is_train, device, ctx):
    key = None
    if op.random:  # the generator's key, folded with its next counter (each call draws anew)
        key_data, counter = _random.next_draw(ctx)
        key = jax.random.fold_in(jax.random.wrap_key_data(key_data), counter)
    aux = datas[nargs:]
    if datas:
        outs, new_aux = op.lower(datas[:nargs], aux, is_train, key)
    else:
        with jax.default_device(device):
            outs, new_aux = op.lower([], [], is_train, key)
    return list(outs), [n if n is not a else None for a, n in zip(aux, new_aux)], key


def _put(key, value):
    with _lock:
        _cache[key] = value
        _cache.move_to_end(key)
        while len(_cache) > LIMIT:
            _cache.popitem(last=False)
    return value


def info() -> dict:
    """Entries held, the limit, and counts of traces, cache hits and misses so far."""
    return {"entries": len(_cache), "limit": LIMIT, **_stats}


def clear() -> None:
    """Drop every compiled op call (the next call of each traces and compiles again)."""
    with _lock:
        _cache.clear()


_ELEMENTWISE: dict = {}


def elementwise(fn, cast=None):
    """`fn(a, b)` (a jax.numpy binary function) compiled as jbind compiles op calls (small
    programs with the short pipeline), one executable per shapes and dtypes; with `cast`
    (a dtype), the result cast to it in the same program (comparisons)."""
    key = (fn, None if cast is None else np.dtype(cast))
    f = _ELEMENTWISE.get(key)
    if f is None:
        def run(a, b):
            out = fn(a, b)
            return out if cast is None else out.astype(cast)
        f = _ELEMENTWISE[key] = small_jit(run, limit=LIMIT)
    return f
