"""PrefetchingIter: reads the next batch of one or more iterators on a background thread."""
from __future__ import annotations

import queue
import threading

from .io import DataBatch, DataDesc, DataIter

_END = object()


class PrefetchingIter(DataIter):
    """MXNet's `mx.io.PrefetchingIter`: batches of `iters` combined (data and labels
    concatenated in order), each fetched ahead on a background thread.

    `rename_data` / `rename_label`: per iterator, a dict old name -> new name.
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        iters = iters if isinstance(iters, list) else [iters]
        if not iters:
            raise ValueError("PrefetchingIter needs at least one iterator")
        super().__init__(iters[0].batch_size)
        self.iters = iters
        self.rename_data, self.rename_label = rename_data, rename_label
        self.provide_data = self._renamed([i.provide_data for i in iters], rename_data)
        self.provide_label = self._renamed([i.provide_label for i in iters], rename_label)
        self.current_batch = None
        self._start()

    @staticmethod
    def _renamed(lists, renames):
        out = []
        for k, descs in enumerate(lists):
            names = renames[k] if renames else {}
            for d in descs or []:
                out.append(DataDesc(names.get(d.name, d.name), d.shape, getattr(d, "dtype", None) or "float32",
                                    getattr(d, "layout", "NCHW")))
        return out

    def _start(self):
        self._queue: queue.Queue = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, daemon=True, name="jbind-prefetch")
        self._thread.start()

    def _work(self):
        while not self._stop.is_set():
            try:
                batches = [it.next() for it in self.iters]
            except StopIteration:
                self._queue.put(_END)
                return
            except BaseException as e:  # handed to the consumer, which raises it
                self._queue.put(e)
                return
            self._queue.put(batches)

    def _halt(self):
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()

    def reset(self):
        self._halt()
        for it in self.iters:
            it.reset()
        self._start()

    def next(self):
        item = self._queue.get()
        if item is _END:
            self._queue.put(_END)  # stay at the end until reset
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        first = item[0]
        data = [d for b in item for d in b.data]
        label = [lab for b in item for lab in (b.label or [])]
        self.current_batch = DataBatch(data, label or None, pad=first.pad, index=first.index,
                                       bucket_key=getattr(first, "bucket_key", None),
                                       provide_data=self.provide_data, provide_label=self.provide_label)
        return self.current_batch

    def iter_next(self):
        try:
            self.next()
            return True
        except StopIteration:
            return False

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getpad(self):
        return self.current_batch.pad

    def getindex(self):
        return self.current_batch.index

    def __del__(self):
        try:
            self._halt()
        except Exception:
            pass
