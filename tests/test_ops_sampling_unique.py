"""_sample_unique_zipfian: distinct classes per row from the log-uniform distribution."""
import math

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op

S = mx.sym


def _all_classes():
    z = S._sample_unique_zipfian(range_max=4, shape=(2, 4), name="z")
    return S.sort(S.Cast(z[0], dtype="float32"), axis=1)


CASES = [
    # num_sampled == range_max: every row holds every class once
    Case("unique_zipfian_all_classes", _all_classes, lambda: [np.tile(np.arange(4.0), (2, 1))], {}, grad=False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_rows_are_distinct_and_trials_counted():
    """Each row's classes are distinct and in range; num_trials counts every draw (int64)."""
    mx.random.seed(3)
    classes, trials = mx.nd._internal._sample_unique_zipfian(200, shape=(3, 50))
    assert classes.dtype == trials.dtype == np.int64 and trials.shape == (3,)
    c = classes.asnumpy()
    assert all(np.unique(row).size == 50 for row in c) and c.min() >= 0 and c.max() < 200
    assert (trials.asnumpy() >= 50).all()
    mx.random.seed(3)
    again, _ = mx.nd._internal._sample_unique_zipfian(200, shape=(3, 50))
    np.testing.assert_array_equal(again.asnumpy(), c)


def test_first_draws_follow_log_uniform():
    """With one sample per row, P(k) = log((k + 2) / (k + 1)) / log(range_max + 1)."""
    mx.random.seed(0)
    c = mx.nd._internal._sample_unique_zipfian(1000, shape=(4000, 1))[0].asnumpy().ravel()
    for k in (0, 1, 9):
        p = math.log((k + 2) / (k + 1)) / math.log(1001)
        assert abs(np.mean(c == k) - p) < 5 * math.sqrt(p * (1 - p) / c.size), k


def test_bad_shapes_are_refused():
    with pytest.raises(mx.base.MXNetError, match="num_sampled"):
        mx.nd._internal._sample_unique_zipfian(3, shape=(1, 4))
    with pytest.raises(mx.base.MXNetError, match="batch_size, num_sampled"):
        mx.nd._internal._sample_unique_zipfian(3, shape=(4,))
