"""`mx.nd.sparse`: csr and row_sparse NDArrays, as MXNet 1.9.1's.

Creation (`csr_matrix`, `row_sparse_array`, `zeros`, `empty`, `array`), storage casts
(`cast_storage`, `NDArray.tostype`), and the ops with sparse kernels (`dot`, `retain`,
`add` / `elemwise_add` and friends, `square_sum`, `where`). Every other op takes a sparse
array as its dense value and returns a dense result (MXNet's storage fallback).

Differences from MXNet: components are checked when an array is made, so a bad `indptr`,
unsorted or repeated indices, or data whose shape does not fit are an MXNetError at
`csr_matrix` / `row_sparse_array` (MXNet accepts them and fails later, if at all);
indices are int32 unless jax runs with 64-bit types; under `autograd.record()` sparse
inputs are recorded as dense values (gradients land in a sparse `attach_grad` buffer
as that buffer's storage type).
"""
from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

from ..autograd._state import STATE as _AG
from ..base import MXNetError, np_dtype
from ..context import current_context
from ._sparse_base import (STYPES, BaseSparseNDArray, CSRNDArray, RowSparseNDArray, _from_host, check_csr,
                           check_rsp, index_dtype)
from .ndarray import NDArray, _device_of

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "add", "array", "cast_storage", "csr_matrix",
           "dot", "elemwise_add", "elemwise_div", "elemwise_mul", "elemwise_sub", "empty", "rand_sparse",
           "retain", "row_sparse_array", "square_sum", "where", "zeros"]


def _dev(ctx):
    return (ctx if ctx is not None else current_context()).jax_device


def _host(x, dtype=None):
    if isinstance(x, NDArray):
        x = x.asnumpy()
    return np.asarray(x) if dtype is None else np.asarray(x, dtype)


def _default_dtype(src, dtype):
    """MXNet's rule: the given dtype, else the source's if it is an array, else float32."""
    if dtype is not None:
        return np_dtype(dtype)
    if isinstance(src, NDArray):
        return np.dtype(src.dtype)
    return src.dtype if isinstance(src, np.ndarray) else np.dtype(np.float32)


def _is_scipy_sparse(x) -> bool:
    return hasattr(x, "tocsr") and hasattr(x, "nnz")


def _shape_arg(shape):
    return (int(shape),) if isinstance(shape, (numbers.Integral, np.integer)) else tuple(int(d) for d in shape)


# --- creation -------------------------------------------------------------------------------------
def csr_matrix(arg1, shape=None, ctx=None, dtype=None) -> CSRNDArray:
    """A CSRNDArray from `(data, indices, indptr)`, `(data, (row, col))` (coordinates;
    repeated ones are summed), a scipy sparse matrix, a dense 2-D array, another
    CSRNDArray, or a shape `(M, N)` (all zeros).

    Raises:
        MXNetError: components not in canonical form, or a shape that does not fit them.
    """
    dev = _dev(ctx)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        data, indices, indptr = arg1
        values = _host(data, _default_dtype(data, dtype))
        indices, indptr = _host(indices, np.int64), _host(indptr, np.int64)
        if shape is None:
            shape = (len(indptr) - 1, int(indices.max()) + 1 if len(indices) else 0)
        shape = _shape_arg(shape)
        check_csr(values, indptr, indices, shape)
        idt = index_dtype()
        return CSRNDArray(jax.device_put(values, dev), [jax.device_put(indptr.astype(idt), dev),
                                                        jax.device_put(indices.astype(idt), dev)], shape)
    if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
        data, (row, col) = arg1
        values, row, col = _host(data, _default_dtype(data, dtype)), _host(row, np.int64), _host(col, np.int64)
        if shape is None:
            shape = (int(row.max()) + 1 if len(row) else 0, int(col.max()) + 1 if len(col) else 0)
        shape = _shape_arg(shape)
        inside = len(shape) == 2 and (len(row) == 0 or (0 <= row.min() and row.max() < shape[0]
                                                       and 0 <= col.min() and col.max() < shape[1]))
        if len(shape) != 2 or len(row) != len(col) or len(row) != len(values) or not inside:
            raise MXNetError(f"csr_matrix: coordinates ({len(row)} rows, {len(col)} columns, {len(values)} values) "
                             f"do not fit shape {shape}")
        dense = np.zeros(shape, values.dtype)
        np.add.at(dense, (row, col), values)
        return _from_host("csr", dense, dev)
    if isinstance(arg1, tuple) and all(isinstance(d, (numbers.Integral, np.integer)) for d in arg1):
        return zeros("csr", arg1, ctx, dtype)
    if _is_scipy_sparse(arg1):
        m = arg1.tocsr()
        m.sum_duplicates()
        m.sort_indices()
        return csr_matrix((m.data, m.indices, m.indptr), shape=shape or m.shape, ctx=ctx,
                          dtype=dtype if dtype is not None else m.dtype)
    if isinstance(arg1, BaseSparseNDArray):
        out = cast_storage(arg1, "csr").copyto(ctx if ctx is not None else arg1.context)
        return out.astype(dtype) if dtype is not None else out
    dense = _host(arg1, _default_dtype(arg1, dtype))
    if shape is not None and tuple(shape) != dense.shape:
        raise MXNetError(f"csr_matrix: shape {tuple(shape)} does not match the array's {dense.shape}")
    return _from_host("csr", dense, dev)


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None) -> RowSparseNDArray:
    """A RowSparseNDArray from `(data, indices)` (row `indices[i]` holds `data[i]`), a dense
    array, another sparse array, or a shape (all zeros).

    Raises:
        MXNetError: indices unsorted, repeated or out of range, or data that does not fit `shape`.
    """
    dev = _dev(ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2 and not all(isinstance(d, (numbers.Integral, np.integer))
                                                             for d in arg1):
        data, indices = arg1
        values, indices = _host(data, _default_dtype(data, dtype)), _host(indices, np.int64)
        if shape is None:
            shape = (int(indices.max()) + 1 if len(indices) else 0, *values.shape[1:])
        shape = _shape_arg(shape)
        check_rsp(values, indices, shape)
        return RowSparseNDArray(jax.device_put(values, dev), [jax.device_put(indices.astype(index_dtype()), dev)],
                                shape)
    if isinstance(arg1, tuple) and all(isinstance(d, (numbers.Integral, np.integer)) for d in arg1):
        return zeros("row_sparse", arg1, ctx, dtype)
    if isinstance(arg1, BaseSparseNDArray):
        out = cast_storage(arg1, "row_sparse").copyto(ctx if ctx is not None else arg1.context)
        return out.astype(dtype) if dtype is not None else out
    dense = _host(arg1, _default_dtype(arg1, dtype))
    if shape is not None and tuple(shape) != dense.shape:
        raise MXNetError(f"row_sparse_array: shape {tuple(shape)} does not match the array's {dense.shape}")
    return _from_host("row_sparse", dense, dev)


def zeros(stype, shape, ctx=None, dtype=None, **kwargs) -> NDArray:
    """An all-zero array of storage type `stype` (no stored values)."""
    shape, dt, dev = _shape_arg(shape), np_dtype(dtype), _dev(ctx)
    idt = index_dtype()
    if stype == "csr":
        if len(shape) != 2:
            raise MXNetError(f"zeros: a csr array has 2 dimensions; got shape {shape}")
        return CSRNDArray(jax.device_put(np.zeros((0,), dt), dev), [jax.device_put(np.zeros(shape[0] + 1, idt), dev),
                                                                    jax.device_put(np.zeros((0,), idt), dev)], shape)
    if stype == "row_sparse":
        return RowSparseNDArray(jax.device_put(np.zeros((0, *shape[1:]), dt), dev),
                                [jax.device_put(np.zeros((0,), idt), dev)], shape)
    if stype in (None, "default"):
        from .ndarray import zeros as dense_zeros
        return dense_zeros(shape, ctx, dtype)
    raise MXNetError(f"zeros: unknown storage type {stype!r}; expected one of {STYPES}")


def empty(stype, shape, ctx=None, dtype=None) -> NDArray:
    """As `zeros` (jbind never hands out uninitialized memory)."""
    return zeros(stype, shape, ctx, dtype)


def array(source_array, ctx=None, dtype=None) -> BaseSparseNDArray:
    """A sparse array copied from a CSRNDArray, RowSparseNDArray or scipy sparse matrix."""
    if isinstance(source_array, BaseSparseNDArray):
        out = source_array.copyto(ctx if ctx is not None else source_array.context)
        return out.astype(dtype) if dtype is not None else out
    if _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    raise MXNetError(f"sparse.array: expected a sparse NDArray or a scipy sparse matrix; got "
                     f"{type(source_array).__name__} (use mx.nd.array for dense data)")


def cast_storage(data: NDArray, stype: str) -> NDArray:
    """`data` as storage type `stype` ('default', 'row_sparse' or 'csr'): always a new array."""
    if stype not in STYPES:
        raise MXNetError(f"cast_storage: unknown storage type {stype!r}; expected one of {STYPES}")
    if _AG.recording and stype == "default":
        from .imperative import invoke
        return invoke("_copy", (data,), {})
    if data.stype == stype:
        return data.copy()
    if stype == "default":
        return NDArray(data._data)
    return _from_host(stype, np.asarray(data._data), _device_of(data._data))


# --- ops with sparse kernels ------------------------------------------------------------------------
def retain(data: RowSparseNDArray, indices) -> RowSparseNDArray:
    """The rows of row_sparse `data` whose index is listed in `indices`; the rest are zero."""
    if not isinstance(data, RowSparseNDArray):
        raise MXNetError(f"retain: expected a row_sparse array; got storage type {getattr(data, 'stype', None)!r}")
    want = _host(indices).astype(np.int64).reshape(-1)
    have = np.asarray(data._aux[0])
    keep = np.nonzero(np.isin(have, want))[0]
    return RowSparseNDArray(data._values[keep], [data._aux[0][keep]], data.shape)


def dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False,
        forward_stype=None) -> NDArray:
    """Matrix product with sparse inputs: csr x dense and csr.T x dense (a row_sparse result)
    run on the stored values only; other combinations multiply dense values.

    Under `autograd.record()` this is the registered `dot` op on dense values, so gradients flow."""
    from .imperative import invoke
    if _AG.recording or not (isinstance(lhs, CSRNDArray) and not isinstance(rhs, BaseSparseNDArray)
                             and not transpose_b and rhs.ndim == 2):
        out = invoke("dot", (lhs, rhs), {"transpose_a": transpose_a, "transpose_b": transpose_b})
        if forward_stype not in (None, "default") and not _AG.recording:
            return cast_storage(out, forward_stype)
        return out
    indptr, indices = lhs._aux
    n_rows, n_cols = lhs.shape
    want = n_cols if not transpose_a else n_rows
    if rhs.shape[0] != want:
        raise MXNetError(f"dot: shapes {lhs.shape}{'.T' if transpose_a else ''} and {rhs.shape} do not align")
    rows = jnp.repeat(jnp.arange(n_rows), jnp.diff(indptr), total_repeat_length=indices.shape[0])
    dense = rhs._data
    if not transpose_a:
        out = jax.ops.segment_sum(lhs._values[:, None] * dense[indices], rows, num_segments=n_rows)
        return NDArray(out.astype(jnp.result_type(lhs._values, dense)))
    out = jax.ops.segment_sum(lhs._values[:, None] * dense[rows], indices, num_segments=n_cols)
    res = _from_host("row_sparse", np.asarray(out.astype(jnp.result_type(lhs._values, dense))), _device_of(dense))
    return res if forward_stype in (None, "row_sparse") else cast_storage(res, forward_stype)


def _elemwise(name, fn, lhs, rhs, sparse_if_both):
    if lhs.shape != rhs.shape:
        raise MXNetError(f"{name}: shapes {lhs.shape} and {rhs.shape} differ")
    from .imperative import invoke
    out = invoke(name, (lhs, rhs), {})
    st = lhs.stype
    if not _AG.recording and st != "default" and rhs.stype == st and sparse_if_both:
        return cast_storage(out, st)
    if not _AG.recording and fn == "mul" and "default" in (lhs.stype, rhs.stype) and st != rhs.stype:
        sparse = lhs if lhs.stype != "default" else rhs
        return cast_storage(out, sparse.stype)  # zeros of the sparse side stay zero
    return out


def elemwise_add(lhs, rhs):
    """lhs + rhs; two arrays of one sparse storage type give that storage type."""
    return _elemwise("elemwise_add", "add", lhs, rhs, True)


def elemwise_sub(lhs, rhs):
    """lhs - rhs; two arrays of one sparse storage type give that storage type."""
    return _elemwise("elemwise_sub", "sub", lhs, rhs, True)


def elemwise_mul(lhs, rhs):
    """lhs * rhs; sparse where either side is sparse (a zero times anything is zero)."""
    return _elemwise("elemwise_mul", "mul", lhs, rhs, True)


def elemwise_div(lhs, rhs):
    """lhs / rhs, dense."""
    return _elemwise("elemwise_div", "div", lhs, rhs, False)


def add(lhs, rhs):
    """lhs + rhs with broadcasting; same-shape arrays of one sparse storage type stay sparse."""
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray) and lhs.shape == rhs.shape:
        return elemwise_add(lhs, rhs)
    return lhs + rhs


def square_sum(data: NDArray, axis=None, keepdims: bool = False) -> NDArray:
    """sum(data ** 2) over `axis`; a row_sparse input summed over axis 1 with `keepdims`
    gives a row_sparse result (one value per stored row)."""
    if isinstance(data, RowSparseNDArray) and not _AG.recording and axis in (1, -1) and keepdims \
            and data.ndim == 2:
        return RowSparseNDArray(jnp.sum(data._values ** 2, axis=1, keepdims=True), list(data._aux),
                                (data.shape[0], 1))
    from .imperative import invoke
    kw = {"keepdims": keepdims} if axis is None else {"axis": axis, "keepdims": keepdims}
    return invoke("sum", (data * data if _AG.recording else NDArray(data._data ** 2),), kw)


def where(condition, x, y) -> NDArray:
    """Elementwise `x if condition else y`, on dense values (a dense result)."""
    from .imperative import invoke
    return invoke("where", (condition, x, y), {})


def rand_sparse(shape, stype: str, density: float = 0.5, dtype=None, ctx=None, rng=None) -> BaseSparseNDArray:
    """A random sparse array (values uniform in [0, 1)) with about `density` of its entries
    (csr) or rows (row_sparse) nonzero; `rng` is a numpy Generator (default: numpy's global)."""
    if stype not in ("csr", "row_sparse"):
        raise MXNetError(f"rand_sparse: stype must be 'csr' or 'row_sparse'; got {stype!r}")
    shape = _shape_arg(shape)
    draw = rng.random if rng is not None else np.random.random_sample
    dense = draw(shape).astype(np_dtype(dtype)) + np.asarray(1e-3, np_dtype(dtype))  # never exactly zero
    mask_shape = shape if stype == "csr" else (shape[0],) + (1,) * (len(shape) - 1)
    dense = dense * (draw(mask_shape) < density)
    return _from_host(stype, dense.astype(np_dtype(dtype)), _dev(ctx))


def __getattr__(name):
    """Every other `mx.nd` operator (`mx.nd.sparse.sum`, `.sqrt`, `.Embedding`, ...), on dense values."""
    from .. import ndarray as _nd
    fn = None if name.startswith("__") else getattr(_nd, name, None)
    if fn is None or not callable(fn):
        raise AttributeError(f"module 'mx.nd.sparse' has no attribute {name!r}")
    return fn
