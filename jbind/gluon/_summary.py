"""`Block.summary`: a table of each layer's output shape and parameter count."""
from __future__ import annotations

from collections import OrderedDict

from ..ndarray.ndarray import NDArray
from ._util import check


def _shape_str(args) -> str:
    def shapes(a):
        if isinstance(a, (list, tuple)):
            return [shapes(x) for x in a]
        return a.shape if isinstance(a, NDArray) else a
    s = shapes(args)
    return str(s)[1:-1] if isinstance(s, list) else str(s)


def summary(block, *inputs) -> None:
    """Run `block(*inputs)` once with hooks on every non-container descendant and print
    their output shapes and parameter counts, as MXNet's `Block.summary` does."""
    from .block import HybridBlock
    from .nn.basic_layers import HybridSequential, Sequential
    table = OrderedDict()
    seen = set()
    hooks = []

    def hook(b, _, outputs):
        key = f"{b.__class__.__name__}-{len(table)}"
        row = table[key] = {"output_shape": _shape_str(outputs), "n_params": 0, "trainable": 0, "shared": 0}
        for p in b.params.values():
            size = p.data().size
            row["n_params"] += size
            row["trainable"] += 0 if p.grad_req == "null" else size
            if id(p) in seen:
                row["shared"] += size
            else:
                seen.add(id(p))

    def register(b):
        check(not isinstance(b, HybridBlock) or not b._active, f'"{b.name}" must not be hybridized to print summary.')
        if not isinstance(b, (Sequential, HybridSequential)):
            hooks.append(b.register_forward_hook(hook))

    table["Input"] = {"output_shape": _shape_str(inputs if len(inputs) > 1 else inputs[0]), "n_params": 0,
                      "trainable": 0, "shared": 0}
    try:
        block.apply(register)
        block(*inputs)
        line = "-" * 80
        print(line)
        print(f"{'Layer (type)':>20}  {'Output Shape':>42} {'Param #':>15}")
        print("=" * 80)
        total = trainable = shared = 0
        for layer, row in table.items():
            print(f"{layer:>20}  {row['output_shape']:>42} {row['n_params']:>15}")
            total += row["n_params"]
            trainable += row["trainable"]
            shared += row["shared"]
        print("=" * 80)
        print("Parameters in forward computation graph, duplicate included")
        print(f"   Total params: {total}")
        print(f"   Trainable params: {trainable}")
        print(f"   Non-trainable params: {total - trainable}")
        print(f"Shared params in forward computation graph: {shared}")
        print(f"Unique parameters in model: {total - shared}")
        print(line)
    finally:
        for h in hooks:
            h.detach()
