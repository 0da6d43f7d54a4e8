"""The sparse NDArray handles: `CSRNDArray` and `RowSparseNDArray`.

A sparse handle holds its components as jax arrays (values, and the index arrays of its
storage type) in canonical form: a row_sparse array keeps sorted, unique row indices; a
csr array keeps a valid `indptr` and sorted, unique column indices in each row. Any op
that has no sparse kernel reads `_data`, a dense array made on first use and cached, so
every registered op accepts a sparse input and returns a dense result, as MXNet's
storage fallback does. Writing `_data` (`x[:] = y`, `x += y`, a gradient written by
backward) stores the new value back in the handle's own storage type.
"""
from __future__ import annotations

import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError, np_dtype
from ..context import Context, context_of_device, is_alias
from .ndarray import NDArray, _device_of

STYPES = ("default", "row_sparse", "csr")


def index_dtype():
    """The dtype of indices and indptr: int64 as MXNet's where jax has 64-bit types enabled."""
    return jax.dtypes.canonicalize_dtype(np.int64)


# --- host-side conversions (numpy; the shapes of components depend on the values) --------------
def csr_from_dense(dense: np.ndarray):
    """(values, indptr, indices) of a 2-D array, in canonical form."""
    if dense.ndim != 2:
        raise MXNetError(f"csr storage needs a 2-D array; got shape {dense.shape}")
    mask = dense != 0
    rows, cols = np.nonzero(mask)  # row-major order: sorted within each row
    indptr = np.concatenate([[0], np.cumsum(mask.sum(axis=1))])
    return dense[rows, cols], indptr, cols


def rsp_from_dense(dense: np.ndarray):
    """(values, indices) of an array: the rows holding a nonzero, in order."""
    if dense.ndim < 1:
        raise MXNetError("row_sparse storage needs an array of at least one dimension; got a scalar")
    keep = np.nonzero((dense.reshape(dense.shape[0], -1) != 0).any(axis=1))[0] if dense.size else \
        np.zeros((0,), np.int64)
    return dense[keep], keep


def check_csr(values, indptr, indices, shape):
    """Raise MXNetError unless the components form a canonical csr array of `shape`."""
    if len(shape) != 2:
        raise MXNetError(f"csr_matrix: shape must have 2 dimensions; got {tuple(shape)}")
    if values.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1:
        raise MXNetError(f"csr_matrix: data, indices and indptr must be 1-D; got shapes {values.shape}, "
                         f"{indices.shape}, {indptr.shape}")
    if len(values) != len(indices):
        raise MXNetError(f"csr_matrix: data has {len(values)} entries but indices has {len(indices)}")
    if len(indptr) != shape[0] + 1 or indptr[0] != 0 or indptr[-1] != len(indices) or (np.diff(indptr) < 0).any():
        raise MXNetError(f"csr_matrix: bad indptr {indptr.tolist()} for {shape[0]} rows and {len(indices)} "
                         "entries: it must start at 0, never decrease, end at the number of entries and "
                         "have one entry per row plus one")
    if len(indices) and (indices.min() < 0 or indices.max() >= shape[1]):
        raise MXNetError(f"csr_matrix: column indices must lie in [0, {shape[1]}); got {indices.tolist()}")
    steps = np.diff(indices)
    row_start = np.zeros(len(indices), bool)
    row_start[indptr[:-1][indptr[:-1] < len(indices)]] = True
    if ((steps <= 0) & ~row_start[1:]).any():
        raise MXNetError(f"csr_matrix: the column indices of each row must be sorted and unique; got "
                         f"{indices.tolist()} with indptr {indptr.tolist()}")


def check_rsp(values, indices, shape):
    """Raise MXNetError unless the components form a canonical row_sparse array of `shape`."""
    if indices.ndim != 1:
        raise MXNetError(f"row_sparse_array: indices must be 1-D; got shape {indices.shape}")
    if len(shape) < 1 or tuple(values.shape) != (len(indices), *shape[1:]):
        raise MXNetError(f"row_sparse_array: data of shape {values.shape} does not fit {len(indices)} rows "
                         f"of an array of shape {tuple(shape)} (expected {(len(indices), *shape[1:])})")
    if len(indices) and (indices.min() < 0 or indices.max() >= shape[0]):
        raise MXNetError(f"row_sparse_array: row indices must lie in [0, {shape[0]}); got {indices.tolist()}")
    if (np.diff(indices) <= 0).any():
        raise MXNetError(f"row_sparse_array: row indices must be sorted and unique; got {indices.tolist()}")


class BaseSparseNDArray(NDArray):
    """The common part of MXNet's sparse NDArrays (jbind keeps its components as jax arrays)."""

    __slots__ = ("_values", "_aux", "_sshape", "_dense")
    _STYPE = ""

    def __init__(self, values, aux, shape):
        self._values, self._aux, self._sshape, self._dense = values, tuple(aux), tuple(shape), None

    # --- the dense fallback ----------------------------------------------------------------
    @property
    def _data(self):
        if self._dense is None:
            self._dense = self._todense()
        return self._dense

    @_data.setter
    def _data(self, value):
        if tuple(value.shape) != self._sshape:
            raise MXNetError(f"cannot store an array of shape {tuple(value.shape)} in a {self._STYPE} NDArray of "
                             f"shape {self._sshape}")
        dev = _device_of(value) if isinstance(value, jax.Array) else _device_of(self._values)
        other = _from_host(self._STYPE, np.asarray(value), dev)
        self._values, self._aux, self._dense = other._values, other._aux, None

    def _todense(self):
        raise NotImplementedError

    # --- properties ----------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._sshape

    @property
    def dtype(self):
        return np.dtype(self._values.dtype).type

    @property
    def size(self) -> int:
        return int(np.prod(self._sshape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return len(self._sshape)

    @property
    def context(self) -> Context:
        dev = _device_of(self._values)
        label = getattr(self, "_ctx", None)  # a cpu(i) sharing another's device (see NDArray)
        return label if label is not None and label.jax_device == dev else context_of_device(dev)

    ctx = context

    @property
    def stype(self) -> str:
        return self._STYPE

    @property
    def data(self) -> NDArray:
        """The stored values, a dense NDArray (a csr's nonzeros; a row_sparse's kept rows)."""
        return NDArray(self._values)

    @property
    def indices(self) -> NDArray:
        """The column indices (csr) or row indices (row_sparse) of the stored values."""
        return NDArray(self._aux[-1])

    def _components(self):
        return (self._values, *self._aux)

    # --- conversion ----------------------------------------------------------------------
    def asnumpy(self) -> np.ndarray:
        return np.array(self._data)

    def asscipy(self):
        """A `scipy.sparse.csr_matrix` of the same values (csr arrays only; needs scipy)."""
        raise MXNetError(f"asscipy: only csr arrays convert to scipy; this one is {self._STYPE}")

    def wait_to_read(self):
        self._values.block_until_ready()

    def copy(self) -> "BaseSparseNDArray":
        return type(self)(*_copies(self), self._sshape)

    def copyto(self, other):
        if isinstance(other, Context):
            dev = other.jax_device
            res = type(self)(jax.device_put(self._values, dev), [jax.device_put(a, dev) for a in self._aux],
                             self._sshape)
            if is_alias(other):
                res._ctx = other
            return res
        if isinstance(other, NDArray):
            if other is not self:
                other[:] = self
            return other
        raise TypeError(f"copyto does not support type {type(other).__name__}")

    def detach(self) -> "BaseSparseNDArray":
        """The same values and storage type, cut from the recorded graph."""
        return type(self)(self._values, list(self._aux), self._sshape)

    def astype(self, dtype, copy=True):
        dt = np_dtype(dtype)
        if not copy and dt == np.dtype(self._values.dtype):
            return self
        return type(self)(self._values.astype(dt), list(self._aux), self._sshape)

    def tostype(self, stype: str) -> NDArray:
        """A copy in storage type `stype` ('default', 'row_sparse' or 'csr')."""
        from .sparse import cast_storage
        return cast_storage(self, stype)

    def check_format(self, full_check: bool = True) -> None:
        """Raise MXNetError if the components are not in canonical form (they always are)."""
        _check(self._STYPE, *(np.asarray(a) for a in self._components()), self._sshape)

    # --- assignment and indexing -----------------------------------------------------------
    def __setitem__(self, key, value):
        if not (isinstance(key, slice) and key == slice(None)):
            raise MXNetError(f"{type(self).__name__} supports only whole-array assignment (x[:] = v); got "
                             f"index {key!r}")
        if isinstance(value, BaseSparseNDArray) and value.stype == self._STYPE:
            if value.shape != self._sshape:
                raise MXNetError(f"cannot assign an array of shape {value.shape} to a {self._STYPE} NDArray of "
                                 f"shape {self._sshape}")
            dev = _device_of(self._values)
            self._values = jax.device_put(value._values.astype(self._values.dtype), dev)
            self._aux, self._dense = tuple(jax.device_put(a, dev) for a in value._aux), None
            return
        if isinstance(value, numbers.Number) or np.ndim(value) == 0:
            value = np.full(self._sshape, value, np.dtype(self._values.dtype))
        elif isinstance(value, NDArray):
            value = value._data
        value = np.asarray(value, np.dtype(self._values.dtype))
        if value.shape != self._sshape:
            raise MXNetError(f"cannot assign an array of shape {value.shape} to a {self._STYPE} NDArray of "
                             f"shape {self._sshape}")
        self._data = jax.device_put(value, _device_of(self._values))

    def __repr__(self):
        shape = "x".join(str(d) for d in self._sshape)
        return f"\n<{type(self).__name__} {shape} @{self.context}>"

    # --- arithmetic: the result stays sparse where zeros stay zero ---------------------------
    def _op(self, other, fn, reverse=False, cast=False):
        from ..autograd._state import STATE
        scale = fn is jnp.multiply or (fn is jnp.divide and not reverse)  # zeros stay zero
        if not STATE.recording and isinstance(other, (numbers.Number, np.generic)) and scale:
            return type(self)(fn(self._values, jnp.asarray(other, self._values.dtype)), list(self._aux),
                              self._sshape)
        res = super()._op(other, fn, reverse, cast)
        if (not STATE.recording and res is not NotImplemented and fn in (jnp.add, jnp.subtract, jnp.multiply)
                and isinstance(other, BaseSparseNDArray) and other.stype == self._STYPE):
            return _from_host(self._STYPE, np.asarray(res._data), _device_of(self._values))
        return res


def _copies(arr):
    return arr._values.copy(), [a.copy() for a in arr._aux]


class CSRNDArray(BaseSparseNDArray):
    """MXNet's `CSRNDArray`: a 2-D array in compressed sparse row format (`data`, `indices`,
    `indptr`). Slicing rows (`a[1:3]`, `a[i]`) gives a CSRNDArray."""

    __slots__ = ()
    _STYPE = "csr"

    @property
    def indptr(self) -> NDArray:
        """Row i's entries are `data[indptr[i]:indptr[i+1]]`."""
        return NDArray(self._aux[0])

    def _todense(self):
        indptr, indices = self._aux
        rows = jnp.repeat(jnp.arange(self._sshape[0]), jnp.diff(indptr), total_repeat_length=indices.shape[0])
        return jnp.zeros(self._sshape, self._values.dtype).at[rows, indices].set(self._values)

    def asscipy(self):
        import scipy.sparse as spsp
        return spsp.csr_matrix((np.asarray(self._values), np.asarray(self._aux[1]), np.asarray(self._aux[0])),
                               shape=self._sshape)

    def __getitem__(self, key):
        n = self._sshape[0]
        if isinstance(key, (numbers.Integral, np.integer)) and not isinstance(key, bool):
            k = int(key) + (n if key < 0 else 0)
            if not 0 <= k < n:
                raise IndexError(f"index {key} out of range for a CSRNDArray with {n} rows")
            return self._rows(k, k + 1)
        if isinstance(key, slice):
            if key.step not in (None, 1):
                raise MXNetError(f"CSRNDArray supports only contiguous row slices (step 1); got {key}")
            begin, end, _ = key.indices(n)
            return self._rows(begin, max(begin, end))
        raise MXNetError(f"CSRNDArray supports indexing by one row or a slice of rows; got {key!r}")

    def _rows(self, begin, end):
        indptr = np.asarray(self._aux[0])
        lo, hi = int(indptr[begin]), int(indptr[end])
        return CSRNDArray(self._values[lo:hi], [self._aux[0][begin:end + 1] - lo, self._aux[1][lo:hi]],
                          (end - begin, self._sshape[1]))


class RowSparseNDArray(BaseSparseNDArray):
    """MXNet's `RowSparseNDArray`: the rows listed in `indices` (sorted, unique) are stored in
    `data`; every other row is zero."""

    __slots__ = ()
    _STYPE = "row_sparse"

    def _todense(self):
        return jnp.zeros(self._sshape, self._values.dtype).at[self._aux[0]].set(self._values)

    def __getitem__(self, key):
        if isinstance(key, slice) and key == slice(None):
            return self
        raise MXNetError(f"RowSparseNDArray supports only x[:] as an index; got {key!r}")

    def retain(self, indices) -> "RowSparseNDArray":
        """The rows of this array whose index is in `indices` (others become zero)."""
        from .sparse import retain
        return retain(self, indices)


def _check(stype, *parts):
    if stype == "csr":
        check_csr(*parts)
    else:
        check_rsp(*parts)


def _from_host(stype: str, dense: np.ndarray, dev) -> NDArray:
    """`dense` (numpy) as an array of storage type `stype` on device `dev`."""
    if stype == "default":
        return NDArray(jax.device_put(dense, dev))
    idt = index_dtype()
    if stype == "csr":
        values, indptr, indices = csr_from_dense(dense)
        return CSRNDArray(jax.device_put(values, dev), [jax.device_put(indptr.astype(idt), dev),
                                                        jax.device_put(indices.astype(idt), dev)], dense.shape)
    if stype == "row_sparse":
        values, indices = rsp_from_dense(dense)
        return RowSparseNDArray(jax.device_put(values, dev), [jax.device_put(indices.astype(idt), dev)],
                                dense.shape)
    raise MXNetError(f"unknown storage type {stype!r}; expected one of {STYPES}")


# --- files: `mx.nd.save` / `mx.nd.load` (jbind/ndarray/serialize.py) ----------------------------------
class SparseRecord(NamedTuple):
    """A sparse array as a file stores it: values, aux arrays (csr: indptr, indices; row_sparse: indices)."""
    stype: str
    data: np.ndarray
    aux: tuple
    shape: tuple


def record_of(arr: BaseSparseNDArray) -> SparseRecord:
    """The components of `arr` on the host, indices as int64 (as MXNet writes them)."""
    return SparseRecord(arr.stype, np.asarray(arr._values), tuple(np.asarray(x).astype(np.int64) for x in arr._aux),
                        arr.shape)


def from_record(rec: SparseRecord, dev, canonical) -> BaseSparseNDArray:
    """A sparse array on `dev` from checked components (`canonical` narrows the values' dtype)."""
    cls = CSRNDArray if rec.stype == "csr" else RowSparseNDArray
    aux = [jax.device_put(x.astype(index_dtype()), dev) for x in rec.aux]
    return cls(jax.device_put(canonical(rec.data), dev), aux, rec.shape)
