"""Pointwise graphs on small arrays run on flat arguments padded to a power of two.

A graph whose every op is pointwise (each output element depends on the inputs' elements
at the same index alone: elementwise math, scalar ops, comparisons; `Op.pointwise`) and
whose arguments and outputs share one shape computes the same numbers on any reshaping of
that shape, and padding adds elements nothing reads back. Binding such a graph at shape
(2, 3, 5) then runs the program compiled for 32 elements, which (4, 7) and (29,) reuse: a
sweep over many small shapes (MXNet's operator tests bind thousands) compiles one program
per power of two instead of one per shape (10-20 ms of XLA each).

Only on the CPU and for at most `MAX_ELEMENTS` elements, where reshaping and padding on
the host (NumPy views of the device buffers, one copy of a few kilobytes each way) costs
microseconds. Gradients need no care: each element's gradient depends on that element
alone, so the padding (ones, finite for every op) never reaches a real element.

Ops that make their output from a `shape` parameter equal to the graph's shape (samplers
such as `random_normal(shape=s)`, `ones(s)`) join too, made at the flat length instead:
i.i.d. samples and constants are the same law at any length (MXNet's test of its
samplers binds `sampler(shape) + x` at many shapes). `_random_*_like` samplers are
pointwise (one sample per element of their input).
"""
from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from ..ndarray.ndarray import _placed, cached_zeros
from ..ops.reduce import ShapedBy
from ..symbol._node import Node, topo_order
from ..symbol.graph import graph_of
from ..symbol.symbol import Symbol
from .plan import make_plan

MAX_ELEMENTS = 1 << 16
MIN_BUCKET = 8


def bucket(n: int) -> int:
    """The padded length for `n` elements: the next power of two, at least MIN_BUCKET."""
    return max(MIN_BUCKET, 1 << (n - 1).bit_length())


def eligible(ex) -> tuple | None:
    """(shape, elements, bucket) where executor `ex` may run flat, else None."""
    plan = ex._plan
    if ex._device.platform != "cpu" or ex.aux_arrays or not plan.shapes:
        return None
    shapes = {s for _, s in plan.shapes} | set(plan.out_shapes)
    if len(shapes) != 1:
        return None
    shape = next(iter(shapes))
    if shape is None or None in shape:
        return None
    n = math.prod(shape)
    if not 0 < n <= MAX_ELEMENTS or len(shape) == 1 and shape[0] == bucket(n):
        return None
    if not all(node.op is None or node.op.pointwise or _sized(node.op, shape) for node in graph_of(ex._symbol).nodes):
        return None
    return tuple(shape), n, bucket(n)


def _sized(op, shape) -> bool:
    """Whether `op` makes its output from a `shape` parameter equal to `shape` (a sampler,
    `ones`): at any other length it makes the same values (i.i.d. samples, constants)."""
    return isinstance(op, ShapedBy) and tuple(op.shape) == tuple(shape)


def _resized(sym, shape, size: int):
    """`sym` with every op of `_sized(op, shape)` making (size,) instead (`sym` itself
    where there is none). Walks the graph in topological order: graphs deeper than
    Python's recursion limit are bound too."""
    order = topo_order(sym._heads)
    if not any(n.op is not None and _sized(n.op, shape) for n in order):
        return sym
    new: dict = {}
    for node in order:
        ins = tuple((new[id(c)], i) for c, i in node.inputs)
        op = node.op
        if op is not None and _sized(op, shape):
            op = dataclasses.replace(op, shape=(size,))
        same = op is node.op and all(a is c for (a, _), (c, _) in zip(ins, node.inputs))
        new[id(node)] = node if same else Node(op, node.name, dict(node.attrs), ins)
    return Symbol([(new[id(n)], i) for n, i in sym._heads])


def inner_executor(ex, executor_cls, size: int, shape: tuple):
    """An executor of `ex`'s graph (bound at `shape`) over (size,) arguments: only its
    compiled functions are used."""
    plan = ex._plan
    dev, ctx = ex._device, ex._ctx
    flat = tuple((size,) for _ in plan.shapes)
    names = [t for _, t in plan.dtypes]
    sym = _resized(ex._symbol, shape, size)
    fplan = make_plan(sym, flat, tuple(names), plan.grad_req)
    args = [_placed(cached_zeros((size,), np.dtype(t), dev), ctx) for t in names]
    grads = [None if g is None else _placed(cached_zeros((size,), g.dtype, dev), ctx) for g in ex.grad_arrays]
    return executor_cls(sym, ctx, args, grads, [], fplan)


def _padded(x, size: int, dev):
    a = np.asarray(x).reshape(-1)
    out = np.ones(size, a.dtype)
    out[:a.size] = a
    return jax.device_put(out, dev)


def _shaped(x, n: int, shape: tuple, dev):
    return jax.device_put(np.asarray(x)[:n].reshape(shape), dev)


def wrap(fn, mode: str, shape: tuple, n: int, size: int, dev):
    """`fn` (compiled for flat arguments) called with and returning `shape`d arrays."""
    def flat(xs):
        return tuple(_padded(x, size, dev) for x in xs)

    def back(xs):
        return tuple(_shaped(x, n, shape, dev) for x in xs)

    if mode in ("infer", "train_fwd"):
        def forward(args, aux, key, counter):
            outs, new_aux = fn(flat(args), aux, key, counter)
            return back(outs), new_aux
        return forward

    def train(args, aux, key, counter, heads, old):
        outs, grads, new_aux, nxt = fn(flat(args), aux, key, counter, flat(heads), flat(old))
        return back(outs), back(grads), new_aux, nxt
    return train


def compiled(ex, mode: str, executor_cls):
    """`ex`'s function of `mode` run flat, or None where `ex` does not qualify."""
    got = ex.__dict__.get("_flat")
    if got is None:
        spec = eligible(ex)
        got = ex._flat = (False,) if spec is None else (True, spec, inner_executor(ex, executor_cls, spec[2], spec[0]))
    if not got[0]:
        return None
    (shape, n, size), inner = got[1], got[2]
    return wrap(inner._compiled(mode), mode, shape, n, size, ex._device)
