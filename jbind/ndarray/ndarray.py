"""NDArray: a small mutable handle over an immutable `jax.Array`.

MXNet scripts write into arrays in place (`exe.arg_dict['w'][:] = v`) and expect every
holder of the array to see the write. A handle gives them that: assignment replaces the
handle's `jax.Array`, and every executor holding the same handle reads the new one.
"""
from __future__ import annotations

import numbers
import threading
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np

from .. import _fluent
from ..autograd._state import STATE as _AG
from ..base import STYPE_STR_TO_ID, ArgumentError, MXNetError, np_dtype
from ..context import Context, context_of_device, current_context, is_alias
from ..util import is_np_shape

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


class NDArray:
    """MXNet's `mx.nd.NDArray`, backed by a `jax.Array`.

    Differences from MXNet: basic slicing (`a[1:3]`) returns a copy, not a view, so
    writes into a slice do not reach the parent array.
    """

    # `_ag` (set only under autograd: a recorded entry or a marked variable) is left unset
    # otherwise, so creating an array costs what it did before autograd existed.
    # `_ctx` (set only on arrays placed on a `cpu(i)` past JAX's CPU device count) is the
    # context label the array reports; it shares the device of `cpu(i % n)`.
    __slots__ = ("_data", "_ag", "_ctx", "__weakref__")
    __array_priority__ = 1000.0

    def __init__(self, data):
        self._data = data

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
        return True

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
        return self._new(self._data.reshape(target))

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
        raise MXNetError("to_dlpack_for_write: jbind arrays are immutable jax.Arrays; a writer "
                         "through DLPack would not be seen. Use to_dlpack_for_read and assign back")

    def tolist(self):
        return self.asnumpy().tolist()

    # --- assignment -------------------------------------------------------------------
    def _coerce(self, value, shape):
        dev = _device_of(self._data)
        dtype = self._data.dtype
        if isinstance(value, NDArray):
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
        if isinstance(value, NDArray):
            value = value._data
        v = jnp.asarray(value, dtype=self._data.dtype)
        lead = next((i for i, d in enumerate(v.shape) if d != 1), v.ndim)
        try:  # leading 1-dims broadcasting would add back are dropped, as numpy does
            self._data = self._data.at[key].set(v.reshape(v.shape[lead:]) if lead else v)
        except (IndexError, TypeError, ValueError) as e:
            raise MXNetError(f"cannot assign to NDArray{self.shape}[{key!r}]: {e}") from None

    def slice_assign(self, rhs, begin, end, step) -> "NDArray":
        """Write `rhs` into `self[begin:end:step]` (per axis; None takes the default) in place."""
        key = _crop(self.shape, begin, end, step)
        want = tuple(len(range(*k.indices(d))) for k, d in zip(key, self.shape)) + self.shape[len(key):]
        got = tuple(np.shape(rhs._data if isinstance(rhs, NDArray) else rhs))
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
        try:
            return self._new(self._data[key])
        except (IndexError, TypeError) as e:
            raise IndexError(f"index {key!r} out of range for NDArray of shape {self.shape}: {e}") from None

    def __len__(self):
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        shape = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()}\n<NDArray {shape} @{self.context}>"

    def __bool__(self):
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

def _crop(shape, begin, end, step) -> tuple:
    begin, end = tuple(begin), tuple(end)
    step = tuple(step) if step is not None and len(step) else (None,) * len(begin)
    if not (len(begin) == len(end) == len(step)) or len(begin) > len(shape):
        raise MXNetError(f"slice: begin {begin}, end {end} and step {step} must have one entry per "
                         f"axis, at most {len(shape)} for shape {shape}")
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _index(key):
    if isinstance(key, NDArray):
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


# --- creation -----------------------------------------------------------------------------
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


def _fluent_call(op_name, arr, args, kwargs):
    from .imperative import invoke
    return invoke(op_name, (arr,) + tuple(args), kwargs)


_fluent.install(NDArray, _fluent_call, "mx.nd")
from . import _dispatch, _recorded  # noqa: E402 (it needs NDArray's module loaded)
_recorded.install(NDArray)
