"""Tiered compilation on XLA:CPU: a quick compile first, XLA's optimizing one once a
program has shown it runs often.

Most programs jbind compiles run a handful of times: an operator test's executors, a
sweep over shapes, an eager op at a new shape, the first call of a model a user only
scores once. XLA:CPU's optimizing pipeline costs about three times the compile CPU of
its short one (classic emitters, LLVM -O0: a 3-layer LSTM's training program 2.2 -> 0.8 s,
its inference 0.6 -> 0.25 s), while the short one's code runs several times slower. So a
program first compiles short; its `TIER_UP_CALLS`-th call compiles it again with the
optimizing pipeline from the same lowered program, and every later call runs that. The
switch happens at a fixed call, never in the background, so a seeded run computes the
same numbers every time. Both pipelines compute the same IEEE operations (no fast math);
reductions may round differently in the last bits.

Opt-in: `JBIND_TIER_UP_CALLS=N` turns it on, switching at the N-th call (0, the default:
every program compiles optimized at once). Off by default because the tiers' results can
differ in the last bits (measured: one element of an executor's forward, 14 of 52
gradient elements, by 1-2 ulp): a program compared with its own earlier call, or re-run
after re-seeding, would differ across the switch, where MXNet repeats results exactly.
With a persistent cache folder jbind compiles optimized at once too, so that what it
stores is what later processes should run. Only the CPU
backend tiers; other backends compile once with XLA's defaults.
"""
from __future__ import annotations

import logging
import os
import threading
import time

_log = logging.getLogger("jbind.compile")


def _env_calls() -> int:
    raw = os.environ.get("JBIND_TIER_UP_CALLS", "").strip()
    try:
        return max(0, int(raw)) if raw else 0
    except ValueError:
        return 0


TIER_UP_CALLS = _env_calls()
stats = {"tier_ups": 0, "tier_up_seconds": 0.0, "tier_up_failures": 0}
_stats_lock = threading.Lock()


class Tiered:
    """A callable executable that starts as `quick` and, at its `calls`-th call, becomes
    `lowered` compiled by `optimize(lowered)`. Attributes (memory_analysis, ...) are the
    current executable's."""

    def __init__(self, lowered, quick, optimize, calls: int):
        self._lowered = lowered
        self._optimize = optimize
        self._current = quick
        self._left = calls - 1          # calls still run by the quick executable
        self._lock = threading.Lock()

    @property
    def optimized(self) -> bool:
        return self._lowered is None

    def __call__(self, *args):
        if self._lowered is not None:
            with self._lock:
                if self._left > 0:
                    self._left -= 1
                elif self._lowered is not None:
                    self._tier_up()
        return self._current(*args)

    def _tier_up(self):
        t0 = time.perf_counter()
        try:
            fast = self._optimize(self._lowered)
        except Exception as e:  # noqa: BLE001 - the quick executable still computes the same
            _log.warning("jbind: recompiling a program with XLA's optimizing pipeline failed (%s: %s); "
                         "it keeps running the quick compile", type(e).__name__, e)
            with _stats_lock:
                stats["tier_up_failures"] += 1
        else:
            self._current = fast
            with _stats_lock:
                stats["tier_ups"] += 1
                stats["tier_up_seconds"] += time.perf_counter() - t0
        self._lowered = self._optimize = None

    def __getattr__(self, name):  # memory_analysis, as_text, ...
        return getattr(self._current, name)
