"""Shape ops: Reshape, Flatten, transpose, tile, ... (joining and splitting: join.py;
slicing and indexing: indexing.py).

Shapes follow MXNet 1.x's partial convention: None is an unknown shape, 0 an unknown
dimension. Unlike MXNet, a rule never produces a zero-size dimension from known
inputs (an empty slice, a Reshape whose sizes differ, `tile` by 0): it raises instead.
"""
from __future__ import annotations

import math
from typing import Optional

import jax.numpy as jnp

from ._base import Op, register


def _complete(s) -> bool:
    return s is not None and all(d > 0 for d in s)


def _axis(axis: int, ndim: int, what: str = "axis") -> int:
    """Normalise a possibly negative axis into [0, ndim)."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"`{what}`={axis} is out of range for an input of {ndim} dims")
    return axis % ndim


def _unify(a, b, what: str):
    """Merge two partial shapes (0 = unknown dim); ValueError naming both if they differ."""
    if a is None or b is None:
        return a if b is None else b
    if len(a) != len(b) or any(x and y and x != y for x, y in zip(a, b)):
        raise ValueError(f"{what}: shapes {tuple(a)} and {tuple(b)} are incompatible")
    return tuple(x or y for x, y in zip(a, b))


def _int_index(x):
    """Float or int indices -> int32, truncated toward zero as MXNet's static_cast<int>."""
    return x if jnp.issubdtype(x.dtype, jnp.integer) else x.astype(jnp.int32)


def _index_types(ins, outs):
    """dtype rule of ops with (data, indices): out = data; indices keep their own dtype."""
    t = ins[0] if ins[0] is not None else outs[0]
    return [t, ins[1] if ins[1] is not None else t], [t], []


# ------------------------------------------------------------------------- Reshape

def _reshape_dims(src, shape, reverse: bool) -> list:
    """MXNet's InferReshapeShape on a partial shape (0 = unknown) -> partial target."""
    src, spec = list(src), list(shape)
    if reverse:
        src.reverse()
        spec.reverse()
    out, j, i, inferred = [], 0, 0, None

    def take_one(code):
        nonlocal j
        if j >= len(src):
            raise ValueError(f"shape={tuple(shape)}: `{code}` has no input dim left to consume "
                             f"(input has {len(src)} dims)")
        j += 1
        return src[j - 1]

    while i < len(spec):
        v = spec[i]
        if v == 0:
            out.append(take_one(0))
        elif v == -1:
            if inferred is not None:
                raise ValueError(f"shape={tuple(shape)}: only one dim can be -1")
            inferred = len(out)
            j += 1  # as MXNet: -1 and plain values step past an input dim, even a missing one
            out.append(1)
        elif v == -2:
            out.extend(src[j:])
            j = len(src)
        elif v == -3:
            d1, d2 = take_one(-3), take_one(-3)
            out.append(d1 * d2)
        elif v == -4:
            if i + 2 >= len(spec):
                raise ValueError(f"shape={tuple(shape)}: -4 must be followed by two dims")
            d0 = take_one(-4)
            d1, d2 = spec[i + 1], spec[i + 2]
            i += 2
            if d1 < -1 or d2 < -1 or 0 in (d1, d2) or d1 == d2 == -1:
                raise ValueError(f"shape={tuple(shape)}: the two dims after -4 must be positive, "
                                 f"one of them may be -1; got {d1}, {d2}")
            if d0:
                d1 = d0 // d2 if d1 == -1 else d1
                d2 = d0 // d1 if d2 == -1 else d2
                if d1 * d2 != d0:
                    raise ValueError(f"shape={tuple(shape)}: split dims {d1}, {d2} do not divide "
                                     f"the input dim {d0}")
            out += [max(d1, 0), max(d2, 0)]
        elif v > 0:
            j += 1
            out.append(v)
        else:
            raise ValueError(f"shape={tuple(shape)}: invalid value {v}")
        i += 1
    if inferred is not None:
        rest = math.prod(out)
        out[inferred] = math.prod(src) // rest if all(src) and rest else 0
    return out[::-1] if reverse else out


def reshape_target(src_shape, shape, reverse: bool = False) -> tuple:
    """The shape MXNet's Reshape gives `src_shape` (complete) for `shape` and `reverse`.

    Special values: 0 copies a dim, -1 infers one, -2 copies all remaining dims, -3
    merges two dims, -4 splits one dim into the next two values (one may be -1).
    Raises ValueError where MXNet 1.x would produce a shape of another size.
    """
    src = tuple(int(d) for d in src_shape)
    how = f"shape={tuple(shape)}" + (", reverse=True" if reverse else "")
    return _same_size(src, _reshape_dims(src, shape, reverse), how)


def _same_size(src, out, how: str) -> tuple:
    out = tuple(out)
    if math.prod(out) != math.prod(src) or not all(out):
        raise ValueError(f"cannot reshape {tuple(src)} with {how}: the result {out} has "
                         f"{math.prod(out)} elements, the input {math.prod(src)}")
    return out


@register(aliases=("reshape",))
class Reshape(Op):
    """Reshape with MXNet's special values (see `reshape_target`); `target_shape` is deprecated."""
    lists_input_names = False  # MXNet's monitors call its input NAME_input0
    shape: tuple[int, ...] = ()
    reverse: bool = False
    target_shape: tuple[int, ...] = ()
    keep_highest: bool = False

    def _target(self, data):
        if self.shape:
            return _reshape_dims(data, self.shape, self.reverse)
        if not self.target_shape:
            raise ValueError("Reshape needs `shape` (or the deprecated `target_shape`)")
        out = list(self.target_shape)
        if self.keep_highest:
            out[0] = data[0]
        zeros = [k for k in range(int(self.keep_highest), len(out)) if out[k] == 0]
        if len(zeros) == 1:
            rest = math.prod(d for k, d in enumerate(out) if k != zeros[0])
            out[zeros[0]] = math.prod(data) // rest if all(data) and rest else 0
        return out

    def infer_shape(self, ins, outs):
        data, out = ins[0], outs[0]
        if data is None:  # as MXNet: the input's ndim is needed
            return [None], [None], []
        target = tuple(self._target(data))
        if _complete(data):
            how = (f"shape={self.shape}" + (", reverse=True" if self.reverse else "")) if self.shape \
                else f"target_shape={self.target_shape}"
            return [data], [_same_size(data, target, how)], []
        full = _unify(target, out, "Reshape output")
        unknown = [k for k, d in enumerate(data) if not d]
        if _complete(full) and len(unknown) == 1:  # MXNet's ReverseReshapeInferShape
            known = math.prod(d for d in data if d)
            if math.prod(full) % known:
                raise ValueError(f"output {full} cannot come from input {tuple(data)}")
            data = tuple(math.prod(full) // known if not d else d for d in data)
        return [data], [full], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [x.reshape(tuple(self._target(x.shape)))], aux


@register(aliases=("flatten",))
class Flatten(Op):
    """Collapse all but the first axis: (d0, d1, ..., dk) -> (d0, d1 * ... * dk)."""
    lists_input_names = False  # MXNet's monitors call its input NAME_input0

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is None:
            return [None], [None], []
        if not data:
            raise ValueError("cannot flatten a 0-dim input")
        rest = data[1:]
        return [data], [(data[0], math.prod(rest) if all(rest) else 0)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [x.reshape(x.shape[0], -1)], aux


# ---------------------------------------------------------------------- axis moves

@register
class expand_dims(Op):
    """Insert a size-1 axis at `axis` (in [-ndim-1, ndim])."""
    lists_input_names = False  # MXNet's monitors call its input NAME_input0
    axis: int

    def infer_shape(self, ins, outs):
        data, out = ins[0], outs[0]
        if data is None and out is None:
            return [None], [None], []
        ndim = len(data) if data is not None else len(out) - 1
        if not -ndim - 1 <= self.axis <= ndim:
            raise ValueError(f"`axis`={self.axis} is out of range [{-ndim - 1}, {ndim}] for an input "
                             f"of {ndim} dims")
        ax = self.axis % (ndim + 1)
        if out is not None:
            data = _unify(data, out[:ax] + out[ax + 1:], "expand_dims output")
        return [data], [data[:ax] + (1,) + data[ax:]], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.expand_dims(ins[0], self.axis)], aux


def _perm(axes, ndim):
    axes = tuple(axes) or tuple(range(ndim - 1, -1, -1))
    norm = tuple(a % ndim if -ndim <= a < ndim else a for a in axes)
    if sorted(norm) != list(range(ndim)):
        raise ValueError(f"`axes`={tuple(axes)} is not a permutation of the {ndim} input dims")
    return norm


@register
class transpose(Op):
    """Permute the axes (reverse them when `axes` is empty)."""
    lists_input_names = False  # MXNet's monitors call its input NAME_input0
    axes: tuple[int, ...] = ()

    def infer_shape(self, ins, outs):
        data, out = ins[0], outs[0]
        if data is None and out is None:
            return [None], [None], []
        p = _perm(self.axes, len(data if data is not None else out))
        if out is not None:
            back = [0] * len(p)
            for k, a in enumerate(p):
                back[a] = out[k]
            data = _unify(data, tuple(back), "transpose output")
        return [data], [tuple(data[a] for a in p)], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.transpose(ins[0], _perm(self.axes, ins[0].ndim))], aux


@register(aliases=("swapaxes",))
class SwapAxis(Op):
    """Exchange axes `dim1` and `dim2`."""
    dim1: int = 0
    dim2: int = 0

    def _swap(self, s):
        a, b = _axis(self.dim1, len(s), "dim1"), _axis(self.dim2, len(s), "dim2")
        s = list(s)
        s[a], s[b] = s[b], s[a]
        return tuple(s)

    def infer_shape(self, ins, outs):
        data = _unify(ins[0], None if outs[0] is None else self._swap(outs[0]), "SwapAxis output")
        return ([None], [None], []) if data is None else ([data], [self._swap(data)], [])

    def lower(self, ins, aux, is_train, key):
        return [jnp.swapaxes(ins[0], self.dim1, self.dim2)], aux


@register(aliases=("flip",))
class reverse(Op):
    """Reverse the order of elements along each axis in `axis`."""
    axis: tuple[int, ...]

    def _axes(self, ndim):
        axes = tuple(_axis(a, ndim) for a in self.axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"`axis`={self.axis} names an axis twice")
        return axes

    def infer_shape(self, ins, outs):
        data = _unify(ins[0], outs[0], "reverse output")
        if data is not None:
            self._axes(len(data))
        return [data], [data], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.flip(ins[0], self._axes(ins[0].ndim))], aux


@register
class squeeze(Op):
    """Remove size-1 axes (all of them when `axis` is None); all removed gives shape (1,)."""
    axis: Optional[tuple[int, ...]] = None

    def _keep(self, data):
        if self.axis is None:
            return [k for k, d in enumerate(data) if d != 1]
        axes = [_axis(a, len(data)) for a in self.axis]
        if len(set(axes)) != len(axes):
            raise ValueError(f"`axis`={self.axis} names an axis twice")
        bad = [a for a in axes if data[a] not in (0, 1)]
        if bad:
            raise ValueError(f"cannot squeeze axis {bad[0]} of input {tuple(data)}: its size is not 1")
        return [k for k in range(len(data)) if k not in axes]

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is None or (self.axis is None and not _complete(data)):
            return [data], [None], []
        return [data], [tuple(data[k] for k in self._keep(data)) or (1,)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [x.reshape(tuple(x.shape[k] for k in self._keep(x.shape)) or (1,))], aux


# ------------------------------------------------------------------------ repeats

@register
class tile(Op):
    """Repeat the whole array `reps` times along each axis (numpy's tile)."""
    reps: tuple[int, ...]

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is None:
            return [None], [None], []
        if any(r < 1 for r in self.reps):
            raise ValueError(f"reps={self.reps} must be positive (jbind makes no empty arrays)")
        n = max(len(data), len(self.reps))
        d = (1,) * (n - len(data)) + tuple(data)
        r = (1,) * (n - len(self.reps)) + tuple(self.reps)
        return [data], [tuple(a * b for a, b in zip(d, r))], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.tile(ins[0], self.reps)], aux


@register
class repeat(Op):
    """Repeat each element `repeats` times along `axis` (of the flattened input if None)."""
    repeats: int
    axis: Optional[int] = None

    def infer_shape(self, ins, outs):
        data = ins[0]
        if data is None:
            return [None], [None], []
        if self.repeats < 1:
            raise ValueError(f"repeats={self.repeats} must be positive (jbind makes no empty arrays)")
        if self.axis is None:
            return [data], [(math.prod(data) * self.repeats,)], []
        ax = _axis(self.axis, len(data))
        return [data], [data[:ax] + (data[ax] * self.repeats,) + data[ax + 1:]], []

    def lower(self, ins, aux, is_train, key):
        return [jnp.repeat(ins[0], self.repeats, axis=self.axis)], aux
