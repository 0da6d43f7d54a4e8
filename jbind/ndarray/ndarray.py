"""NDArray: a small mutable handle over an immutable `jax.Array`.

MXNet scripts write into arrays in place (`exe.arg_dict['w'][:] = v`) and expect every
holder of the array to see the write. A handle gives them that: assignment replaces the
handle's `jax.Array`, and every executor holding the same handle reads the new one.
A view (`x.reshape(...)`, `x[1:3]`) is a handle with no array of its own: it reads and
writes a window of its base's (`_view.py`). Indexing and assignment are in
`_indexing.py`, creation functions in `_creation.py`.
"""
from __future__ import annotations

import ctypes
import numbers
import threading
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np

from .. import _fluent
from ..autograd._state import STATE as _AG
from ..base import STYPE_STR_TO_ID, ArgumentError, MXNetError, np_dtype
from ..context import Context, context_of_device
from ._indexing import Indexing, _device_of

py_slice = slice  # MXNet's name for the builtin (mx.nd.ndarray.py_slice)
_STORAGE_TYPE_STR_TO_ID = STYPE_STR_TO_ID  # MXNet's private names, which its tests import
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in STYPE_STR_TO_ID.items()}

_ZEROS: OrderedDict = OrderedDict()
ZEROS_LIMIT = (1024, 64 << 20)   # entries, bytes: binding thousands of shapes must not keep them all
_zeros_bytes = [0]
_zeros_lock = threading.Lock()


def cached_zeros(shape, dtype, device):
    """A shared all-zeros array: jax arrays are immutable, so one serves every new buffer.

    The oldest are dropped past `ZEROS_LIMIT` (their holders keep theirs alive)."""
    key = (tuple(shape), np.dtype(dtype), device)
    z = _ZEROS.get(key)
    if z is None:
        z = jax.device_put(np.zeros(shape, dtype), device)
        with _zeros_lock:
            if key not in _ZEROS:
                _ZEROS[key] = z
                _zeros_bytes[0] += z.nbytes
            while _ZEROS and (len(_ZEROS) > ZEROS_LIMIT[0] or _zeros_bytes[0] > ZEROS_LIMIT[1]):
                _zeros_bytes[0] -= _ZEROS.popitem(last=False)[1].nbytes
    return z


class NDArray(Indexing):
    """MXNet's `mx.nd.NDArray`, backed by a `jax.Array`.

    As in MXNet, `reshape`, basic indexing whose elements are contiguous (`a[1:3]`,
    `a[i]`), `flatten` / `expand_dims` / `squeeze` with `inplace=True` and `detach` return
    views: arrays sharing their elements with this one, so a write through either is seen
    by both (see `_view`).
    """

    # `_ag` (set only under autograd: a recorded entry or a marked variable) is left unset
    # otherwise, so creating an array costs what it did before autograd existed.
    # `_ctx` (set only on arrays placed on a `cpu(i)` past JAX's CPU device count) is the
    # context label the array reports; it shares the device of `cpu(i % n)`.
    # `_arr` holds the array's own `jax.Array`; a view has no `_arr` but a `_vw` (its
    # window on the array it shares with), and `_data` reads and writes through it.
    __slots__ = ("_arr", "_vw", "_ag", "_ctx", "__weakref__")
    __array_priority__ = 1000.0

    def __init__(self, data, writable=True):
        if isinstance(data, ctypes.c_void_p) or not writable:  # MXNet's NDArray(handle, writable)
            _view.from_handle(self, data, writable)
        else:
            self._arr = data

    @property
    def _data(self):
        try:
            return self._arr
        except AttributeError:
            return self._vw.read()

    @_data.setter
    def _data(self, value):
        try:
            self._arr  # an array of its own (the common case): no view to write through
        except AttributeError:
            vw = getattr(self, "_vw", None)
            if vw is not None:
                vw.write(value)
                return
        self._arr = value

    # --- properties -----------------------------------------------------------------
    @property
    def data(self) -> jax.Array:
        """The current `jax.Array` (jbind extension)."""
        return self._data

    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    @property
    def dtype(self):
        return np.dtype(self._data.dtype).type

    @property
    def size(self) -> int:
        return int(np.prod(self._data.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def context(self) -> Context:
        dev = _device_of(self._data)
        label = getattr(self, "_ctx", None)
        if label is not None and label.jax_device == dev:
            return label
        return context_of_device(dev)

    ctx = context

    def _new(self, data) -> "NDArray":
        """An NDArray of `data` (computed from this one) with this one's context label."""
        arr = NDArray(data)
        label = getattr(self, "_ctx", None)
        if label is not None:
            arr._ctx = label
        return arr

    @property
    def stype(self) -> str:
        return "default"

    @property
    def T(self) -> "NDArray":
        """The transpose (a copy); the array itself when it has fewer than 2 dimensions, as MXNet."""
        return self if self.ndim < 2 else self.transpose()

    @property
    def writable(self) -> bool:
        return not isinstance(getattr(self, "_vw", None), _view.ReadOnly)

    @property
    def handle(self):
        """MXNet's `NDArrayHandle` of this array (`NDArray(handle)` is a view of it), while it lives."""
        return _view.handle_of(self)

    _as_parameter_ = handle  # ctypes.cast(arr, NDArrayHandle), as MXNet's monitor callbacks write

    # --- conversion -----------------------------------------------------------------
    def asnumpy(self) -> np.ndarray:
        return np.array(self._data)

    def __array__(self, dtype=None, copy=None):
        a = np.asarray(self._data)
        return a.astype(dtype) if dtype is not None else a

    def asscalar(self):
        if self.shape != (1,) and self.size != 1:
            raise ValueError("The current array is not a scalar")
        return self.asnumpy().reshape(-1)[0]

    def wait_to_read(self):
        self._data.block_until_ready()

    def copy(self) -> "NDArray":
        if _AG.recording:
            return _recorded.call("_copy", self)
        return self._new(self._data.copy())

    def copyto(self, other):
        if isinstance(other, NDArray):
            if other is self:
                return other
            other[:] = self
            return other
        if isinstance(other, Context):
            return _placed(jax.device_put(self._data, other.jax_device), other)
        raise TypeError(f"copyto does not support type {type(other).__name__}")

    def as_in_context(self, context: Context) -> "NDArray":
        if self.context == context:
            return self
        return self.copyto(context)

    def astype(self, dtype, copy=True) -> "NDArray":
        dt = np_dtype(dtype)
        if not copy and dt == np.dtype(self._data.dtype):
            return self
        if _AG.recording:
            return _recorded.call("Cast", self, dtype=dt.name)
        return self._new(self._data.astype(dt))

    def reshape(self, *shape, **kwargs) -> "NDArray":
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = kwargs.pop("shape", shape)
        reverse = kwargs.pop("reverse", False)
        if kwargs:
            raise TypeError(f"reshape: unknown arguments {sorted(kwargs)}")
        from ..ops.shape import reshape_target
        try:
            target = reshape_target(self.shape, tuple(shape), reverse)
        except ValueError as e:
            raise ArgumentError(f"reshape {self.shape} -> {tuple(shape)}: {e}") from None
        if _AG.recording:
            return _recorded.call("Reshape", self, shape=tuple(target))
        return _view.make(self, 0, target)

    def flatten(self, inplace=False, **kwargs) -> "NDArray":
        """Shape (d0, d1 * ... * dk); with `inplace` a view sharing this array's data, else a copy."""
        if inplace and not kwargs and not _AG.recording:
            return self.reshape((0, -1))
        return _fluent_call("flatten", self, (), kwargs)

    def expand_dims(self, axis, inplace=False, **kwargs) -> "NDArray":
        """A new axis of size 1 at `axis`; with `inplace` a view sharing this array's data, else a copy."""
        if not inplace or kwargs or _AG.recording:  # recorded as the op, as before views existed
            return _fluent_call("expand_dims", self, (), {"axis": axis, **kwargs})
        a = int(axis)
        if not -self.ndim - 1 <= a <= self.ndim:
            raise MXNetError(f"expand_dims: axis {a} is out of range for an array of {self.ndim} dimensions")
        a = a + self.ndim + 1 if a < 0 else a
        return self.reshape(self.shape[:a] + (1,) + self.shape[a:])

    def squeeze(self, axis=None, inplace=False, **kwargs) -> "NDArray":
        """Without the axes of size 1 (those of `axis`, or all); with `inplace` a view sharing
        this array's data, else a copy. A result with no axes has shape (1,)."""
        if not inplace or kwargs or _AG.recording:
            return _fluent_call("squeeze", self, (), {"axis": axis, **kwargs})
        axes = range(self.ndim) if axis is None else [axis] if isinstance(axis, numbers.Integral) else list(axis)
        drop = set()
        for a in axes:
            if not -self.ndim <= a < self.ndim or (a % self.ndim) in drop:
                raise MXNetError(f"squeeze: axis {axis} is out of range or repeated for shape {self.shape}")
            if self.shape[a] != 1:
                if axis is None:
                    continue
                raise MXNetError(f"squeeze: axis {a} of shape {self.shape} has size {self.shape[a]}, not 1")
            drop.add(a % self.ndim)
        return self.reshape(tuple(d for i, d in enumerate(self.shape) if i not in drop) or (1,))

    def broadcast_to(self, shape) -> "NDArray":
        """The `broadcast_to` op, after prepending axes of size 1 up to `len(shape)` (as MXNet)."""
        shape = tuple(shape)
        cur = (1,) * (len(shape) - self.ndim) + self.shape
        if len(shape) < self.ndim or any(c not in (1, s) for c, s in zip(cur, shape)):
            raise MXNetError(f"broadcast_to: cannot broadcast an array of shape {self.shape} to {shape}")
        return _fluent_call("broadcast_to", self.reshape(cur) if cur != self.shape else self, (), {"shape": shape})

    def broadcast_like(self, other: "NDArray") -> "NDArray":
        return self.broadcast_to(other.shape)

    def tostype(self, stype: str) -> "NDArray":
        """A copy in storage type `stype`: 'default', 'row_sparse' or 'csr' (see `mx.nd.sparse`)."""
        from .sparse import cast_storage
        return cast_storage(self, stype)

    def as_nd_ndarray(self) -> "NDArray":
        return self

    def as_np_ndarray(self):
        raise MXNetError("as_np_ndarray: jbind has no mx.np (numpy-compatible) arrays")

    def to_dlpack_for_read(self):
        """A DLPack capsule of the current data (for `torch.utils.dlpack.from_dlpack`, ...)."""
        self._data.block_until_ready()
        return self._data.__dlpack__()

    def to_dlpack_for_write(self):
        """A DLPack capsule of this array's memory for a consumer that writes into it, as MXNet's:
        the array first gets a buffer of its own (no other array shares it), and what the
        consumer writes there this array reads. A view must cover its whole base, unchanged."""
        vw = getattr(self, "_vw", None)
        if vw is not None:
            if isinstance(vw, _view.Window) and vw.begin == 0 and vw.shape == vw.root.shape:
                return vw.root.to_dlpack_for_write()
            raise MXNetError(f"to_dlpack_for_write: this array (shape {self.shape}) is a view of part of "
                             "another or of a numpy array; call it on a copy() or on the base array")
        self._arr = jnp.array(self._arr, copy=True)
        self._arr.block_until_ready()
        return self._arr.__dlpack__()

    def tolist(self):
        return self.asnumpy().tolist()

    # --- pickling, in MXNet's form ---------------------------------------------------------
    def __reduce_ex__(self, protocol):
        if type(self) is not NDArray:  # sparse arrays pickle their components
            return super().__reduce_ex__(protocol)
        return NDArray, (None,), self.__getstate__()

    def __getstate__(self):
        """MXNet's pickled state: `{'handle': the array's raw bytes}` (one `.params` record)."""
        if type(self) is not NDArray:
            return object.__getstate__(self)
        from .serialize import encode_raw
        return {"handle": None if self._data is None else bytearray(encode_raw(self.asnumpy()))}

    def __setstate__(self, state):
        """Load MXNet's pickled state (raw bytes, read as data: nothing in them runs) into this array,
        on the current context (an array MXNet saved on a GPU loads where there is none)."""
        if isinstance(state, tuple):  # a subclass's slots, as `object.__getstate__` gave them
            for k, v in (state[1] or {}).items():
                setattr(self, k, v)
            return
        raw = state.get("handle") if isinstance(state, dict) else None
        if raw is not None and not isinstance(raw, (bytes, bytearray)):
            raise MXNetError(f"NDArray.__setstate__: 'handle' must be bytes, got {type(raw).__name__}")
        if raw is None:
            self._data = None
            return
        from .serialize import _canonical, decode_raw
        self._data = jax.device_put(_canonical(decode_raw(bytes(raw), "a pickled NDArray")), _dev(None))

    def __len__(self):
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        shape = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()}\n<NDArray {shape} @{self.context}>"

    def __bool__(self):
        """False for an empty array, else the value of a one-element array (as MXNet)."""
        if self.size == 0:
            return False
        if self.size != 1:
            raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")
        return bool(self.asnumpy().reshape(-1)[0])

    __hash__ = object.__hash__

    # --- arithmetic ---------------------------------------------------------------------
    def _op(self, other, fn, reverse=False, cast=False):
        if _AG.recording and fn in _recorded.BINARY:
            return _recorded.binary(self, other, fn, reverse)
        o = other._data if isinstance(other, NDArray) else other
        if isinstance(o, np.ndarray):
            o = jnp.asarray(o)
        if not isinstance(o, (jax.Array, numbers.Number, np.generic)):
            return NotImplemented
        if isinstance(o, (numbers.Number, np.generic)):
            o = jnp.asarray(o, dtype=self._data.dtype)
        a, b = (o, self._data) if reverse else (self._data, o)
        if fn is jnp.divide and a.dtype == b.dtype and jnp.issubdtype(a.dtype, jnp.integer):
            fn = jax.lax.div  # integers divide to integers, truncated, as MXNet's `/`
        return self._new(_dispatch.elementwise(fn, self._data.dtype if cast else None)(a, b))

    def _iop(self, other, fn):
        if _AG.recording:
            raise MXNetError(f"{_recorded.INPLACE_ERROR}; write `x = x + y` instead of `x += y` inside record()")
        res = self._op(other, fn)
        if res is NotImplemented:
            return res
        self._data = res._data.astype(self._data.dtype)
        return self

    def __add__(self, o): return self._op(o, jnp.add)
    def __radd__(self, o): return self._op(o, jnp.add, True)
    def __sub__(self, o): return self._op(o, jnp.subtract)
    def __rsub__(self, o): return self._op(o, jnp.subtract, True)
    def __mul__(self, o): return self._op(o, jnp.multiply)
    def __rmul__(self, o): return self._op(o, jnp.multiply, True)
    def __truediv__(self, o): return self._op(o, jnp.divide)
    def __rtruediv__(self, o): return self._op(o, jnp.divide, True)
    def __mod__(self, o): return self._op(o, jnp.mod)
    def __rmod__(self, o): return self._op(o, jnp.mod, True)
    def __pow__(self, o): return self._op(o, jnp.power)
    def __rpow__(self, o): return self._op(o, jnp.power, True)
    def __iadd__(self, o): return self._iop(o, jnp.add)
    def __isub__(self, o): return self._iop(o, jnp.subtract)
    def __imul__(self, o): return self._iop(o, jnp.multiply)
    def __itruediv__(self, o): return self._iop(o, jnp.divide)
    def __neg__(self): return _recorded.call("negative", self) if _AG.recording else self._new(-self._data)
    def __abs__(self): return _recorded.call("abs", self) if _AG.recording else self._new(jnp.abs(self._data))

    def _cmp(self, o, fn):
        res = self._op(o, fn, cast=True)  # cast in the same program (a no-op below when recording)
        return res if res is NotImplemented else NDArray(res._data.astype(self._data.dtype))

    def __eq__(self, o): return self._cmp(o, jnp.equal)
    def __ne__(self, o): return self._cmp(o, jnp.not_equal)
    def __lt__(self, o): return self._cmp(o, jnp.less)
    def __le__(self, o): return self._cmp(o, jnp.less_equal)
    def __gt__(self, o): return self._cmp(o, jnp.greater)
    def __ge__(self, o): return self._cmp(o, jnp.greater_equal)


def _fluent_call(op_name, arr, args, kwargs):
    from .imperative import invoke
    return invoke(op_name, (arr,) + tuple(args), kwargs)


_fluent.install(NDArray, _fluent_call, "mx.nd")
from . import _dispatch, _recorded, _view  # noqa: E402 (they need NDArray's module loaded)
from ._creation import (_dev, _into, _placed, _shape, arange, array, concat, empty, full,  # noqa: E402,F401
                        ones, waitall, zeros)
_recorded.install(NDArray)
