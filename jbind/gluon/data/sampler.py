"""`mx.gluon.data` samplers: iterables of dataset indices (and of batches of indices)."""
from __future__ import annotations

import numpy as np

from ...base import MXNetError

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler"]

LAST_BATCH = ("keep", "discard", "rollover")


class Sampler:
    """Base class: iterating yields indices; `len` is how many."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """start, start + 1, ..., start + length - 1."""

    def __init__(self, length: int, start: int = 0):
        self._length = int(length)
        self._start = int(start)

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A fresh permutation of 0 .. length-1 each pass (numpy's global random state, as MXNet)."""

    def __init__(self, length: int):
        self._length = int(length)

    def __iter__(self):
        order = np.arange(self._length)
        np.random.shuffle(order)
        return iter(order.tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of `dataset` for which `fn(sample)` is true (evaluated once)."""

    def __init__(self, fn, dataset):
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class BatchSampler(Sampler):
    """Lists of `batch_size` indices drawn from `sampler`.

    Args:
        sampler: the indices.
        batch_size: indices per batch.
        last_batch: what to do with a short final batch: 'keep' it, 'discard' it, or
            'rollover' its indices to the start of the next pass.
    """

    def __init__(self, sampler, batch_size: int, last_batch: str = "keep"):
        if last_batch not in LAST_BATCH:
            raise ValueError(f"last_batch must be one of 'keep', 'discard', or 'rollover', but got {last_batch}")
        if int(batch_size) < 1:
            raise MXNetError(f"BatchSampler: batch_size must be a positive integer, got {batch_size!r}")
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        n = len(self._sampler)
        if self._last_batch == "keep":
            return (n + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return n // self._batch_size
        return (len(self._prev) + n) // self._batch_size
