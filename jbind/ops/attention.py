"""The contrib operators that exported transformers (GluonNLP's BERT and Transformer) use
(MXNet 1.9.1's src/operator/contrib/transformer.cc, index_copy.cc, gradient_multiplier_op.cc,
stes_op.cc and tensor/init_op.cc's arange_like).

The interleaved matmuls take (seq_length, batch, features) projections where, per batch
entry, the heads follow one another and each head holds its query, key and value blocks
of head_dim side by side (`heads * 3 * head_dim`; encoder-decoder keys and values
`heads * 2 * head_dim`). Attention maps are (batch * heads, query length, key length),
batch-major. The gradients are the math gradients, as MXNet's kernels compute them.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp

from ..base import ShapeError, fmt_shape
from ._base import Op, frozen, register
from .elemwise import _round
from .shape import _int_index


@register
class _contrib_div_sqrt_dim(Op):
    """data / sqrt(data.shape[-1])."""

    def infer_shape(self, ins, outs):
        args, out, aux = super().infer_shape(ins, outs)
        if out[0] is not None and len(out[0]) == 0:
            raise ShapeError("data must have at least one dim (its last dim is divided by)")
        return args, out, aux

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        return [x / jnp.asarray(math.sqrt(x.shape[-1]), x.dtype)], aux


# ------------------------------------------------------------------ interleaved matmuls
_DIM_NAMES = {"S": "seq_length", "Q": "query length", "K": "key length", "B": "batch", "D": "head_dim"}


@frozen
class _Interleaved(Op):
    """Shared by the four interleaved matmuls: `heads`, and a shape rule solving each
    input's and the output's dims as multiples of seq_length, batch and head_dim."""
    heads: int

    def __post_init__(self):
        if self.heads < 1:
            raise ValueError(f"heads must be positive, got {self.heads}")

    def _layouts(self):
        """-> [(name, ((k, var),) * 3), ...] for the inputs then the output: each dim is k * heads
        (k = 0: one) times the size `var` (_DIM_NAMES)."""
        raise NotImplementedError

    def _dim_desc(self, k, var):
        """A dim of k * heads (k = 0: one) times `var`, in words."""
        if not k:
            return _DIM_NAMES[var]
        return f"{_DIM_NAMES[var]} * heads" if var == "B" else \
            "heads * head_dim" if k == 1 else f"heads * {k} * head_dim"

    def infer_shape(self, ins, outs):
        h, layouts = self.heads, self._layouts()
        values, source = {}, {}
        for (name, layout), shape in zip(layouts, list(ins) + list(outs)):
            if shape is None:
                continue
            shape = tuple(shape)
            if len(shape) != 3:
                raise ShapeError(f"{name} {fmt_shape(shape)} must have 3 dims "
                                 f"({', '.join(self._dim_desc(k, v) for k, v in layout)})")
            for i, ((k, var), n) in enumerate(zip(layout, shape)):
                c = k * h or 1
                if not n:
                    continue
                if n % c:
                    raise ShapeError(f"{name} {fmt_shape(shape)}: dim {i} ({n}) must be a multiple of {c}: "
                                     f"it is {self._dim_desc(k, var)} (heads={h})")
                if var in values and values[var] != n // c:
                    raise ShapeError(f"{name} {fmt_shape(shape)}: dim {i} ({n}) must be "
                                     f"{self._dim_desc(k, var)} = {c * values[var]} ({_DIM_NAMES[var]} "
                                     f"{values[var]} from {source[var]}; heads={h})")
                values[var], source[var] = n // c, f"{name} {fmt_shape(shape)}"
        full = [tuple((k * h or 1) * values.get(v, 0) for k, v in layout) for _, layout in layouts]
        full = [s if any(s) else None for s in full]
        return full[:len(ins)], full[len(ins):], []


@register
class _contrib_interleaved_matmul_selfatt_qk(_Interleaved):
    """Self-attention scores: queries_keys_values (seq_length, batch, heads * 3 * head_dim)
    -> (batch * heads, seq_length, seq_length), q . k / sqrt(head_dim)."""

    def arguments(self):
        return ("queries_keys_values",)

    def _layouts(self):
        return [("queries_keys_values", ((0, "S"), (0, "B"), (3, "D"))),
                ("output", ((1, "B"), (0, "S"), (0, "S")))]

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        s, b, e = x.shape
        h, d = self.heads, e // (3 * self.heads)
        r = x.reshape(s, b, h, 3, d)
        scores = jnp.einsum("qbhd,kbhd->bhqk", r[:, :, :, 0], r[:, :, :, 1])
        return [(scores * jnp.asarray(1 / math.sqrt(d), x.dtype)).reshape(b * h, s, s)], aux


@register
class _contrib_interleaved_matmul_selfatt_valatt(_Interleaved):
    """Self-attention output: the values of queries_keys_values (seq_length, batch,
    heads * 3 * head_dim) weighted by attention (batch * heads, seq_length, seq_length)
    -> (seq_length, batch, heads * head_dim)."""

    def arguments(self):
        return ("queries_keys_values", "attention")

    def _layouts(self):
        return [("queries_keys_values", ((0, "S"), (0, "B"), (3, "D"))),
                ("attention", ((1, "B"), (0, "S"), (0, "S"))),
                ("output", ((0, "S"), (0, "B"), (1, "D")))]

    def lower(self, ins, aux, is_train, key):
        x, att = ins
        s, b, e = x.shape
        h, d = self.heads, e // (3 * self.heads)
        v = x.reshape(s, b, h, 3, d)[:, :, :, 2]
        out = jnp.einsum("bhqk,kbhd->qbhd", att.reshape(b, h, s, s), v)
        return [out.reshape(s, b, h * d)], aux


@register
class _contrib_interleaved_matmul_encdec_qk(_Interleaved):
    """Encoder-decoder attention scores: queries (query length, batch, heads * head_dim) and
    keys_values (key length, batch, heads * 2 * head_dim) -> (batch * heads, query length,
    key length), q . k / sqrt(head_dim)."""

    def arguments(self):
        return ("queries", "keys_values")

    def _layouts(self):
        return [("queries", ((0, "Q"), (0, "B"), (1, "D"))),
                ("keys_values", ((0, "K"), (0, "B"), (2, "D"))),
                ("output", ((1, "B"), (0, "Q"), (0, "K")))]

    def lower(self, ins, aux, is_train, key):
        q, kv = ins
        sq, b, e = q.shape
        sk = kv.shape[0]
        h, d = self.heads, e // self.heads
        k = kv.reshape(sk, b, h, 2, d)[:, :, :, 0]
        scores = jnp.einsum("qbhd,kbhd->bhqk", q.reshape(sq, b, h, d), k)
        return [(scores * jnp.asarray(1 / math.sqrt(d), q.dtype)).reshape(b * h, sq, sk)], aux


@register
class _contrib_interleaved_matmul_encdec_valatt(_Interleaved):
    """Encoder-decoder attention output: the values of keys_values (key length, batch,
    heads * 2 * head_dim) weighted by attention (batch * heads, query length, key length)
    -> (query length, batch, heads * head_dim)."""

    def arguments(self):
        return ("keys_values", "attention")

    def _layouts(self):
        return [("keys_values", ((0, "K"), (0, "B"), (2, "D"))),
                ("attention", ((1, "B"), (0, "Q"), (0, "K"))),
                ("output", ((0, "Q"), (0, "B"), (1, "D")))]

    def lower(self, ins, aux, is_train, key):
        kv, att = ins
        sk, b, e = kv.shape
        sq = att.shape[1]
        h, d = self.heads, e // (2 * self.heads)
        v = kv.reshape(sk, b, h, 2, d)[:, :, :, 1]
        out = jnp.einsum("bhqk,kbhd->qbhd", att.reshape(b, h, sq, sk), v)
        return [out.reshape(sq, b, h * d)], aux


# ------------------------------------------------------------------ arange_like
@register(aliases=("_npx_arange_like",))
class _contrib_arange_like(Op):
    """start, start + step, ... (each repeated `repeat` times) in data's shape, or along
    data's `axis` (1-D); data's values are not read and get a zero gradient. Computed in
    data's dtype: integer dtypes truncate start and step first, as MXNet 1.9.1."""
    start: float = 0.0
    step: float = 1.0
    repeat: int = 1
    ctx: str = ""
    axis: Optional[int] = None

    def __post_init__(self):
        if self.repeat < 1:
            raise ValueError(f"repeat must be positive, got {self.repeat}")

    def _axis(self, ndim):
        ax = self.axis + ndim if self.axis < 0 else self.axis
        if not 0 <= ax < ndim:
            raise ShapeError(f"axis {self.axis} is out of range for data with {ndim} dims")
        return ax

    def infer_shape(self, ins, outs):
        if self.axis is None:
            return super().infer_shape(ins, outs)
        data, out = ins[0], outs[0]
        if out is not None and len(out) != 1:
            raise ShapeError(f"the output {fmt_shape(tuple(out))} must be 1-D (axis={self.axis})")
        if data is None:
            return [None], [out], []
        data = tuple(data)
        ax = self._axis(len(data))
        n = data[ax]
        if out is not None and out[0] and n and out[0] != n:
            raise ShapeError(f"the output {fmt_shape(tuple(out))} must have data's dim {ax} ({n})")
        n = n or (out[0] if out is not None else 0)
        return [data[:ax] + (n,) + data[ax + 1:]], [(n,)], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        shape = x.shape if self.axis is None else (x.shape[self._axis(x.ndim)],)
        dt = x.dtype
        n = math.prod(shape)
        if jnp.issubdtype(dt, jnp.integer) or dt == jnp.bool_:
            start, step = int(self.start), int(self.step)
        else:
            start, step = self.start, self.step
        i = (jnp.arange(n, dtype=jnp.int32) // self.repeat).astype(dt)
        return [(jnp.asarray(start).astype(dt) + i * jnp.asarray(step).astype(dt)).reshape(shape)], aux


# ------------------------------------------------------------------ index_copy
@jax.custom_vjp
def _index_copy(old, idx, new):
    return old.at[idx].set(new, mode="drop")


def _index_copy_fwd(old, idx, new):
    return _index_copy(old, idx, new), (idx, jnp.zeros((), old.dtype))


def _index_copy_bwd(res, g):
    # MXNet 1.9.1: new_tensor's row i gets the output gradient's row index[i] (every i, also
    # for a repeated index); old_tensor gets it with the copied rows zeroed
    idx, zero = res
    g_new = g.at[idx].get(mode="fill", fill_value=0)
    g_old = g.at[idx].set(zero, mode="drop")
    return g_old, None, g_new


_index_copy.defvjp(_index_copy_fwd, _index_copy_bwd)


@register
class _contrib_index_copy(Op):
    """old_tensor with its rows index_vector[i] replaced by new_tensor's rows i. The index
    is truncated to an integer; a row index outside [0, old_tensor.shape[0]) copies nothing
    (MXNet 1.9.1 writes outside the array). The index gets no gradient."""

    def arguments(self):
        return ("old_tensor", "index_vector", "new_tensor")

    def infer_shape(self, ins, outs):
        old, idx, new = (None if s is None else tuple(s) for s in ins)
        out = None if outs[0] is None else tuple(outs[0])
        for what, s in [("old_tensor", old), ("the output", out)]:
            if s is not None and new is not None and len(s) != len(new):
                raise ShapeError(f"{what} {fmt_shape(s)} and new_tensor {fmt_shape(new)} differ in rank")
        if idx is not None and len(idx) != 1:
            raise ShapeError(f"index_vector {fmt_shape(idx)} must be 1-D")
        # the output is old_tensor's shape
        if old is not None and out is not None:
            if len(old) != len(out) or any(a and b and a != b for a, b in zip(old, out)):
                raise ShapeError(f"the output {fmt_shape(out)} is not old_tensor's {fmt_shape(old)}")
            old = tuple(a or b for a, b in zip(old, out))
        old = old if old is not None else out
        rows = (new[0] if new is not None else 0) or (idx[0] if idx is not None else 0)
        if new is not None and idx is not None and new[0] and idx[0] and new[0] != idx[0]:
            raise ShapeError(f"index_vector {fmt_shape(idx)} must have one index per row of new_tensor "
                             f"{fmt_shape(new)}")
        if old is not None and new is not None:
            for i, (a, b) in enumerate(zip(old, new)):
                if i and a and b and a != b:
                    raise ShapeError(f"new_tensor {fmt_shape(new)} and old_tensor {fmt_shape(old)} differ "
                                     f"in dim {i}")
            if old[0] and new[0] and new[0] > old[0]:
                raise ShapeError(f"new_tensor {fmt_shape(new)} has more rows than old_tensor {fmt_shape(old)}")
        row_dims = old[1:] if old is not None else (new[1:] if new is not None else None)
        if old is not None and new is not None:
            row_dims = tuple(a or b for a, b in zip(old[1:], new[1:]))
        old = None if old is None else (old[0],) + row_dims
        new = None if row_dims is None else (rows,) + row_dims
        return [old, (rows,) if rows or idx is not None else None, new], [old], []

    def infer_type(self, ins, outs):
        t = ins[0] if ins[0] is not None else (outs[0] if outs[0] is not None else ins[2])
        return [t, ins[1] if ins[1] is not None else t, t], [t], []

    def lower(self, ins, aux, is_train, key):
        old, idx, new = ins
        i = _int_index(idx)
        i = jnp.where(i < 0, old.shape[0], i)  # negative: out of range, as MXNet's (not Python's)
        return [_index_copy(old, i, new.astype(old.dtype))], aux


# ------------------------------------------------------------------ straight-through gradients
@register
class _contrib_gradientmultiplier(Op):
    """Identity forward; the backward multiplies the gradient by `scalar` (a gradient
    reversal layer with a negative scalar)."""
    scalar: float = 1.0
    is_int: bool = True

    def lower(self, ins, aux, is_train, key):
        return [_scaled_grad(ins[0], self.scalar)], aux


def _straight_through(f):
    """f forward, the head gradient passed through unchanged backward."""
    @jax.custom_vjp
    def g(x):
        return f(x)

    g.defvjp(lambda x: (f(x), None), lambda _, ct: (ct,))
    return g


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def _scaled_grad(x, scalar):
    return x


_scaled_grad.defvjp(lambda x, scalar: (x, None),
                    lambda scalar, _, g: (g * jnp.asarray(scalar).astype(g.dtype),))
_round_ste = _straight_through(_round)
_sign_ste = _straight_through(jnp.sign)


@register
class _contrib_round_ste(Op):
    """round (half away from zero) forward; the gradient passes through unchanged."""

    def lower(self, ins, aux, is_train, key):
        return [_round_ste(ins[0])], aux


@register
class _contrib_sign_ste(Op):
    """sign forward; the gradient passes through unchanged."""

    def lower(self, ins, aux, is_train, key):
        return [_sign_ste(ins[0])], aux
