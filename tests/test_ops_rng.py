"""Sampling ops draw flat and reshape (jbind/ops/_rng.py): the same numbers as a draw of
the full shape, at a fraction of XLA:CPU's compile time."""
import jax
import numpy as np
import pytest

from jbind.ops._rng import flat


@pytest.mark.parametrize("draw, args, kwargs", [
    (jax.random.uniform, (), {"minval": -2.0}),
    (jax.random.normal, (), {}),
    (jax.random.bernoulli, (0.3,), {}),
    (jax.random.randint, (), {"minval": 0, "maxval": 7}),
])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_flat_draw_equals_shaped_draw(draw, args, kwargs, shape):
    key = jax.random.key(11)
    got = flat(draw, key, shape, *args, **kwargs)
    assert got.shape == shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(draw(key, *args, shape=shape, **kwargs)))
