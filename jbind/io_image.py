"""`mx.io.ImageRecordIter`: a RecordIO file of encoded images -> NCHW batches, decoded and
augmented by a pool of `preprocess_threads` threads, the next batch prepared while the
current one is used.

As MXNet 1.9.1's: records in file order (shuffled each epoch if `shuffle`), the part
`part_index` of `num_parts` taken by byte ranges of the file, and with `round_batch` the
last batch completed from the start of the data (`pad` says how many) and the next epoch
starting after those. See `jbind.image._recaug` for the per-image pipeline.
"""
from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .base import MXNetError
from .io import check_part
from .io_iters import MXDataIter, _bool, _int, _shape
from .image import _recaug
from . import recordio

_LOG = logging.getLogger(__name__)

_FLOATS = ("max_aspect_ratio", "max_shear_ratio", "max_random_scale", "min_random_scale", "max_random_area",
           "min_random_area", "max_img_size", "min_img_size", "brightness", "contrast", "saturation", "pca_noise",
           "scale", "max_random_contrast", "max_random_illumination")
_INTS = ("resize", "max_rotate_angle", "max_crop_size", "min_crop_size", "random_h", "random_s", "random_l",
         "rotate", "fill_value", "inter_method", "pad")
_BOOLS = ("rand_crop", "random_resized_crop", "mirror", "rand_mirror")
_MEANS = ("mean_r", "mean_g", "mean_b", "mean_a")
_STDS = ("std_r", "std_g", "std_b", "std_a")
# accepted and without effect here: MXNet's logging, its prefetch depth and device placement
_IGNORED = ("verbose", "prefetch_buffer", "ctx", "device_id", "shuffle_chunk_seed", "aug_seq")
# MXNet options jbind does not implement: refused by name rather than silently ignored
_UNSUPPORTED = ("path_imglist", "shuffle_chunk_size", "rotate_list", "label_map")
_DTYPES = ("float32", "float16", "uint8", "int8")


def _record_offsets(path_imgrec: str, path_imgidx: str) -> list:
    if path_imgidx:
        reader = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
        offsets = sorted(set(reader.idx.values()))
        reader.close()
        return offsets
    reader = recordio.MXRecordIO(path_imgrec, "r")
    offsets = []
    while True:
        at = reader._f.tell()
        if reader.read() is None:
            break
        offsets.append(at)
    reader.close()
    return offsets


class ImageRecordIter(MXDataIter):
    """Batches of images from a RecordIO file (`mx.io.ImageRecordIter`, MXNet's options and defaults).

    Data are (batch, C, H, W) in `dtype` (float32: (pixel - mean) * scale / std; uint8 and int8:
    raw pixels, int8 minus the rounded mean), RGB order; labels (batch,) or (batch, label_width)
    float32. `mean_img` is loaded, or computed over the data and saved, as MXNet does.
    Options MXNet has and jbind does not (`path_imglist`, `shuffle_chunk_size`) raise
    MXNetError; an unknown option raises too.
    """

    def __init__(self, *, path_imgrec=None, data_shape=None, batch_size=None, path_imgidx="", label_width=1,
                 shuffle=False, seed=0, num_parts=1, part_index=0, preprocess_threads=4, round_batch=True,
                 dtype="float32", seed_aug=None, data_name="data", label_name="softmax_label", mean_img="",
                 **kwargs):
        unknown = sorted(set(kwargs) - set(_FLOATS + _INTS + _BOOLS + _MEANS + _STDS + _IGNORED + _UNSUPPORTED
                                           + ("min_aspect_ratio",)))
        if unknown:
            raise MXNetError(f"ImageRecordIter: unknown option(s) {unknown}")
        refused = [k for k in _UNSUPPORTED if kwargs.get(k) not in (None, "", 0)]
        if refused:
            raise MXNetError(f"ImageRecordIter: option(s) {refused} are not supported by jbind")
        if not path_imgrec:
            raise MXNetError("ImageRecordIter: path_imgrec is required")
        if data_shape is None or batch_size is None:
            raise MXNetError("ImageRecordIter: data_shape and batch_size are required")
        shape = _shape("data_shape", data_shape)
        if len(shape) != 3 or shape[0] not in (1, 3, 4):
            raise MXNetError(f"ImageRecordIter: data_shape must be (C, H, W) with C 1, 3 or 4, got {shape}")
        dtype = "float32" if dtype is None else np.dtype(dtype).name
        if dtype not in _DTYPES:
            raise MXNetError(f"ImageRecordIter: dtype {dtype!r} is not supported: use one of {_DTYPES}")
        params = {k: float(kwargs[k]) for k in _FLOATS if kwargs.get(k) is not None}
        params.update({k: _int(k, kwargs[k]) for k in _INTS if kwargs.get(k) is not None})
        params.update({k: _bool(k, kwargs[k]) for k in _BOOLS if kwargs.get(k) is not None})
        if kwargs.get("min_aspect_ratio") is not None:
            params["min_aspect_ratio"] = float(kwargs["min_aspect_ratio"])
        mean = tuple(float(kwargs.get(k, 0.0)) for k in _MEANS)
        std = tuple(float(kwargs.get(k, 1.0)) for k in _STDS)
        if min(std) == 0:
            raise MXNetError(f"ImageRecordIter: std_r/g/b/a must not be 0, got {std}")
        self._params = _recaug.AugParams(data_shape=shape, mean=mean, std=std, out_dtype=dtype, **params)
        self._params.check()
        check_part(_int("num_parts", num_parts, 1), _int("part_index", part_index, 0))
        self._bs = _int("batch_size", batch_size, 1)
        self._label_width = _int("label_width", label_width, 1)
        self._round_batch = _bool("round_batch", round_batch)
        self._shuffle = _bool("shuffle", shuffle)
        self._seed_aug = None if seed_aug is None else int(seed_aug)
        self._rng = np.random.default_rng(int(seed))
        if not os.path.isfile(path_imgrec):
            raise MXNetError(f"ImageRecordIter: path_imgrec {path_imgrec!r}: no such file")
        offsets = _record_offsets(path_imgrec, path_imgidx)
        size = os.path.getsize(path_imgrec)
        lo, hi = size * part_index // num_parts, size * (part_index + 1) // num_parts
        self._offsets = [o for o in offsets if lo <= o < hi]
        if not self._offsets:
            raise MXNetError(f"ImageRecordIter: part {part_index} of {num_parts} of {path_imgrec!r} has no records")
        self._reader = recordio.MXRecordIO(path_imgrec, "r")
        self._pool = ThreadPoolExecutor(max(1, _int("preprocess_threads", preprocess_threads, 1)),
                                        thread_name_prefix="jbind-imagerec")
        self._order = list(self._offsets)
        self._pos, self._overflow, self._count = 0, 0, 0
        self._pending = None
        self._mean_img = self._mean_image(mean_img) if mean_img else None
        _LOG.info("ImageRecordIter: %s, %d records, %d threads for decoding", path_imgrec, len(self._offsets),
                  self._pool._max_workers)
        self._new_order()
        super().__init__(data_name, label_name)

    def _mean_image(self, path: str) -> np.ndarray:
        """MXNet's mean_img: the (C, H, W) array saved in `path`, or, if there is no such file,
        the mean of this part's processed images, saved there first (as mx.nd.save does)."""
        from . import ndarray as nd  # noqa: PLC0415
        shape = self._params.data_shape
        if os.path.exists(path):
            loaded = nd.load(path)
            arrays = list(loaded.values()) if isinstance(loaded, dict) else list(loaded)
            if len(arrays) != 1 or tuple(arrays[0].shape) != shape:
                raise MXNetError(f"ImageRecordIter: mean_img {path!r} must hold one array of shape {shape}, "
                                 f"found {[tuple(a.shape) for a in arrays]}")
            return arrays[0].asnumpy().astype(np.float32)
        _LOG.info("ImageRecordIter: cannot find %s: create mean image, this will take some time...", path)
        total = np.zeros(shape, np.float64)
        for offset in self._offsets:
            _, _, img = self._read(offset)
            total += _recaug.process(img, self._params, int(self._rng.integers(0, 2 ** 63)))
        mean = (total / len(self._offsets)).astype(np.float32)
        nd.save(path, {"mean_img": nd.array(mean)})
        _LOG.info("ImageRecordIter: saved mean image to %s", path)
        return mean

    def _new_order(self):
        if self._shuffle:
            self._order = [self._offsets[i] for i in self._rng.permutation(len(self._offsets))]

    def _read(self, offset):
        self._reader._f.seek(offset)
        header, img = recordio.unpack(self._reader.read())
        label = np.atleast_1d(np.asarray(header.label, np.float32))
        if label.size != self._label_width:
            raise MXNetError(f"ImageRecordIter: record {header.id} at offset {offset} has {label.size} label(s) "
                             f"but label_width is {self._label_width}")
        return header.id, label, img

    def _take(self):
        """The records of the next batch (wrapping around with round_batch) and its pad, or None."""
        n = len(self._order)
        if self._pos >= n:
            return None
        picks = self._order[self._pos:self._pos + self._bs]
        self._pos += len(picks)
        pad = self._bs - len(picks)
        if pad and self._round_batch:
            wrap = [self._order[i % n] for i in range(pad)]
            picks += wrap
            self._overflow = pad
        return picks, pad

    def _submit(self):
        taken = self._take()
        if taken is None:
            return None
        picks, pad = taken
        records = [self._read(o) for o in picks]
        seeds = ([self._seed_aug + self._count + i for i in range(len(records))] if self._seed_aug is not None
                 else self._rng.integers(0, 2 ** 63, len(records)).tolist())
        self._count += len(records)
        futures = [self._pool.submit(_recaug.process, img, self._params, s, self._mean_img)
                   for (_, _, img), s in zip(records, seeds)]
        return records, futures, pad

    def _advance(self) -> bool:
        job = self._pending if self._pending is not None else self._submit()
        self._pending = None
        if job is None:
            return False
        records, futures, pad = job
        self._pending = self._submit()  # the next batch decodes while this one is used
        shape = (self._bs,) + self._params.data_shape
        data = np.zeros(shape, self._params.out_dtype)
        label = np.zeros((self._bs, self._label_width), np.float32)
        index = np.zeros(self._bs, np.uint64)
        for i, ((rid, lab, _), fut) in enumerate(zip(records, futures)):
            data[i] = fut.result()
            label[i], index[i] = lab, rid
        if self._label_width == 1:
            label = label[:, 0]
        self._batch = (data, label, pad, index)
        return True

    def _before_first(self) -> None:
        if self._pending is not None:
            for f in self._pending[1]:
                f.cancel()
            self._pending = None
        restart = self._overflow % len(self._order) if (self._round_batch and not self._shuffle) else 0
        self._new_order()
        self._pos, self._overflow = restart, 0

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            try:
                pool.shutdown(wait=False, cancel_futures=True)
            except Exception:  # noqa: BLE001 - at interpreter exit the executor's modules may be gone
                pass


def ImageRecordUInt8Iter(**kwargs) -> ImageRecordIter:  # noqa: N802 - MXNet's name
    """`ImageRecordIter` with dtype uint8: raw pixels, no mean / std / scale."""
    return ImageRecordIter(**{**kwargs, "dtype": "uint8"})


def ImageRecordInt8Iter(**kwargs) -> ImageRecordIter:  # noqa: N802 - MXNet's name
    """`ImageRecordIter` with dtype int8: pixels minus the rounded mean, saturated to int8."""
    return ImageRecordIter(**{**kwargs, "dtype": "int8"})
