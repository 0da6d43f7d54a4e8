"""`mx.gluon.data` datasets: the Dataset interface and its lazy views (transform, filter,
shard, take, sample), SimpleDataset, ArrayDataset and RecordFileDataset."""
from __future__ import annotations

import os

from ... import recordio
from ...base import MXNetError
from ...ndarray.ndarray import NDArray
from .sampler import FilterSampler, Sampler, SequentialSampler

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """A sized collection of samples: subclasses define `__getitem__` and `__len__`."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def filter(self, fn) -> "Dataset":
        """The samples for which `fn(sample)` is true (decided once, now)."""
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards: int, index: int) -> "Dataset":
        """Contiguous part `index` of `num_shards`; the first `len % num_shards` parts have one more sample."""
        if not 0 <= index < num_shards:
            raise MXNetError(f"Dataset.shard: index {index} out of range for {num_shards} shards")
        base, rest = divmod(len(self), num_shards)
        start = base * index + min(index, rest)
        return _SampledDataset(self, SequentialSampler(base + (index < rest), start))

    def take(self, count) -> "Dataset":
        """The first `count` samples (all of them when `count` is None or larger)."""
        if count is None or count > len(self):
            count = len(self)
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler) -> "Dataset":
        """The samples at the indices `sampler` yields."""
        if not isinstance(sampler, Sampler):
            raise TypeError(f"Invalid sampler type: {type(sampler)}. Expected gluon.data.Sampler instead.")
        return _SampledDataset(self, sampler)

    def transform(self, fn, lazy: bool = True) -> "Dataset":
        """Each sample through `fn` (a tuple sample is passed as separate arguments); computed on
        access when `lazy`, else all at once now."""
        view = _LazyTransformDataset(self, fn)
        return view if lazy else SimpleDataset([view[i] for i in range(len(view))])

    def transform_first(self, fn, lazy: bool = True) -> "Dataset":
        """`fn` applied to the first element of each sample (the data), the rest (labels) kept."""
        return self.transform(_FirstOnly(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over anything with `len` and indexing (a list, a numpy array, ...)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        return self._fn(*item) if isinstance(item, tuple) else self._fn(item)


class _FirstOnly:
    """fn on the first argument; the others passed through (picklable, for worker processes)."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *rest):
        return (self._fn(x),) + rest if rest else self._fn(x)


class _SampledDataset(Dataset):
    def __init__(self, data, sampler):
        self._data = data
        self._indices = list(sampler)

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._data[self._indices[idx]]


class ArrayDataset(Dataset):
    """Several equally long arrays (NDArrays, numpy arrays, lists) zipped: sample i is the tuple
    of their i-th elements, or just the element when there is one array. A 1-D NDArray is
    read as numpy, so its elements are scalars (as in MXNet)."""

    def __init__(self, *args):
        if not args:
            raise MXNetError("ArrayDataset needs at least one array")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise MXNetError(f"ArrayDataset: all arrays must have the same length; array 0 has "
                                 f"{self._length} elements, array {i} has {len(data)}")
            if isinstance(data, NDArray) and len(data.shape) == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length


class RecordFileDataset(Dataset):
    """The records of a RecordIO file (`filename`, with its index `<stem>.idx` beside it), as bytes."""

    def __init__(self, filename: str):
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")  # pickles by reopening

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)


class _DownloadedDataset(Dataset):
    """A dataset held in memory as `_data` and `_label`, read from files under `root`."""

    def __init__(self, root, transform):
        self._root = os.path.expanduser(root)
        self._transform = transform
        self._data = None
        self._label = None
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError
