"""Broadcasting ops: the broadcast_* binary family (numpy's rule, as MXNet 1.9), the
logical ones, broadcast_to / broadcast_axis / broadcast_like."""
from __future__ import annotations

from typing import Callable, ClassVar, Optional

import jax.numpy as jnp

from ..base import ShapeError, fmt_shape
from ._base import Op, frozen, register
from .elemwise import _BINARY, _axes, _logical, _make


def _broadcast(l, r) -> tuple:
    """numpy's rule, as MXNet 1.9: align on the right, dims of 1 stretch; 0 = unknown."""
    n = max(len(l), len(r))
    out = []
    for a, b in zip((1,) * (n - len(l)) + tuple(l), (1,) * (n - len(r)) + tuple(r)):
        if a and b:
            if a != b and a != 1 and b != 1:
                raise ShapeError(f"operands could not be broadcast together with shapes "
                                 f"{fmt_shape(l)} {fmt_shape(r)}")
            out.append(b if a == 1 else a)
        else:
            k = a or b
            out.append(k if k > 1 else 0)
    return tuple(out)


@frozen
class _BroadcastBinary(Op):
    fn: ClassVar[Callable]

    def arguments(self):
        return ("lhs", "rhs")

    def infer_shape(self, ins, outs):
        l, r = ins
        out = _broadcast(l, r) if l is not None and r is not None else None
        return [l, r], [out], []

    def lower(self, ins, aux, is_train, key):
        return [self.fn(ins[0], ins[1])], aux


for _n in _BINARY:
    _make(_BroadcastBinary, f"broadcast_{_n}", _BINARY[_n],
          {"add": ("broadcast_plus",), "sub": ("broadcast_minus",)}.get(_n, ()),
          f"Elementwise {_n} with broadcasting (numpy's rule; gradients sum over stretched axes).")


for _n, _f in [("and", jnp.logical_and), ("or", jnp.logical_or), ("xor", jnp.logical_xor)]:
    _make(_BroadcastBinary, f"broadcast_logical_{_n}", _logical(_f), (),
          f"Elementwise logical {_n} with broadcasting: 1 or 0 in the input dtype; no gradient.")


def _stretch(src, target, what):
    """Broadcast shape `src` to `target` of equal ndim (target 0 = keep src's dim)."""
    if len(src) != len(target):
        raise ShapeError(f"cannot broadcast {fmt_shape(src)} to {fmt_shape(target)}: {what}")
    out = []
    for a, t in zip(src, target):
        if t and a and a != t and a != 1:
            raise ShapeError(f"cannot broadcast {fmt_shape(src)} to {fmt_shape(target)}: dims must be "
                             f"equal or 1")
        out.append(t or a)
    return tuple(out)


@register
class broadcast_to(Op):
    """Broadcast `data` to `shape` (same ndim; 0 in `shape` keeps the input's dim)."""
    shape: tuple[int, ...] = ()

    def infer_shape(self, ins, outs):
        d = ins[0]
        if d is None:
            return [None], [self.shape or None], []
        return [d], [_stretch(d, self.shape, "the target shape must have the same ndim")], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [jnp.broadcast_to(x, tuple(t or a for a, t in zip(x.shape, self.shape)))], aux


@register(aliases=("broadcast_axes",))
class broadcast_axis(Op):
    """Stretch the size-1 axes `axis` of `data` to `size`."""
    axis: tuple[int, ...] = ()
    size: tuple[int, ...] = ()

    def __post_init__(self):
        if len(self.axis) != len(self.size):
            raise ValueError(f"axis {self.axis} and size {self.size} must have the same length")

    def _out(self, d):
        out = list(d)
        for a, n in zip(self.axis, self.size):
            (a,) = _axes((a,), len(d))
            if d[a] and d[a] != 1:
                raise ShapeError(f"broadcasting axis {a} must have size 1, got {fmt_shape(d)}")
            out[a] = n
        return tuple(out)

    def infer_shape(self, ins, outs):
        d = ins[0]
        return [d], [None if d is None else self._out(d)], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.broadcast_to(ins[0], self._out(ins[0].shape))], aux


@register
class broadcast_like(Op):
    """Broadcast `lhs` to the shape of `rhs` (or of `rhs_axes` into `lhs_axes`); `rhs` gets no gradient."""
    lhs_axes: Optional[tuple[int, ...]] = None
    rhs_axes: Optional[tuple[int, ...]] = None

    def arguments(self):
        return ("lhs", "rhs")

    def _out(self, l, r):
        if self.lhs_axes is None or self.rhs_axes is None:  # MXNet: either one missing, the whole shape
            return _stretch(l, r, "lhs and rhs must have the same ndim")
        la, ra = self.lhs_axes, self.rhs_axes
        if len(la) != len(ra):
            raise ShapeError(f"lhs_axes {la} and rhs_axes {ra} must have the same length")
        if not la:
            raise ShapeError("lhs_axes and rhs_axes are empty: name at least one axis of each (MXNet: "
                             "'Empty axes tuple is not allowed')")
        target = list(l)
        for a, b in zip(la, ra):
            _axes((a,), len(l), "lhs_axes"), _axes((b,), len(r), "rhs_axes")
            if l[a % len(l)] not in (0, 1):
                raise ShapeError(f"lhs axis {a} of {fmt_shape(l)} has size {l[a % len(l)]}, not 1: it cannot be "
                                 f"broadcast to rhs axis {b} of {fmt_shape(r)}")
            target[a % len(l)] = r[b % len(r)]
        return _stretch(l, tuple(target), "")

    def infer_shape(self, ins, outs):
        l, r = ins
        return [l, r], [None if l is None or r is None else self._out(l, r)], []

    def infer_type(self, ins, outs):
        t = ins[0] if ins[0] is not None else outs[0]
        return [t, ins[1]], [t], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.broadcast_to(ins[0], self._out(ins[0].shape, ins[1].shape))], aux
