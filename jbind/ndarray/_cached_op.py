"""`mx.nd.CachedOp`: a Symbol called as a function of NDArrays.

The graph's nodes run one by one as the registered ops NDArray code calls
(`imperative.invoke`), so the call behaves as those calls would: under
`autograd.record()` each op joins the tape and `backward()` reaches the inputs,
operators that update aux states (BatchNorm's running statistics in training) write
them into the arrays given, and every op's shape check names the op and its inputs.
"""
from __future__ import annotations

from dataclasses import fields

from ..base import MXNetError
from ..symbol._node import topo_order
from .ndarray import NDArray


class CachedOp:
    """MXNet's `mx.nd.CachedOp(sym, flags=())`: call it with the graph's inputs, in the order
    of `sym.list_inputs()`; it returns the output (an NDArray) or a list of them, or writes
    into `out=` (an NDArray or a list) and returns that. `flags` (MXNet's engine settings,
    such as static_alloc) change nothing here."""

    def __init__(self, sym, flags=()):
        self._sym = sym
        self._nodes = topo_order(sym._heads)
        self._inputs = sym.list_inputs()
        self.flags = tuple(flags)

    def __call__(self, *args, out=None, **kwargs):
        kwargs.pop("default_ctx", None)
        if kwargs:
            raise MXNetError(f"CachedOp: unknown arguments {sorted(kwargs)}")
        if len(args) != len(self._inputs):
            raise MXNetError(f"CachedOp: the graph has {len(self._inputs)} inputs {self._inputs}, "
                             f"got {len(args)} arrays")
        bad = [n for n, a in zip(self._inputs, args) if not isinstance(a, NDArray)]
        if bad:
            raise MXNetError(f"CachedOp: inputs {bad} must be NDArrays")
        given = dict(zip(self._inputs, args))
        from .imperative import invoke
        vals = {}
        for node in self._nodes:
            if node.op is None:
                vals[id(node)] = [given[node.name]]
                continue
            names = {f.name for f in fields(node.op)}
            params = {k: v for k, v in node.attrs.items() if k in names}
            res = invoke(node.op.name, [vals[id(c)][i] for c, i in node.inputs], params)
            vals[id(node)] = res if isinstance(res, list) else [res]
        outs = [vals[id(n)][i] for n, i in self._sym._heads]
        if out is None:
            return outs[0] if len(outs) == 1 else outs
        targets = out if isinstance(out, (list, tuple)) else [out]
        if len(targets) != len(outs):
            raise MXNetError(f"CachedOp: the graph has {len(outs)} outputs, out= gives {len(targets)}")
        for t, o in zip(targets, outs):
            t[:] = o
        return out
