"""Gradients through integer values that move only through Cast.

MXNet's Cast passes its head gradient back cast to the input's dtype, integers included:
`Cast(int32 x, dtype='float32')` gives x the gradient truncated to int32, and
`Cast(float32 x, dtype='int32')` takes an int32 head gradient and hands it to x as
float32. JAX differentiates floats only, so such integer values are carried as floats
while the training function is traced: an integer argument with a gradient whose every
consumer is a Cast, and the integer output of a Cast whose every consumer is a Cast (or
which is an output of the graph). Each Cast on such a value truncates the gradient it
passes to an integer input, as MXNet's cast does. Integer values that reach any other op
(indices, lengths) get no gradient, as before.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np


def _consumers(g) -> list:
    """Per entry: the op names of the nodes reading it (heads count as 'output')."""
    out = [[] for _ in range(g.num_entries)]
    for ni, n in enumerate(g.nodes):
        if n.op is not None:
            for e in g.in_entries[ni]:
                out[e].append(n.op.name)
    for e in g.heads:
        out[e].append("output")
    return out


def _is_int(t) -> bool:
    return t is not None and np.issubdtype(np.dtype(t), np.integer)


def carried_args(g, arg_dtypes) -> list:
    """Per argument: an integer read only by Casts (it can take MXNet's cast gradient)."""
    cons = _consumers(g)
    return [_is_int(t) and bool(cons[g.offsets[vi]]) and all(c == "Cast" for c in cons[g.offsets[vi]])
            for vi, t in zip(g.arg_index, arg_dtypes)]


def carried_cast_outputs(g) -> set:
    """Node indices of Casts to an integer dtype whose output is read only by Casts or is a
    graph output: their output is carried as a float while training."""
    cons = _consumers(g)
    out = set()
    for ni, n in enumerate(g.nodes):
        if n.op is not None and n.op.name == "Cast" and _is_int(n.op.dtype):
            if all(c in ("Cast", "output") for c in cons[g.offsets[ni]]):
                out.add(ni)
    return out


def carrier_dtype(src=None):
    """The float dtype that carries integer values made from `src`: a float source's own
    dtype (a float truncated to an integer is exactly representable in the dtype it came
    from, so a float32 model stays float32), float32 for integers of up to 16 bits, float64
    for wider ones where x64 is on (exact), else float32."""
    if src is not None:
        src = np.dtype(src)
        if np.issubdtype(src, np.floating):
            return src
        if src.itemsize <= 2:
            return np.dtype(np.float32)
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def cast(x, dtype: str, in_int: bool):
    """Cast carrying integers as floats: the value of `x.astype(dtype)` (a float carrier where
    `dtype` is an integer), the gradient cast back to the input's dtype (truncated when the
    input carries an integer), as MXNet's Cast."""
    dtype = np.dtype(dtype)
    return x.astype(dtype).astype(carrier_dtype(x.dtype)) if np.issubdtype(dtype, np.integer) else x.astype(dtype)


def _cast_fwd(x, dtype, in_int):
    return cast(x, dtype, in_int), jnp.zeros((), x.dtype)


def _cast_bwd(dtype, in_int, like, ct):
    g = ct.astype(like.dtype)
    return (jnp.trunc(g) if in_int else g,)


cast.defvjp(_cast_fwd, _cast_bwd)
