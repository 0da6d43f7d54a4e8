"""`mx.sym.contrib.foreach`, `while_loop` and `cond`: a Python body traced into a subgraph.

As MXNet 1.9.1 does it: the body runs once on fresh variables inside an AttrScope that
marks every node it creates with `__subgraph_name__`; the subgraph is what those nodes
compute, and each edge from a node without the mark (a symbol from outside the body, a
parameter) is cut: the subgraph reads a new variable named after that output, and the
op node takes the outside symbol as an input. Node names, attributes and input order
follow MXNet's, so the JSON is MXNet's.
"""
from __future__ import annotations

from .. import attribute, name as _name
from ..base import MXNetError
from ..ops._base import get_op
from ._node import Node, topo_order
from .symbol import Group, Symbol, Variable

MARK = "__subgraph_name__"


class ControlFlowError(MXNetError, ValueError):
    """A control-flow body or its inputs do not fit (where MXNet raises ValueError)."""


class ControlFlowAssertion(MXNetError, AssertionError):
    """A control-flow body or its inputs do not fit (where MXNet fails an assertion)."""


def flatten(args, what: str):
    """-> (flat list of single-output Symbols, format for `regroup`). A Symbol's format is
    its number of outputs (0 for one); a list's, the list of its items' formats."""
    if isinstance(args, Symbol):
        n = len(args)
        return list(args), (n if n > 1 else 0)
    if not isinstance(args, (list, tuple)):
        raise ControlFlowError(f"{what} must be a Symbol or a (nested) list of Symbols, got "
                               f"{type(args).__name__}")
    flat, fmt = [], []
    for a in args:
        f, m = flatten(a, what)
        flat += f
        fmt.append(m)
    return flat, fmt


def regroup(flat, fmt):
    """Inverse of `flatten`: -> (nested value, the items left over)."""
    if isinstance(fmt, int):
        return (flat[0], flat[1:]) if fmt == 0 else (list(flat[:fmt]), flat[fmt:])
    out = []
    for m in fmt:
        v, flat = regroup(flat, m)
        out.append(v)
    return out, flat


def unique_name(base: str) -> str:
    """MXNet's subgraph naming: `<outer subgraph>$<base><count>`, counted in
    `AttrScope._subgraph_names`."""
    outer = attribute.current()._attr.get(MARK, "")
    if outer:
        base = f"{outer}${base}"
    counts = attribute.AttrScope._subgraph_names
    counts[base] += 1
    return f"{base}{counts[base] - 1}"


def input_name(sym: Symbol) -> str:
    """The name of the variable standing for `sym` inside a body (MXNet's `<name>-<index>`)."""
    node, i = sym._heads[0]
    return f"{node.name}-{i}"


def _inside(node, name) -> bool:
    return node.attrs.get(MARK) == name


def outputs_graph(outputs: list, name: str, states: tuple = ()) -> Symbol:
    """Group the body's outputs, each made a node of the subgraph: an output that is an
    input, comes from outside, or (for a foreach state) repeats an output's name goes
    through `identity`, as MXNet's `_construct_subgraph`. Call inside the AttrScope."""
    from .ops import make
    allv = list(outputs) + list(states)
    inputs = set(Group(allv).list_inputs()) if allv else set()
    out_names = {o.name for o in outputs}
    made = []
    for k, s in enumerate(allv):
        node = s._heads[0][0]
        copy = s.name in inputs or not _inside(node, name) or (k >= len(outputs) and s.name in out_names)
        made.append(make("identity", [s], {}, hint="identity") if copy else s)
    return Group(made)


def cut(graph: Symbol, name: str):
    """-> (the subgraph, {input name: the outside entry feeding it}): a cut edge's source,
    or, for a variable made inside the body, the variable itself."""
    memo, cuts, feeds = {}, {}, {}
    for node in topo_order(graph._heads):
        if not _inside(node, name):
            continue
        if node.op is None:
            feeds[node.name] = (node, 0)
        ins = []
        for c, i in node.inputs:
            if _inside(c, name):
                ins.append((memo[id(c)], i))
                continue
            got = cuts.get((id(c), i))
            if got is None:
                got = cuts[(id(c), i)] = Node(None, c.output_name(i), {}, ())
                feeds[got.name] = (c, i)
            ins.append((got, 0))
        same = all(a[0] is b[0] and a[1] == b[1] for a, b in zip(ins, node.inputs))
        memo[id(node)] = node if same else Node(node.op, node.name, node.attrs, tuple(ins))
    return Symbol([(memo[id(n)], i) for n, i in graph._heads]), feeds


def _locs(locs) -> str:
    return "[" + ", ".join(str(int(x)) for x in locs) + "]"


def make_node(op_name: str, subs: list, entries: list, params: dict) -> Symbol:
    """The control-flow node over `entries`, named as MXNet names it (`_foreach0`)."""
    cls = get_op(op_name)
    attrs_p = {k: (_locs(v) if isinstance(v, (list, tuple)) else str(int(v))) for k, v in params.items()}
    op = cls.from_attrs(attrs_p).with_subgraphs(subs)
    node_name = _name.current().get(None, op_name)
    attrs = attribute.hide(attribute.current().get(None))
    attrs.update(attrs_p)
    node = Node(op, node_name, attrs, tuple(entries))
    return Symbol([(node, i) for i in range(op.num_outputs)])


def body_vars(flat: list, fmt):
    """Fresh variables standing for `flat` inside a body, regrouped as given."""
    return regroup([Variable(input_name(s)) for s in flat], fmt)[0]


def check_symbols(flat, what):
    for s in flat:
        if not isinstance(s, Symbol):
            raise ControlFlowError(f"{what} must be Symbols, got {type(s).__name__}")
