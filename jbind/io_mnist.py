"""`mx.io.MNISTIter`: MNIST's idx files in MXNet 1.9.1's batches and seeded shuffle order."""
from __future__ import annotations

import logging
import math
import os
import struct

import numpy as np

from .base import MXNetError
from .io import check_part

from .io_iters import _F32, MXDataIter, _bool, _dtype_name, _int

_LOG = logging.getLogger(__name__)


# --- MNIST ----------------------------------------------------------------------------

def _read_idx(path: str, magic: int, ndim: int, what: str) -> np.ndarray:
    """An uncompressed MNIST idx file -> uint8 array (count, *dims)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError as e:
        raise MXNetError(f"MNISTIter: {what} file {path!r}: no such file") from e
    except OSError as e:
        raise MXNetError(f"MNISTIter: cannot read {what} file {path!r}: {e.strerror or e}") from e
    if raw[:2] == b"\x1f\x8b":
        raise MXNetError(f"MNISTIter: {what} file {path!r} is gzip-compressed; MXNet reads the "
                         f"uncompressed idx file (gunzip it)")
    head = 4 * (1 + ndim)
    found = struct.unpack(">i", raw[:4])[0] if len(raw) >= 4 else None
    if found is not None and found != magic:
        raise MXNetError(f"MNISTIter: {what} file {path!r} has magic number {found}, "
                         f"expected {magic} (an MNIST idx{ndim} file)")
    if len(raw) < head:
        raise MXNetError(f"MNISTIter: {what} file {path!r} is {len(raw)} bytes, too short for its header")
    dims = struct.unpack(">%di" % ndim, raw[4:head])
    if min(dims) < 0:
        raise MXNetError(f"MNISTIter: {what} file {path!r} has a negative size in its header {tuple(dims)}")
    want = head + math.prod(dims)
    if len(raw) < want:
        raise MXNetError(f"MNISTIter: {what} file {path!r} is truncated: its header {tuple(dims)} "
                         f"needs {want} bytes, it has {len(raw)}")
    return np.frombuffer(raw, np.uint8, math.prod(dims), head).reshape(dims)


def mxnet_shuffle_order(n: int, seed: int) -> np.ndarray:
    """The permutation `std::shuffle(0..n-1, std::mt19937(seed))` gives in MXNet 1.9.1's build.

    libstdc++'s shuffle swaps element i (1..n-1) with j = uniform_int_distribution(0, i),
    which scales a 32-bit draw down by floor((2**32 - 1) / (i + 1)), drawing again when the
    draw lands in the remainder. numpy's legacy RandomState is the same mt19937.
    """
    order = np.arange(n)
    if n < 2:
        return order
    rs = np.random.RandomState(seed % 2 ** 32)
    draws = rs.randint(0, 2 ** 32, size=n - 1, dtype=np.uint32).tolist()
    k = 0
    for i in range(1, n):
        scaling = 0xFFFFFFFF // (i + 1)
        past = scaling * (i + 1)
        while True:
            if k == len(draws):
                draws += rs.randint(0, 2 ** 32, size=64, dtype=np.uint32).tolist()
            r = draws[k]
            k += 1
            if r < past:
                break
        j = r // scaling
        order[i], order[j] = order[j], order[i]
    return order


class MNISTIter(MXDataIter):
    """Batches of MNIST images from idx files (MXNet's `mx.io.MNISTIter`; keyword arguments only).

    Images are float32 pixels / 256 (MXNet's scale: 255 -> 0.99609375), shaped (batch, 1,
    rows, cols), or (batch, rows * cols) with `flat`; labels are float32 (batch,). An
    incomplete last batch is dropped. `index` is all zeros, as MXNet's.

    Args:
        image: the idx3 images file (uncompressed).
        label: the idx1 labels file (uncompressed).
        batch_size: images per batch.
        shuffle: shuffle once, when the iterator is made, in MXNet's order for `seed`
            (every epoch then has the same order, as in MXNet).
        flat: flatten each image.
        seed: the shuffle's seed.
        silent: do not log what was loaded.
        num_parts, part_index: read only part `part_index` of `num_parts` contiguous parts
            (images [floor(n / num_parts * k), floor(n / num_parts * (k + 1)))), then shuffle it.
        data_name, label_name: the names in provide_data / provide_label.
        **kwargs: MXNet's other parameters (prefetch_buffer, ctx, dtype=None or float32)
            and unknown ones are accepted and ignored, as MXNet does.
    """

    def __init__(self, *, image="./train-images-idx3-ubyte", label="./train-labels-idx1-ubyte", batch_size=128,
                 shuffle=True, flat=False, seed=0, silent=False, num_parts=1, part_index=0, data_name="data",
                 label_name="softmax_label", **kwargs):
        dtype = kwargs.get("dtype")
        if dtype is not None and dtype != "None" and _dtype_name(dtype) != "float32":
            raise MXNetError(f"MNISTIter: dtype={dtype!r} is not supported: its images are float32 "
                             f"(MXNet 1.9.1 fails on other dtypes too)")
        self._bs = bs = _int("batch_size", batch_size, low=1)
        num_parts, part_index = _int("num_parts", num_parts), _int("part_index", part_index)
        check_part(num_parts, part_index)
        image, label = os.fspath(image), os.fspath(label)
        img = _read_idx(image, 2051, 3, "image")
        lab = _read_idx(label, 2049, 1, "label")
        if lab.shape[0] != img.shape[0]:
            raise MXNetError(f"MNISTIter: label file {label!r} has {lab.shape[0]} labels but image file "
                             f"{image!r} has {img.shape[0]} images")
        n = img.shape[0]
        start, end = int(math.floor(n / num_parts * part_index)), int(math.floor(n / num_parts * (part_index + 1)))
        img, lab = img[start:end], lab[start:end]
        shuffle = _bool("shuffle", shuffle)
        if shuffle:
            order = mxnet_shuffle_order(len(img), _int("seed", seed))
            img, lab = img[order], lab[order]
        rows, cols = img.shape[1:]
        shape = (rows * cols,) if _bool("flat", flat) else (1, rows, cols)
        self._images = (img.reshape((len(img),) + shape).astype(np.float32) * _F32(1.0 / 256.0))
        self._labels = lab.astype(np.float32)
        if len(img) < bs:
            raise MXNetError(f"MNISTIter: batch_size {bs} is more than the {len(img)} images of "
                             f"{image!r} (part {part_index} of {num_parts}): there is no full batch")
        if not _bool("silent", silent):
            _LOG.info("MNISTIter: load %d images, shuffle=%d, shape=%s", len(img), shuffle,
                      (bs,) + shape)
        self._loc = 0
        super().__init__(data_name, label_name)

    def _advance(self) -> bool:
        bs = self._bs
        if self._loc + bs > len(self._images):
            return False
        sl = slice(self._loc, self._loc + bs)
        self._batch = (self._images[sl], self._labels[sl], 0, np.zeros(bs, np.uint64))
        self._loc += bs
        return True

    def _before_first(self) -> None:
        self._loc = 0
