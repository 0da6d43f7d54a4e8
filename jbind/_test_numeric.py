"""Finite differences of an executor's first output for many elements at once.

`numeric_grad` perturbs one element at a time and runs a forward for each (two per
element): for an argument of a few thousand elements that is thousands of calls, each
also computing gradients when the graph ends in a loss head. Here the forward alone is
vmapped over a batch of perturbed copies of the argument, one compiled program per
(graph, shapes, argument, batch size), reused across checks of the same structure."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import random as _random
from ._memo import Memo
from .compile._options import jit as small_jit
from .symbol.graph import graph_of
from .symbol.infer import SHAPE, entry_values
from .symbol.lower import make_forward

MIN_ELEMENTS = 64        # below this, one forward per perturbation is cheaper than a compile
_BATCH_ELEMENTS = 1 << 21  # values of one perturbed argument batch, and of its outputs
_FNS = Memo(64)


def _batched_forward(exe, pos: int, batch: int, is_train: bool):
    sym = exe._symbol
    g = graph_of(sym)
    shapes = dict(exe._key_parts[1][:len(g.arg_names)])
    key = (sym.fingerprint, tuple(sorted(shapes.items())), exe._key_parts[2], pos, batch, is_train)
    fn = _FNS.get(key)
    if fn is None:
        forward = make_forward(g, entry_values(sym, SHAPE, shapes))

        def outs(args, aux, rng, x):
            full = list(args)
            full[pos] = x
            return forward(tuple(full), aux, rng, is_train)[0][0]

        fn = _FNS.put(key, small_jit(jax.vmap(outs, in_axes=(None, None, None, 0))))
    return fn


def central_differences(exe, name: str, value: np.ndarray, eps: float, is_train: bool) -> np.ndarray:
    """d sum(exe.outputs[0]) / d value, by central differences of step `eps`, for the argument
    `name` (currently holding `value` cast to its dtype); the other arguments and the aux
    states as the executor holds them. The random key is the same for every perturbation."""
    g = graph_of(exe._symbol)
    pos = g.arg_names.index(name)
    args = tuple(h._data for h in exe.arg_arrays)
    aux = tuple(h._data for h in exe.aux_arrays)
    dtype = np.dtype(args[pos].dtype)
    n = value.size
    out_size = max(1, int(np.prod(exe._out_shapes[0])))
    batch = int(max(1, min(n, 256, _BATCH_ELEMENTS // max(n, out_size))))
    fn = _batched_forward(exe, pos, batch, is_train)
    rng = jax.random.fold_in(jax.random.wrap_key_data(_random.base_key()), 0)
    flat = np.asarray(value, np.float64).reshape(-1)
    grad = np.zeros(n, np.float64)
    for start in range(0, n, batch):
        idx = np.arange(start, start + batch) % n  # the last batch repeats elements to keep its size
        rows = np.arange(batch)
        up = np.repeat(flat[None, :], batch, axis=0)
        down = up.copy()
        up[rows, idx] += eps / 2.0
        down[rows, idx] -= eps / 2.0
        hi = np.asarray(fn(args, aux, rng, jnp.asarray(up.astype(dtype).reshape((batch,) + value.shape))))
        lo = np.asarray(fn(args, aux, rng, jnp.asarray(down.astype(dtype).reshape((batch,) + value.shape))))
        diff = (hi - lo).reshape(batch, -1).sum(axis=1, dtype=np.float64) / eps
        count = min(batch, n - start)
        grad[start:start + count] = diff[:count]
    return grad.reshape(value.shape)
