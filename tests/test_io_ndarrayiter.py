"""mx.io.NDArrayIter: batch slicing on the layout's batch axis and the last-batch modes."""
import numpy as np
import pytest

import jbind as mx


@pytest.mark.parametrize("mode,batches,last", [("pad", 4, [9, 0, 1]), ("discard", 3, [6, 7, 8]),
                                                ("roll_over", 3, [6, 7, 8])])
def test_last_batch_modes_slice_the_right_examples(mode, batches, last):
    x = np.arange(10, dtype=np.float32)[:, None] * np.ones((1, 2), np.float32)
    it = mx.io.NDArrayIter(x, np.arange(10, dtype=np.float32), batch_size=3, last_batch_handle=mode)
    got = [(b.data[0].asnumpy()[:, 0].tolist(), b.label[0].asnumpy().tolist(), b.pad) for b in it]
    assert len(got) == batches
    assert got[-1][0] == last and got[-1][1] == last
    assert got[-1][2] == (2 if mode == "pad" else 0)
    if mode == "roll_over":  # the left-over example 9 starts the next epoch
        it.reset()
        b = it.next()
        assert b.data[0].asnumpy()[:, 0].tolist() == [9, 0, 1] and b.pad == 1


def test_batch_axis_1_with_a_batch_size_of_one():
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)  # (T, N, C)
    it = mx.io.NDArrayIter(x, batch_size=1, layout="TNC")
    got = [b.data[0].asnumpy() for b in it]
    # as MXNet 1.9.1 (checked there): slices are taken on the 'N' axis, but the number of
    # examples is read from axis 0, so only the first 2 of the 4 are visited
    assert len(got) == 2
    for n, g in enumerate(got):
        np.testing.assert_array_equal(g, x[:, n:n + 1])
