"""MXNet's Python-level functions of `mx.nd` that are not operators: the broadcasting
binary functions (`add`, `maximum`, `power`, `equal`, `logical_and`, ...) over two
NDArrays, an NDArray and a number, or two numbers; `concatenate`, `moveaxis`, `eye`,
`linspace`, `onehot_encode`, `from_numpy`; and `mx.nd.contrib`'s `isinf`, `isnan`,
`isfinite`."""
from __future__ import annotations

import numbers
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ..base import ArgumentError, MXNetError
from . import _view
from .ndarray import NDArray, array


def _ops():
    from . import _functions
    return _functions


def _binary(name, lhs, rhs, bcast, scalar_op, rscalar_op, on_numbers):
    """`bcast(lhs, rhs)` for two arrays; `scalar_op(lhs, scalar=rhs)` or
    `rscalar_op(rhs, scalar=lhs)` with a number; `on_numbers` for two numbers."""
    f = _ops()
    if isinstance(lhs, numbers.Number) and isinstance(rhs, numbers.Number):
        return on_numbers(lhs, rhs)
    if isinstance(rhs, numbers.Number):
        return f[scalar_op](lhs, scalar=float(rhs))
    if isinstance(lhs, numbers.Number):
        return f[rscalar_op](rhs, scalar=float(lhs))
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        return f[bcast](lhs, rhs)
    raise TypeError(f"{name}: types ({type(lhs).__name__}, {type(rhs).__name__}) not supported")


def _define(name, bcast, scalar_op, rscalar_op, on_numbers, doc):
    def fn(lhs, rhs):
        return _binary(name, lhs, rhs, bcast, scalar_op, rscalar_op, on_numbers)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{doc}, with broadcasting; either side may be a number."
    return fn


def _cmp(f):
    return lambda a, b: float(f(a, b))


def _logic(f):
    return lambda a, b: float(f(bool(a), bool(b)))


_TABLE = [  # name, broadcast op, op(array, scalar), op(scalar, array) for a scalar on the left
    ("add", "broadcast_add", "_plus_scalar", "_plus_scalar", operator.add, "lhs + rhs"),
    ("subtract", "broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub, "lhs - rhs"),
    ("multiply", "broadcast_mul", "_mul_scalar", "_mul_scalar", operator.mul, "lhs * rhs"),
    ("divide", "broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv, "lhs / rhs"),
    ("true_divide", "broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv, "lhs / rhs"),
    ("modulo", "broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod, "lhs % rhs"),
    ("power", "broadcast_power", "_power_scalar", "_rpower_scalar", operator.pow, "base ** exp"),
    ("maximum", "broadcast_maximum", "_maximum_scalar", "_maximum_scalar", max, "The larger of lhs and rhs"),
    ("minimum", "broadcast_minimum", "_minimum_scalar", "_minimum_scalar", min, "The smaller of lhs and rhs"),
    ("equal", "broadcast_equal", "_equal_scalar", "_equal_scalar", _cmp(operator.eq), "1 where lhs == rhs"),
    ("not_equal", "broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar", _cmp(operator.ne),
     "1 where lhs != rhs"),
    ("greater", "broadcast_greater", "_greater_scalar", "_lesser_scalar", _cmp(operator.gt), "1 where lhs > rhs"),
    ("greater_equal", "broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar",
     _cmp(operator.ge), "1 where lhs >= rhs"),
    ("lesser", "broadcast_lesser", "_lesser_scalar", "_greater_scalar", _cmp(operator.lt), "1 where lhs < rhs"),
    ("lesser_equal", "broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar",
     _cmp(operator.le), "1 where lhs <= rhs"),
    ("logical_and", "broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
     _logic(operator.and_), "1 where both are non-zero"),
    ("logical_or", "broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
     _logic(operator.or_), "1 where either is non-zero"),
    ("logical_xor", "broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
     _logic(operator.xor), "1 where exactly one is non-zero"),
]

FUNCTIONS = {row[0]: _define(*row) for row in _TABLE}


def concatenate(arrays, axis=0, always_copy=True) -> NDArray:
    """The arrays joined along `axis` (all other dims equal)."""
    if not arrays:
        raise MXNetError("concatenate: no arrays given")
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return _ops()["concat"](*arrays, dim=axis)


def moveaxis(tensor, source, destination) -> NDArray:
    """`tensor` with axes `source` moved to positions `destination` (ints or sequences of
    ints), the other axes keeping their order, as numpy.moveaxis."""
    ndim = tensor.ndim
    try:
        src = normalize_axis_tuple(source, ndim, "source")
        dst = normalize_axis_tuple(destination, ndim, "destination")
    except np.exceptions.AxisError as e:
        raise ArgumentError(f"moveaxis: {e}") from None
    if len(src) != len(dst):
        raise ArgumentError(f"moveaxis: source {source} and destination {destination} differ in length")
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _ops()["transpose"](tensor, axes=tuple(order))


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs) -> NDArray:
    """An N x M array (M = N when 0) with ones on the k-th diagonal."""
    return _ops()["_eye"](N=N, M=M, k=k, ctx=ctx, dtype="float32" if dtype is None else dtype, **kwargs)


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None) -> NDArray:
    """`num` evenly spaced values from start to stop (stop included if `endpoint`)."""
    return _ops()["_linspace"](start=start, stop=stop, num=num, endpoint=endpoint, ctx=ctx,
                               dtype="float32" if dtype is None else dtype)


def onehot_encode(indices, out) -> NDArray:
    """One-hot rows of `indices` written into `out` (its width is the depth); returns `out`."""
    out[:] = _ops()["one_hot"](indices, depth=out.shape[1], dtype=np.dtype(out.dtype).name)
    return out


def from_numpy(ndarray, zero_copy=True) -> NDArray:
    """An NDArray of a numpy array's values. With `zero_copy` (the default), as MXNet: the
    array must be C-contiguous (else ValueError), numpy may no longer write it, and writes
    into the NDArray show in it; else a copy of its values."""
    if not zero_copy:
        return array(ndarray, dtype=ndarray.dtype)
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy takes a numpy.ndarray, got {type(ndarray).__name__}")
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError("from_numpy: only C-contiguous arrays are supported for zero-copy")
    return _view.from_host(ndarray)


def isinf(data) -> NDArray:
    """1 where data is +inf or -inf, else 0 (in data's dtype)."""
    return data.abs() == np.inf


def isnan(data) -> NDArray:
    """1 where data is NaN, else 0 (in data's dtype)."""
    return data != data


def isfinite(data) -> NDArray:
    """1 where data is neither NaN nor infinite, else 0 (in data's dtype)."""
    return FUNCTIONS["logical_and"](data == data, data.abs() != np.inf)


def histogram(a, bins=10, range=None):  # noqa: A002 - MXNet's name
    """(counts, bin edges) of `a`, as numpy.histogram: `bins` equal bins over `range`
    (a's min and max when None), or the edges given as an NDArray."""
    if isinstance(bins, NDArray):
        return _ops()["_histogram"](a, bins)
    return _ops()["_histogram"](a, bin_cnt=int(bins), range=range)


def boolean_mask(data, index, axis=0, out=None, name=None) -> NDArray:
    """MXNet's `contrib.boolean_mask`: the slices of `data` along `axis` where `index`
    (1-D, data's length along `axis`) is nonzero. The result's shape depends on the
    values, so the mask is read on the host and the rows are taken with `take`, which
    records for autograd as any op (gradient: the head gradient scattered back)."""
    mask = np.asarray(index.asnumpy() if isinstance(index, NDArray) else index)
    if mask.ndim != 1 or mask.shape[0] != data.shape[axis]:
        raise MXNetError(f"boolean_mask: index of shape {mask.shape} must be 1-D with data's length "
                         f"{data.shape[axis]} along axis {axis} (data {data.shape})")
    rows = array(np.flatnonzero(mask), ctx=data.context, dtype=np.int32)
    res = _ops()["take"](data, rows, axis=axis)
    if out is not None:
        out[:] = res
        return out
    return res
