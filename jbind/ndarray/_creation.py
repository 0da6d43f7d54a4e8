"""Creating NDArrays: `array`, `zeros`, `ones`, `full`, `empty`, `arange`, `concat` (with
MXNet's `ctx`, `dtype` and `out=` arguments), and `waitall`."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..autograd._state import STATE as _AG
from ..base import MXNetError, np_dtype
from ..context import current_context, is_alias
from ..util import is_np_shape
from . import _recorded
from .ndarray import NDArray, cached_zeros


def _dev(ctx):
    return (ctx if ctx is not None else current_context()).jax_device


def _placed(data, ctx) -> NDArray:
    """An NDArray of `data`, already on `ctx`'s device, that reports `ctx` (or the current
    context) as its context: the label matters for a `cpu(i)` sharing another's device."""
    arr = NDArray(data)
    ctx = ctx if ctx is not None else current_context()
    if is_alias(ctx):
        arr._ctx = ctx
    return arr


def array(source_array, ctx=None, dtype=None) -> NDArray:
    if isinstance(source_array, NDArray):
        src = source_array._data
        dtype = np_dtype(dtype) if dtype is not None else src.dtype
        return _placed(jax.device_put(src.astype(dtype), _dev(ctx)), ctx)
    if dtype is None:  # MXNet: float32 unless the source is an NDArray
        dtype = np.float32
    a = np.asarray(source_array, dtype=np_dtype(dtype))
    return _placed(jax.device_put(a, _dev(ctx)), ctx)


def _shape(shape):
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise MXNetError(f"shape {shape} has a negative dimension")
    if (not shape or 0 in shape) and not is_np_shape():
        # MXNet 1.x: without np_shape, 0 means "unknown" and () "no shape".
        raise MXNetError(f"shape {shape} is zero-size or 0-d: create it inside mx.np_shape(True)")
    return shape


def _into(res: NDArray, out) -> NDArray:
    """`res`, or written into `out` (MXNet's `out=`) and `out` returned."""
    if out is None:
        return res
    out[:] = res
    return out


def zeros(shape, ctx=None, dtype=None, stype=None, out=None, **kwargs) -> NDArray:
    """An all-zero array; `stype` 'row_sparse' or 'csr' makes a sparse one (`mx.nd.sparse.zeros`);
    with `out`, written into it."""
    if stype not in (None, "default"):
        from .sparse import zeros as sparse_zeros
        return sparse_zeros(stype, shape, ctx, dtype)
    return _into(_placed(cached_zeros(_shape(shape), np_dtype(dtype), _dev(ctx)), ctx), out)


def empty(shape, ctx=None, dtype=None, stype=None) -> NDArray:
    return zeros(shape, ctx, dtype, stype)


def ones(shape, ctx=None, dtype=None, out=None, **kwargs) -> NDArray:
    """An all-one array (with `out`, written into it)."""
    return full(shape, 1, ctx, dtype, out=out)


def full(shape, val, ctx=None, dtype=None, out=None, **kwargs) -> NDArray:
    """An array filled with `val` (with `out`, written into it)."""
    return _into(_placed(jax.device_put(np.full(_shape(shape), val, np_dtype(dtype)), _dev(ctx)), ctx), out)


def arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype=None, **kwargs) -> NDArray:
    a = np.arange(start, stop, step, dtype=np_dtype(dtype))
    return _placed(jax.device_put(np.repeat(a, repeat), _dev(ctx)), ctx)


def concat(*arrays, dim=1) -> NDArray:
    if _AG.recording:
        return _recorded.call("Concat", *arrays, dim=dim)
    return NDArray(jnp.concatenate([a._data for a in arrays], axis=dim))


def waitall():
    for a in jax.live_arrays():
        a.block_until_ready()
