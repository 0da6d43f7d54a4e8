"""`HybridBlock.register_op_hook`: a callback for every op of a hybridized block's graph.

MXNet calls `callback(node_name, op_name, array)` from its cached op, for each op's
outputs (`NODE_output`, or `NODE_<output name>` for ops with several) and, with
`monitor_all`, first for its inputs (`NODE_<argument>`, or `NODE_input0`, ... for an op
MXNet lists no input names for). jbind installs it as the executor monitor of the
block's inference executors, which runs a second, node-by-node program over the same
inputs: the values are those of the compiled call. jbind hands an NDArray where MXNet
hands a raw NDArray handle, and, as MXNet's executor monitor, reports no hidden outputs
(BatchNorm's mean, Dropout's mask) and nothing for a training (`autograd.record()` /
`train_mode`) call.
"""
from __future__ import annotations

from ..symbol._node import topo_order


def op_names(symbol) -> dict:
    """{name a monitor reports: the op name of the node it belongs to} for `symbol`."""
    names = {}
    for n in topo_order(symbol._heads):
        if n.op is None:
            continue
        for arg in n.op.monitor_input_names():
            names[f"{n.name}_{arg}"] = n.op.name
        for k in range(n.num_outputs()):
            names[n.output_name(k)] = n.op.name
    return names


def install(exe, symbol, hook) -> None:
    """Make `exe` (bound on `symbol`) call `hook = (callback, monitor_all)` MXNet's way."""
    callback, monitor_all = hook
    ops = op_names(symbol)
    # The executor monitor also reports variables under their own names (MXNet's executor
    # does); a cached op's hook reports op nodes only.
    def report(name, arr):
        if name in ops:
            callback(name, ops[name], arr)

    exe.set_monitor_callback(report, monitor_all)
