"""Keep freed host memory for reuse (glibc, one CPU), as MXNet's pooled storage manager does.

XLA:CPU allocates every step's temporaries and outputs with malloc on its executor thread.
glibc serves that thread from a per-thread arena, whose heaps hold at most 64 MB and are
unmapped once empty, and serves blocks over its mmap threshold (32 MB at most) with a fresh
mmap. A language model's step needs a 38 MB softmax and a 75 MB temporary buffer among
others, so each step faulted in new pages: about 28,000 faults, a sixth of the step.

Where the process can use one CPU only (taskset, a one-core container), per-thread arenas
protect nothing, and `tune` sets, at import, before XLA starts its threads:

- one arena for all threads (`M_ARENA_MAX` 1): the main heap, the only one that can keep
  blocks over 64 MB, serves everything;
- no mmap for large blocks (`M_MMAP_MAX` 0);
- no trimming of the heap's top below 2 GiB (`M_TRIM_THRESHOLD`).

Freed blocks then stay mapped and are reused; the process keeps its peak heap instead of
giving it back to the OS. That is right for a loop whose steps allocate the same sizes,
but a program that keeps meeting new shapes fragments the one heap: blocks that outlive a
compile (executables, caches) land between the big freed ones, and each new shape's
arrays go above them. MXNet's test_slice_pooling2d_slice_pooling2d, 16 blocks over a
512 MB input, grew to 18 GB resident that way and was killed for memory. So an XLA
compile (`compile/_same.py`) ends with `release()`: once the process's resident memory
has grown by `RELEASE_STEP` bytes since the last release, glibc's `malloc_trim(0)` hands
the free pages inside the heap back to the OS (the address range stays), and the first
step after it faults its buffers in again. Trimming after every compile instead cost a
compile-bound sweep of small arrays 5% more CPU (twice the page faults) for nothing. With several CPUs the one arena would serialize the threads'
mallocs (XLA compiles on several threads: 30% slower), so malloc is left as it is.
`JBIND_MALLOC_TUNING=1` applies the settings whatever the CPU count, `0` never.
Threads that allocated before jbind was imported keep their arenas.
"""
from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD, M_MMAP_MAX, M_ARENA_MAX = -1, -4, -8
SETTINGS = ((M_ARENA_MAX, 1), (M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, 2**31 - 1))
applied = False
_libc = None
RELEASE_STEP = 256 << 20
_released_at = [0]   # resident bytes after the last release


def wanted() -> bool:
    """JBIND_MALLOC_TUNING: '1' on, '0' off, else (default 'auto') on when one CPU is usable."""
    mode = os.environ.get("JBIND_MALLOC_TUNING", "auto")
    if mode in ("0", "1"):
        return mode == "1"
    try:
        return len(os.sched_getaffinity(0)) == 1
    except (AttributeError, OSError):
        return os.cpu_count() == 1


def tune() -> bool:
    """Apply SETTINGS when wanted and the C library is glibc; -> whether they are in effect."""
    global applied, _libc
    if applied or not sys.platform.startswith("linux") or not wanted():
        return applied
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 -- glibc's; musl and others have no such mallopt
    except (OSError, AttributeError):
        return False
    applied = all(libc.mallopt(param, value) == 1 for param, value in SETTINGS)
    _libc = libc if applied else None
    return applied


def _resident() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def release() -> bool:
    """Where SETTINGS are in effect and resident memory grew by RELEASE_STEP since the
    last release, return the free pages inside the heap to the OS (see above); -> whether
    malloc was asked to."""
    if _libc is None:
        return False
    try:
        if _resident() - _released_at[0] < RELEASE_STEP:
            return False
        _libc.malloc_trim(0)
        _released_at[0] = _resident()
    except (OSError, ValueError, IndexError):   # no /proc: trim every time
        _libc.malloc_trim(0)
    return True
