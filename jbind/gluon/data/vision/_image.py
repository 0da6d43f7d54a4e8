"""Image helpers for gluon.data.vision, on numpy (H, W, C) arrays: decoding, resizing and
crops. The kernels are `mx.image`'s (`jbind.image._codec` decodes with Pillow,
`jbind.image._cv` resizes as OpenCV does); this module adapts them to numpy in, numpy out."""
from __future__ import annotations

import math
import random

import numpy as np

from ....base import MXNetError
from ....image import _codec, _cv
from ....image._ops import scale_down  # noqa: F401 - re-exported for the transforms

INTERP_NEAREST, INTERP_LINEAR, INTERP_CUBIC = _cv.NEAREST, _cv.LINEAR, _cv.CUBIC


def imdecode(buf: bytes, flag: int = 1, what: str = "image") -> np.ndarray:
    """Encoded JPEG / PNG bytes -> uint8 (H, W, 3) RGB (`flag` 1) or (H, W, 1) gray (`flag` 0)."""
    try:
        return _codec.decode(buf, 1 if flag else 0)
    except MXNetError as e:
        raise MXNetError(f"cannot decode {what}: {e}") from e


def imread(path: str, flag: int = 1) -> np.ndarray:
    """The image file at `path`, decoded as `imdecode` does."""
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except OSError as e:
        raise MXNetError(f"cannot read image file {path!r}: {e.strerror or e}") from e
    return imdecode(buf, flag, what=f"image file {path!r}")


def imresize(img: np.ndarray, w: int, h: int, interp: int = INTERP_LINEAR) -> np.ndarray:
    """Resize (H, W, C) `img` to (h, w, C) as OpenCV's `resize` does (0 nearest, 1 bilinear,
    2 bicubic, 3 area, 4 Lanczos); integer images are rounded and saturated."""
    if interp not in (0, 1, 2, 3, 4):
        raise MXNetError(f"resize: interpolation {interp} is not supported; use 0 (nearest), 1 (bilinear), "
                         "2 (bicubic), 3 (area) or 4 (Lanczos)")
    if w <= 0 or h <= 0:
        raise MXNetError(f"resize: output size {(w, h)} must be positive")
    return _cv.resize(img, int(w), int(h), interp)


def fixed_crop(img, x0, y0, w, h, size=None, interp=INTERP_LINEAR):
    """img[y0:y0+h, x0:x0+w], resized to `size` (w, h) when given and different."""
    out = img[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, size[0], size[1], interp)
    return out


def center_crop(img, size, interp=INTERP_LINEAR):
    """The centred crop of (H, W, C) `img` with `size`'s (w, h) aspect ratio, resized to `size`."""
    h, w = img.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(img, x0, y0, new_w, new_h, size, interp)


def random_size_crop(img, size, area, ratio, interp=INTERP_LINEAR):
    """A crop of random area fraction in `area` and aspect ratio in `ratio` (log-uniform),
    resized to `size`; after 10 misses, the centre crop. Draws from Python's `random`, as MXNet."""
    h, w = img.shape[:2]
    if isinstance(area, (int, float)):
        area = (area, 1.0)
    for _ in range(10):
        target = random.uniform(area[0], area[1]) * h * w
        r = math.exp(random.uniform(math.log(ratio[0]), math.log(ratio[1])))
        new_w, new_h = int(round(math.sqrt(target * r))), int(round(math.sqrt(target / r)))
        if new_w <= w and new_h <= h:
            x0, y0 = random.randint(0, w - new_w), random.randint(0, h - new_h)
            return fixed_crop(img, x0, y0, new_w, new_h, size, interp)
    return center_crop(img, size, interp)
