"""DLPack exchange: `mx.nd.to_dlpack_for_read` / `to_dlpack_for_write` / `from_dlpack`
(and the NDArray methods of the first two).

Differences from MXNet: `to_dlpack_*` return an object with `__dlpack__` and
`__dlpack_device__` (the array's current jax.Array), not a bare PyCapsule; consumers
that take the protocol (torch.from_dlpack, numpy.from_dlpack, jax) accept it. jax
arrays are immutable, so writes a consumer makes through `to_dlpack_for_write` do not
reach the NDArray. `from_dlpack` takes such objects, or a bare PyCapsule of a CPU tensor.
"""
from __future__ import annotations

import jax

from .ndarray import NDArray

_KDLCPU = (1, 0)  # DLPack's (device type, id) of the host


class _Capsule:
    """A bare PyCapsule (which says nothing of its device) offered through the protocol."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return _KDLCPU


def to_dlpack_for_read(data: NDArray):
    """`data`'s values for another framework, through the DLPack protocol."""
    return data._data


def to_dlpack_for_write(data: NDArray):
    """As `to_dlpack_for_read` (jax arrays are immutable: writes do not come back)."""
    return data._data


def from_dlpack(dlpack) -> NDArray:
    """An NDArray over a DLPack tensor: an object with `__dlpack__`, or a CPU PyCapsule."""
    if not hasattr(dlpack, "__dlpack__"):
        dlpack = _Capsule(dlpack)
    return NDArray(jax.dlpack.from_dlpack(dlpack))


NDArray.to_dlpack_for_read = to_dlpack_for_read
NDArray.to_dlpack_for_write = to_dlpack_for_write
