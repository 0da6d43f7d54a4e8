"""What a compiled forward keeps so that autograd's backward need not run it again.

A compiled call made while `record()` is on (an imperative op, `ndarray/_dispatch.py`;
a hybridized block's training forward, `gluon/_cached_graph.py`) takes `jax.vjp` of
its pure function with respect to the inputs in the graph, inside its `jax.jit`, and
returns the pullback's residuals next to its outputs. A `Pullback` is the static half:
the pullback's tree (set once, when the call is traced) and where each residual leaf
comes from. Leaves that are the call's own inputs or outputs are not returned twice
(XLA would copy them); `residuals` puts them back. `pull` is traceable: the backward
walk (`_pullback.py`) calls it inside its own `jax.jit`.
"""
from __future__ import annotations

import itertools

import jax

_UIDS = itertools.count()


class Pullback:
    """The pullback of one compiled call, up to its residuals. `uid` names it in the
    backward walk's structural key (one per compiled call: op or graph, parameters,
    shapes, dtypes and which inputs are differentiated)."""
    __slots__ = ("tree", "sources", "uid", "_jpull")

    def __init__(self):
        self.tree, self.sources, self._jpull = None, (), None
        self.uid = next(_UIDS)

    def vjp(self, f, datas, diff: tuple):
        """Inside the call's trace: `f(*datas) -> (outputs tuple, aux)` differentiated with
        respect to the inputs `diff` -> (outputs, aux, the residual leaves to return)."""
        def g(*xs):
            full = list(datas)
            for j, x in zip(diff, xs):
                full[j] = x
            return f(*full)
        outs, pull, aux = jax.vjp(g, *[datas[j] for j in diff], has_aux=True)
        return outs, aux, self._split(pull, datas, outs)

    def _split(self, pull, datas, outs) -> tuple:
        leaves, self.tree = jax.tree_util.tree_flatten(pull)
        ids = {id(d): ("i", j) for j, d in enumerate(datas)}
        ids.update({id(o): ("o", k) for k, o in enumerate(outs)})
        own, sources = [], []
        for leaf in leaves:
            src = ids.get(id(leaf))
            if src is None:
                src = ("r", len(own))
                own.append(leaf)
            sources.append(src)
        self.sources = tuple(sources)
        return tuple(own)

    def residuals(self, datas, outs, own) -> tuple:
        """The pullback's residual leaves of one call, from its inputs, outputs and `own`."""
        pick = {"i": datas, "o": outs, "r": own}
        return tuple(pick[s][j] for s, j in self.sources)

    def pull(self, leaves, cts):
        """Cotangents of the differentiated inputs from the residual `leaves` of a call and
        the cotangents `cts` of its outputs."""
        return jax.tree_util.tree_unflatten(self.tree, list(leaves))(tuple(cts))

    def jitted_pull(self):
        """`pull` compiled on its own (for a backward that is not one compiled call)."""
        if self._jpull is None:
            self._jpull = jax.jit(self.pull)
        return self._jpull
