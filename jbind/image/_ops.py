"""`mx.image`'s functions: decode, read, resize and crop HWC images held in NDArrays.

Each function takes an NDArray (or a numpy array) and returns an NDArray of the same dtype;
the pixels are computed in numpy by the OpenCV-equivalent kernels of `_cv`. Random choices
(`random_crop`, interpolation 10) draw from Python's `random` module, as MXNet's do.
"""
from __future__ import annotations

import math
import numbers
import random

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray import array as _nd_array
from . import _codec, _cv


def to_numpy(src) -> np.ndarray:
    """The pixels of an NDArray or array-like as a numpy array (no copy for numpy input)."""
    return src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)


def to_nd(arr: np.ndarray, out=None) -> NDArray:
    res = _nd_array(arr, dtype=arr.dtype)
    if out is not None:
        out[:] = res
        return out
    return res


def _hwc(src, what: str) -> np.ndarray:
    arr = to_numpy(src)
    if arr.ndim != 3:
        raise MXNetError(f"{what}: expected an HxWxC image, got shape {arr.shape}")
    return arr


def imdecode(buf, flag: int = 1, to_rgb: int = 1, out=None) -> NDArray:
    """Decode an encoded image (bytes, bytearray, uint8 numpy array or NDArray) to an HxWxC uint8 NDArray.

    Args:
        flag: 1 for three channels, 0 for grayscale (HxWx1).
        to_rgb: 1 for RGB order (MXNet's default), 0 for BGR (OpenCV's).
        out: optional NDArray to write into.

    Decodes with Pillow where MXNet uses OpenCV: JPEG pixels may differ by a few levels.
    """
    if isinstance(buf, NDArray):
        buf = buf.asnumpy().astype(np.uint8)
    elif isinstance(buf, str):
        raise MXNetError("imdecode: buf must be bytes, bytearray or a numpy array; "
                         "to read a file by name use mx.image.imread")
    return to_nd(_codec.decode(buf, int(flag), bool(to_rgb)), out)


def imread(filename: str, flag: int = 1, to_rgb: int = 1, out=None) -> NDArray:
    """Read and decode an image file to an HxWxC uint8 NDArray (see `imdecode`)."""
    try:
        with open(filename, "rb") as f:
            buf = f.read()
    except OSError as e:
        raise MXNetError(f"imread: cannot read image file {filename!r}: {e.strerror or e}") from e
    try:
        return imdecode(buf, flag, to_rgb, out)
    except MXNetError as e:
        raise MXNetError(f"imread: {filename!r}: {e}") from e


def imresize(src, w: int, h: int, interp: int = 1, out=None) -> NDArray:
    """Resize an HxWxC image to (h, w, C) with OpenCV's interpolation `interp`
    (0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos; 9 and 10 choose as `_get_interp_method`)."""
    arr = _hwc(src, "imresize")
    method = _get_interp_method(interp, (arr.shape[0], arr.shape[1], h, w))
    return to_nd(_cv.resize(arr, int(w), int(h), method), out)


def _get_interp_method(interp: int, sizes=()) -> int:
    """An interpolation method from 0 to 4: 9 picks by size change (area when shrinking,
    bicubic when enlarging, else bilinear), 10 draws one at random."""
    if interp == 9:
        if sizes:
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise MXNetError(f"Unknown interp method {interp}: expected 0-4, 9 or 10")
    return interp


def scale_down(src_size, size):
    """Shrink a crop size (w, h) to fit an image size (w, h), keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def copyMakeBorder(src, top: int, bot: int, left: int, right: int, type: int = 0,  # noqa: A002, N802
                   value=0.0, values=None, out=None) -> NDArray:
    """Pad an image with a constant border (OpenCV's BORDER_CONSTANT, `type=0`, only)."""
    if type != 0:
        raise MXNetError(f"copyMakeBorder: border type {type} is not supported; jbind has BORDER_CONSTANT (0)")
    arr = _hwc(src, "copyMakeBorder")
    fill = value
    if values:
        fill = np.asarray(values, dtype=np.float64)[: arr.shape[2]]
        fill = np.broadcast_to(fill, (arr.shape[2],))
        padded = _cv.copy_make_border(arr, top, bot, left, right, 0)
        mask = np.ones(arr.shape[:2], bool)
        mask = ~_cv.copy_make_border(mask, top, bot, left, right, False)
        padded[mask] = fill.astype(arr.dtype)
        return to_nd(padded, out)
    return to_nd(_cv.copy_make_border(arr, top, bot, left, right, fill), out)


def resize_short(src, size: int, interp: int = 2) -> NDArray:
    """Resize so that the shorter side is `size`, keeping the aspect ratio (integer division as MXNet)."""
    arr = _hwc(src, "resize_short")
    h, w = arr.shape[:2]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return to_nd(_cv.resize(arr, new_w, new_h, _get_interp_method(interp, (h, w, new_h, new_w))))


def fixed_crop(src, x0: int, y0: int, w: int, h: int, size=None, interp: int = 2) -> NDArray:
    """Crop the rectangle (x0, y0, w, h), then resize it to `size` (w, h) if given."""
    arr = _hwc(src, "fixed_crop")
    out = arr[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        method = _get_interp_method(interp, (h, w, size[1], size[0]))
        out = _cv.resize(out, int(size[0]), int(size[1]), method)
    return to_nd(np.ascontiguousarray(out))


def random_crop(src, size, interp: int = 2):
    """Crop a random `size` (w, h) rectangle (scaled down to fit) -> (NDArray, (x0, y0, w, h))."""
    arr = _hwc(src, "random_crop")
    h, w = arr.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(arr, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src, size, interp: int = 2):
    """Crop the central `size` (w, h) rectangle (scaled down to fit) -> (NDArray, (x0, y0, w, h))."""
    arr = _hwc(src, "center_crop")
    h, w = arr.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(arr, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """(src - mean) / std, in place on an NDArray as MXNet does; returns src."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src, size, area, ratio, interp: int = 2, **kwargs):
    """Crop a random area fraction in `area` with aspect ratio in `ratio` (log-uniform), resized
    to `size`; after ten misses, a center crop -> (NDArray, (x0, y0, w, h))."""
    if kwargs:
        raise MXNetError(f"random_size_crop: unexpected keyword arguments {sorted(kwargs)}")
    arr = _hwc(src, "random_size_crop")
    h, w = arr.shape[:2]
    if isinstance(area, numbers.Number):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * h * w
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        new_ratio = math.exp(random.uniform(*log_ratio))
        new_w = int(round(math.sqrt(target_area * new_ratio)))
        new_h = int(round(math.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(arr, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(arr, size, interp)
