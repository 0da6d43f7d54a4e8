"""Bounds checked before anything is built from a file or a parameter.

A 200-byte symbol JSON can ask for a billion outputs (`SliceChannel num_outputs`) or a
`__shape__` of 10^11 elements; jbind refuses such requests with an `MXNetError` naming
the node and the number before it builds a tuple or allocates an array. The limits are
far above what real models use and can be raised through the environment:

- `JBIND_MAX_COUNT` (default 100,000): a count parameter (`num_args`, `num_outputs`,
  `sections`, `num_layers`): the number of inputs, outputs or layers of one node.
- `JBIND_MAX_ELEMENTS` (default 2**36, about 6.9e10): the elements of one array.

`check_fits` compares the bytes a bind is about to allocate with what the device has
(available physical memory for a CPU, `memory_stats()` for an accelerator);
`JBIND_MEMORY_CHECK=0` turns that check off.
"""
from __future__ import annotations

import math
import os

from .base import MXNetError

COUNT_PARAMS = ("num_args", "num_outputs", "sections", "num_layers")
SMALL = 64 << 20  # binds below this many bytes skip the memory check (a file read)


_PARSED: dict = {}  # (variable, its text) -> value: inference checks every shape it sets


def _env_int(name: str, default: int) -> int:
    v = os.environ.get(name)
    got = _PARSED.get((name, v))
    if got is not None:
        return got
    if v is None or not v.strip():
        return default
    try:
        n = int(v)
    except ValueError:
        raise MXNetError(f"{name}={v!r} is not an integer") from None
    if n < 1:
        raise MXNetError(f"{name}={v!r} must be positive")
    return _PARSED.setdefault((name, v), n)


def max_count() -> int:
    return _env_int("JBIND_MAX_COUNT", 100_000)


def max_elements() -> int:
    return _env_int("JBIND_MAX_ELEMENTS", 2**36)


def check_count(what: str, param: str, n) -> None:
    """Raise if count parameter `param` of `what` (an op) exceeds `JBIND_MAX_COUNT`."""
    limit = max_count()
    if isinstance(n, int) and n > limit:
        raise MXNetError(f"{what}: {param}={n} exceeds the limit of {limit} (JBIND_MAX_COUNT)")


def check_elements(what: str, shape) -> None:
    """Raise if `shape` has more than `JBIND_MAX_ELEMENTS` elements (0s, unknown dims, count 1)."""
    n = math.prod(d for d in shape if d)
    if n > max_elements():
        raise MXNetError(f"{what}: shape {tuple(shape)} has {n} elements, over the limit of "
                         f"{max_elements()} (JBIND_MAX_ELEMENTS)")


def available_bytes(device) -> int | None:
    """Memory `device` can still allocate, or None where it cannot be told."""
    if getattr(device, "platform", "cpu") != "cpu":
        try:
            stats = device.memory_stats()
        except Exception:  # noqa: BLE001 -- a backend without memory statistics
            return None
        if not stats or "bytes_limit" not in stats:
            return None
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(what: str, nbytes: int, device) -> None:
    """Raise if `nbytes` is more than `device` has available."""
    if nbytes < SMALL or os.environ.get("JBIND_MEMORY_CHECK", "1") == "0":
        return
    have = available_bytes(device)
    if have is not None and nbytes > have:
        raise MXNetError(f"{what} needs {_fmt(nbytes)} for its arrays but {device} has {_fmt(have)} "
                         "available (JBIND_MEMORY_CHECK=0 skips this check)")


def _fmt(n: int) -> str:
    return f"{n / 2**30:.1f} GiB ({n} bytes)"
