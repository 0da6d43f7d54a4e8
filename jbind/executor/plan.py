"""A bind plan: everything about an executor that depends only on the graph, the
shapes, the dtypes and grad_req. Plans are memoized, so binding a bucket seen before
costs dictionary lookups, not inference."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._memo import Memo
from ..symbol._int_grad import carried_args, carried_cast_outputs
from ..symbol.graph import graph_of
from ..symbol.infer import DTYPE, SHAPE, infer

_PLANS = Memo(4096)


@dataclasses.dataclass(frozen=True)
class Plan:
    shapes: tuple        # ((name, shape), ...): arguments, then aux states
    dtypes: tuple        # ((name, dtype name), ...), same order
    out_shapes: tuple
    grad_req: tuple      # per argument
    diff: tuple          # per argument: differentiated (not null, not an integer)
    add: tuple           # per argument: grad_req 'add'
    no_head: tuple       # per output: takes no head gradient (loss head or integer output)
    np_dtypes: tuple     # numpy dtypes of `dtypes`, for fast checks at bind time
    out_dtypes: tuple = ()  # per output: numpy dtype (None where inference could not tell)
    state_bytes: int = 0  # arguments, their gradients (grad_req not null) and aux states
    out_bytes: int = 0    # the outputs
    zero_write: tuple = ()  # per argument: grad_req 'write' but no gradient path (written with zeros)


def _gradient_reaches(g) -> list:
    """Per argument: whether some path to an output carries a gradient (passes no BlockGrad)."""
    owner = [0] * g.num_entries
    for ni, n in enumerate(g.nodes):
        for k in range(n.num_outputs()):
            owner[g.offsets[ni] + k] = ni
    needed = [False] * len(g.nodes)
    for e in g.heads:
        needed[owner[e]] = True
    for ni in range(len(g.nodes) - 1, -1, -1):
        n = g.nodes[ni]
        if needed[ni] and n.op is not None and not n.op.blocks_gradient:
            for e in g.in_entries[ni][:n.num_args()]:
                needed[owner[e]] = True
    return [needed[vi] for vi in g.arg_index]


def _head_nodes(g) -> list:
    """Per graph output: the index of the node producing it."""
    owner = {g.offsets[ni] + k: ni for ni, n in enumerate(g.nodes) for k in range(n.num_outputs())}
    return [owner[e] for e in g.heads]


def make_plan(sym, shapes: tuple, dtypes: tuple, grad_req: tuple) -> Plan:
    """`shapes` / `dtypes`: one entry per argument then aux state, in the graph's order."""
    key = (sym.fingerprint, shapes, dtypes, grad_req)
    plan = _PLANS.get(key)
    if plan is not None:
        return plan
    g = graph_of(sym)
    names = g.arg_names + g.aux_names
    n = len(g.arg_names)
    _, out_s, _ = infer(sym, SHAPE, (), dict(zip(g.arg_names, shapes[:n])))
    _, out_t, _ = infer(sym, DTYPE, (), dict(zip(g.arg_names, dtypes[:n])))
    floats = [np.issubdtype(np.dtype(t), np.inexact) for t in dtypes[:n]]
    # integers read only by Casts take MXNet's cast gradient (symbol/_int_grad.py)
    floats = [f or c for f, c in zip(floats, carried_args(g, dtypes[:n]))]
    carried = carried_cast_outputs(g)
    reach = _gradient_reaches(g)
    diff = tuple(r != "null" and f and ok for r, f, ok in zip(grad_req, floats, reach))
    zero_write = tuple(r == "write" and f and not ok for r, f, ok in zip(grad_req, floats, reach))
    no_head = tuple(bool(node.op is not None and node.op.is_loss)
                    or not (np.issubdtype(t, np.inexact) or ni in carried)
                    for (node, _), t, ni in zip(sym._heads, out_t, _head_nodes(g)))
    sizes = [math.prod(s) * np.dtype(t).itemsize for s, t in zip(shapes, dtypes)]
    state = sum(sizes) + sum(b for b, r in zip(sizes, grad_req) if r != "null")
    out = sum(math.prod(s) * np.dtype(t).itemsize for s, t in zip(out_s, out_t) if s is not None and t is not None)
    plan = Plan(tuple(zip(names, shapes)), tuple(zip(names, dtypes)), tuple(tuple(s) for s in out_s),
                grad_req, diff, tuple(r == "add" for r in grad_req), no_head,
                tuple(np.dtype(t) for t in dtypes),
                tuple(None if t is None else np.dtype(t) for t in out_t), state, out, zero_write)
    return _PLANS.put(key, plan)
