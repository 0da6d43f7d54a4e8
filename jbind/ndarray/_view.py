"""NDArray views: arrays that share their data with another, as MXNet's do.

In MXNet `x.reshape(...)`, `x[1:3]`, `x[i]` (and every basic index whose elements are
contiguous in memory), `flatten` / `expand_dims` / `squeeze` with `inplace=True`, and
`detach()` return arrays over x's memory: a write through either is seen by both.
jax arrays are immutable, so a view here is a window on its *root* (the nearest array
that is not itself a window): the flat range [begin, begin + size) of the root's
elements in C order, read with the view's shape. Reading a view slices the root's
current array (cached while the root's array is the same object, so repeated reads
cost nothing); writing a view replaces the root's array with the window updated, which
every other view of that root then reads.

A window is exactly what MXNet's shared-memory arrays can express (a contiguous run of
elements), so which index gives a view and which a copy follows MXNet's rule
(`is_contiguous`).
"""
from __future__ import annotations

import ctypes
import functools
import math
import numbers
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError


class Window:
    """Where a view's elements live in its root: `size` elements from flat `begin`."""

    __slots__ = ("root", "begin", "size", "shape", "src", "val")

    def __init__(self, root, begin: int, shape: tuple):
        self.root, self.begin, self.shape = root, int(begin), tuple(int(d) for d in shape)
        self.size = math.prod(self.shape)
        self.src = self.val = None   # the root array last read or written, and the view's value of it

    def _whole(self, src) -> bool:
        return self.begin == 0 and self.size == src.size

    def read(self):
        """The view's current value: its window of the root's current array."""
        src = self.root._data
        if src is self.src:
            return self.val
        if src is None:
            return None
        if src.size < self.begin + self.size:
            raise MXNetError(f"a view of shape {self.shape} at element {self.begin} no longer fits in its base, "
                             f"which now has shape {tuple(src.shape)}")
        if self._whole(src) and tuple(src.shape) == self.shape:
            val = src
        elif on_host(src):
            val = jax.device_put(np.asarray(src).reshape(-1)[self.begin:self.begin + self.size].reshape(self.shape),
                                 device_of(src))
        elif self._whole(src):
            val = src.reshape(self.shape)
        else:
            val = _take(src, self.begin, self.size, self.shape)
        self.src, self.val = src, val
        return val

    def write(self, value) -> None:
        """Replace the view's elements with `value` (of the view's shape) in the root."""
        src = self.root._data
        if tuple(value.shape) != self.shape:
            raise MXNetError(f"cannot store an array of shape {tuple(value.shape)} in a view of shape {self.shape}")
        if src is None:
            new = value
        elif on_host(src):
            host = np.asarray(value).astype(src.dtype, copy=False)
            if self._whole(src):
                host = host.reshape(src.shape)
            else:
                buf = np.array(src)
                buf.reshape(-1)[self.begin:self.begin + self.size] = host.reshape(-1)
                host = buf
            new = jax.device_put(host, device_of(src))
        elif self._whole(src):
            new = jnp.asarray(value).reshape(src.shape).astype(src.dtype)
        else:
            new = _put(src, value, self.begin)
        self.root._data = new
        self.src = self.root._data
        self.val = value if value.dtype == new.dtype else value.astype(new.dtype)


def device_of(arr):
    return next(iter(arr.devices()))


def on_host(arr) -> bool:
    """Whether `arr` is a concrete array on one CPU device. There, moving elements with
    numpy (whose view of the buffer costs no copy) compiles nothing; eager jax indexing
    compiles a program per shape and key, which a loop over many shapes pays for each."""
    if not isinstance(arr, jax.Array) or isinstance(arr, jax.core.Tracer):
        return False
    devs = arr.devices()
    return len(devs) == 1 and next(iter(devs)).platform == "cpu"


def host_getitem(src, key):
    """`src[key]` through numpy (see `on_host`); numpy's IndexError for an index out of range."""
    return jax.device_put(np.asarray(src)[key], device_of(src))


def host_setitem(src, key, value):
    """`src` with `src[key] = value`, through numpy (see `on_host`)."""
    buf = np.array(src)
    buf[key] = value
    return jax.device_put(buf, device_of(src))


@functools.partial(jax.jit, static_argnames=("size", "shape"))
def _take(src, begin, size, shape):
    return jax.lax.dynamic_slice(src.reshape(-1), (begin,), (size,)).reshape(shape)


@jax.jit
def _put(src, val, begin):
    flat = jax.lax.dynamic_update_slice(src.reshape(-1), val.reshape(-1).astype(src.dtype), (begin,))
    return flat.reshape(src.shape)


class HostMirror:
    """The data of an array made by `from_numpy(a, zero_copy=True)`: MXNet's array then uses
    a's memory, so a write into the NDArray shows in `a` (which MXNet makes read-only to
    numpy). The values live in a jax array; each write is also copied into `a`."""

    __slots__ = ("host", "val")

    def __init__(self, host: np.ndarray, val):
        self.host, self.val = host, val

    def read(self):
        return self.val

    def write(self, value) -> None:
        if tuple(value.shape) != self.host.shape:
            raise MXNetError(f"cannot store an array of shape {tuple(value.shape)} in an array of shape "
                             f"{self.host.shape} made by from_numpy")
        self.val = value
        try:
            self.host.flags.writeable = True  # the array is ours to write since from_numpy took it
        except ValueError:  # memory numpy may not write (bytes): the NDArray alone holds the values
            return
        try:
            np.copyto(self.host, np.asarray(value), casting="unsafe")
        finally:
            self.host.flags.writeable = False


def from_host(host: np.ndarray):
    """An NDArray on cpu(0) over the C-contiguous numpy array `host` (see `HostMirror`)."""
    from ..context import cpu
    from .ndarray import NDArray
    from .serialize import _canonical
    host.flags.writeable = False
    arr = NDArray.__new__(NDArray)
    arr._vw = HostMirror(host, jax.device_put(np.array(_canonical(host), copy=True), cpu(0).jax_device))
    return arr


def make(parent, begin: int, shape) -> "NDArray":  # noqa: F821
    """A view of `parent`'s elements from flat `begin` (in parent's C order), with `shape`."""
    from .ndarray import NDArray
    pw = getattr(parent, "_vw", None)
    if isinstance(pw, Window):
        root, begin = pw.root, pw.begin + begin
    else:
        root = parent
    arr = NDArray.__new__(NDArray)
    arr._vw = Window(root, begin, shape)
    label = getattr(parent, "_ctx", None)
    if label is not None:
        arr._ctx = label
    return arr


# --- which basic indexes are views -------------------------------------------------------------
def slice_len(s: slice, n: int) -> int:
    return len(range(*s.indices(n)))


def is_contiguous(slices, shape) -> bool:
    """Whether `x[slices]` (one slice per axis of `shape`) is a contiguous run of x's
    elements in C order, MXNet's condition for basic indexing to return a view: reading
    the axes from the last, once an axis keeps fewer than all of its elements, every
    axis before it keeps at most one; an axis keeping several must step by +1."""
    lens = [slice_len(s, n) for s, n in zip(slices, shape)]
    if math.prod(lens) <= 1:
        return True
    partial = False
    for s, n, k in zip(reversed(slices), reversed(shape), reversed(lens)):
        step = s.indices(n)[2]
        if k > 1 and step != 1:
            return False
        if partial and k > 1:
            return False
        partial = partial or k < n
    return True


def _flat_start(slices, shape) -> int:
    start = 0
    for s, n in zip(slices, shape):
        start = start * n + s.indices(n)[0]
    return start


def is_basic(key) -> bool:
    """Whether `key` indexes with integers, slices, None and Ellipsis only."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(p is None or p is Ellipsis or isinstance(p, slice)
               or (isinstance(p, numbers.Integral) and not isinstance(p, (bool, np.bool_))) for p in parts)


def basic_index(key, shape):
    """A basic index as (one slice per axis, the final shape MXNet gives `x[key]`): integer
    axes are dropped, None adds an axis of 1, and a result with no axes has shape (1,)."""
    parts = list(key) if isinstance(key, tuple) else [key]
    if parts.count(Ellipsis) > 1:
        raise IndexError(f"an index can only have a single ellipsis, got {key!r}")
    real = sum(p is not None and p is not Ellipsis for p in parts)
    if real > len(shape):
        raise IndexError(f"too many indices ({real}) for an NDArray of shape {tuple(shape)}")
    if Ellipsis in parts:
        i = parts.index(Ellipsis)
        parts[i:i + 1] = [slice(None)] * (len(shape) - real)
    else:
        parts += [slice(None)] * (len(shape) - real)
    slices, final, axis = [], [], 0
    for p in parts:
        if p is None:
            final.append(1)
            continue
        n = shape[axis]
        if isinstance(p, slice):
            slices.append(p)
            final.append(slice_len(p, n))
        else:
            i = int(p)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            i = i + n if i < 0 else i
            slices.append(slice(i, i + 1))
        axis += 1
    return tuple(slices), tuple(final) or (1,)


def getitem(arr, key):
    """`arr[key]` for a basic `key`: a view where MXNet gives one, else a copy."""
    slices, final = basic_index(key, arr.shape)
    if is_contiguous(slices, arr.shape):
        begin = 0 if math.prod(final) == 0 else _flat_start(slices, arr.shape)
        return make(arr, begin, final)
    src = arr._data
    return arr._new(host_getitem(src, slices).reshape(final) if on_host(src) else src[slices].reshape(final))


# --- handles: MXNet's `NDArray(ctypes.cast(arr, NDArrayHandle), writable=False)` -------------
# A handle is the id of a live NDArray that handed it out; the registry holds it weakly, so
# a handle outlives nothing and an id reused by a later object is never found by mistake.
_HANDLES = weakref.WeakValueDictionary()


def handle_of(arr):
    """`arr`'s handle (a `ctypes.c_void_p`, MXNet's NDArrayHandle), valid while `arr` lives."""
    _HANDLES[id(arr)] = arr
    return ctypes.c_void_p(id(arr))


class ReadOnly:
    """The data of an array made with `writable=False`: it reads its source, refuses writes."""

    __slots__ = ("src",)

    def __init__(self, src):
        self.src = src

    def read(self):
        return self.src._data

    def write(self, value) -> None:
        raise MXNetError("this NDArray was made with writable=False: it cannot be written to")


def from_handle(arr, data, writable: bool) -> None:
    """Make `arr` share `data`'s elements: a view of the array whose handle `data` is, or
    (not writable) a read-only array over `data` itself."""
    from .ndarray import NDArray
    if isinstance(data, ctypes.c_void_p):
        src = _HANDLES.get(data.value) if data.value is not None else None
        if src is None:
            raise MXNetError(f"NDArray: handle {data.value} is not the handle of a live NDArray "
                             "(a handle is valid while the array that gave it lives)")
    elif isinstance(data, NDArray):
        src = data
    else:
        src = NDArray(data)
    label = getattr(src, "_ctx", None)
    if label is not None:
        arr._ctx = label
    if writable:
        pw = getattr(src, "_vw", None)
        arr._vw = Window(pw.root, pw.begin, pw.shape) if isinstance(pw, Window) else Window(src, 0, src.shape)
    else:
        arr._vw = ReadOnly(src)


class Failed:
    """The data of an output whose computation failed a run-time check: reading it raises the
    check's error (as MXNet's engine does when a result is read); a write replaces it."""

    __slots__ = ("arr", "error")

    def __init__(self, arr, error):
        self.arr, self.error = arr, error

    def read(self):
        raise self.error

    def write(self, value) -> None:
        del self.arr._vw
        self.arr._arr = value


def fail(arr, error) -> None:
    """Make reading `arr` raise `error` until it is written (an executor output only)."""
    try:
        del arr._arr
    except AttributeError:
        if not isinstance(getattr(arr, "_vw", None), Failed):
            raise error from None  # a view of another array: the error now, as it cannot wait
    arr._vw = Failed(arr, error)
