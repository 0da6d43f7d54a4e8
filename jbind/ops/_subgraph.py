"""Operators that carry subgraphs (MXNet's `_foreach`, `_while_loop`, `_cond`).

The op's parameters are its attributes, as for every op; its subgraphs (Symbols, kept in
MXNet's JSON under the node's "subgraphs" key) ride on the op instance, are part of its
equality and of its hash key, and are attached with `with_subgraphs`. The helpers below
run a subgraph's shape and dtype inference and its lowering for the op's own rules.
"""
from __future__ import annotations

import copy

from ..base import MXNetError
from ._base import Op


class SubgraphOp(Op):
    """Base of ops with subgraphs. Subclasses name them in `subgraph_names`."""

    subgraph_names: tuple = ()
    imperative_jit = True

    # --- the subgraphs ------------------------------------------------------------
    @property
    def subgraphs(self) -> tuple:
        subs = self.__dict__.get("_subgraphs")
        if subs is None:
            raise MXNetError(f"{self.name}: the op has no subgraphs; build it with "
                             f"mx.sym.contrib.{self.name.strip('_')} "
                             "or load it from MXNet's JSON")
        return subs

    def with_subgraphs(self, subs) -> "SubgraphOp":
        """A copy of this op carrying `subs` (Symbols), checked against the parameters."""
        subs = tuple(subs)
        if len(subs) != len(self.subgraph_names):
            raise MXNetError(f"{self.name}: needs {len(self.subgraph_names)} subgraph(s) "
                             f"({', '.join(self.subgraph_names)}), got {len(subs)}")
        op = copy.copy(self)
        op.__dict__.pop("_jbind_key", None)
        op.__dict__.pop("_random", None)
        object.__setattr__(op, "_subgraphs", subs)
        op.check_subgraphs()
        return op

    def check_subgraphs(self) -> None:
        """Raise MXNetError where the parameters do not fit the subgraphs."""

    def _check_locs(self, what: str, locs, size: int) -> None:
        bad = [x for x in locs if not 0 <= x < size]
        if bad:
            raise MXNetError(f"{self.name}: {what} {list(locs)} has position(s) {bad} outside "
                             f"0..{size - 1}")

    # --- identity: parameters and subgraph structure --------------------------------
    def _sub_keys(self) -> tuple:
        subs = self.__dict__.get("_subgraphs")
        return () if subs is None else tuple(s.fingerprint for s in subs)

    def __eq__(self, other):
        return Op.__eq__(self, other) and self._sub_keys() == other._sub_keys()

    def __hash__(self):
        return hash((Op.__hash__(self), self._sub_keys()))

    def hash_key(self) -> int:
        k = self.__dict__.get("_jbind_key")
        if k is None:  # ints only: the same in every process (a str's hash is not)
            k = hash((Op.hash_key(self), tuple(int(fp, 16) for fp in self._sub_keys())))
            object.__setattr__(self, "_jbind_key", k)
        return k

    @property
    def random(self) -> bool:
        """Whether any node of a subgraph draws random numbers (found once per op)."""
        got = self.__dict__.get("_random")
        if got is None:
            from ..symbol._node import topo_order
            subs = self.__dict__.get("_subgraphs") or ()
            got = any(n.op is not None and n.op.random for s in subs for n in topo_order(s._heads))
            object.__setattr__(self, "_random", got)
        return got

    def outputs(self):
        return tuple(f"output{i}" for i in range(self.num_outputs))


def infer_sub(sub, kind: str, ins: list, outs: list):
    """Run `sub`'s shape ("shape") or dtype ("dtype") rules from the values known for its
    inputs (in `list_inputs` order) and outputs. -> (input values, output values)."""
    from ..symbol import infer
    from ..symbol.graph import graph_of
    k = infer.SHAPE if kind == "shape" else infer.DTYPE
    g = graph_of(sub)
    initial = {}
    for vi, v in zip(g.var_index, ins):
        if v is not None:
            initial[g.offsets[vi]] = v
    for e, v in zip(g.heads, outs):
        if v is not None:
            try:
                initial[e] = k.unify(initial.get(e), v)
            except ValueError:
                raise ValueError(f"subgraph output {k.fmt(v)} contradicts {k.fmt(initial[e])}") from None
    vals = infer.propagate(g, k, initial)
    return [vals[g.offsets[vi]] for vi in g.var_index], [vals[e] for e in g.heads]


def run_sub(sub, values: list, key, is_train: bool) -> list:
    """Lower `sub` on `values` (its inputs in `list_inputs` order): its outputs."""
    from ..symbol import infer
    from ..symbol.graph import graph_of
    from ..symbol.lower import make_forward
    g = graph_of(sub)
    shapes = infer.entry_values(sub, infer.SHAPE, {n: tuple(v.shape) for n, v in zip(g.input_names, values)})
    by_name = dict(zip(g.input_names, values))
    args = tuple(by_name[n] for n in g.arg_names)
    aux = tuple(by_name[n] for n in g.aux_names)
    outs, _ = make_forward(g, shapes)(args, aux, key, is_train)
    return list(outs)


def unify(kind: str, a, b, what: str):
    """Merge two values of one slot; ValueError naming `what` where they disagree."""
    from ..symbol import infer
    k = infer.SHAPE if kind == "shape" else infer.DTYPE
    try:
        return k.unify(a, b)
    except ValueError:
        raise ValueError(f"{what}: {k.fmt(a)} and {k.fmt(b)} differ") from None
