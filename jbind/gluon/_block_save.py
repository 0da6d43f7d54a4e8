"""`Block.save(prefix)` / `Block.load(prefix)`: MXNet 1.9.1's whole-model files.

'<prefix>-model.json' holds the block tree: for each block (keyed by its class name in
lower case plus its position in a depth-first walk) its name when saved, the names its
parent gave its children and, for a HybridBlock that was called hybridized, its traced
graph (symbol JSON, as MXNet writes it). '<prefix>-model.params' is `save_parameters`.

`load` expects the same architecture built in the same order: it gives every block its
saved name and its parent's saved key for it (so structural parameter names match),
marks the blocks that were hybridized as hybridized, and loads the parameters. jbind
traces a hybridized block again on its next call rather than reusing the saved graph
(the same computation, under the current parameter names).
"""
from __future__ import annotations

import json

from ._util import check


def _walk(block, index, visit):
    visit(block, index[0])
    for child in list(block._children.values()):
        index[0] += 1
        _walk(child, index, visit)


def save_model(block, prefix: str) -> None:
    from .block import HybridBlock
    tree = {}
    parents = {id(block): tree}

    def visit(blk, i):
        entry = {"orig_name": blk.name, "children": {c.name: key for key, c in blk._children.items()}}
        parents[id(blk)][f"{type(blk).__name__.lower()}{i}"] = entry
        if isinstance(blk, HybridBlock):
            entry["hybridized"] = bool(blk._cached_graph)
            if blk._cached_graph:
                inputs, out = blk._cached_graph
                entry["in_format"], entry["out_format"] = blk._in_format, blk._out_format
                entry["inputs"] = [s.tojson() for s in inputs]
                entry["symbol"] = out.tojson()
        for c in blk._children.values():
            parents[id(c)] = entry
    _walk(block, [0], visit)
    with open(prefix + "-model.json", "w") as f:
        json.dump(tree, f, default=str)
    block.save_parameters(prefix + "-model.params")


def load_model(block, prefix: str) -> None:
    from .block import HybridBlock
    with open(prefix + "-model.json") as f:
        tree = json.load(f)
    entries = {id(block): tree}
    pending = []

    def visit(blk, i):
        key = f"{type(blk).__name__.lower()}{i}"
        scope = entries[id(blk)]
        check(key in scope, f"load('{prefix}'): the saved model has no block '{key}' here; build the model the "
              "same way, in the same order, as when it was saved")
        entry = scope[key]
        blk._name = entry["orig_name"]
        if isinstance(blk, HybridBlock) and entry.get("hybridized"):
            blk._active = True
        for c in blk._children.values():
            entries[id(c)] = entry
        pending.append((blk, entry["children"]))
    _walk(block, [0], visit)
    for blk, saved_keys in pending:  # after the walk: the children carry their saved names now
        renamed = [(saved_keys.get(c.name, key), c) for key, c in blk._children.items()]
        blk._children.clear()
        blk._children.update(renamed)
    block.load_parameters(prefix + "-model.params")
