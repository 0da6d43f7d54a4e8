"""NDArray's own methods (arithmetic, indexing, reshape, astype, copy) while
`autograd.record()` is on: each becomes the registered op MXNet's NDArray calls
(`x + y` is `broadcast_add`, `x * 2` is `_mul_scalar`, `x[1:3]` is `slice`), run through
`imperative.invoke`, which records it. Outside `record()` NDArray does not come here.

Also the autograd methods of NDArray (`attach_grad`, `grad`, `backward`, `detach`),
installed on the class by `install`.
"""
from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

from ..autograd import _tape
from ..base import MXNetError

INPLACE_ERROR = _tape.INPLACE_ERROR

# jnp function -> (op with an array, op with a scalar on the right, op with a scalar on the left)
BINARY = {
    jnp.add: ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    jnp.subtract: ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    jnp.multiply: ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    jnp.divide: ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    jnp.mod: ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    jnp.power: ("broadcast_power", "_power_scalar", "_rpower_scalar"),
}


def call(op_name, *args, **params):
    from .imperative import invoke
    return invoke(op_name, args, params)


def binary(a, other, fn, reverse):
    from .ndarray import NDArray
    with_array, scalar_right, scalar_left = BINARY[fn]
    if isinstance(other, (numbers.Number, np.generic)):
        return call(scalar_left if reverse else scalar_right, a, scalar=float(other))
    if isinstance(other, (np.ndarray, jax.Array)):
        other = NDArray(jnp.asarray(other))
    if not isinstance(other, NDArray):
        return NotImplemented
    lhs, rhs = (other, a) if reverse else (a, other)
    if lhs.dtype != rhs.dtype:  # jnp's promotion, as NDArray does outside record()
        t = np.dtype(jnp.result_type(lhs._data, rhs._data)).name
        lhs, rhs = (x if np.dtype(x.dtype) == t else call("Cast", x, dtype=t) for x in (lhs, rhs))
    return call(with_array, lhs, rhs)


def getitem(a, key):
    """`a[key]` as ops: basic indexing (ints, slices, None, ...) is `slice` and `Reshape`;
    any other index takes the selected elements of the flattened array (`take`)."""
    from .ndarray import NDArray
    out_shape = jax.eval_shape(lambda x: x[key], jax.ShapeDtypeStruct(a.shape, a._data.dtype)).shape
    parts = key if isinstance(key, tuple) else (key,)
    if all(p is None or p is Ellipsis or isinstance(p, (slice, numbers.Integral)) for p in parts):
        real = [p for p in parts if p is not None]
        if real.count(Ellipsis) > 1:
            raise IndexError(f"an index can only have a single ellipsis, got {key!r}")
        if Ellipsis in real:
            i = real.index(Ellipsis)
            real[i:i + 1] = [slice(None)] * (a.ndim - len(real) + 1)
        if len(real) > a.ndim:
            raise IndexError(f"too many indices {key!r} for NDArray of shape {a.shape}")
        begin, end, step = [], [], []
        for p, d in zip(real, a.shape):
            if isinstance(p, slice):
                begin.append(p.start)
                end.append(p.stop)
                step.append(p.step)
            else:
                i = int(p) + d if int(p) < 0 else int(p)
                if not 0 <= i < d:
                    raise IndexError(f"index {int(p)} is out of bounds for axis of size {d}")
                begin.append(i)
                end.append(i + 1)
                step.append(None)
        res = call("slice", a, begin=tuple(begin), end=tuple(end), step=tuple(step)) if real else a
        # a single element comes back with shape (1,), as MXNet's (no registered op makes a 0-d array)
        want = tuple(out_shape) or (1,)
        return res if res.shape == want else call("Reshape", res, shape=want)
    flat = np.arange(a.size, dtype=np.int64).reshape(a.shape)[key]
    idx = NDArray(jnp.asarray(flat.astype(np.int32 if a.size < 2 ** 31 else np.int64)))
    return call("take", call("Reshape", a, shape=(-1,)), idx, axis=0)


def setitem(a, key, value) -> bool:
    """Assignment while recording. `a[:] = v` (whole array, `a` not in the graph) records
    a copy of `v`; writes into part of an array, or into one the graph holds, are refused
    as MXNet refuses them. Returns True when the assignment was done here."""
    from .ndarray import NDArray
    _tape.check_not_in_graph(a)
    parts = key if isinstance(key, tuple) else (key,)
    whole = all(p is None or p is Ellipsis or (isinstance(p, slice) and p == slice(None)) for p in parts)
    if not whole:
        raise MXNetError(f"{_tape.INPLACE_ERROR}: cannot write into part (index {key!r}) of an array while "
                         "recording; build the result with ops (concat, where, ...) instead")
    if isinstance(value, NDArray) and _tape.live_ag(value) is not None:
        if value.shape != a.shape:  # a[None] = v takes v of shape (1, *a.shape)
            value = value.reshape(a.shape) if value.size == a.size else value.broadcast_to(a.shape)
        res = call("_copy", value if value.dtype == a.dtype else call("Cast", value, dtype=np.dtype(a.dtype).name))
        a._data, a._ag = res._data, res._ag
        return True
    return False


# --- NDArray's autograd methods -----------------------------------------------------------
def attach_grad(self, grad_req="write", stype=None):
    """Allocate a zero gradient array for this array and mark it as a variable whose
    gradient `backward` computes ('write' replaces, 'add' accumulates, 'null' skips)."""
    from .ndarray import NDArray, cached_zeros, _device_of
    grad = NDArray(cached_zeros(self.shape, self._data.dtype, _device_of(self._data)))
    stype = stype or self.stype  # MXNet: the gradient has the array's storage type by default
    if stype != grad.stype:
        grad = grad.tostype(stype)
    _tape.mark_variables([self], [grad], grad_req)


def _grad(self):
    """The gradient array attached by `attach_grad` / `mark_variables` (None if none)."""
    ag = getattr(self, "_ag", None)
    return ag.grad if isinstance(ag, _tape.Var) else None


def _get_fresh(self):
    ag = getattr(self, "_ag", None)
    return isinstance(ag, _tape.Var) and ag.fresh


def _set_fresh(self, value):
    ag = getattr(self, "_ag", None)
    if not isinstance(ag, _tape.Var):
        raise MXNetError("_fresh_grad: the array is not a marked variable (call attach_grad first)")
    ag.fresh = bool(value)


def backward(self, out_grad=None, retain_graph=False, train_mode=True):
    """Compute the gradients of this array (recorded under `autograd.record()`) with
    respect to the marked variables; `out_grad` is its head gradient (default ones)."""
    from ..autograd import backward as _backward
    _backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)


def detach(self):
    """The same values, cut from the recorded graph (no gradient flows through it); as in
    MXNet, it shares this array's data (a view: a write through either is seen by both)."""
    from .ndarray import NDArray
    if type(self) is not NDArray:
        return NDArray(self._data)
    from ._view import make
    return make(self, 0, self.shape)


def install(cls) -> None:
    cls.attach_grad = attach_grad
    cls.grad = property(_grad)
    cls._fresh_grad = property(_get_fresh, _set_fresh)
    cls.backward = backward
    cls.detach = detach
