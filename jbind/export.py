"""A symbol as a pure JAX function, for `jax.jit`, `jax.grad`, optax and `jax.export`.

    fn, params = mx.export.to_jax(sym, arg_params, aux_params)
    probs = jax.jit(fn)(params, {"data": x, "softmax_label": y})

The function is built on the same lowering as the Executor (`jbind.symbol.lower`), so
it computes what `Executor.forward` computes. Shapes are inferred from the arrays
each call receives, once per distinct set of shapes.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

import jax
import jax.numpy as jnp
import numpy as np

from .base import MXNetError
from .ndarray.ndarray import NDArray
from .symbol.graph import graph_of
from .symbol.infer import SHAPE, complete, entry_values
from .symbol.lower import make_forward

__all__ = ["to_jax"]


def _array(v) -> jax.Array:
    return v.data if isinstance(v, NDArray) else jnp.asarray(v)


def to_jax(symbol, arg_params: Optional[Mapping[str, Any]] = None,
           aux_params: Optional[Mapping[str, Any]] = None, *,
           allow_extra: bool = False) -> tuple[Callable, dict]:
    """Export `symbol` as a pure function and its parameters as a pytree.

    Args:
        symbol: the Symbol to export.
        arg_params: argument values by name (NDArrays or arrays), as `load_checkpoint`
            returns them. Arguments not given here (data, labels) become the function's
            `inputs`.
        aux_params: a value for every auxiliary state (BatchNorm's moving statistics).
        allow_extra: ignore names in `arg_params` / `aux_params` that the symbol does not
            use (a checkpoint of a larger graph) instead of raising.

    Returns:
        `(fn, params)`. `params` is `{"arg": {name: jax.Array}, "aux": {name: jax.Array}}`.
        `fn(params, inputs, *, is_train=False, rng=None)`:

        - `inputs` maps the remaining argument names to arrays; together with
          `params["arg"]` every argument must be given exactly once.
        - `is_train=False` returns the outputs: a list in `list_outputs()` order, or the
          array itself when the symbol has one output.
        - `is_train=True` returns `(outputs, new_aux)`: batch statistics are used and
          `new_aux` is a dict like `params["aux"]` with the updated moving statistics
          (MXNet's Executor publishes the same values at `backward()`). `is_train` is a
          Python bool: under `jax.jit`, pass it with `static_argnames="is_train"`.
        - `rng` is a JAX PRNG key (typed, or raw `uint32[2]`) for random ops (Dropout);
          required when training a graph that has them.

        Loss heads (SoftmaxOutput, *RegressionOutput, MakeLoss) keep MXNet's gradient
        under `jax.grad`: it ignores the cotangent, so any scalar built from those
        outputs has MXNet's loss gradient (SoftmaxOutput: `softmax - onehot(label)`).
        Shapes must be concrete: `jax.export` works with fixed shapes, not symbolic ones.

    Differs from MXNet: MXNet has no such export; this replaces binding an Executor.
    """
    g = graph_of(symbol)
    arg_params, aux_params = dict(arg_params or {}), dict(aux_params or {})
    extra = sorted((set(arg_params) - set(g.arg_names)) | (set(aux_params) - set(g.aux_names)))
    if extra and not allow_extra:
        raise MXNetError(f"to_jax: {extra} are not arguments or aux states of the symbol "
                         f"(arguments {list(g.arg_names)}, aux states {list(g.aux_names)}); "
                         "pass allow_extra=True to ignore them")
    missing_aux = [n for n in g.aux_names if n not in aux_params]
    if missing_aux:
        raise MXNetError(f"to_jax: aux_params lacks {missing_aux}")
    params = {"arg": {n: _array(arg_params[n]) for n in g.arg_names if n in arg_params},
              "aux": {n: _array(aux_params[n]) for n in g.aux_names}}
    has_random = any(n.op is not None and n.op.random for n in g.nodes)
    single = len(g.heads) == 1
    forwards: dict = {}

    def forward_for(shapes: tuple):
        fwd = forwards.get(shapes)
        if fwd is None:
            values = entry_values(symbol, SHAPE, dict(shapes))
            unknown = [n for n, vi in zip(g.arg_names + g.aux_names, g.arg_index + g.aux_index)
                       if not complete(values[g.offsets[vi]])]
            bad = [e for e in g.heads if not complete(values[e])]
            if unknown or bad:
                raise MXNetError(f"to_jax: shapes {dict(shapes)} do not determine {unknown or 'the outputs'}")
            fwd = forwards[shapes] = make_forward(g, values)
        return fwd

    def fn(params, inputs, *, is_train=False, rng=None):
        if not isinstance(is_train, (bool, np.bool_)):
            raise TypeError("is_train must be a Python bool; under jax.jit pass static_argnames='is_train'")
        arg_vals, aux_vals = params["arg"], params["aux"]
        both = sorted(set(arg_vals) & set(inputs))
        unknown = sorted((set(arg_vals) | set(inputs)) - set(g.arg_names))
        missing = [n for n in g.arg_names if n not in arg_vals and n not in inputs]
        if both or unknown or missing:
            raise MXNetError(f"to_jax function: arguments given twice {both}, unknown {unknown}, "
                             f"missing {missing}; arguments are {list(g.arg_names)}")
        args = tuple(jnp.asarray(arg_vals[n] if n in arg_vals else inputs[n]) for n in g.arg_names)
        aux = tuple(jnp.asarray(aux_vals[n]) for n in g.aux_names)
        shapes = tuple((n, tuple(a.shape)) for n, a in zip(g.arg_names + g.aux_names, args + aux))
        if rng is None:
            if is_train and has_random:
                raise ValueError("to_jax function: the graph has random ops (Dropout); training needs rng")
            rng = jax.random.key(0)
        elif not jax.dtypes.issubdtype(rng.dtype, jax.dtypes.prng_key):
            rng = jax.random.wrap_key_data(rng)
        outs, new_aux = forward_for(shapes)(args, aux, rng, bool(is_train))
        outs = outs[0] if single else list(outs)
        if not is_train:
            return outs
        return outs, dict(zip(g.aux_names, new_aux))

    fn.num_cached_shapes = lambda: len(forwards)
    fn.__doc__ = f"Pure JAX function of a symbol with outputs {symbol.list_outputs()}; see `to_jax`."
    return fn, params
