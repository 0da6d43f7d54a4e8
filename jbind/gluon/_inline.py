"""How a hybridized block's recorded call reads in `mx.autograd.get_symbol`.

Under `autograd.record()` MXNet's cached op either records itself as one `_CachedOp`
node, or, when its graph has at most `inline_limit` ops (`hybridize(inline_limit=N)`,
default 2) and `static_alloc` is off, runs its ops one by one while recording, so the
recorded graph holds the block's own ops ("inlining"). jbind always records the block as
one tape node (one compiled call, one backward); `symbol_form` gives that node the
symbol MXNet's tape would show, which `get_symbol` asks for.
"""
from __future__ import annotations

from typing import ClassVar

from ..base import MXNetError
from ..ops._base import Op, frozen
from ..symbol._node import Node, topo_order

DEFAULT_INLINE_LIMIT = 2   # MXNet's CachedOpConfig default


@frozen
class _CachedOp(Op):
    """A hybridized block's whole graph as one node of a recorded graph (MXNet's
    `_CachedOp`): shown by `get_symbol`, never run."""
    name: ClassVar[str] = "_CachedOp"
    num_inputs: int
    num_outputs: int
    graph: int   # the block graph's fingerprint

    def arguments(self):
        return tuple(f"data{i}" for i in range(self.num_inputs))

    def outputs(self):
        return tuple(f"output{i}" for i in range(self.num_outputs))

    def lower(self, ins, aux, is_train, key):
        raise MXNetError("_CachedOp: a node of autograd.get_symbol that stands for a hybridized block's call; "
                         "it describes the recorded graph and cannot be bound or run (hybridize with a larger "
                         "inline_limit to see the block's own ops)")


def inlines(symbol, flags) -> bool:
    """Whether MXNet would inline the block's graph `symbol` hybridized with `flags`."""
    kw = dict(flags)
    if kw.get("static_alloc"):
        return False
    limit = int(kw.get("inline_limit", DEFAULT_INLINE_LIMIT))
    return sum(1 for n in topo_order(symbol._heads) if n.op is not None) <= limit


def symbol_form(symbol, inline: bool):
    """`form(entries) -> output entries`: the block's graph `symbol` (variables: its
    arguments, then its aux states) applied to the recorded inputs' symbol `entries`
    (one per variable, then the random key's, which is dropped)."""
    names = symbol.list_arguments() + symbol.list_auxiliary_states()
    n_out = len(symbol._heads)
    op = _CachedOp(len(names), n_out, symbol.fingerprint)

    def form(entries):
        entries = list(entries)[:len(names)]
        if not inline:
            node = Node(op, "_cachedop", {}, tuple(entries))
            return [(node, k) for k in range(n_out)]
        given = dict(zip(names, entries))
        made = {}

        def entry(c, i):   # a variable stands for its recorded input's entry
            return given[c.name] if c.op is None else (made[id(c)], i)
        for n in topo_order(symbol._heads):
            if n.op is not None:
                made[id(n)] = Node(n.op, n.name, dict(n.attrs), tuple(entry(c, i) for c, i in n.inputs))
        return [entry(n, k) for n, k in symbol._heads]
    return form


def describe(results, cached_graph) -> None:
    """Give the tape node that recorded `cached_graph`'s call (producing `results`) its
    `symbol_form`, once per compiled signature (the node's function is the signature's)."""
    ag = getattr(results[0], "_ag", None) if results else None
    if not isinstance(ag, tuple) or ag[0].op is not None:
        return
    fn = ag[0].fn
    if getattr(fn, "symbol_form", None) is None:
        sym = cached_graph._symbol
        fn.symbol_form = symbol_form(sym, inlines(sym, cached_graph._block._flags))
