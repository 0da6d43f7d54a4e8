"""`mx.image.ImageIter`: images from a .rec file (with or without .idx), a .lst list or a
Python list, through an augmenter list, in NCHW float32 batches (MXNet 1.9.1's semantics:
shuffle with Python's `random`, partitions by whole slices of the index, last batch padded,
discarded or rolled over)."""
from __future__ import annotations

import logging
import numbers
import os
import random

import numpy as np

from .. import recordio
from ..base import MXNetError
from ..io import DataBatch, DataDesc, DataIter
from ..ndarray import array as _nd_array
from ._aug import CreateAugmenter
from ._ops import imdecode as _imdecode
from ._ops import to_numpy

_LOG = logging.getLogger(__name__)
_LABEL_DTYPES = ("int32", "float32", "int64", "float64")


def _read_list(path: str, dtype: str):
    entries, keys = {}, []
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise MXNetError(f"ImageIter: cannot read image list {path!r}: {e.strerror or e}") from e
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.strip().split("\t")
        if len(parts) < 3:
            raise MXNetError(f"ImageIter: {path!r} line {n}: expected 'index<TAB>label(s)<TAB>path', got {line!r}")
        try:
            key, label = int(parts[0]), np.array(parts[1:-1], dtype=np.float64).astype(dtype)
        except ValueError as e:
            raise MXNetError(f"ImageIter: {path!r} line {n}: bad index or label in {line!r}") from e
        entries[key] = (label, parts[-1])
        keys.append(key)
    return entries, keys


class ImageIter(DataIter):
    """Image iterator with augmenters, as `mx.image.ImageIter`.

    Args:
        batch_size: examples per batch.
        data_shape: (3, H, W).
        label_width: labels per example.
        path_imgrec / path_imgidx: a RecordIO file and its index (the index is needed to
            shuffle or partition a .rec).
        path_imglist / path_root: a tab-separated .lst (index, labels..., relative path) and
            the folder its paths are under; `imglist`: [[label(s), path], ...] instead.
        shuffle, part_index, num_parts: as MXNet (shuffled at each reset with `random`).
        aug_list: augmenters; default `CreateAugmenter(data_shape, **kwargs)`.
        dtype: the label dtype.
        last_batch_handle: 'pad' (default), 'discard' or 'roll_over'.
    """

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None, path_imglist=None,
                 path_root=None, path_imgidx=None, shuffle=False, part_index=0, num_parts=1,
                 aug_list=None, imglist=None, data_name="data", label_name="softmax_label",
                 dtype="float32", last_batch_handle="pad", **kwargs):
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise MXNetError("ImageIter: give path_imgrec, path_imglist or imglist")
        if dtype not in _LABEL_DTYPES:
            raise MXNetError(f"ImageIter: label dtype {dtype!r} is not supported: use one of {_LABEL_DTYPES}")
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise MXNetError(f"ImageIter: last_batch_handle must be 'pad', 'discard' or 'roll_over', "
                             f"got {last_batch_handle!r}")
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        imgkeys = None
        if path_imglist:
            self.imglist, imgkeys = _read_list(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist, imgkeys = {}, []
            for index, item in enumerate(imglist, 1):
                if len(item) > 2:
                    label = np.array(item[:-1], dtype=dtype)
                elif isinstance(item[0], numbers.Number):
                    label = np.array([item[0]], dtype=dtype)
                else:
                    label = np.array(item[0], dtype=dtype)
                self.imglist[str(index)] = (label, item[-1])
                imgkeys.append(str(index))
        else:
            self.imglist = None
        self.path_root = path_root
        self.check_data_shape(data_shape)
        data_shape = tuple(data_shape)
        self.provide_data = [DataDesc(data_name, (batch_size,) + data_shape, np.float32)]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [DataDesc(label_name, label_shape, np.dtype(dtype).type)]
        self.batch_size, self.data_shape, self.label_width = batch_size, data_shape, label_width
        self.shuffle, self.dtype = shuffle, dtype
        if self.imgrec is None:
            self.seq = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise MXNetError("ImageIter: shuffle and num_parts > 1 over a .rec need its index (path_imgidx)")
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise MXNetError(f"ImageIter: part_index {part_index} is outside 0..{num_parts - 1}")
            per = len(self.seq) // num_parts
            self.seq = self.seq[part_index * per:(part_index + 1) * per]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache = None
        self.reset()

    def reset(self):
        """Back to the first image (shuffled again if `shuffle`); a rolled-over batch is kept."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Back to the first image, dropping any rolled-over images."""
        self._cache = None
        self.reset()

    def next_sample(self):
        """-> (label, encoded image bytes) of the next image; StopIteration at the end."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is not None:
            if self.cur >= self.num_image:
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            idx = self.seq[self.cur]
            self.cur += 1
            if self.imgrec is not None:
                header, img = recordio.unpack(self.imgrec.read_idx(idx))
                return (header.label if self.imglist is None else self.imglist[idx][0]), img
            label, fname = self.imglist[idx]
            return label, self.read_image(fname)
        s = self.imgrec.read()
        if s is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
            raise StopIteration
        header, img = recordio.unpack(s)
        return header.label, img

    def _batchify(self, data, label, start=0):
        i = start
        try:
            while i < self.batch_size:
                lab, s = self.next_sample()
                img = self.imdecode(s)
                try:
                    self.check_valid_image(img)
                except RuntimeError as e:
                    _LOG.debug("Invalid image, skipping: %s", e)
                    continue
                img = self.augmentation_transform(img)
                data[i] = to_numpy(self.postprocess_data(img))
                label[i] = np.asarray(lab).reshape(label.shape[1:]) if label.ndim > 1 else np.asarray(lab).ravel()[0]
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self):
        """The next DataBatch (`pad` counts the images repeated from the start in the last batch)."""
        if self._cache is not None:
            data, label, i = self._cache
        else:
            data = np.zeros((self.batch_size,) + self.data_shape, np.float32)
            label = np.zeros(self.provide_label[0].shape, self.dtype)
            i = self._batchify(data, label)
        pad = self.batch_size - i
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache is None:
                self._cache = (data, label, i)
                raise StopIteration
            self._batchify(data, label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache = None
        return DataBatch([_nd_array(data)], [_nd_array(label, dtype=self.dtype)], pad=pad)

    def check_data_shape(self, data_shape):
        """data_shape must be (3, H, W)."""
        if len(data_shape) != 3:
            raise MXNetError(f"ImageIter: data_shape should have length 3, with dimensions CxHxW, got {data_shape}")
        if data_shape[0] != 3:
            raise MXNetError(f"ImageIter: this iterator expects inputs to have 3 channels, got {data_shape}")

    def check_valid_image(self, data):
        """RuntimeError for an image with no pixels (skipped by the iterator)."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def imdecode(self, s):
        """Decode image bytes; RuntimeError naming the image if they are broken."""
        try:
            return _imdecode(s)
        except MXNetError as e:
            where = self.seq[(self.cur % self.num_image) - 1] if self.seq is not None else self.cur - 1
            if self.imglist is not None and where in self.imglist:
                where = f"filename: {self.imglist[where][1]}"
            else:
                where = f"index: {where}"
            raise RuntimeError(f"Broken image {where}, {e}") from e

    def read_image(self, fname):
        """The bytes of image file `fname` under `path_root`."""
        with open(os.path.join(self.path_root or "", fname), "rb") as f:
            return f.read()

    def augmentation_transform(self, data):
        """Apply the augmenter list."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """HWC -> CHW."""
        return to_numpy(datum).transpose(2, 0, 1)
