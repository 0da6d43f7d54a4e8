"""`mx.gluon.contrib.data.IntervalSampler`."""
from __future__ import annotations

from ....base import MXNetError
from ...data.sampler import Sampler

__all__ = ["IntervalSampler"]


class IntervalSampler(Sampler):
    """0, interval, 2 * interval, ... below `length`; with `rollover`, then 1, 1 + interval, ...
    and so on until every index is visited (IntervalSampler(13, 3): 0, 3, 6, 9, 12, 1, 4, ...).

    `len` is the number of indices yielded (MXNet 1.9.1 says `length` even without rollover).
    """

    def __init__(self, length: int, interval: int, rollover: bool = True):
        if not 0 < interval <= length:
            raise MXNetError(f"IntervalSampler: interval {interval} must be positive and at most length {length}")
        self._length, self._interval, self._rollover = int(length), int(interval), rollover

    def __iter__(self):
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self):
        return self._length if self._rollover else len(range(0, self._length, self._interval))
