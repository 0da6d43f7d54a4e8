"""Handles that alias the front of another handle's buffer, as MXNet's reshaped executors do.

`Executor.reshape` to a smaller shape shares memory with the original executor: the new
executor's arrays are the first elements of the original's (in C order), so a write
through either is seen by both. jax arrays are immutable, so a view reads the front
of its base's current array and a write replaces the base's array with the front
updated.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..ndarray.ndarray import NDArray


class ViewNDArray(NDArray):
    """An NDArray whose data is the first `prod(shape)` elements of `base`, reshaped."""

    __slots__ = ("_base", "_vshape", "_bshape")

    def __init__(self, base: NDArray, shape, base_shape):
        self._base = base
        self._vshape = tuple(int(d) for d in shape)
        self._bshape = tuple(int(d) for d in base_shape)
        if math.prod(self._vshape) > math.prod(self._bshape):
            raise ValueError(f"a view of shape {self._vshape} does not fit in {self._bshape}")

    @property
    def _data(self):
        b = self._base._data
        if b is None:
            return None
        return b.reshape(-1)[: math.prod(self._vshape)].reshape(self._vshape)

    @_data.setter
    def _data(self, value):
        b = self._base._data
        if b is None:
            b = jax.device_put(np.zeros(self._bshape, value.dtype), next(iter(value.devices())))
        flat = jax.lax.dynamic_update_slice(b.reshape(-1), jnp.asarray(value, b.dtype).reshape(-1), (0,))
        self._base._data = flat.reshape(b.shape)


def alias(new, new_shape, old, old_shape):
    """A view of `old` in place of `new` when `new_shape` differs from `old_shape` and fits in it."""
    if new is None or old is None or new is old or old_shape is None:
        return new
    if tuple(new_shape) == tuple(old_shape) or math.prod(new_shape) > math.prod(old_shape):
        return new
    if old._data is not None and new._data is not None and old._data.dtype != new._data.dtype:
        return new
    return ViewNDArray(old, new_shape, old_shape)
