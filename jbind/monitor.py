"""`mx.mon` / `mx.monitor`: statistics of every node's values during training (MXNet's `Monitor`).

    mon = mx.mon.Monitor(interval=10, pattern='fc.*')
    mod.install_monitor(mon)               # or mon.install(executor)
    mon.tic(); mod.forward_backward(batch); mod.update()
    for step, name, value in mon.toc():    # or mon.toc_print()
        ...

Between `tic` and `toc` of every `interval`-th step, each installed executor reports its
node outputs after forward and its nodes' input gradients after backward (see
`Executor.set_monitor_callback`); `toc` adds the arguments and aux states. Names are
kept where they match the regular expression `pattern`; each value goes through
`stat_func` (default: the norm divided by the square root of the size).
"""
from __future__ import annotations

import logging
import math
import re

from .ndarray import NDArray

__all__ = ["Monitor"]


def _norm_stat(x: NDArray) -> NDArray:
    return x.norm() / math.sqrt(x.size)


class Monitor:
    """MXNet's `mx.mon.Monitor(interval, stat_func=None, pattern='.*', sort=False, monitor_all=False)`.

    Args:
        interval: monitor every `interval`-th step (counted by `tic`).
        stat_func: NDArray -> NDArray or list of NDArrays, the statistic reported.
        pattern: a regular expression; only matching names are reported.
        sort: sort `toc`'s result by name.
        monitor_all: also report every node's inputs in forward.
    """

    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        self.interval = interval
        self.stat_func = stat_func if stat_func is not None else _norm_stat
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all
        self.activated = False
        self.queue: list = []
        self.step = 0
        self.exes: list = []

    def stat_helper(self, name, array):
        """The executor callback: queue `stat_func(array)` while active and `name` matches."""
        if self.activated and self.re_prog.match(name):
            self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe):
        """Report `exe`'s values from now on."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self):
        """Start a step; collection is on if the step is a multiple of `interval`."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """End the step: [(step, name, statistic as text)], arguments and aux states included."""
        if not self.activated:
            return []
        for exe in self.exes:
            for names, arrays in ((exe._symbol.list_arguments(), exe.arg_arrays),
                                  (exe._symbol.list_auxiliary_states(), exe.aux_arrays)):
                for name, array in zip(names, arrays):
                    self.stat_helper(name, array)
        self.activated = False
        queue, self.queue = self.queue, []
        if self.sort:
            queue.sort(key=lambda item: item[1])
        res = []
        for step, name, stats in queue:
            stats = [stats] if isinstance(stats, NDArray) else list(stats)
            text = "".join((str(v.asscalar()) if v.shape in ((), (1,)) else str(v.asnumpy())) + "\t" for v in stats)
            res.append((step, name, text))
        return res

    def toc_print(self):
        """`toc`, logged at INFO level."""
        for step, name, text in self.toc():
            logging.info("Batch: %7d %30s %s", step, name, text)
