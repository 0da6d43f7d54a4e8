"""Variable-length sequence ops: SequenceMask, SequenceLast, SequenceReverse.

Data is time-major (T, N, ...) for axis=0, batch-major (N, T, ...) for axis=1. With
`use_sequence_length=False` the op has only the `data` argument and every sequence has
length T. Lengths are truncated toward zero, as MXNet casts them to int; lengths outside
[0, T] (undefined in MXNet) are clipped. No gradient flows to `sequence_length`.
"""
from __future__ import annotations

from typing import ClassVar

import jax.numpy as jnp

from ._base import Op, register


class _SequenceOp(Op):
    axes: ClassVar[tuple] = (0, 1)  # the time axes MXNet supports for this op

    def arguments(self):
        return ("data", "sequence_length") if self.use_sequence_length else ("data",)

    def _check_axis(self):
        if self.axis not in self.axes:
            raise ValueError(f"`axis`={self.axis} is not supported; {type(self).__name__} takes axis "
                             f"{' or '.join(map(str, self.axes))}")

    def _out(self, data):
        return data

    def _data_from_out(self, out):
        return out

    def infer_shape(self, ins, outs):
        self._check_axis()
        data = ins[0]
        if data is None and outs[0] is not None:
            data = self._data_from_out(outs[0])
        if data is not None and len(data) < 2:
            raise ValueError(f"data must have a time and a batch axis, got shape {tuple(data)}")
        lens = None if data is None else (data[1 - self.axis],)
        args = [data, lens if lens is not None else ins[1]] if self.use_sequence_length else [data]
        return args, [None if data is None else self._out(data)], []

    def infer_type(self, ins, outs):
        t = ins[0] if ins[0] is not None else outs[0]
        args = [t, ins[1] if ins[1] is not None else t] if self.use_sequence_length else [t]
        return args, [t], []

    def _lengths(self, ins, steps):
        """-> (N,) int lengths clipped to [0, T], or None when every sequence is full."""
        if not self.use_sequence_length:
            return None
        lens = ins[1]
        if not jnp.issubdtype(lens.dtype, jnp.integer):
            lens = lens.astype(jnp.int32)
        return jnp.clip(lens, 0, steps)


def _time_major(x, axis):
    return x if axis == 0 else jnp.swapaxes(x, 0, 1)


@register
class SequenceMask(_SequenceOp):
    """Set steps at or after each sequence's length to `value`."""
    use_sequence_length: bool = False
    value: float = 0.0
    axis: int = 0

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        steps = x.shape[self.axis]
        lens = self._lengths(ins, steps)
        if lens is None:
            return [x], aux
        keep = jnp.arange(steps)[:, None] < lens[None, :]            # (T, N)
        if self.axis == 1:
            keep = keep.T
        keep = keep.reshape(keep.shape + (1,) * (x.ndim - 2))
        return [jnp.where(keep, x, jnp.asarray(self.value, x.dtype))], aux


@register
class SequenceLast(_SequenceOp):
    """The last valid step of each sequence: shape (N, ...)."""
    use_sequence_length: bool = False
    axis: int = 0

    def _out(self, data):
        return data[:self.axis] + data[self.axis + 1:]

    def _data_from_out(self, out):
        return None  # the number of steps is lost

    def lower(self, ins, aux, is_train, key):
        x = _time_major(ins[0], self.axis)
        lens = self._lengths(ins, x.shape[0])
        if lens is None:
            return [x[-1]], aux
        last = jnp.clip(lens - 1, 0, x.shape[0] - 1)
        return [x[last, jnp.arange(x.shape[1])]], aux


@register
class SequenceReverse(_SequenceOp):
    """Reverse the first `sequence_length` steps of each sequence; later steps stay."""
    use_sequence_length: bool = False
    axis: int = 0
    axes = (0,)

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        steps = x.shape[0]
        lens = self._lengths(ins, steps)
        if lens is None:
            return [jnp.flip(x, 0)], aux
        t = jnp.arange(steps)[:, None]
        src = jnp.where(t < lens[None, :], lens[None, :] - 1 - t, t)  # (T, N)
        return [x[src, jnp.arange(x.shape[1])[None, :]]], aux
