"""`mx.gluon.data.DataLoader`: batches of a Dataset, loaded in this process, in worker
processes or in threads."""
from __future__ import annotations

import numpy as np

from ... import context
from ... import ndarray as nd
from ...base import MXNetError
from ...ndarray.ndarray import NDArray
from ._workers import ProcessPool, ThreadPool
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_batchify_fn"]


def default_batchify_fn(data):
    """Stack a list of samples into a batch: NDArrays and arrays into one NDArray with a new
    first axis, tuples element by element (a list of batches, one per element)."""
    first = data[0]
    if isinstance(first, NDArray):
        return nd.array(np.stack([d.asnumpy() for d in data]), dtype=first.dtype)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(column)) for column in zip(*data)]
    arr = np.asarray(data)
    if arr.dtype.kind in "OUSV":
        raise MXNetError(f"default_batchify_fn: cannot stack samples of type {type(first).__name__} into an "
                         f"NDArray (numpy made dtype {arr.dtype}); pass a batchify_fn")
    return nd.array(arr, dtype=arr.dtype)


def _as_in_context(batch, ctx):
    """The NDArrays of `batch` (nested in lists / tuples) moved to `ctx`."""
    if isinstance(batch, NDArray):
        return batch.as_in_context(ctx)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_as_in_context(b, ctx) for b in batch)
    return batch


class DataLoader:
    """Loads a Dataset and returns mini-batches, as MXNet 1.9.1's DataLoader.

    Args:
        dataset: a Dataset (anything with `len` and indexing).
        batch_size: samples per batch (required unless batch_sampler is given).
        shuffle: a new random order each epoch.
        sampler: the order of the samples (excludes shuffle).
        last_batch: 'keep' (default), 'discard' or 'rollover' a short last batch.
        batch_sampler: yields lists of indices (excludes batch_size, shuffle, sampler, last_batch).
        batchify_fn: list of samples -> batch (default `default_batchify_fn`).
        num_workers: worker processes loading samples (0: in this process). Workers come from
            a forkserver (not a fork of this process) and receive the dataset pickled once;
            they send samples back as arrays and scalars (no pickles), and `batchify_fn` runs
            in this process.
        pin_memory, pin_device_id: batches on `cpu_pinned(pin_device_id)` (jbind has no separate
            pinned memory: that context is a label on the CPU device, as MXNet reports it).
        prefetch: batches requested ahead (default 2 * num_workers).
        thread_pool: use `num_workers` threads instead of processes (any sample type).
        timeout: seconds to wait for a worker's batch before an MXNetError.
        auto_reload: start the workers now rather than at the first iteration (MXNet also
            loads the first batches ahead; jbind requests them when an epoch starts).
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False, pin_device_id=0,
                 prefetch=None, thread_pool=False, timeout=120, auto_reload=False):
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        if not timeout > 0:
            raise MXNetError(f"DataLoader: timeout must be positive, given {timeout}")
        self._timeout = timeout
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless batch_sampler is specified")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle else SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("batch_size, shuffle, sampler and last_batch must not be specified if "
                             "batch_sampler is specified.")
        self._batch_sampler = batch_sampler
        self._num_workers = max(int(num_workers), 0)
        self._thread_pool = bool(thread_pool)
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._batchify_fn = batchify_fn if batchify_fn is not None else default_batchify_fn
        self._pool = None
        self.auto_reload = auto_reload
        if auto_reload and self._num_workers:
            self._start_pool()

    def __len__(self):
        return len(self._batch_sampler)

    def __iter__(self):
        if self._num_workers == 0:
            batches = self._serial()
        else:
            batches = self._threaded() if self._thread_pool else self._multiprocess()
        if not self._pin_memory:
            return batches
        pinned = context.cpu_pinned(self._pin_device_id)
        return (_as_in_context(b, pinned) for b in batches)

    def _start_pool(self):
        if self._pool is None:
            self._pool = (ThreadPool(self._num_workers, self._timeout) if self._thread_pool else
                          ProcessPool(self._dataset, self._num_workers, self._timeout))
        return self._pool

    def _load(self, batch):
        return self._batchify_fn([self._dataset[i] for i in batch])

    def _serial(self):
        for batch in self._batch_sampler:
            yield self._load(batch)

    def _ahead(self):
        return max(self._prefetch, 1)

    def _threaded(self):
        pool = self._start_pool()
        yield from self._pipelined(lambda batch: pool.submit(self._load, batch), pool.receive, pool.drain)

    def _multiprocess(self):
        pool = self._start_pool()
        to_nd = nd.array

        def receive():
            return self._batchify_fn(pool.receive(to_nd))
        yield from self._pipelined(pool.submit, receive, lambda: pool.drain(to_nd))

    def _pipelined(self, submit, receive, drain):
        """Keep up to `prefetch` batches requested; yield them in order; on an early exit drop
        the answers still outstanding so that the next epoch starts clean."""
        batches = iter(self._batch_sampler)
        outstanding = 0
        try:
            for batch in batches:
                submit(batch)
                outstanding += 1
                if outstanding >= self._ahead():
                    break
            while outstanding:
                out = receive()
                outstanding -= 1
                for batch in batches:
                    submit(batch)
                    outstanding += 1
                    break
                yield out
        finally:
            if outstanding:
                drain()

    def close(self) -> None:
        """Stop the worker processes or threads (they start again on the next iteration)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass
