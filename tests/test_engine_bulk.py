"""`mx.engine.bulk` / `set_bulk_size`: a recorded setting; imperative code runs the same."""
import numpy as np
import pytest

import jbind as mx


def test_bulk_scope_sets_and_restores_the_size():
    before = mx.engine.set_bulk_size(7)
    try:
        with mx.engine.bulk(30):
            assert mx.engine.set_bulk_size(30) == 30
        assert mx.engine.set_bulk_size(7) == 7
    finally:
        mx.engine.set_bulk_size(before)


def test_ops_inside_a_bulk_scope_compute_as_outside():
    with mx.engine.bulk(4):
        x = mx.nd.ones((3,))
        for _ in range(10):
            x += 1
    np.testing.assert_array_equal(x.asnumpy(), np.full(3, 11.0, np.float32))


def test_bad_size_is_an_error():
    with pytest.raises(mx.MXNetError, match="set_bulk_size"):
        mx.engine.set_bulk_size(-1)
