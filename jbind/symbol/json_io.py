"""MXNet 1.x symbol JSON: `tojson` writes it, `load` / `load_json` read every 1.x layout."""
from __future__ import annotations

import json

from ..base import MXNetError
from ..util import is_np_shape
from ..ops._base import get_op
from ._node import Node, input_versions, paused_gc, topo_order
from .symbol import Symbol

MXNET_VERSION = 10901  # what we write: MXNet 1.9.1's layout
# Attributes MXNet stores as `__key__`; older files may have them bare (`lr_mult`) or, on an
# op node, as `<input>_<key>` (`weight_lr_mult`), which belongs to that input variable.
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


_AMP_CASTS = ("amp_cast", "amp_multicast")


def without_amp_casts(heads: list) -> list:
    """The heads with every input that reads an `amp_cast` / `amp_multicast` output rewired
    to what the cast read (MXNet's RemoveAmpCast, what `tojson` does by default); casts that
    are heads themselves stay. One pass in topological order: no recursion over the graph's
    depth, so a 100,000-node chain saves as a 10-node one does."""
    memo: dict = {}

    def entry(node, k):
        while node.op is not None and node.op.name in _AMP_CASTS:
            node, k = node.inputs[k if node.op.name == "amp_multicast" else 0]
        return memo[id(node)], k

    for node in topo_order(heads):  # inputs before their readers: memo has every input
        ins = tuple(entry(c, k) for c, k in node.inputs)
        same = all(a[0] is c and a[1] == k for a, (c, k) in zip(ins, node.inputs))
        memo[id(node)] = node if same else Node(node.op, node.name, node.attrs, ins)
    return [(memo[id(n)], k) for n, k in heads]


def to_json(sym: Symbol, remove_amp_cast: bool = True) -> str:
    with paused_gc():
        return _to_json(sym, remove_amp_cast)


def _to_json(sym: Symbol, remove_amp_cast: bool) -> str:
    doc = _graph_doc(sym._heads, remove_amp_cast)
    return _Writer().graph(doc["nodes"], doc["arg_nodes"], doc["node_row_ptr"], doc["heads"])


def _graph_doc(heads, remove_amp_cast: bool) -> dict:
    """One graph as MXNet's JSON object (without the graph attributes); a node whose op
    carries subgraphs (`_foreach`) lists them under "subgraphs", as MXNet does."""
    nodes = topo_order(heads)
    if remove_amp_cast and any(n.op is not None and n.op.name in _AMP_CASTS for n in nodes):
        heads = without_amp_casts(heads)
        nodes = topo_order(heads)
    index = {id(n): i for i, n in enumerate(nodes)}
    versions = input_versions(nodes)
    out, row_ptr, arg_nodes = [], [0], []
    for i, n in enumerate(nodes):
        entry = {"op": "null" if n.op is None else n.op.name, "name": n.name}
        if n.attrs:
            entry["attrs"] = dict(n.attrs)
        entry["inputs"] = [[index[id(c)], k, v] for (c, k), v in zip(n.inputs, versions.get(id(n), ()))]
        if n.op is not None and getattr(n.op, "subgraph_names", ()):
            entry["subgraphs"] = [_graph_doc(s._heads, remove_amp_cast) for s in n.op.subgraphs]
        out.append(entry)
        if n.op is None:
            arg_nodes.append(i)
        row_ptr.append(row_ptr[-1] + (1 if n.op is None else n.op.total_outputs()))
    return {"nodes": out, "arg_nodes": arg_nodes, "node_row_ptr": row_ptr,
            "heads": [[index[id(n)], k, 0] for n, k in heads]}


class _Writer:
    """MXNet's text layout (dmlc-core's JSONWriter, as nnvm saves a graph), so that a file
    jbind writes is the file MXNet writes: arrays of more than 10 numbers and lists of
    nodes one item a line, edges inline; objects of more than one key one key a line,
    node attributes in key order; ", " between items; only \\r \\n \\t \\\\ and \\" escaped."""

    def __init__(self):
        self.parts, self.lines = [], []   # text; one "multi-line?" flag per open scope

    def graph(self, nodes, arg_nodes, row_ptr, heads) -> str:
        # MXNet marks a graph saved under np_shape(True), where a 0 dim is a real size.
        graph_attrs = [("is_np_shape", lambda: self.array(["int", 1], False))] if is_np_shape() else []
        graph_attrs.append(("mxnet_version", lambda: self.array(["int", MXNET_VERSION], False)))
        self.obj([("nodes", lambda: self.parts.append(_nodes_text(nodes))),
                  ("arg_nodes", lambda: self.array(arg_nodes, len(arg_nodes) > 10)),
                  ("node_row_ptr", lambda: self.array(row_ptr, len(row_ptr) > 10)),
                  ("heads", lambda: self.edges(heads)),
                  ("attrs", lambda: self.obj(graph_attrs, len(graph_attrs) > 1))], True)
        return "".join(self.parts)

    def edges(self, entries):
        self.array([lambda e=e: self.array(e, False) for e in entries], len(entries) > 10)

    def newline(self):
        if not self.lines or self.lines[-1]:
            self.parts.append("\n" + "  " * len(self.lines))

    def value(self, v):
        if callable(v):
            v()
        elif isinstance(v, str):
            self.parts.append(_quote(v))
        else:
            self.parts.append(str(v))

    def array(self, items, multi_line):
        self.parts.append("[")
        self.lines.append(multi_line)
        for i, v in enumerate(items):
            if i:
                self.parts.append(", ")
            self.newline()
            self.value(v)
        self.lines.pop()
        if multi_line and items:
            self.newline()
        self.parts.append("]")

    def obj(self, items, multi_line):
        self.parts.append("{")
        self.lines.append(multi_line)
        for i, (k, v) in enumerate(items):
            if i:
                self.parts.append(", ")
            self.newline()
            self.parts.append(_quote(k) + ": ")
            self.value(v)
        self.lines.pop()
        if multi_line and items:
            self.newline()
        self.parts.append("}")


def _quote(v: str) -> str:
    return '"' + v.translate(_ESCAPES) + '"'


def _nodes_text(nodes, ind: str = "") -> str:
    """The "nodes" array as `_Writer` lays it out at depth 1 (`ind` more for a subgraph),
    written directly: one pass of string joins instead of a closure per value (a
    100,000-node graph saves in a second)."""
    i3, i4 = "\n      " + ind, "\n        " + ind  # inside a node; inside its attrs or inputs
    out = []
    for n in nodes:
        items = [f'{i3}"op": {_quote(n["op"])}', f'{i3}"name": {_quote(n["name"])}']
        attrs = n.get("attrs")
        if attrs:
            kv = [f"{_quote(k)}: {_quote(v)}" for k, v in sorted(attrs.items())]
            items.append(f'{i3}"attrs": ' + ("{" + ", ".join(i4 + x for x in kv) + i3 + "}" if len(kv) > 1
                                             else "{" + kv[0] + "}"))
        edges = ["[" + ", ".join(map(str, e)) + "]" for e in n["inputs"]]
        if len(edges) > 10:
            text = "[" + ", ".join(i4 + e for e in edges) + i3 + "]"
        else:
            text = "[" + ", ".join(edges) + "]"
        items.append(f'{i3}"inputs": {text}')
        if "subgraphs" in n:
            subs = [i4 + _subgraph_text(d, ind + "        ") for d in n["subgraphs"]]
            items.append(f'{i3}"subgraphs": [' + ", ".join(subs) + i3 + "]")
        out.append("{" + ", ".join(items) + "\n    " + ind + "}")
    return "[" + ", ".join("\n    " + ind + x for x in out) + "\n  " + ind + "]" if out else "[]"


def _subgraph_text(doc: dict, ind: str) -> str:
    """A subgraph object at indent `ind`, laid out as MXNet lays it out (no graph attributes)."""
    k = "\n  " + ind

    def arr(items):
        if len(items) > 10:
            return "[" + ", ".join(k + "  " + x for x in items) + k + "]"
        return "[" + ", ".join(items) + "]"

    parts = [f'"nodes": {_nodes_text(doc["nodes"], ind)}',
             f'"arg_nodes": {arr([str(x) for x in doc["arg_nodes"]])}',
             f'"node_row_ptr": {arr([str(x) for x in doc["node_row_ptr"]])}',
             '"heads": ' + arr(["[" + ", ".join(map(str, h)) + "]" for h in doc["heads"]])]
    return "{" + ", ".join(k + p for p in parts) + "\n" + ind + "}"


_ESCAPES = str.maketrans({"\r": "\\r", "\n": "\\n", "\\": "\\\\", "\t": "\\t", '"': '\\"'})


def load_json(json_str: str) -> Symbol:
    """Build a Symbol from MXNet JSON (attributes under `attrs`, `attr` or `param`).

    Files from before MXNet 1.9.1 are upgraded as MXNet 1.9.1 upgrades them: bare hidden
    keys (`lr_mult`, `weight_lr_mult`) become `__lr_mult__` attributes; before 0.9 (no
    `mxnet_version`) missing inputs, such as BatchNorm's moving statistics, become
    variables named `<node>_<input>`; before 0.9.4 BatchNorm's moving statistics get their
    `__init__`; before 0.9.5 `argmax`/`argmin` with axis -1 reduce over all elements.
    """
    if not isinstance(json_str, str):
        raise TypeError(f"load_json expects a string, got {type(json_str).__name__}")
    return _from_doc(_parse(json_str, "symbol JSON"), "<json>")


def load(fname: str) -> Symbol:
    """Load a symbol saved with `Symbol.save` or MXNet's `-symbol.json`."""
    try:
        with open(fname, "r", encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise MXNetError(f"cannot read symbol file {fname!r}: {e}") from None
    return _from_doc(_parse(text, f"symbol file {fname!r}"), fname)


def _parse(text: str, what: str):
    try:
        with paused_gc():  # strict=False: control characters in strings, as MXNet writes and reads them
            return json.loads(text, strict=False)
    except json.JSONDecodeError as e:
        raise MXNetError(f"{what} is not valid JSON: {e}") from None
    except RecursionError:  # json's decoder recurses once per level of nesting
        raise MXNetError(f"{what} is nested too deeply to be a symbol (a symbol's JSON is 5 levels "
                         "deep)") from None


def _from_doc(doc, where: str) -> Symbol:
    try:
        with paused_gc():
            return _build(doc, where)
    except MXNetError:
        raise
    except (TypeError, KeyError, ValueError, AttributeError, IndexError) as e:
        raise MXNetError(f"{where}: malformed symbol JSON ({type(e).__name__}: {e})") from None


def _version(doc, where: str) -> int:
    attrs = doc.get("attrs")
    v = attrs.get("mxnet_version") if isinstance(attrs, dict) else None
    if v is None:
        return 800  # MXNet 0.8: files written before the version was recorded
    if not (isinstance(v, list) and len(v) == 2 and v[0] == "int" and type(v[1]) is int):
        raise MXNetError(f"{where}: malformed mxnet_version {v!r} (expected [\"int\", <version>])")
    return v[1]


def _hidden_keys(attrs: dict, is_variable: bool) -> tuple[dict, dict]:
    """MXNet's UpgradeJSON_FixParsing: -> (node attrs, {input name: attrs for that input})."""
    out, moved = {}, {}
    for k, v in attrs.items():
        for key in HIDDEN_KEYS:
            if k == key:
                out[f"__{key}__"] = v
                break
            if not is_variable and len(k) > len(key) + 1 and k.endswith("_" + key):
                moved.setdefault(k[:-len(key) - 1], {})[f"__{key}__"] = v
                break
        else:
            out[k] = v
    return out, moved


def _with_subgraphs(op, nd: dict, where: str, i: int, version: int, depth: int):
    """The op of node `nd` with the subgraphs its JSON lists (MXNet's "subgraphs" key)."""
    subs = nd.get("subgraphs")
    wants = getattr(op, "subgraph_names", ())
    if not wants:
        if subs:
            _node_error(where, i, nd, "has 'subgraphs', but the op takes none")
        return op
    if not isinstance(subs, list) or len(subs) != len(wants):
        _node_error(where, i, nd, f"needs {len(wants)} subgraph(s) under 'subgraphs', got "
                                  f"{len(subs) if isinstance(subs, list) else repr(subs)}")
    if depth >= MAX_SUBGRAPH_DEPTH:
        _node_error(where, i, nd, f"subgraphs nested more than {MAX_SUBGRAPH_DEPTH} deep")
    built = [_build(s, f"{where}: node {i} ({nd['name']!r}) subgraph {k}", version, depth + 1)
             for k, s in enumerate(subs)]
    try:
        return op.with_subgraphs(built)
    except MXNetError as e:
        _node_error(where, i, nd, str(e))


def _node_error(where: str, i: int, nd: dict, msg: str):
    raise MXNetError(f"{where}: node {i} ({nd['name']!r}, op {nd['op']!r}): {msg}")


MAX_SUBGRAPH_DEPTH = 64  # subgraphs inside subgraphs, as a file may nest them: bounded before recursing


def _build(doc, where: str, version=None, depth: int = 0) -> Symbol:
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or "heads" not in doc:
        raise MXNetError(f"{where}: not an MXNet symbol JSON (needs 'nodes' and 'heads')")
    if version is None:
        version = _version(doc, where)
    built: list[Node] = []
    ops: dict = {}
    for i, nd in enumerate(doc["nodes"]):
        if not isinstance(nd, dict) or not isinstance(nd.get("op"), str) or not isinstance(nd.get("name"), str):
            raise MXNetError(f"{where}: node {i} lacks a string 'op' or 'name'")
        attrs = {}
        for k in ("param", "attr", "attrs"):
            if isinstance(nd.get(k), dict):
                attrs.update({str(a): str(v) for a, v in nd[k].items()})
        moved = {}
        if version < MXNET_VERSION:
            attrs, moved = _hidden_keys(attrs, nd["op"] == "null")
        raw_inputs = nd.get("inputs", [])
        if not isinstance(raw_inputs, list):
            _node_error(where, i, nd, f"'inputs' must be a list, got {raw_inputs!r}")
        inputs = []
        for inp in raw_inputs:
            if not isinstance(inp, list) or len(inp) < 2 or not all(type(x) is int for x in inp[:2]):
                _node_error(where, i, nd, f"malformed input {inp!r} (expected [node, output, version])")
            src, k = inp[0], inp[1]
            if src >= i:
                _node_error(where, i, nd, f"input {inp!r} refers to node {src}, which does not come before "
                                          "it (a cycle, or nodes out of order)")
            if src < 0:
                _node_error(where, i, nd, f"input {inp!r} refers to node {src}")
            c = built[src]
            if not 0 <= k < (1 if c.op is None else c.op.total_outputs()):
                _node_error(where, i, nd, f"input {inp!r} uses output {k} of {c.name!r}, which has "
                                          f"{c.num_outputs()} output(s)")
            inputs.append((c, k))
        if nd["op"] == "null":
            if inputs:
                _node_error(where, i, nd, "a variable has inputs")
            built.append(Node(None, nd["name"], attrs, ()))
            continue
        try:
            cls = get_op(nd["op"])
        except MXNetError as e:
            _node_error(where, i, nd, str(e))
        if version < 905 and cls.name in ("argmax", "argmin") and attrs.get("axis") == "-1":
            del attrs["axis"]  # MXNet 0.9.5 made axis optional; -1 meant "all elements"
        op_key = (cls, tuple(attrs.items()))
        op = ops.get(op_key)  # ops are immutable: nodes with one configuration share one
        if op is None:
            try:
                op = ops[op_key] = cls.from_attrs(cls.params_in(attrs))
            except MXNetError as e:
                _node_error(where, i, nd, str(e))
        op = _with_subgraphs(op, nd, where, i, version, depth)
        slots = op.arguments() + op.aux_names
        if version < 900:  # MXNet 0.8 did not store aux states (nor always the weights)
            for a in slots[len(inputs):]:
                var_attrs = {**attrs, **op.input_var_attrs.get(a, {})}
                inputs.append((Node(None, f"{nd['name']}_{a}", var_attrs, ()), 0))
        if len(inputs) != len(slots):
            _node_error(where, i, nd, f"has {len(inputs)} inputs, expected {len(slots)} "
                                      f"({', '.join(slots) or 'none'})")
        for (c, _), a in zip(inputs, slots):
            if c.op is None and version < 904:
                for key, v in op.input_var_attrs.get(a, {}).items():
                    c.attrs.setdefault(key, v)
            if c.op is None and a in moved:
                c.attrs.update(moved.pop(a))
        for a, extra in moved.items():  # `<name>_lr_mult` naming no variable input stays as it was
            attrs.update({f"{a}_{key[2:-2]}": v for key, v in extra.items()})
        built.append(Node(op, nd["name"], attrs, tuple(inputs)))
    heads = []
    if not isinstance(doc["heads"], list):
        raise MXNetError(f"{where}: 'heads' must be a list, got {doc['heads']!r}")
    for h in doc["heads"]:
        if not isinstance(h, list) or not h or not all(type(x) is int for x in h[:2]) \
                or not 0 <= h[0] < len(built):
            raise MXNetError(f"{where}: malformed head {h!r} (the symbol has {len(built)} nodes)")
        node, k = built[h[0]], h[1] if len(h) > 1 else 0
        if not 0 <= k < node.num_outputs():
            raise MXNetError(f"{where}: head {h!r} uses output {k} of {node.name!r}, which has "
                             f"{node.num_outputs()} output(s)")
        heads.append((node, k))
    if not heads:
        raise MXNetError(f"{where}: symbol JSON has no heads")
    return Symbol(heads)
