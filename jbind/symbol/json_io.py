"""MXNet 1.x symbol JSON: `tojson` writes it, `load` / `load_json` read every 1.x layout."""
from __future__ import annotations

import json

from ..base import MXNetError
from ..ops._base import get_op
from ._node import Node, topo_order
from .symbol import Symbol

MXNET_VERSION = 10901  # what we write: MXNet 1.9.1's layout


def to_json(sym: Symbol) -> str:
    nodes = topo_order(sym._heads)
    index = {id(n): i for i, n in enumerate(nodes)}
    out, row_ptr, arg_nodes = [], [0], []
    for i, n in enumerate(nodes):
        entry = {"op": "null" if n.op is None else n.op.name, "name": n.name}
        if n.attrs:
            entry["attrs"] = dict(n.attrs)
        entry["inputs"] = [[index[id(c)], k, 0] for c, k in n.inputs]
        out.append(entry)
        if n.op is None:
            arg_nodes.append(i)
        row_ptr.append(row_ptr[-1] + (1 if n.op is None else n.op.total_outputs()))
    heads = [[index[id(n)], k, 0] for n, k in sym._heads]
    doc = {"nodes": out, "arg_nodes": arg_nodes, "node_row_ptr": row_ptr, "heads": heads,
           "attrs": {"mxnet_version": ["int", MXNET_VERSION]}}
    return json.dumps(doc, indent=2)


def load_json(json_str: str) -> Symbol:
    """Build a Symbol from MXNet JSON (attributes under `attrs`, `attr` or `param`)."""
    if not isinstance(json_str, str):
        raise TypeError(f"load_json expects a string, got {type(json_str).__name__}")
    try:
        doc = json.loads(json_str)
    except json.JSONDecodeError as e:
        raise MXNetError(f"symbol JSON is not valid JSON: {e}") from None
    return _from_doc(doc, "<json>")


def load(fname: str) -> Symbol:
    """Load a symbol saved with `Symbol.save` or MXNet's `-symbol.json`."""
    try:
        with open(fname, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise MXNetError(f"cannot read symbol file {fname!r}: {e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise MXNetError(f"symbol file {fname!r} is not valid JSON: {e}") from None
    return _from_doc(doc, fname)


def _from_doc(doc, where: str) -> Symbol:
    try:
        return _build(doc, where)
    except MXNetError:
        raise
    except (TypeError, KeyError, ValueError, AttributeError, IndexError) as e:
        raise MXNetError(f"{where}: malformed symbol JSON ({type(e).__name__}: {e})") from None


def _build(doc, where: str) -> Symbol:
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or "heads" not in doc:
        raise MXNetError(f"{where}: not an MXNet symbol JSON (needs 'nodes' and 'heads')")
    built: list[Node] = []
    for i, nd in enumerate(doc["nodes"]):
        if not isinstance(nd, dict) or "op" not in nd or "name" not in nd:
            raise MXNetError(f"{where}: node {i} lacks 'op' or 'name'")
        attrs = {}
        for k in ("param", "attr", "attrs"):
            if isinstance(nd.get(k), dict):
                attrs.update({str(a): str(v) for a, v in nd[k].items()})
        inputs = []
        for inp in nd.get("inputs", []):
            if not isinstance(inp, list) or len(inp) < 2 or not all(isinstance(x, int) for x in inp[:2]):
                raise MXNetError(f"{where}: node {i} ({nd['name']}) has a malformed input {inp!r}")
            src, k = inp[0], inp[1]
            if not 0 <= src < i:
                raise MXNetError(f"{where}: node {i} ({nd['name']}) refers to node {src}, "
                                 "which does not come before it")
            inputs.append((built[src], k))
        if nd["op"] == "null":
            if inputs:
                raise MXNetError(f"{where}: variable node {nd['name']!r} has inputs")
            built.append(Node(None, nd["name"], attrs, ()))
            continue
        cls = get_op(nd["op"])
        names = set(cls.param_names())
        params = {k: v for k, v in attrs.items() if k in names}
        try:
            op = cls.from_attrs(params)
        except MXNetError as e:
            raise MXNetError(f"{where}: node {nd['name']!r}: {e}") from None
        want = len(op.arguments()) + len(op.aux_names)
        if len(inputs) != want:
            raise MXNetError(f"{where}: node {nd['name']!r} ({cls.name}) has {len(inputs)} inputs, "
                             f"expected {want} ({', '.join(op.arguments() + op.aux_names)})")
        for c, k in inputs:
            if k >= (1 if c.op is None else c.op.total_outputs()):
                raise MXNetError(f"{where}: node {nd['name']!r} uses output {k} of {c.name!r}, which has "
                                 f"{c.num_outputs()}")
        built.append(Node(op, nd["name"], attrs, tuple(inputs)))
    heads = []
    for h in doc["heads"]:
        if not isinstance(h, list) or not h or not isinstance(h[0], int) or not 0 <= h[0] < len(built):
            raise MXNetError(f"{where}: malformed head {h!r}")
        heads.append((built[h[0]], h[1] if len(h) > 1 else 0))
    if not heads:
        raise MXNetError(f"{where}: symbol JSON has no heads")
    return Symbol(heads)
