"""Keep freed host memory for reuse (glibc only), as MXNet's pooled storage manager does.

XLA:CPU allocates every step's temporaries and outputs with malloc on its executor threads.
glibc serves them from per-thread arenas whose heaps are unmapped once empty, and serves
blocks over its mmap threshold with a fresh mmap: either way each step touches new pages,
and a language model's step (a 38 MB softmax among them) took about 25,000 page faults,
a fifth of its time. Three `mallopt` settings, made at import before XLA starts its
threads, make freed blocks stay mapped and be reused:

- one arena for all threads (`M_ARENA_MAX` 1): the main heap is never unmapped;
- no mmap for large blocks (`M_MMAP_MAX` 0);
- no trimming of the heap's top below 2 GiB (`M_TRIM_THRESHOLD`).

The process keeps its peak heap instead of giving it back to the OS. `JBIND_MALLOC_TUNING=0`
leaves malloc as it is. Threads that allocated before jbind was imported keep their arenas.
"""
from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD, M_MMAP_MAX, M_ARENA_MAX = -1, -4, -8
SETTINGS = ((M_ARENA_MAX, 1), (M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, 2**31 - 1))
applied = False


def tune() -> bool:
    """Apply SETTINGS when the C library is glibc and the env doesn't say no; -> whether done."""
    global applied
    if applied or os.environ.get("JBIND_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return applied
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 -- glibc's; musl and others have no such mallopt
    except (OSError, AttributeError):
        return False
    applied = all(libc.mallopt(param, value) == 1 for param, value in SETTINGS)
    return applied
