"""gluon.data: Dataset views, ArrayDataset, the samplers, and DataLoader (ordering, last_batch
modes, batchify, worker processes and threads giving the same batches as num_workers=0)."""
import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError
from jbind.gluon import data as gdata
from jbind.gluon.data import (ArrayDataset, BatchSampler, DataLoader, Dataset, RandomSampler, SequentialSampler,
                              SimpleDataset)
from jbind.gluon.data import _wire


def test_dataset_views_shard_take_filter_sample():
    ds = SimpleDataset(list(range(10)))
    shards = [list(ds.shard(3, i)) for i in range(3)]
    assert shards == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    with pytest.raises(MXNetError, match="index 3 out of range"):
        ds.shard(3, 3)
    assert list(ds.take(3)) == [0, 1, 2] and len(ds.take(None)) == 10 and len(ds.take(100)) == 10
    assert list(ds.filter(lambda x: x % 3 == 0)) == [0, 3, 6, 9]
    assert list(ds.sample(SequentialSampler(3, 5))) == [5, 6, 7]
    with pytest.raises(TypeError, match="Invalid sampler type"):
        ds.sample([1, 2])
    assert list(ds.take(4).filter(lambda x: x > 1).shard(2, 1)) == [3]


def test_transform_lazy_and_eager_and_transform_first():
    calls = []

    def double(x):
        calls.append(x)
        return 2 * x
    ds = SimpleDataset([1, 2, 3])
    lazy = ds.transform(double)
    assert calls == [] and lazy[1] == 4 and calls == [2]
    calls.clear()
    eager = ds.transform(double, lazy=False)
    assert calls == [1, 2, 3] and isinstance(eager, SimpleDataset) and list(eager) == [2, 4, 6]
    pairs = ArrayDataset(np.array([1.0, 2.0]), np.array([7, 8]))
    assert pairs.transform(lambda x, y: x + y)[1] == 10
    first = pairs.transform_first(lambda x: -x)
    assert first[0] == (-1.0, 7)
    assert SimpleDataset([5]).transform_first(lambda x: x + 1)[0] == 6


def test_array_dataset():
    x = mx.nd.array(np.arange(12).reshape(4, 3))
    y = mx.nd.array([0, 1, 2, 3])
    ds = ArrayDataset(x, y, [10, 11, 12, 13])
    a, b, c = ds[2]
    assert isinstance(a, mx.nd.NDArray) and a.asnumpy().tolist() == [6, 7, 8]
    assert isinstance(b, np.floating) and b == 2 and c == 12  # a 1-D NDArray gives numpy scalars
    assert ArrayDataset(np.arange(3))[1] == 1
    with pytest.raises(MXNetError, match="array 1 has 2"):
        ArrayDataset(np.arange(3), np.arange(2))


def test_samplers():
    assert list(SequentialSampler(3, start=2)) == [2, 3, 4]
    np.random.seed(0)
    r = list(RandomSampler(8))
    assert sorted(r) == list(range(8)) and r != list(range(8))
    keep = BatchSampler(SequentialSampler(7), 3, "keep")
    assert list(keep) == [[0, 1, 2], [3, 4, 5], [6]] and len(keep) == 3
    discard = BatchSampler(SequentialSampler(7), 3, "discard")
    assert list(discard) == [[0, 1, 2], [3, 4, 5]] and len(discard) == 2
    roll = BatchSampler(SequentialSampler(7), 3, "rollover")
    assert len(roll) == 2 and list(roll) == [[0, 1, 2], [3, 4, 5]]
    assert len(roll) == 2  # (1 left over + 7) // 3
    assert list(roll) == [[6, 0, 1], [2, 3, 4]]
    assert list(roll) == [[5, 6, 0], [1, 2, 3], [4, 5, 6]]
    with pytest.raises(ValueError, match="last_batch must be one of"):
        BatchSampler(SequentialSampler(3), 2, "drop")


def _batches(loader):
    return [[b.asnumpy().tolist() for b in batch] if isinstance(batch, list) else batch.asnumpy().tolist()
            for batch in loader]


def test_dataloader_order_last_batch_and_shuffle():
    x = np.arange(14, dtype=np.float32).reshape(7, 2)
    ds = ArrayDataset(x, np.arange(7))
    out = _batches(DataLoader(ds, 3))
    assert [b[1] for b in out] == [[0, 1, 2], [3, 4, 5], [6]]
    assert out[0][0] == x[:3].tolist()
    assert [b[1] for b in _batches(DataLoader(ds, 3, last_batch="discard"))] == [[0, 1, 2], [3, 4, 5]]
    roll = DataLoader(ds, 3, last_batch="rollover")
    assert [b[1] for b in _batches(roll)] == [[0, 1, 2], [3, 4, 5]]
    assert [b[1] for b in _batches(roll)] == [[6, 0, 1], [2, 3, 4]]
    assert len(DataLoader(ds, 3)) == 3 and len(DataLoader(ds, 3, last_batch="discard")) == 2
    np.random.seed(5)
    a = _batches(DataLoader(ds, 3, shuffle=True))
    np.random.seed(5)
    assert _batches(DataLoader(ds, 3, shuffle=True)) == a
    assert sorted(sum((b[1] for b in a), [])) == list(range(7)) and a != out


def test_dataloader_batchify_and_arguments():
    ds = SimpleDataset([(mx.nd.ones((2,)) * i, (i, np.float32(i) / 2)) for i in range(4)])
    batch = next(iter(DataLoader(ds, 4)))
    assert isinstance(batch, list) and batch[0].shape == (4, 2)
    assert isinstance(batch[1], list) and batch[1][0].asnumpy().tolist() == [0, 1, 2, 3]
    assert batch[1][1].dtype == np.float32
    assert next(iter(DataLoader(ds, 2, batchify_fn=len))) == 2
    bs = [[3, 0], [1]]
    assert [len(b[0]) for b in DataLoader(ds, batch_sampler=bs)] == [2, 1]
    with pytest.raises(ValueError, match="must not be specified if batch_sampler"):
        DataLoader(ds, 2, batch_sampler=bs)
    with pytest.raises(ValueError, match="shuffle must not be specified if sampler"):
        DataLoader(ds, 2, shuffle=True, sampler=SequentialSampler(4))
    with pytest.raises(ValueError, match="batch_size must be specified"):
        DataLoader(ds)
    with pytest.raises(MXNetError, match="cannot stack"):
        next(iter(DataLoader(SimpleDataset(["a", "b"]), 2)))


class _Mixed(Dataset):
    """Samples of every kind a worker sends back (module level: the workers unpickle it)."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i >= 10:
            raise IndexError(f"sample {i} of 10")
        return (mx.nd.array([i, i + 0.5]), np.full((2, 2), i, np.int32), i, float(i) / 4, f"s{i}", b"b" * i, None,
                [np.uint8(i), True])


def _same(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, mx.nd.NDArray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def _as_list(samples):
    return samples


def _stack_numeric(samples):
    return gdata.default_batchify_fn([s[:4] for s in samples])


def test_worker_processes_give_the_batches_of_num_workers_0():
    ds = _Mixed()
    plan = [list(b) for b in BatchSampler(SequentialSampler(10), 3)]
    serial = list(DataLoader(ds, batch_sampler=plan, batchify_fn=_as_list))
    loader = DataLoader(ds, batch_sampler=plan, batchify_fn=_as_list, num_workers=2)
    try:
        for _ in range(2):
            _same(list(loader), serial)
        for batch in loader:  # leave an epoch early: the next one starts clean
            break
        plan[:] = [[9, 8], [0], [5, 5, 5]]
        _same(list(loader), list(DataLoader(ds, batch_sampler=plan, batchify_fn=_as_list)))
        plan[:] = [[0], [11], [1]]
        with pytest.raises(MXNetError, match="(?s)worker process failed.*IndexError: sample 11 of 10"):
            list(loader)
        plan[:] = [[2, 3]]
        _same(list(loader), [[ds[2], ds[3]]])
        np.random.seed(3)
        shuffled = [[s[2] for s in b] for b in DataLoader(ds, 4, shuffle=True, batchify_fn=_as_list)]
        np.random.seed(3)
        fresh = DataLoader(ds, 4, shuffle=True, batchify_fn=_as_list, num_workers=1)
        try:  # starting workers draws nothing from numpy's state: a seeded shuffle is the same
            assert [[s[2] for s in b] for b in fresh] == shuffled
        finally:
            fresh.close()
        loader._batchify_fn = _stack_numeric  # default stacking of what the workers sent
        plan[:] = [[4, 1, 7], [2]]
        want = _batches(DataLoader(ds, batch_sampler=plan, batchify_fn=_stack_numeric))
        assert _batches(loader) == want and want[0][2] == [4, 1, 7]
    finally:
        loader.close()


def test_worker_processes_need_a_picklable_dataset():
    ds = SimpleDataset([1, 2]).transform(lambda x: x + 1)
    with pytest.raises(MXNetError, match="(?s)cannot be pickled.*thread_pool=True"):
        list(DataLoader(ds, 1, num_workers=1))
    assert _batches(DataLoader(ds, 1, num_workers=1, thread_pool=True)) == [[2], [3]]


def test_thread_pool_gives_the_same_batches():
    ds = _Mixed()
    serial = list(DataLoader(ds, 3, batchify_fn=_as_list))
    threads = DataLoader(ds, 3, batchify_fn=_as_list, num_workers=3, thread_pool=True, auto_reload=True)
    assert threads._pool is not None  # auto_reload starts the workers at construction
    _same(list(threads), serial)
    _same(list(threads), serial)
    with pytest.raises(IndexError, match="sample 12"):
        list(DataLoader(ds, batch_sampler=[[0], [12]], batchify_fn=_as_list, num_workers=2, thread_pool=True))
    threads.close()


def test_wire_refuses_what_a_worker_must_not_send():
    with pytest.raises(MXNetError, match="dtype object"):
        _wire.encode([np.array([object()], dtype=object)])
    with pytest.raises(MXNetError, match="holds a dict"):
        _wire.encode([{"a": 1}])
    good = _wire.encode([np.arange(3)])
    forged = good.replace(b'"<i8"', b'"|O8"')
    with pytest.raises(MXNetError, match="refused"):
        _wire.decode(forged, mx.nd.array)
    with pytest.raises(MXNetError, match="outside the message"):
        _wire.decode(good[:-8], mx.nd.array)
    with pytest.raises(MXNetError, match="truncated"):
        _wire.decode(b"\x01", mx.nd.array)
    with pytest.raises(MXNetError, match="malformed"):
        _wire.decode(good.replace(b'"s": [3]', b'"s": [4]'), mx.nd.array)
    with pytest.raises(MXNetError, match="malformed"):
        _wire.decode(good[:12] + b"{" + good[13:], mx.nd.array)
    assert gdata.default_batchify_fn is not None


def test_interval_sampler():
    from jbind.gluon.contrib.data import IntervalSampler
    assert list(IntervalSampler(13, 3)) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    assert len(IntervalSampler(13, 3)) == 13
    assert list(IntervalSampler(13, 3, rollover=False)) == [0, 3, 6, 9, 12]
    with pytest.raises(MXNetError, match="at most length"):
        IntervalSampler(2, 3)


@pytest.mark.parametrize("workers, threads", [(0, False), (2, True)])
def test_pin_memory_puts_batches_on_cpu_pinned(workers, threads):
    ds = ArrayDataset(np.arange(12.0).reshape(6, 2), np.arange(6))
    plain = [x for x, _ in DataLoader(ds, 4, num_workers=workers, thread_pool=threads)]
    assert all(x.context == mx.cpu(0) for x in plain)
    pinned = list(DataLoader(ds, 4, pin_memory=True, pin_device_id=1, num_workers=workers, thread_pool=threads))
    assert all(x.context == mx.context.cpu_pinned(1) and y.context == mx.context.cpu_pinned(1) for x, y in pinned)
    np.testing.assert_array_equal(np.concatenate([x.asnumpy() for x, _ in pinned]), ds._data[0])
