"""Joining and splitting: Concat, stack, SliceChannel, _split_v2 (shape conventions: shape.py)."""
from __future__ import annotations

import jax.numpy as jnp

from ._base import Op, register
from .shape import _axis, _unify


@register(aliases=("concat",))
class Concat(Op):
    """Join inputs along `dim`; the other dims must agree."""
    num_args: int
    dim: int = 1
    variadic = "num_args"

    def arguments(self):
        return tuple(f"arg{i}" for i in range(self.num_args))

    def infer_shape(self, ins, outs):
        known = [s for s in list(ins) + list(outs) if s is not None]
        if not known:
            return list(ins), [None], []
        ndim = len(known[0])
        if ndim == 0:
            raise ValueError("cannot concatenate 0-dim inputs")
        shown = ", ".join("None" if s is None else str(tuple(s)) for s in ins)
        if any(len(s) != ndim for s in known):
            raise ValueError(f"inputs must have the same number of dims; got {shown}")
        ax = _axis(self.dim, ndim, "dim")
        base = tuple(0 if k == ax else d for k, d in enumerate(known[0]))
        for s in known:
            try:
                base = _unify(base, tuple(0 if k == ax else d for k, d in enumerate(s)), "")
            except ValueError:
                out = "" if outs[0] is None else f", output {tuple(outs[0])}"
                raise ValueError(f"dim={self.dim}: inputs must agree on every dim but {ax}; "
                                 f"got {shown}{out}") from None
        new_ins = [base[:ax] + ((s[ax] if s is not None else 0),) + base[ax + 1:] for s in ins]
        sizes = [s[ax] for s in new_ins]
        total = sum(sizes) if all(sizes) else (outs[0][ax] if outs[0] is not None else 0)
        return new_ins, [base[:ax] + (total,) + base[ax + 1:]], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.concatenate(ins, axis=self.dim)], aux


@register
class _rnn_param_concat(Concat):
    """Concat for a fused RNN's flattened parameters (what Gluon's rnn layers emit): as
    Concat, and when the output's size along `dim` is known, one or two inputs whose
    size there is unknown get the rest, split evenly (MXNet's rule)."""

    def infer_shape(self, ins, outs):
        ins, outs, aux = super().infer_shape(ins, outs)
        out = outs[0]
        if out is None or not ins or any(s is None for s in ins):
            return ins, outs, aux
        ax = _axis(self.dim, len(out), "dim")
        unknown = [i for i, s in enumerate(ins) if s[ax] == 0]
        if not unknown or out[ax] == 0:
            return ins, outs, aux
        rest = out[ax] - sum(s[ax] for s in ins)
        if rest < 0:
            raise ValueError(f"the inputs' sizes along dim {self.dim} already exceed the output's {out[ax]}")
        if len(unknown) > 2:
            raise ValueError(f"expecting 1 or 2 inputs whose size along dim {self.dim} is to be inferred, "
                             f"got {len(unknown)}")
        ins = [s[:ax] + (rest // len(unknown),) + s[ax + 1:] if i in unknown else s for i, s in enumerate(ins)]
        return ins, outs, aux


@register
class stack(Op):
    """Join same-shaped inputs along a new axis."""
    mxnet_order = ('axis', 'num_args')
    num_args: int
    axis: int = 0
    variadic = "num_args"

    def arguments(self):
        return tuple(f"arg{i}" for i in range(self.num_args))

    def infer_shape(self, ins, outs):
        one = None
        for s in ins:
            one = _unify(one, s, "stack inputs")
        out = outs[0]
        if out is not None:
            ax = _axis(self.axis, len(out), "axis")
            one = _unify(one, out[:ax] + out[ax + 1:], "stack output")
        if one is None:
            return list(ins), [None], []
        ax = _axis(self.axis, len(one) + 1, "axis")
        return [one] * len(ins), [one[:ax] + (self.num_args,) + one[ax:]], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.stack(ins, axis=self.axis)], aux


@register(aliases=("split",))
class SliceChannel(Op):
    """Split `axis` into `num_outputs` equal parts (each squeezed if `squeeze_axis`)."""
    num_outputs: int
    axis: int = 1
    squeeze_axis: bool = False

    def __post_init__(self):
        if self.num_outputs < 1:
            raise ValueError(f"num_outputs must be positive, got {self.num_outputs}")

    def outputs(self):
        return tuple(f"output{i}" for i in range(self.num_outputs))

    def infer_shape(self, ins, outs):
        data, n = ins[0], self.num_outputs
        if data is None:  # as MXNet: the input's ndim is needed
            return [None], list(outs), []
        ax = _axis(self.axis, len(data), "axis")
        piece = None
        for o in outs:
            piece = _unify(piece, o, "SliceChannel outputs")
        if piece is not None:  # back-calculate the input from the outputs
            split = n if self.squeeze_axis else piece[ax] * n
            back = piece[:ax] + (split,) + piece[ax + (0 if self.squeeze_axis else 1):]
            data = _unify(data, back, "SliceChannel input and outputs")
        d = data[ax]
        if d and d % n:
            raise ValueError(f"num_outputs={n} does not evenly divide axis {ax} of input {tuple(data)}")
        if self.squeeze_axis and d and d != n:
            raise ValueError(f"squeeze_axis=True needs axis {ax} of input {tuple(data)} to be "
                             f"num_outputs={n}")
        rest = () if self.squeeze_axis else (d // n,)
        return [data], [data[:ax] + rest + data[ax + 1:]] * n, []

    def lower(self, ins, aux, is_train, key):
        parts = jnp.split(ins[0], self.num_outputs, axis=self.axis)
        if self.squeeze_axis:
            parts = [jnp.squeeze(p, axis=self.axis) for p in parts]
        return list(parts), aux


@register
class SplitV2(Op):
    """Split `axis` at `indices` (which start at 0) or, with `sections` > 0, into that many
    equal parts; each part squeezed if `squeeze_axis` (MXNet's `split_v2`)."""
    name = "_split_v2"
    indices: tuple[int, ...]
    axis: int = 0
    squeeze_axis: bool = False
    sections: int = 0

    def __post_init__(self):
        if self.sections < 0:
            raise ValueError(f"sections must not be negative, got {self.sections}")
        if self.sections == 0 and not self.indices:
            raise ValueError("give indices (split points, starting at 0) or sections > 0")

    def outputs(self):
        return tuple(f"output{i}" for i in range(self.sections or len(self.indices)))

    def _bounds(self, size: int) -> list:
        """The (start, end) of every part along an axis of `size`."""
        if self.sections:
            if size % self.sections:
                raise ValueError(f"sections={self.sections} does not evenly divide the axis of size {size}")
            step = size // self.sections
            starts = [i * step for i in range(self.sections)]
        else:
            starts = list(self.indices)
        ends = starts[1:] + [size]
        for k, (a, b) in enumerate(zip(starts, ends)):
            if not 0 <= a < b <= size:
                raise ValueError(f"indices {tuple(self.indices)} split an axis of size {size} into part {k} "
                                 f"[{a}:{b}], which is empty or out of range")
        return list(zip(starts, ends))

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is None or not data[_axis(self.axis, len(data), "axis")]:
            return [data], list(outs), []
        ax = _axis(self.axis, len(data), "axis")
        shapes = []
        for a, b in self._bounds(data[ax]):
            if self.squeeze_axis and b - a != 1:
                raise ValueError(f"squeeze_axis=True needs parts of size 1 along axis {ax}; part [{a}:{b}] of "
                                 f"input {tuple(data)} has {b - a}")
            mid = () if self.squeeze_axis else (b - a,)
            shapes.append(data[:ax] + mid + data[ax + 1:])
        return [data], shapes, []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        ax = _axis(self.axis, x.ndim, "axis")
        parts = [x[(slice(None),) * ax + (slice(a, b),)] for a, b in self._bounds(x.shape[ax])]
        if self.squeeze_axis:
            parts = [jnp.squeeze(p, axis=ax) for p in parts]
        return parts, aux
