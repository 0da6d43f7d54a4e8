import numpy as np
import pytest

import jbind as mx


def _it(x, y, name="data"):
    return mx.io.NDArrayIter(x, y, batch_size=4, data_name=name, label_name=name + "_label")


def test_prefetching_iter_yields_the_same_batches_and_resets():
    x, y = np.arange(40, dtype=np.float32).reshape(10, 4), np.arange(10, dtype=np.float32)
    plain = [b.data[0].asnumpy() for b in _it(x, y)]
    pre = mx.io.PrefetchingIter(_it(x, y))
    for epoch in range(2):
        got = [b.data[0].asnumpy() for b in pre]
        assert len(got) == len(plain)
        for a, b in zip(got, plain):
            np.testing.assert_array_equal(a, b)
        pre.reset()
    assert pre.provide_data[0].name == "data" and pre.provide_data[0].shape == (4, 4)


def test_prefetching_iter_combines_and_renames():
    x, y = np.ones((8, 2), np.float32), np.zeros(8, np.float32)
    pre = mx.io.PrefetchingIter([_it(x, y, "a"), _it(x * 2, y, "b")], rename_data=[{"a": "left"}, {"b": "right"}])
    assert [d.name for d in pre.provide_data] == ["left", "right"]
    batch = next(iter(pre))
    assert len(batch.data) == 2 and batch.data[1].asnumpy()[0, 0] == 2
    with pytest.raises(ValueError, match="at least one iterator"):
        mx.io.PrefetchingIter([])
