"""`Executor.set_monitor_callback`: MXNet's per-node monitor, run beside the compiled graph.

The executor's graph is one compiled function, so its intermediate values do not exist
on their own. While a callback is set, each `forward` also runs the symbol's internals
(`get_internals()`: every node's outputs) as a second compiled program on the same
arguments and aux states, and calls `callback(name, NDArray)` for each op output
(`fc1_output`), and with `monitor_all` first for each op input (`fc1_data`,
`fc1_weight`), in graph order. Differences from MXNet: the callback gets an NDArray, not a
raw handle; a graph that samples (Dropout) draws its own numbers in the monitor run; no
callbacks are made for the backward pass.
"""
from __future__ import annotations

from ..symbol.graph import graph_of


class Monitor:
    """One executor's monitor: the callback and the internals' executor, bound on first use."""

    def __init__(self, callback, monitor_all: bool):
        if not callable(callback):
            raise TypeError(f"set_monitor_callback: callback must be callable, got {type(callback).__name__}")
        self.callback, self.monitor_all = callback, bool(monitor_all)
        self._exe = None

    def run(self, executor, is_train: bool) -> None:
        sym = executor.symbol
        if self._exe is None:
            internals = sym.get_internals()
            self._exe = internals.bind(executor._ctx, args=dict(executor.arg_dict), grad_req="null",
                                       aux_states=dict(executor.aux_dict))
            self._names = internals.list_outputs()
        exe = self._exe
        for name, h in executor.arg_dict.items():  # the handles may hold new arrays since binding
            exe.arg_dict[name]._data = h._data
        for name, h in executor.aux_dict.items():
            exe.aux_dict[name]._data = h._data
        outs = exe.forward(is_train=is_train)
        g = graph_of(sym)
        for ni, node in enumerate(g.nodes):
            if node.op is None:
                continue
            if self.monitor_all:
                slots = list(node.op.arguments()) + list(node.op.aux_names)
                for slot, e in zip(slots, g.in_entries[ni]):
                    self.callback(f"{node.name}_{slot}", outs[e])
            off = g.offsets[ni]
            for k in range(len(node.op.outputs())):
                self.callback(self._names[off + k], outs[off + k])
