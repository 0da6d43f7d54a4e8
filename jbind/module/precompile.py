"""Ahead-of-time compilation of every bucket's training step, on background threads."""
from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
import time


class PrecompileJob:
    """Compiles run in the background; `wait()` returns {bucket_key: seconds}.

    `modules`: {bucket_key: a module, or a callable that binds and returns it (run on
    the job's threads too)}.
    """

    def __init__(self, modules: dict, logger=logging, threads: int | None = None):
        if threads is None:  # leave a core to training
            threads = max(1, min(4, (os.cpu_count() or 2) - 1))
        self._logger = logger
        self._t0 = time.perf_counter()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="jbind-compile")
        self._futures = {key: self._pool.submit(self._one, key, mod) for key, mod in modules.items()}
        self._pool.shutdown(wait=False)
        self._lock = threading.Lock()

    def _one(self, key, mod):
        from ..compile.cache import CACHE
        if callable(mod):
            mod = mod()
        with CACHE.pinning():  # declared buckets stay compiled whatever else is bound later
            seconds = mod.compile_training()
        if seconds > 0.05:
            self._logger.info("precompiled bucket %s in %.2f s", key, seconds)
        return seconds

    def done(self) -> bool:
        return all(f.done() for f in self._futures.values())

    def wait(self) -> dict:
        out = {key: f.result() for key, f in self._futures.items()}
        self._logger.info("precompiled %d buckets in %.2f s (wall)", len(out), time.perf_counter() - self._t0)
        return out
