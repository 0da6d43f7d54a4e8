"""`mx.io`: DataDesc, DataBatch, DataIter, NDArrayIter and ResizeIter, as MXNet 1.x's.

Arrays are jbind NDArrays. As in MXNet, numpy inputs become float32 NDArrays unless they
are NDArrays already. MXNet's C++ iterators CSVIter and MNISTIter are in io_iters.py.
Not provided: the other C++ iterators (ImageRecordIter, LibSVMIter, ...), sparse and
h5py inputs.
"""
from __future__ import annotations

import functools
from collections import OrderedDict, namedtuple

import jax
import jax.numpy as jnp
import numpy as np

from .base import MXNetError
from .ndarray import NDArray
from .ndarray import array as _nd_array
from .ndarray import concat as _nd_concat


def _array(source, ctx=None, dtype=None) -> NDArray:
    """MXNet's `nd.array`: the source's dtype for an NDArray, float32 for anything else."""
    if dtype is None:
        dtype = source.dtype if isinstance(source, NDArray) else np.float32
    return _nd_array(source, ctx=ctx, dtype=dtype)


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name and shape of one input, with its dtype and layout ('NCHW', 'NTC', 'TN', ...).

    Args:
        name: the input's name.
        shape: its shape.
        dtype: its dtype (default float32).
        layout: what each axis of `shape` means; 'N' marks the batch axis.
    """

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        ret = super(cls, DataDesc).__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return "DataDesc[%s,%s,%s,%s]" % (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout):
        """The axis of `layout` that is the batch ('N'); 0 when layout is None, -1 if none."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from [(name, shape)] and, optionally, [(name, dtype)]."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch:
    """One batch: lists of data and label arrays, the padding count, and bucketing information.

    Args:
        data: list of NDArrays.
        label: list of NDArrays, or None.
        pad: number of examples at the end that only pad the batch.
        index: example indices, or None.
        bucket_key: the bucket (BucketingModule).
        provide_data: list of DataDesc for `data`, or None.
        provide_label: list of DataDesc for `label`, or None.
    """

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None, provide_data=None,
                 provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError("Data must be list of NDArrays")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError("Label must be list of NDArrays")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lb.shape for lb in self.label] if self.label else None
        return "{}: data shapes: {} label shapes: {}".format(type(self).__name__, data_shapes, label_shapes)


class DataIter:
    """Base class of data iterators: `next()` returns a DataBatch or raises StopIteration.

    Args:
        batch_size: the number of examples per batch.
    """

    def __init__(self, batch_size: int = 0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Go back to the beginning of the data."""

    def next(self) -> DataBatch:
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self) -> bool:
        """Move to the next batch; False at the end."""

    def getdata(self):
        """The current batch's data (list of NDArrays)."""

    def getlabel(self):
        """The current batch's labels (list of NDArrays)."""

    def getindex(self):
        """The current batch's example indices, or None."""
        return None

    def getpad(self):
        """How many examples at the end of the current batch are padding."""


class ResizeIter(DataIter):
    """Makes `data_iter` yield exactly `size` batches per epoch, restarting it as needed.

    Args:
        data_iter: the iterator to resize.
        size: batches per epoch.
        reset_internal: whether `reset()` also resets `data_iter`.
    """

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True):
        super().__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


def _init_data(data, allow_empty, default_name):
    """-> sorted [(name, NDArray)] from an array, a list of arrays or a dict of arrays."""
    if data is None:
        if not allow_empty:
            raise ValueError("data must be given")
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, list):
        if not allow_empty and not data:
            raise ValueError("data must not be an empty list")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict([("_%d_%s" % (i, default_name), d) for i, d in enumerate(data)])
    if not isinstance(data, dict):
        raise TypeError("Input must be NDArray, numpy.ndarray, a list of them or dict with them as values")
    out = {}
    for k, v in data.items():
        if isinstance(v, NDArray):
            out[k] = v
            continue
        if hasattr(v, "tocsr") and hasattr(v, "nnz"):  # a scipy sparse matrix: a CSRNDArray, as MXNet
            from .ndarray.sparse import csr_matrix
            out[k] = csr_matrix(v, dtype=np.float32)
            continue
        try:
            out[k] = _array(v)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Invalid type '{type(v)}' for {k}, should be NDArray or numpy.ndarray") from e
    return list(sorted(out.items()))


def check_part(num_parts, part_index) -> None:
    """Validate a `num_parts` / `part_index` pair (one part per worker)."""
    if not isinstance(num_parts, (int, np.integer)) or isinstance(num_parts, bool) or num_parts < 1:
        raise MXNetError(f"num_parts must be a positive int, got {num_parts!r}")
    if not isinstance(part_index, (int, np.integer)) or isinstance(part_index, bool) \
            or not 0 <= part_index < num_parts:
        raise MXNetError(f"part_index must be in 0..{num_parts - 1} (num_parts={num_parts}), got {part_index!r}")


def _reordered(arr: NDArray, idx) -> NDArray:
    out = _array(arr.asnumpy()[idx], arr.context)
    return out if arr.stype == "default" else out.tostype(arr.stype)


def _slice_along(arr: NDArray, start, end, axis) -> NDArray:
    if arr.stype == "csr":  # rows only (NDArrayIter refuses csr data with another batch axis)
        return arr[start:end]
    n = arr.shape[axis]
    start, end = max(0, min(start, n)), max(0, min(end, n))
    if end <= start:
        idx = [slice(None)] * arr.ndim
        idx[axis] = slice(start, end)
        return arr[tuple(idx)]
    # one compiled slice per (size, axis), the start a traced argument: a batch costs one
    # jitted call rather than jax's generic indexing, which is ~10x slower per call
    return NDArray(_slicer(end - start, axis)(arr.data, np.int32(start)))


@functools.lru_cache(maxsize=256)
def _slicer(size: int, axis: int):
    return jax.jit(lambda x, start: jax.lax.dynamic_slice_in_dim(x, start, size, axis))


class NDArrayIter(DataIter):
    """Batches from in-memory arrays (MXNet's `mx.io.NDArrayIter`).

    Args:
        data: an array, a list of arrays (named `_0_data`, `_1_data`, ...) or a dict name -> array.
        label: the same for labels, or None.
        batch_size: examples per batch.
        shuffle: shuffle the examples (numpy's global random state) at every reset.
        last_batch_handle: 'pad' (fill the last batch from the beginning; `pad` counts the
            filler), 'discard' (drop the incomplete last batch) or 'roll_over' (carry the
            rest of the data into the first batch of the next epoch).
        data_name: name of a single data array.
        label_name: name of a single label array.
        layout: axis layout; 'N' marks the batch axis.
        num_parts: split the examples into this many contiguous parts (one per worker of a
            `dist_sync` job) and read only one (jbind extension; MXNet's C++ iterators'
            argument, with MNISTIter's split: part k holds examples
            `[int(n / num_parts * k), int(n / num_parts * (k + 1)))`). Parts differ by at most
            one example, so their batch counts can differ by one: with several workers,
            give every part the same number of batches (n a multiple of num_parts).
        part_index: which part this iterator reads, 0 .. num_parts - 1.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad",
                 data_name="data", label_name="softmax_label", layout="NCHW", num_parts=1, part_index=0):
        super().__init__(batch_size)
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError(f"last_batch_handle must be 'pad', 'discard' or 'roll_over', "
                             f"got {last_batch_handle!r}")
        check_part(num_parts, part_index)
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        self.num_parts, self.part_index = num_parts, part_index
        if any(v.stype == "csr" for _, v in self.data + self.label) and \
                (last_batch_handle != "discard" or layout.find("N") != 0):
            raise NotImplementedError("NDArrayIter: csr data needs last_batch_handle='discard' and the batch "
                                      f"axis first (got {last_batch_handle!r}, layout {layout!r})")
        if num_parts > 1:
            axis = layout.find("N")
            n = self.data[0][1].shape[axis]
            start, end = int(n / num_parts * part_index), int(n / num_parts * (part_index + 1))
            if start == end:
                raise MXNetError(f"NDArrayIter: {n} examples leave part {part_index} of {num_parts} empty")
            self.data = [(k, _slice_along(v, start, end, axis)) for k, v in self.data]
            self.label = [(k, _slice_along(v, start, end, axis)) for k, v in self.label]
        self.idx = np.arange(self.data[0][1].shape[0])
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = batch_size
        self.cursor = -self.batch_size
        self.num_data = self.idx.shape[0]
        self.reset()
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)
        self._cache_data = None
        self._cache_label = None
        self.layout = layout

    def _descs(self, arrays):
        axis = self.layout.find("N")
        return [DataDesc(k, tuple(list(v.shape[:axis]) + [self.batch_size] + list(v.shape[axis + 1:])),
                         v.dtype, layout=self.layout) for k, v in arrays]

    @property
    def provide_data(self):
        """[DataDesc] of the data, with the batch axis set to batch_size."""
        return self._descs(self.data)

    @property
    def provide_label(self):
        """[DataDesc] of the labels, with the batch axis set to batch_size."""
        return self._descs(self.label)

    def hard_reset(self):
        """Go back to the start, dropping any rolled-over data."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        if self.shuffle:
            self._shuffle_data()
        if self.last_batch_handle == "roll_over" and \
                self.num_data - self.batch_size < self.cursor < self.num_data:
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[self.layout.find("N")] != self.batch_size:
            # an incomplete last batch: keep it for the next epoch (roll_over), stop here
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _getdata(self, data_source, start=None, end=None):
        if start is None and end is None:
            raise ValueError("should at least specify start or end")
        start = start if start is not None else 0
        if end is None:
            end = data_source[0][1].shape[0] if data_source else 0
        return [_slice_along(x[1], start, end, self.layout.find("N")) for x in data_source]

    def _concat(self, first_data, second_data):
        if not first_data or not second_data:
            return first_data if first_data else second_data
        return [_nd_concat(a, b, dim=self.layout.find("N")) for a, b in zip(first_data, second_data)]

    def _tile(self, data, repeats):
        res = []
        for datum in data:
            reps = [1] * len(datum.shape)
            reps[0] = repeats
            res.append(NDArray(jnp.tile(datum.data, reps)))
        return res

    def _batchify(self, data_source):
        if self.cursor >= self.num_data:
            raise ValueError("DataIter needs reset.")
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            # the first batch of an epoch after roll_over: the cached rest, then the beginning
            cache_data = self._cache_data if self._cache_data is not None else self._cache_label
            if cache_data is None:
                raise ValueError("next epoch should have cached data")
            second_data = self._getdata(data_source, end=self.cursor + self.batch_size)
            if self._cache_data is not None:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cache_data, second_data)
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            pad = self.batch_size - self.num_data + self.cursor
            first_data = self._getdata(data_source, start=self.cursor)
            if pad > self.num_data:
                repeats = pad // self.num_data
                second_data = self._tile(self._getdata(data_source, end=self.num_data), repeats)
                if pad % self.num_data != 0:
                    second_data = self._concat(second_data,
                                               self._getdata(data_source, end=pad % self.num_data))
            else:
                second_data = self._getdata(data_source, end=pad)
            return self._concat(first_data, second_data)
        end_idx = min(self.cursor + self.batch_size, self.num_data)
        return self._getdata(data_source, self.cursor, end_idx)

    def getdata(self):
        return self._batchify(self.data)

    def getlabel(self):
        return self._batchify(self.label)

    def getpad(self):
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        # As MXNet: the index is shuffled in place and the (already shuffled) arrays are
        # re-gathered by it, so the order compounds from epoch to epoch.
        np.random.shuffle(self.idx)
        self.data = [(k, _reordered(v, self.idx)) for k, v in self.data]
        self.label = [(k, _reordered(v, self.idx)) for k, v in self.label]


_ELSEWHERE = {"PrefetchingIter": "prefetch", "CSVIter": "io_iters", "MXDataIter": "io_iters", "MNISTIter": "io_mnist",
              "ImageRecordIter": "io_image", "ImageRecordUInt8Iter": "io_image",
              "ImageRecordInt8Iter": "io_image"}


def __getattr__(name):  # iterators in modules of their own (they need this one), loaded on first use
    if name in _ELSEWHERE:
        import importlib
        return getattr(importlib.import_module(f"..{_ELSEWHERE[name]}", __name__), name)
    raise AttributeError(name)
