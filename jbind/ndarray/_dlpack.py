"""DLPack exchange at the top of `mx.nd`: `to_dlpack_for_read`, `to_dlpack_for_write`
(the NDArray methods of those names: a PyCapsule of the array's memory; for a writer,
memory of the array's own, whose writes the array then reads) and `from_dlpack`, which takes such a capsule (of a
tensor on the current context's device) or any object with `__dlpack__`."""
from __future__ import annotations

import jax

from ..context import current_context
from .ndarray import NDArray


class _Capsule:
    """A bare PyCapsule (which says nothing of its device) offered through the protocol."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def to_dlpack_for_read(data: NDArray):
    """`data.to_dlpack_for_read()`: a DLPack PyCapsule of its current values."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data: NDArray):
    """`data.to_dlpack_for_write()`: a DLPack PyCapsule whose writes `data` sees."""
    return data.to_dlpack_for_write()


def from_dlpack(dlpack) -> NDArray:
    """An NDArray over a DLPack tensor: an object with `__dlpack__`, or a PyCapsule of a
    tensor on the current context's device (DLPack has no way to ask a capsule)."""
    if not hasattr(dlpack, "__dlpack__"):
        ctx = current_context()
        dlpack = _Capsule(dlpack, (2 if ctx.device_type == "gpu" else 1, ctx.device_id))
    return NDArray(jax.dlpack.from_dlpack(dlpack))
