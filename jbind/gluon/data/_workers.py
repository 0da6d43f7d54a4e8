"""Worker processes and threads for DataLoader.

Processes come from a 'forkserver' that has imported jbind but started no JAX runtime
(JAX's runtime does not survive fork, and 'spawn' would import jbind again in every
worker): each receives the dataset once, when it starts (pickled by this process, for its
own child), then index lists;
it sends back the samples through `_wire` (arrays and scalars, no pickles), so nothing a
worker sends can make the main process run code.
"""
from __future__ import annotations

import multiprocessing
import pickle
import random
import traceback
import zlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...base import MXNetError
from . import _wire

_OK, _FAILED = b"\x00", b"\x01"


def _worker_loop(conn, dataset, seed):
    """Runs in a worker process: index lists in, encoded samples out, until an empty message."""
    np.random.seed(seed % (2 ** 32))
    random.seed(seed)
    try:
        from ... import random as mx_random  # noqa: PLC0415 - seeds jbind's stream in this process
        mx_random.seed(seed % (2 ** 31))
    except Exception:  # noqa: BLE001 - a worker without jbind's random ops still serves samples
        pass
    while True:
        try:
            msg = conn.recv_bytes()
        except EOFError:
            return
        if not msg:
            return
        try:
            indices = _wire.decode(msg, np.asarray)
            reply = _OK + _wire.encode([dataset[i] for i in indices])
        except Exception:  # noqa: BLE001 - the main process re-raises it with this traceback
            reply = _FAILED + traceback.format_exc().encode("utf-8", "replace")
        conn.send_bytes(reply)


class ProcessPool:
    """`num_workers` processes each holding `dataset`; `fetch(indices)` calls are answered in order."""

    def __init__(self, dataset, num_workers: int, timeout: float):
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["__main__", "jbind"])  # once started, the server keeps its preloads
        self._timeout = timeout
        self._conns, self._procs = [], []
        self._next = 0
        self._pending = deque()  # worker ids with an outstanding request, oldest first
        # worker seeds follow numpy's global state without drawing from it, so that a seeded
        # shuffle gives the same order with and without workers
        base = zlib.crc32(np.random.get_state()[1].tobytes())
        for w in range(num_workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker_loop, args=(child, dataset, base + 7919 * w), daemon=True)
            try:
                proc.start()
            except (pickle.PicklingError, AttributeError, TypeError) as e:
                child.close()
                parent.close()
                self.close()
                raise MXNetError(f"DataLoader(num_workers={num_workers}): worker processes receive the dataset "
                                 f"pickled, and it cannot be pickled ({e}). Use "
                                 "module-level functions or classes as transforms (not lambdas or local "
                                 "functions), or pass thread_pool=True") from e
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)

    def submit(self, indices) -> None:
        w = self._next
        self._next = (w + 1) % len(self._conns)
        self._conns[w].send_bytes(_wire.encode(list(indices)))
        self._pending.append(w)

    def __len__(self):
        return len(self._pending)

    def receive(self, to_nd):
        """The samples of the oldest outstanding request."""
        w = self._pending.popleft()
        conn, proc = self._conns[w], self._procs[w]
        if not conn.poll(self._timeout):
            state = "is still working" if proc.is_alive() else f"exited with code {proc.exitcode}"
            self.close()
            raise MXNetError(f"DataLoader: worker {w} sent no batch within timeout={self._timeout}s (it {state})")
        try:
            msg = conn.recv_bytes()
        except EOFError as e:
            self.close()
            raise MXNetError(f"DataLoader: worker process {w} died (exit code {proc.exitcode})") from e
        if msg[:1] == _FAILED:
            raise MXNetError("DataLoader: a worker process failed to load a batch:\n"
                             + msg[1:].decode("utf-8", "replace"))
        return _wire.decode(msg[1:], to_nd)

    def drain(self, to_nd) -> None:
        """Collect and drop the answers still outstanding (an epoch left before its end)."""
        while self._pending:
            try:
                self.receive(to_nd)
            except MXNetError:
                pass

    def close(self) -> None:
        for conn in self._conns:
            try:
                conn.send_bytes(b"")
            except (OSError, ValueError):
                pass
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
        for conn in self._conns:
            conn.close()
        self._conns, self._procs, self._pending = [], [], deque()


class ThreadPool:
    """`num_workers` threads loading and batchifying whole batches; answered in order."""

    def __init__(self, num_workers: int, timeout: float):
        self._pool = ThreadPoolExecutor(max_workers=num_workers, thread_name_prefix="DataLoader")
        self._timeout = timeout
        self._pending = deque()

    def submit(self, fn, *args) -> None:
        self._pending.append(self._pool.submit(fn, *args))

    def __len__(self):
        return len(self._pending)

    def receive(self):
        return self._pending.popleft().result(timeout=self._timeout)

    def drain(self) -> None:
        while self._pending:
            self._pending.popleft().cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
