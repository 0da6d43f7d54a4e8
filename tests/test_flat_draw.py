"""Eager samplers without inputs on the CPU share one program per power-of-two length
(jbind/ndarray/_flat_draw.py): a new shape of the same length class compiles nothing."""
import numpy as np
import pytest

import jbind as mx
from jbind.ndarray import _dispatch, _flat_draw
from jbind.ops._base import get_op


def _misses():
    return _dispatch.info()["misses"]


@pytest.mark.parametrize("name,kw,dtype", [
    ("uniform", dict(low=2.0, high=3.0), "float32"),
    ("normal", dict(loc=5.0, scale=0.1), "float64"),
    ("exponential", dict(scale=0.5), "float16"),
    ("randint", dict(low=3, high=7), "int32"),
])
def test_new_shapes_in_one_length_class_compile_nothing(name, kw, dtype):
    draw = getattr(mx.nd.random, name)
    first = draw(shape=(30, 31), dtype=dtype, **kw)      # 930 -> 1024
    assert first.shape == (30, 31) and first.dtype == np.dtype(dtype)
    before = _misses()
    for shape in [(33, 31), (2, 3, 170), (1000,), (7, 9, 11)]:   # 1023, 1020, 1000, 693 -> 1024
        got = draw(shape=shape, dtype=dtype, **kw)
        assert got.shape == shape and got.dtype == np.dtype(dtype)
    assert _misses() == before


def test_flat_draws_keep_the_law_and_draw_anew():
    mx.random.seed(3)
    a = mx.nd.random.uniform(2, 3, shape=(40, 50)).asnumpy()
    b = mx.nd.random.uniform(2, 3, shape=(40, 50)).asnumpy()
    assert a.min() >= 2 and a.max() < 3 and abs(a.mean() - 2.5) < 0.02
    assert not np.array_equal(a, b)          # each call consumes a draw
    assert len(np.unique(a)) > 1990          # no repeated block of a padded draw
    n = mx.nd.random.normal(1.0, 2.0, shape=(64, 64)).asnumpy()
    assert abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1


def test_same_seed_same_numbers():
    mx.random.seed(11)
    a = mx.nd.random.normal(shape=(5, 7)).asnumpy()
    mx.random.seed(11)
    b = mx.nd.random.normal(shape=(5, 7)).asnumpy()
    np.testing.assert_array_equal(a, b)


def test_what_keeps_its_own_program():
    cpu = mx.cpu().jax_device
    uniform = get_op("_random_uniform")
    assert _flat_draw.plan(uniform(shape=(3, 5)), [], cpu)[1:] == ((3, 5), 15)
    assert _flat_draw.plan(uniform(shape=(16,)), [], cpu) is None            # already a bucket
    assert _flat_draw.plan(uniform(shape=(300, 300)), [], cpu) is None       # above MAX_ELEMENTS
    assert _flat_draw.plan(uniform(shape=(3, 0)), [], cpu) is None           # unknown dims
    assert _flat_draw.plan(get_op("_random_uniform_like")(), [np.zeros(3)], cpu) is None  # has an input
    assert _flat_draw.plan(get_op("zeros")(shape=(3, 5)), [], cpu) is None   # not a sampler


def test_large_and_recorded_draws_keep_their_shape():
    big = mx.nd.random.uniform(shape=(300, 300))
    assert big.shape == (300, 300)
    x = mx.nd.ones((4, 6))
    x.attach_grad()
    with mx.autograd.record():
        y = (x * mx.nd.random.uniform(shape=(4, 6))).sum()
    y.backward()
    assert x.grad.shape == (4, 6) and (x.grad.asnumpy() >= 0).all() and (x.grad.asnumpy() < 1).all()
