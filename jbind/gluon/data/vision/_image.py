"""Image helpers for gluon.data.vision, on numpy (H, W, C) arrays: decoding (OpenCV when
installed, else Pillow; jbind itself depends on neither), OpenCV-convention resizing, crops."""
from __future__ import annotations

import io
import math
import random

import numpy as np

from ....base import MXNetError

INTERP_NEAREST, INTERP_LINEAR, INTERP_CUBIC = 0, 1, 2


def imdecode(buf: bytes, flag: int = 1, what: str = "image") -> np.ndarray:
    """Encoded JPEG / PNG bytes -> uint8 (H, W, 3) RGB (`flag` 1) or (H, W, 1) gray (`flag` 0)."""
    try:
        import cv2  # noqa: PLC0415 - optional
    except ImportError:
        cv2 = None
    if cv2 is not None:
        img = cv2.imdecode(np.frombuffer(buf, np.uint8), cv2.IMREAD_COLOR if flag else cv2.IMREAD_GRAYSCALE)
        if img is None:
            raise MXNetError(f"cannot decode {what}: not an image OpenCV reads")
        return img[:, :, ::-1].copy() if flag else img[:, :, None]
    try:
        from PIL import Image  # noqa: PLC0415 - optional
    except ImportError as e:
        raise MXNetError(f"decoding {what} needs OpenCV (cv2) or Pillow; install one of them "
                         "(pip install pillow)") from e
    try:
        with Image.open(io.BytesIO(buf)) as im:
            im = im.convert("RGB" if flag else "L")
            img = np.asarray(im, dtype=np.uint8)
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds for a bad file
        raise MXNetError(f"cannot decode {what}: {e}") from e
    return img.copy() if flag else img[:, :, None].copy()


def imread(path: str, flag: int = 1) -> np.ndarray:
    """The image file at `path`, decoded as `imdecode` does."""
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except OSError as e:
        raise MXNetError(f"cannot read image file {path!r}: {e.strerror or e}") from e
    return imdecode(buf, flag, what=f"image file {path!r}")


def _taps(n_out, n_in, interp):
    """Per output position along one axis: source indices (n_out, k) and weights (n_out, k),
    as OpenCV computes them (half-pixel centres; edge pixels repeated past the border)."""
    scale = n_in / n_out
    d = np.arange(n_out, dtype=np.float64)
    if interp == INTERP_NEAREST:
        return np.minimum(np.floor(d * scale).astype(np.int64), n_in - 1)[:, None], np.ones((n_out, 1))
    f = (d + 0.5) * scale - 0.5
    lo = np.floor(f)
    t = (f - lo)[:, None]
    if interp == INTERP_LINEAR:
        offsets, weights = np.arange(2), np.concatenate([1 - t, t], axis=1)
    else:  # bicubic, OpenCV's A = -0.75
        a = -0.75
        near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1  # noqa: E731  |x| <= 1
        far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a  # noqa: E731  1 < |x| < 2
        w0, w1, w2 = far(t + 1), near(t), near(1 - t)
        offsets, weights = np.arange(-1, 3), np.concatenate([w0, w1, w2, 1 - w0 - w1 - w2], axis=1)
    return np.clip(lo.astype(np.int64)[:, None] + offsets, 0, n_in - 1), weights


def imresize(img: np.ndarray, w: int, h: int, interp: int = INTERP_LINEAR) -> np.ndarray:
    """Resize (H, W, C) `img` to (h, w, C) as OpenCV's `resize` does for INTER_NEAREST (0),
    INTER_LINEAR (1) and INTER_CUBIC (2); integer images are rounded and saturated."""
    if interp not in (INTERP_NEAREST, INTERP_LINEAR, INTERP_CUBIC):
        raise MXNetError(f"resize: interpolation {interp} is not supported by jbind; use 0 (nearest), "
                         "1 (bilinear) or 2 (bicubic)")
    if w <= 0 or h <= 0:
        raise MXNetError(f"resize: output size {(w, h)} must be positive")
    if img.shape[0] == h and img.shape[1] == w:
        return img.copy()
    yi, yw = _taps(h, img.shape[0], interp)
    xi, xw = _taps(w, img.shape[1], interp)
    src = img.astype(np.float64)
    rows = np.einsum("hk,hkwc->hwc", yw, src[yi])
    out = np.einsum("wk,hwkc->hwc", xw, rows[:, xi])
    if np.issubdtype(img.dtype, np.integer):
        info = np.iinfo(img.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    return out.astype(img.dtype)


def fixed_crop(img, x0, y0, w, h, size=None, interp=INTERP_LINEAR):
    """img[y0:y0+h, x0:x0+w], resized to `size` (w, h) when given and different."""
    out = img[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, size[0], size[1], interp)
    return out


def scale_down(src_size, size):
    """`size` (w, h) shrunk, keeping its aspect ratio, until it fits in `src_size` (w, h)."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


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
