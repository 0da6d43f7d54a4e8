"""Random draws are made as flat vectors (jbind/ops/_rand.py): JAX's threefry counters for
a rank-4 shape compile several times slower on XLA:CPU than for one dimension."""
import jax
import numpy as np

import jbind as mx
from jbind.ops import _rand


def _iotas(fn, shape):
    text = jax.jit(lambda k: fn(k, shape)).lower(jax.random.key(0)).as_text()
    want = "tensor<" + "x".join(map(str, shape))
    return sum(1 for line in text.splitlines() if "iota" in line and want in line)


def test_draws_count_in_one_dimension():
    shape = (4, 5, 6, 7)
    assert _iotas(lambda k, s: jax.random.bernoulli(k, 0.5, s), shape) > 0  # what is avoided
    for draw in (lambda k, s: _rand.bernoulli(k, 0.5, s), _rand.uniform, _rand.normal, _rand.exponential,
                 lambda k, s: _rand.randint(k, s, 0, 9, np.int32)):
        assert _iotas(draw, shape) == 0
        assert draw(jax.random.key(1), shape).shape == shape


def test_dropout_and_samplers_keep_their_shapes_and_laws():
    with mx.autograd.train_mode():
        y = mx.nd.Dropout(mx.nd.ones((8, 8, 8, 8)), p=0.5)
    kept = y.asnumpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and 0.4 < (kept > 0).mean() < 0.6
    u = mx.nd.random.uniform(2, 3, shape=(6, 7, 8, 9)).asnumpy()
    assert u.shape == (6, 7, 8, 9) and u.min() >= 2 and u.max() < 3 and abs(u.mean() - 2.5) < 0.02
