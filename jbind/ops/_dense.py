"""`x @ w.T + b` for a large FullyConnected output on the CPU: the bias inside the product.

XLA:CPU adds a bias to a product's output in a pass of its own, a read and a write of the
whole (rows x units) result: on a language model's decoder (700 x 10,001) that pass is a
fifth of the product's time. Appending a column of ones to `x` and the bias as a column to
`w` makes the bias part of the one product (K + 1 instead of K). Only the forward changes:
the gradient is the usual `g @ w`, `g.T @ x` and `sum(g)` (a `jax.custom_vjp`), so nothing
is sliced out of a widened gradient.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

MIN_OUTPUTS = 1 << 20  # rows x units from which the bias goes into the product

_NT = (((1,), (1,)), ((), ()))


def wants_fold(x, w) -> bool:
    """2-D float32 on a CPU default backend with at least MIN_OUTPUTS outputs."""
    return (x.ndim == 2 and x.dtype == jnp.float32 and w.dtype == jnp.float32
            and x.shape[0] * w.shape[0] >= MIN_OUTPUTS and jax.default_backend() == "cpu")


@jax.custom_vjp
def dense_bias(x, w, b):
    """x (N, K), w (U, K), b (U,) -> x @ w.T + b, the bias inside the product."""
    ones = jnp.ones((x.shape[0], 1), x.dtype)
    return jax.lax.dot_general(jnp.concatenate([x, ones], axis=1),
                               jnp.concatenate([w, b[:, None]], axis=1), _NT)


def _fwd(x, w, b):
    return dense_bias(x, w, b), (x, w)


def _bwd(res, g):
    x, w = res
    return g @ w, jax.lax.dot_general(g, x, (((0,), (0,)), ((), ()))), jnp.sum(g, axis=0)


dense_bias.defvjp(_fwd, _bwd)
