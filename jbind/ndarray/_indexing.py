"""NDArray's indexing and assignment (`x[key]`, `x[key] = v`, `slice_assign`, MXNet's
`_slice` / `_at`), as a base class of NDArray.

Basic indexes (integers, slices, None, Ellipsis) whose elements are contiguous return
views (see `_view`); other basic indexes and advanced ones (index arrays, lists) copy,
as MXNet's do. Assignment writes into the array in place, and through a view into the
array it shares with.
"""
from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

from ..autograd._state import STATE as _AG
from ..base import MXNetError
from . import _recorded, _view


class Indexing:
    """The indexing methods of NDArray (`self` is an NDArray)."""

    __slots__ = ()

    # --- assignment -----------------------------------------------------------------
    def _coerce(self, value, shape):
        dev = _device_of(self._data)
        dtype = self._data.dtype
        if isinstance(value, Indexing):
            value = value._data
        if isinstance(value, numbers.Number) or np.ndim(value) == 0:
            return jax.device_put(np.full(shape, value, dtype=dtype), dev)
        vshape = tuple(np.shape(value))
        if vshape != tuple(shape):
            try:
                np.broadcast_shapes(vshape, tuple(shape))
                if len(vshape) > len(shape):
                    raise ValueError
            except ValueError:
                raise MXNetError(f"cannot assign an array of shape {vshape} to an NDArray of shape "
                                 f"{tuple(shape)}") from None
        if isinstance(value, jax.Array):
            v = value.astype(dtype) if value.dtype != dtype else value
            v = jnp.broadcast_to(v, shape) if vshape != tuple(shape) else v
            return jax.device_put(v, dev) if _device_of(v) != dev else v
        v = np.asarray(value, dtype=dtype)
        if vshape != tuple(shape):
            v = np.broadcast_to(v, shape)
        return jax.device_put(v, dev)

    def __setitem__(self, key, value):
        if _AG.recording and _recorded.setitem(self, key, value):
            return
        if isinstance(key, slice) and key == slice(None):
            self._data = self._coerce(value, self.shape)
            return
        key = _index(key)
        if isinstance(value, Indexing):
            value = value._data
        src = self._data
        host = _view.on_host(src)
        v = (np.asarray if host else jnp.asarray)(value, dtype=src.dtype)
        lead = next((i for i, d in enumerate(v.shape) if d != 1), v.ndim)
        v = v.reshape(v.shape[lead:]) if lead else v  # leading 1-dims broadcasting would add back
        try:
            self._data = _view.host_setitem(src, key, v) if host else src.at[key].set(v)
        except (IndexError, TypeError, ValueError) as e:
            raise MXNetError(f"cannot assign to NDArray{self.shape}[{key!r}]: {e}") from None

    def slice_assign(self, rhs, begin, end, step) -> "NDArray":
        """Write `rhs` into `self[begin:end:step]` (per axis; None takes the default) in place."""
        key = _crop(self.shape, begin, end, step)
        want = tuple(len(range(*k.indices(d))) for k, d in zip(key, self.shape)) + self.shape[len(key):]
        got = tuple(np.shape(rhs._data if isinstance(rhs, Indexing) else rhs))
        if got != want:
            raise MXNetError(f"slice_assign: rhs has shape {got}, the slice of {self.shape} from {tuple(begin)} "
                             f"to {tuple(end)} has shape {want}")
        self[key] = rhs
        return self

    def slice_assign_scalar(self, value, begin, end, step) -> "NDArray":
        """Write the number `value` into `self[begin:end:step]` in place."""
        self[_crop(self.shape, begin, end, step)] = float(value)
        return self

    def __getitem__(self, key) -> "NDArray":
        key = _index(key)
        _check_int_bounds(key, self.shape)
        if _AG.recording:
            return _recorded.getitem(self, key)
        if self.ndim and _view.is_basic(key):
            return _view.getitem(self, key)
        src = self._data
        try:
            return self._new(_view.host_getitem(src, key) if _view.on_host(src) else src[key])
        except (IndexError, TypeError) as e:
            raise IndexError(f"index {key!r} out of range for NDArray of shape {self.shape}: {e}") from None

    def _slice(self, start, stop) -> "NDArray":
        """A view of rows `start:stop` (first axis), as MXNet's `x._slice`."""
        return self[start:stop]

    def _at(self, idx) -> "NDArray":
        """A view of row `idx` (first axis) without that axis, as MXNet's `x._at`: a row of
        a 1-d array has shape (1,)."""
        return self[int(idx)]

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape) -> bool:
        """Whether `x[slc_key]` (one slice per axis) is contiguous, so that it is a view."""
        if len(slc_key) != len(shape):
            raise MXNetError(f"_basic_indexing_slice_is_contiguous: {len(slc_key)} slices for shape {tuple(shape)}")
        return _view.is_contiguous(tuple(slc_key), tuple(shape))


def _crop(shape, begin, end, step) -> tuple:
    begin, end = tuple(begin), tuple(end)
    step = tuple(step) if step is not None and len(step) else (None,) * len(begin)
    if not (len(begin) == len(end) == len(step)) or len(begin) > len(shape):
        raise MXNetError(f"slice: begin {begin}, end {end} and step {step} must have one entry per "
                         f"axis, at most {len(shape)} for shape {shape}")
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _index(key):
    if isinstance(key, Indexing):
        return np.asarray(key._data).astype(np.int64)
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    if isinstance(key, list):  # an index array, as numpy and MXNet read a list
        return np.asarray(key)
    return key


def _check_int_bounds(key, shape) -> None:
    """IndexError for an integer index outside its axis (JAX would clamp it); checks the
    leading plain integers of a key, as numpy, MXNet and `for x in nd` (which stops at it) need."""
    for axis, k in enumerate(key if isinstance(key, tuple) else (key,)):
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or axis >= len(shape):
            return
        if not -shape[axis] <= k < shape[axis]:
            raise IndexError(f"index {int(k)} is out of bounds for axis {axis} with size {shape[axis]}")


def _device_of(arr):
    devs = arr.devices()
    return next(iter(devs))

