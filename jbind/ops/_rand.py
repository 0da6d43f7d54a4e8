"""Random draws of any shape made as flat vectors, then reshaped.

XLA:CPU compiles JAX's threefry counters for a rank-4 shape far more slowly than for the
same number of values in one dimension (measured with JAX 0.10: 11 s for (10, 10, 10, 10)
against 1 s for (10000,)); every eager `mx.nd.Dropout` or sampler call with a new shape
pays that compile. Drawing flat keeps each compile short; the values are as random."""
from __future__ import annotations

import math

import jax


def _flat(draw, key, shape, *args, **kwargs):
    shape = tuple(int(d) for d in shape)
    if len(shape) <= 1:
        return draw(key, *args, shape=shape, **kwargs)
    return draw(key, *args, shape=(math.prod(shape),), **kwargs).reshape(shape)


def uniform(key, shape, **kwargs):
    return _flat(jax.random.uniform, key, shape, **kwargs)


def normal(key, shape, **kwargs):
    return _flat(jax.random.normal, key, shape, **kwargs)


def exponential(key, shape, **kwargs):
    return _flat(jax.random.exponential, key, shape, **kwargs)


def bernoulli(key, p, shape):
    return _flat(lambda k, shape: jax.random.bernoulli(k, p, shape), key, shape)


def randint(key, shape, minval, maxval, dtype):
    return _flat(lambda k, shape: jax.random.randint(k, shape, minval, maxval, dtype=dtype), key, shape)
