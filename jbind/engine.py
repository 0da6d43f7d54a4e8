"""`mx.engine`: MXNet's bulk-execution size, as a per-process setting.

MXNet's engine bundles up to `size` imperative operators into one scheduled unit; jbind
has no engine queue (an imperative op runs through JAX's dispatch, and a graph runs as
one compiled program), so the size is recorded and returned, with no other effect.
"""
from __future__ import annotations

import threading

__all__ = ["bulk", "set_bulk_size"]

_lock = threading.Lock()
_size = 15   # MXNet's default MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD


def set_bulk_size(size: int) -> int:
    """Set the bulk size; returns the previous one."""
    global _size
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        from .base import MXNetError
        raise MXNetError(f"set_bulk_size: size must be a non-negative int, got {size!r}")
    with _lock:
        prev, _size = _size, size
    return prev


class _BulkScope:
    """`with mx.engine.bulk(size):` sets the bulk size inside the block."""

    def __init__(self, size: int):
        self._size = size
        self._old_size = None

    def __enter__(self):
        self._old_size = set_bulk_size(self._size)
        return self

    def __exit__(self, *exc):
        set_bulk_size(self._old_size)
        return False


def bulk(size: int) -> _BulkScope:
    """A scope in which up to `size` operators are bundled (a recorded setting in jbind)."""
    return _BulkScope(size)
