"""`mx.util`: MXNet's NumPy-shape switch (`np_shape`, `use_np_shape`, `is_np_shape`, `set_np_shape`).

Off (the default, MXNet 1.x's legacy semantics): in shapes given to and returned by
shape inference, a 0 dimension means "unknown" and `()` means "shape unknown";
`mx.nd.zeros` / `ones` / `empty` / `full` refuse zero-size and 0-d shapes.
On: -1 marks an unknown dimension and None an unknown shape (in
`infer_shape_partial`), zero-size and 0-d arrays are real, and `Symbol.tojson` records
`is_np_shape` in the graph's attributes. The flag is per thread, as MXNet's is.

Difference from MXNet: shape inference inside jbind still marks unknown dimensions
with 0, so under `np_shape(True)` a symbol's zero-size dimension reads as unknown to
inference (jbind converts -1 to and from that mark at the API boundary).
"""
from __future__ import annotations

import functools
import threading

__all__ = ["get_gpu_count", "get_gpu_memory", "is_np_array", "is_np_shape", "np_array", "np_shape", "set_np_shape",
           "use_np_shape"]

_STATE = threading.local()


def is_np_shape() -> bool:
    """Whether NumPy-shape semantics are on in this thread."""
    return getattr(_STATE, "on", False)


def is_np_array() -> bool:
    """Whether MXNet's NumPy array semantics (`mx.np` arrays from Gluon) are on: always
    False in jbind, which has no `mx.np` (see `mx.test_utils.use_np`)."""
    return False


class _NumpyArrayScope:
    """MXNet's per-thread NumPy-array scope (`np_array(active)`); jbind only has the
    inactive one, since it has no `mx.np` arrays."""

    _current = threading.local()

    def __init__(self, is_np_array):  # noqa: ARG002 - MXNet's signature
        self._old_scope = None
        self._is_np_array = bool(is_np_array)

    def __enter__(self):
        cur = _NumpyArrayScope._current
        self._old_scope = getattr(cur, "value", None) or _NumpyArrayScope(False)
        cur.value = self
        return self

    def __exit__(self, *exc):
        _NumpyArrayScope._current.value = self._old_scope
        return False


def np_array(active: bool = True) -> _NumpyArrayScope:
    """A `with` scope of NumPy-array semantics `active`. Only `active=False` (MXNet's
    legacy NDArrays, jbind's only kind) is available."""
    if active:
        from .base import MXNetError
        raise MXNetError("np_array(True) needs MXNet's NumPy arrays (mx.np); jbind has mx.nd arrays only")
    return _NumpyArrayScope(False)


def set_np_shape(active: bool) -> bool:
    """Turn NumPy-shape semantics on or off in this thread; returns the previous state."""
    prev = is_np_shape()
    _STATE.on = bool(active)
    return prev


class np_shape:  # noqa: N801 - MXNet's name
    """Context manager: NumPy-shape semantics `active` (default True) inside the block,
    the previous state restored after it."""

    def __init__(self, active: bool = True):
        self._active = bool(active)
        self._prev = None

    def __enter__(self):
        self._prev = set_np_shape(self._active)
        return self

    def __exit__(self, *exc):
        set_np_shape(self._prev)
        return False


def use_np_shape(func):
    """Decorator: `func` runs with NumPy-shape semantics on (its name and docstring kept).
    Decorating a class wraps each of its public methods and `__init__`."""
    if isinstance(func, type):
        for name, method in list(vars(func).items()):
            if callable(method) and (not name.startswith("_") or name == "__init__"):
                setattr(func, name, use_np_shape(method))
        return func
    if not callable(func):
        raise TypeError(f"use_np_shape can only decorate a function or a class, got {type(func).__name__}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with np_shape(True):
            return func(*args, **kwargs)
    return wrapper


def to_internal(shape):
    """A user's shape under the current semantics -> inference's (0 = unknown dim)."""
    if shape is None:
        return None
    if is_np_shape():
        return tuple(0 if int(d) < 0 else int(d) for d in shape)
    return tuple(int(d) for d in shape)


def to_user(shape, partial: bool):
    """An inferred shape (None or 0 dims unknown) -> what the API returns under the
    current semantics: `()` and 0 dims off, None and -1 dims on."""
    if not is_np_shape():
        return () if shape is None else shape
    if shape is None:
        return None
    return tuple(-1 if d == 0 else d for d in shape) if partial else shape


def get_gpu_count() -> int:
    """The number of GPUs JAX sees (MXNet's `mx.util.get_gpu_count`)."""
    from .context import num_gpus  # noqa: PLC0415 - context imports this module
    return num_gpus()


def get_gpu_memory(gpu_dev_id: int):
    """(free, total) bytes of GPU `gpu_dev_id`, from JAX's allocator statistics."""
    import jax  # noqa: PLC0415
    from .base import MXNetError  # noqa: PLC0415
    try:
        devices = jax.local_devices(backend="gpu")
    except RuntimeError:
        devices = []
    if not 0 <= gpu_dev_id < len(devices):
        raise MXNetError(f"get_gpu_memory: no GPU {gpu_dev_id} ({len(devices)} GPUs visible)")
    stats = devices[gpu_dev_id].memory_stats() or {}
    total = int(stats.get("bytes_limit", 0))
    return total - int(stats.get("bytes_in_use", 0)), total
