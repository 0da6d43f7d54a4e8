"""Graph nodes: immutable, hash-consed by structure.

A node's `key` is computed once when the node is built, from its op and parameters
(or, for a Variable, its name and shape/dtype hints) and its inputs' keys. Keys are the
same in every process (strings go through `stable_hash`), so a persistent cache can file
executables under them. Op node
names are not part of the key: they do not change what the graph computes, and a
generator called twice names its nodes differently only where MXNet would too.
"""
from __future__ import annotations

import contextlib
import gc
from typing import Optional

from .._memo import stable_hash

from ..ops._base import Op



class Node:
    __slots__ = ("op", "name", "attrs", "inputs", "key", "__weakref__")

    def __init__(self, op: Optional[Op], name: str, attrs: dict, inputs: tuple):
        self.op = op
        self.name = name
        self.attrs = attrs          # strings, as MXNet's JSON keeps them
        self.inputs = inputs        # ((Node, output_index), ...): arguments, then aux states
        if op is None:
            self.key = stable_hash(repr(("var", name, attrs.get("__shape__"), attrs.get("__dtype__"))))
        else:
            self.key = hash((op.hash_key(), tuple((n.key, i) for n, i in inputs)))  # ints: same in every process

    @property
    def is_variable(self) -> bool:
        return self.op is None

    def num_outputs(self) -> int:
        return 1 if self.op is None else len(self.op.outputs())

    def num_args(self) -> int:
        return len(self.inputs) - (len(self.op.aux_names) if self.op is not None else 0)

    def output_name(self, i: int) -> str:
        if self.op is None:
            return self.name
        return f"{self.name}_{self.op.outputs()[i]}"

    def __repr__(self):
        return f"<Node {self.op.name if self.op else 'Variable'} {self.name}>"


def topo_order(heads) -> list[Node]:
    """Nodes reachable from `heads` in MXNet's DFS post-order (inputs in order)."""
    order, seen = [], set()
    stack = [(n, False) for n, _ in reversed(heads)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child, _ in reversed(node.inputs):
            if id(child) not in seen:
                stack.append((child, False))
    return order


def input_versions(nodes) -> dict:
    """MXNet's version of each op node's input edges, for `nodes` in topological order:
    {id(node): [version per input]}. A variable's version counts the ops that wrote it
    (took it as an aux state) so far, that op included; other edges are version 0."""
    written: dict[int, int] = {}
    out = {}
    for n in nodes:
        if n.op is None:
            continue
        versions = []
        for k, (c, _) in enumerate(n.inputs):
            if c.op is not None:
                versions.append(0)
                continue
            if k >= n.num_args():
                written[id(c)] = written.get(id(c), 0) + 1
            versions.append(written.get(id(c), 0))
        out[id(n)] = versions
    return out


@contextlib.contextmanager
def paused_gc():
    """Python's cycle collector paused while a pass builds one object per node: it would
    otherwise walk every node built so far again and again (half the time of loading a
    100,000-node graph). Nodes hold no cycles; what the pass drops is freed by refcount."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
