"""Batch splitting across devices: workload slices, loading slices, merging outputs."""
from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np

from ..autograd._state import STATE as _AG
from ..base import MXNetError
from ..ndarray.ndarray import NDArray

_Desc = collections.namedtuple("_Desc", ["name", "shape", "dtype", "layout"])


def desc_list(shapes):
    """(name, shape) pairs or DataDesc objects -> hashable descriptors with dtype and layout."""
    out = []
    for d in shapes or []:
        if isinstance(d, (tuple, list)) and len(d) == 2 and isinstance(d[0], str) and not hasattr(d, "layout"):
            out.append(_Desc(d[0], tuple(int(x) for x in d[1]), "float32", "NCHW"))
        else:
            dtype = getattr(d, "dtype", np.float32)
            out.append(_Desc(d.name, tuple(int(x) for x in d.shape), np.dtype(dtype).name,
                             getattr(d, "layout", "NCHW") or "NCHW"))
    return out


def batch_axis(desc) -> int:
    """MXNet's DataDesc.get_batch_axis: the position of 'N' in the layout (0 if none)."""
    return layout_axis(getattr(desc, "layout", None))


def layout_axis(layout) -> int:
    """The position of 'N' in a layout string (0 if there is none or no layout)."""
    if not layout:
        return 0
    return layout.find("N") if "N" in layout else 0


def split_input_slice(batch_size: int, work_load_list) -> list:
    """MXNet's _split_input_slice: batch ranges per device, proportional to the workload."""
    total = sum(work_load_list)
    if total <= 0:
        raise MXNetError(f"workload {list(work_load_list)} must have a positive sum")
    nums = [round(w * batch_size / total) for w in work_load_list]
    if sum(nums) < batch_size:
        nums[-1] += batch_size - sum(nums)
    slices, end = [], 0
    for n in nums:
        begin = min(end, batch_size)
        end = min(begin + n, batch_size)
        if begin >= end:
            raise MXNetError(f"a batch of {batch_size} cannot be split by workload {list(work_load_list)}: "
                             "some devices would get an empty slice")
        slices.append(slice(begin, end))
    return slices


def load_slices(sources, targets, axes, what):
    """Copy each source array's slice into every device's handle."""
    if len(sources) != len(targets):
        raise MXNetError(f"the batch has {len(sources)} {what} arrays, the group expects {len(targets)}")
    for src, dst, ax in zip(sources, targets, axes):
        data = src._data if isinstance(src, NDArray) else np.asarray(src)
        for sl, handle in dst:
            whole = sl.start == 0 and sl.stop == data.shape[ax]
            if whole and _same_buffer_kind(handle, data):  # jax arrays are immutable: share it
                handle._data = data
                continue
            if whole and handle.shape == tuple(data.shape):
                part = data
            else:
                idx = [slice(None)] * data.ndim
                idx[ax] = sl
                part = data[tuple(idx)]
            handle[:] = part


def _same_buffer_kind(handle, data) -> bool:
    """`data` (a whole batch array) may become `handle`'s array as it is: a jax array of
    the handle's shape and dtype on the handle's device, and no autograd recording to see
    the write."""
    if type(handle) is not NDArray or _AG.recording or not isinstance(data, jax.Array):
        return False
    mine = handle._data
    return (isinstance(mine, jax.Array) and mine.shape == data.shape and mine.dtype == data.dtype
            and mine.sharding == data.sharding)


def merge_outputs(arrays, axis):
    if len(arrays) == 1:
        return arrays[0]
    dev = next(iter(arrays[0]._data.devices()))
    return NDArray(jnp.concatenate([jax.device_put(a._data, dev) for a in arrays], axis=axis))
