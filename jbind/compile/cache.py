"""The compile cache: structural keys -> compiled XLA executables.

JAX's own caches are keyed by function identity, and every freshly generated symbol
gives a fresh function, so jbind keys compiled executables by what they compute: the
graph's fingerprint, the bucket's shapes and dtypes, grad_req, mode and devices.
The cache is thread-safe with single flight, LRU-bounded, and every miss is recorded
with the part of the key that differed from the nearest entry.
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import Future
from typing import Callable

from . import store


@dataclasses.dataclass(frozen=True)
class CacheKey:
    graph: str
    shapes: tuple          # ((name, shape), ...)
    dtypes: tuple          # ((name, dtype name), ...)
    grad_req: tuple        # ((name, req), ...)
    mode: str              # "infer" | "train_fwd" | "train"
    devices: tuple         # (str(device), ...)

    def diff(self, other: "CacheKey") -> str:
        parts = []
        for f in dataclasses.fields(self):
            a, b = getattr(other, f.name), getattr(self, f.name)
            if a == b:
                continue
            if isinstance(a, tuple) and a and isinstance(a[0], tuple):
                da, db = dict(a), dict(b)
                changed = [f"{k}: {da.get(k)} -> {db.get(k)}" for k in sorted(set(da) | set(db), key=str)
                           if da.get(k) != db.get(k)]
                parts.append(f"{f.name} ({'; '.join(changed[:4])}{'; ...' if len(changed) > 4 else ''})")
            elif f.name == "graph":
                parts.append(f"graph ({a[:8]} -> {b[:8]})")
            else:
                parts.append(f"{f.name} ({a} -> {b})")
        return ", ".join(parts)


@dataclasses.dataclass
class Miss:
    key: CacheKey
    differs: str           # what differed from the nearest cached key ("new" if none)
    seconds: float


class CompileCache:
    """Thread-safe LRU of compiled functions with single flight and statistics."""

    def __init__(self, max_entries: int = 512, max_bytes: int | None = None):
        self.max_entries = max_entries
        self.max_bytes = max_bytes     # bound on the executables' estimated size (None: none)
        self._entries: "OrderedDict[CacheKey, object]" = OrderedDict()
        self._sizes: dict = {}         # key -> estimated bytes
        self._inflight: dict[CacheKey, Future] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.compile_seconds = 0.0
        self.miss_log: deque = deque(maxlen=256)
        self._pinned: set = set()
        self._local = threading.local()
        self._since_release = 0

    @contextlib.contextmanager
    def pinning(self):
        """Keys looked up in this thread inside the block are pinned: never evicted."""
        old = getattr(self._local, "pin", False)
        self._local.pin = True
        try:
            yield
        finally:
            self._local.pin = old

    def unpin_all(self):
        with self._lock:
            self._pinned.clear()

    def has(self, key: CacheKey) -> bool:
        """Whether `key` is compiled (neither a hit nor a miss)."""
        with self._lock:
            return key in self._entries

    def get(self, key: CacheKey, build: Callable[[], object]):
        """Return the entry for `key`, calling `build()` once if it is missing."""
        pin = getattr(self._local, "pin", False)
        with self._lock:
            if pin:
                self._pinned.add(key)
            fn = self._entries.get(key)
            if fn is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return fn
            fut = self._inflight.get(key)
            owner = fut is None
            if owner:
                fut = self._inflight[key] = Future()
                self.misses += 1
                differs = self._nearest_diff(key)
        if not owner:
            return fut.result()
        t0 = time.perf_counter()
        try:
            fn = store.build(key, build)  # a restarted process loads: no tracing, no lowering
        except BaseException as e:
            with self._lock:
                del self._inflight[key]
            fut.set_exception(e)
            raise
        dt = time.perf_counter() - t0
        size = estimate_bytes(fn)
        with self._lock:
            self._entries[key] = fn
            self._sizes[key] = size
            del self._inflight[key]
            self.compile_seconds += dt
            self.miss_log.append(Miss(key, differs, dt))
            self._evict()
        fut.set_result(fn)
        return fn

    def _evict(self):
        """Drop least recently used unpinned entries until within bounds (count and bytes)."""
        excess = len(self._entries) - self.max_entries
        over = self.nbytes() - self.max_bytes if self.max_bytes is not None else 0
        if excess <= 0 and over <= 0:
            return
        for k in [k for k in self._entries if k not in self._pinned]:
            if excess <= 0 and over <= 0:
                break
            del self._entries[k]
            over -= self._sizes.pop(k, 0)
            excess -= 1
            self.evictions += 1
            self._since_release += 1
        if self._since_release >= max(64, self.max_entries):  # the cache has turned over
            self._since_release = 0
            release_jax_traces()

    def _nearest_diff(self, key: CacheKey) -> str:
        best, score = None, -1
        for k in reversed(self._entries):
            s = sum(getattr(k, f.name) == getattr(key, f.name) for f in dataclasses.fields(key))
            if s > score:
                best, score = k, s
        return "new" if best is None else key.diff(best)

    def __len__(self):
        return len(self._entries)

    def __contains__(self, key):
        return key in self._entries

    def nbytes(self) -> int:
        """Estimated bytes of the executables held (see `estimate_bytes`)."""
        return sum(self._sizes.get(k, 0) for k in self._entries)

    def clear(self):
        with self._lock:
            self._entries.clear()
            self._sizes.clear()

    def stats(self) -> dict:
        return {"hits": self.hits, "misses": self.misses, "entries": len(self._entries), "pinned": len(self._pinned),
                "evictions": self.evictions, "compile_seconds": self.compile_seconds,
                "max_entries": self.max_entries, "bytes": self.nbytes(), "max_bytes": self.max_bytes}


# What one executable costs when XLA does not say: the RSS an unbounded cache grows by per
# executable of a small MLP on XLA:CPU (benchmarks/rss_bench.py, RESULTS.md), whose
# reported generated-code size is 0.
DEFAULT_EXECUTABLE_BYTES = 470 * 1024


def estimate_bytes(fn) -> int:
    """An executable's size: XLA's generated code plus its constants when it reports them,
    else DEFAULT_EXECUTABLE_BYTES."""
    try:
        m = fn.memory_analysis()
        size = int(m.generated_code_size_in_bytes) + int(getattr(m, "constant_size_in_bytes", 0) or 0)
    except Exception:  # not a Compiled, or a backend without the analysis
        size = 0
    return size if size > 0 else DEFAULT_EXECUTABLE_BYTES


def release_jax_traces() -> None:
    """Drop JAX's memo of traced calls. Tracing a graph calls jitted jax.numpy functions
    (add, matmul, ...), and JAX 0.10 keeps one jaxpr per function and shape seen, without
    bound; a process binding ever new shapes would grow by ~70 KB per compile. Only
    tracing reuses the memo (JAX's dispatch caches and our executables are untouched)."""
    try:
        from jax._src.interpreters import partial_eval
        partial_eval.trace_to_jaxpr.cache_clear()
    except (ImportError, AttributeError):  # pragma: no cover - another JAX
        pass


CACHE = CompileCache()


def stats() -> dict:
    """Hits, misses, entries, evictions and seconds spent compiling, process-wide; and the
    programs recompiled with the optimizing pipeline after their first calls (`tier_ups`,
    `tier_up_seconds`; see `_tiered`); misses whose program had been compiled under another
    key already and took that executable (`same_program`; see `_same`)."""
    from . import _same, _tiered
    return {**CACHE.stats(), **_tiered.stats, "same_program": _same.shared()}


def misses() -> list:
    """The recorded misses, oldest first: each with its key, what differed, and seconds."""
    return list(CACHE.miss_log)


def clear() -> None:
    CACHE.clear()


def set_max_entries(n: int) -> None:
    """Bound the number of compiled executables kept (pinned ones are never evicted)."""
    CACHE.max_entries = int(n)
    with CACHE._lock:
        CACHE._evict()


def set_max_bytes(n) -> None:
    """Bound the executables' estimated bytes (None: no bound); least recently used
    unpinned entries go first, pinned ones never."""
    CACHE.max_bytes = None if n is None else int(n)
    with CACHE._lock:
        CACHE._evict()


@contextlib.contextmanager
def count_compiles():
    """Count cache misses (compiles) inside the block: `with count_compiles() as n: ...; n()`."""
    start = CACHE.misses
    yield lambda: CACHE.misses - start
