"""`mx.gluon.data.vision` datasets read from MXNet's on-disk formats under a local `root`.

MXNet 1.9.1 downloads missing files; jbind never downloads: a missing file is an
MXNetError naming it. Files are checked for their format and size, not for the SHA-1
of MXNet's published copies, so any well-formed file (a subset, a synthetic set) reads.
"""
from __future__ import annotations

import gzip
import os
import struct
import warnings

import numpy as np

from .... import ndarray as nd
from .... import recordio
from ....base import MXNetError, data_dir
from ..dataset import Dataset, RecordFileDataset, _DownloadedDataset
from . import _image

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset", "ImageFolderDataset"]


def _find(root, names, what):
    """The first of `names` (relative to `root`) that exists, else an MXNetError naming them."""
    for name in names:
        path = os.path.join(root, name)
        if os.path.isfile(path):
            return path
    raise MXNetError(f"{what}: file {os.path.join(root, names[0])!r} is absent (jbind does not download "
                     f"datasets; put MXNet's file there or pass root=)")


def _read_idx(path, ndim):
    """An MNIST idx file (gzip-compressed or not) -> (dims, uint8 array of the values)."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise MXNetError(f"cannot read {path!r}: {e}") from e
    head = 4 * (1 + ndim)
    if len(raw) < head:
        raise MXNetError(f"{path!r} is too short for an idx{ndim} header")
    magic, *dims = struct.unpack(">%dI" % (1 + ndim), raw[:head])
    if magic != 0x800 + ndim:
        raise MXNetError(f"{path!r} has magic number {magic}, expected {0x800 + ndim} (an MNIST idx{ndim} file)")
    count = int(np.prod(dims))
    if len(raw) - head != count:
        raise MXNetError(f"{path!r}: its header {tuple(dims)} needs {count} values, the file holds {len(raw) - head}")
    return dims, np.frombuffer(raw, np.uint8, count, head)


class MNIST(_DownloadedDataset):
    """MNIST digits: samples (uint8 NDArray (28, 28, 1), int32 label).

    Args:
        root: folder holding `train-images-idx3-ubyte.gz`, `train-labels-idx1-ubyte.gz`,
            `t10k-images-idx3-ubyte.gz`, `t10k-labels-idx1-ubyte.gz` (or the same without .gz).
        train: the training set, else the test set.
        transform: `fn(data, label) -> sample`.
    """

    _default = "mnist"

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        super().__init__(root or os.path.join(data_dir(), "datasets", self._default), transform)

    def _get_data(self):
        stem = "train" if self._train else "t10k"
        what = type(self).__name__
        images = _find(self._root, [f"{stem}-images-idx3-ubyte.gz", f"{stem}-images-idx3-ubyte"], what)
        labels = _find(self._root, [f"{stem}-labels-idx1-ubyte.gz", f"{stem}-labels-idx1-ubyte"], what)
        (n_labels,), label = _read_idx(labels, 1)
        (n, h, w), data = _read_idx(images, 3)
        if n != n_labels:
            raise MXNetError(f"{what}: {images!r} holds {n} images but {labels!r} holds {n_labels} labels")
        self._data = nd.array(data.reshape(n, h, w, 1), dtype=np.uint8)
        self._label = label.astype(np.int32)


class FashionMNIST(MNIST):
    """Fashion-MNIST (same files and samples as MNIST; default root $MXNET_HOME/datasets/fashion-mnist)."""

    _default = "fashion-mnist"


class CIFAR10(_DownloadedDataset):
    """CIFAR-10: samples (uint8 NDArray (32, 32, 3), int32 label).

    Args:
        root: folder holding MXNet's binary batches `data_batch_1.bin` .. `data_batch_5.bin` and
            `test_batch.bin` (or the folder `cifar-10-batches-bin` of the original archive).
        train: the training set, else the test set.
        transform: `fn(data, label) -> sample`.
    """

    _default, _subdir, _labels = "cifar10", "cifar-10-batches-bin", 1

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        super().__init__(root or os.path.join(data_dir(), "datasets", self._default), transform)

    def _files(self):
        return [f"data_batch_{i}.bin" for i in range(1, 6)] if self._train else ["test_batch.bin"]

    def _label_column(self):
        return 0

    def _get_data(self):
        record = 3072 + self._labels
        images, labels = [], []
        for name in self._files():
            path = _find(self._root, [name, os.path.join(self._subdir, name)], type(self).__name__)
            with open(path, "rb") as f:
                raw = f.read()
            if len(raw) % record:
                raise MXNetError(f"{type(self).__name__}: {path!r} is {len(raw)} bytes, not a whole number of "
                                 f"{record}-byte records")
            rows = np.frombuffer(raw, np.uint8).reshape(-1, record)
            images.append(rows[:, self._labels:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            labels.append(rows[:, self._label_column()].astype(np.int32))
        self._data = nd.array(np.concatenate(images), dtype=np.uint8)
        self._label = np.concatenate(labels)


class CIFAR100(CIFAR10):
    """CIFAR-100: `train.bin` / `test.bin` (or under `cifar-100-binary`); labels are the 20
    coarse classes, or the 100 fine ones with `fine_label=True`."""

    _default, _subdir, _labels = "cifar100", "cifar-100-binary", 2

    def __init__(self, root=None, fine_label=False, train=True, transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _files(self):
        return ["train.bin" if self._train else "test.bin"]

    def _label_column(self):
        return 1 if self._fine_label else 0


class ImageRecordDataset(RecordFileDataset):
    """Images packed in a RecordIO file (`im2rec`): samples (uint8 NDArray (H, W, 3) RGB, or
    (H, W, 1) with `flag=0`; the record header's label). Decoding needs OpenCV or Pillow."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        header, img = recordio.unpack(super().__getitem__(idx))
        data = nd.array(_image.imdecode(img, self._flag, what=f"record {idx} of {self.filename!r}"), dtype=np.uint8)
        if self._transform is not None:
            return self._transform(data, header.label)
        return data, header.label


_EXTS = (".jpg", ".jpeg", ".png")


class ImageFolderDataset(Dataset):
    """Images in one subfolder per class (`root/<class>/<image>.jpg|.jpeg|.png`): samples
    (uint8 NDArray (H, W, 3) RGB, or (H, W, 1) with `flag=0`; the class index in `synsets`,
    the sorted folder names). Decoding needs OpenCV or Pillow."""

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        if not os.path.isdir(self._root):
            raise MXNetError(f"ImageFolderDataset: folder {self._root!r} does not exist")
        self.synsets, self.items = [], []
        for folder in sorted(os.listdir(self._root)):
            path = os.path.join(self._root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=2)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for name in sorted(os.listdir(path)):
                ext = os.path.splitext(name)[1].lower()
                if ext not in _EXTS:
                    warnings.warn(f"Ignoring {os.path.join(path, name)} of type {ext}. Only support "
                                  f"{', '.join(_EXTS)}", stacklevel=2)
                    continue
                self.items.append((os.path.join(path, name), label))

    def __getitem__(self, idx):
        path, label = self.items[idx]
        img = nd.array(_image.imread(path, self._flag), dtype=np.uint8)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)
