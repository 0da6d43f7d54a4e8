"""The per-image work of `mx.io.ImageRecordIter`: MXNet 1.9.1's default augmenter
(`src/io/image_aug_default.cc`) then its normalization and mirror, in numpy.

Order, as MXNet's: short-side resize, random affine (scale, aspect ratio, rotation, shear),
pad, crop (random-resized, random-size square, or the data shape, enlarging an image that is
too small), brightness / contrast / saturation in random order, HLS jitter, PCA noise, then
(pixel - mean) * scale / std and the mirror. Random numbers come from a numpy Generator
per image, not MXNet's mt19937 streams: the random choices differ from MXNet's, their
distributions do not. The affine warp always interpolates bilinearly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base import MXNetError
from . import _codec, _cv

_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])
# MXNet converts its BGR images with OpenCV's RGB2GRAY, so its gray weights are reversed
_GRAY_OF_RGB = np.array([0.114, 0.587, 0.299], np.float32)


@dataclass(frozen=True)
class AugParams:
    data_shape: tuple
    resize: int = -1
    rand_crop: bool = False
    random_resized_crop: bool = False
    max_rotate_angle: int = 0
    max_aspect_ratio: float = 0.0
    min_aspect_ratio: float | None = None
    max_shear_ratio: float = 0.0
    max_crop_size: int = -1
    min_crop_size: int = -1
    max_random_scale: float = 1.0
    min_random_scale: float = 1.0
    max_random_area: float = 1.0
    min_random_area: float = 1.0
    max_img_size: float = 1e10
    min_img_size: float = 0.0
    brightness: float = 0.0
    contrast: float = 0.0
    saturation: float = 0.0
    pca_noise: float = 0.0
    random_h: int = 0
    random_s: int = 0
    random_l: int = 0
    rotate: int = -1
    fill_value: int = 255
    inter_method: int = 1
    pad: int = 0
    # normalization (ImageNormalizeParam)
    mean: tuple = (0.0, 0.0, 0.0, 0.0)
    std: tuple = (1.0, 1.0, 1.0, 1.0)
    scale: float = 1.0
    mirror: bool = False
    rand_mirror: bool = False
    max_random_contrast: float = 0.0
    max_random_illumination: float = 0.0
    out_dtype: str = "float32"

    def check(self):
        if self.inter_method not in (0, 1, 2, 3, 4, 9, 10):
            raise MXNetError(f"ImageRecordIter: invalid inter_method {self.inter_method}: valid values are 0-4, 9, 10")
        if self.random_resized_crop and (self.min_random_scale != 1 or self.max_random_scale != 1
                                         or self.min_crop_size != -1 or self.max_crop_size != -1 or self.rand_crop):
            raise MXNetError("ImageRecordIter: random_resized_crop conflicts with min_random_scale, max_random_scale, "
                             "min_crop_size, max_crop_size and rand_crop")

    def aspect_range(self):
        if self.min_aspect_ratio is not None:
            return self.min_aspect_ratio, self.max_aspect_ratio
        return 1 - self.max_aspect_ratio, 1 + self.max_aspect_ratio


def _method(p: AugParams, ow, oh, nw, nh, rng) -> int:
    if p.inter_method == 9:
        if nw > ow and nh > oh:
            return _cv.CUBIC
        if nw < ow and nh < oh:
            return _cv.AREA
        return _cv.LINEAR
    if p.inter_method == 10:
        return int(rng.integers(0, 5))
    return p.inter_method


def _affine(res, p: AugParams, rng):
    lo_ratio, hi_ratio = p.aspect_range()
    s = rng.random() * p.max_shear_ratio * 2 - p.max_shear_ratio
    angle = int(rng.integers(-p.max_rotate_angle, p.max_rotate_angle + 1))
    if p.rotate > 0:
        angle = p.rotate
    a, b = np.cos(angle / 180.0 * np.pi), np.sin(angle / 180.0 * np.pi)
    scale = ratio = 1.0
    if not p.random_resized_crop:
        scale = rng.random() * (p.max_random_scale - p.min_random_scale) + p.min_random_scale
        ratio = rng.random() * (hi_ratio - lo_ratio) + lo_ratio
    hs = 2 * scale / (1 + ratio)
    ws = ratio * hs
    h, w = res.shape[:2]
    new_w = int(max(p.min_img_size, min(p.max_img_size, scale * w)))
    new_h = int(max(p.min_img_size, min(p.max_img_size, scale * h)))
    m = np.array([[hs * a - s * b * ws, hs * b + s * a * ws, 0.0], [-b * ws, a * ws, 0.0]])
    m[0, 2] = (new_w - (m[0, 0] * w + m[0, 1] * h)) / 2
    m[1, 2] = (new_h - (m[1, 0] * w + m[1, 1] * h)) / 2
    return _cv.warp_affine(res, m, max(new_w, 1), max(new_h, 1), p.fill_value)


def _crop(res, p: AugParams, rng):
    _, dh, dw = p.data_shape
    lo_ratio, hi_ratio = p.aspect_range()
    if p.random_resized_crop:
        if p.max_random_area != 1 or p.min_random_area != 1 or lo_ratio != 1 or hi_ratio != 1:
            if lo_ratio <= 0 or p.min_random_area > p.max_random_area or lo_ratio > hi_ratio:
                raise MXNetError("ImageRecordIter: random_resized_crop needs 0 < min_aspect_ratio <= max_aspect_ratio "
                                 "and min_random_area <= max_random_area")
            h, w = res.shape[:2]
            for _ in range(10):
                target = h * w * rng.uniform(p.min_random_area, p.max_random_area)
                ratio = rng.uniform(lo_ratio, hi_ratio)
                ch, cw = int(round(np.sqrt(target / ratio))), int(round(np.sqrt(target * ratio)))
                if rng.random() > 0.5:
                    ch, cw = cw, ch
                if ch <= h and cw <= w:
                    y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
                    return _cv.resize(res[y:y + ch, x:x + cw], dw, dh, _method(p, cw, ch, dw, dh, rng))
    elif p.max_crop_size != -1 or p.min_crop_size != -1:
        h, w = res.shape[:2]
        if not (w >= p.max_crop_size and h >= p.max_crop_size and p.max_crop_size >= p.min_crop_size):
            raise MXNetError(f"ImageRecordIter: input image size {w}x{h} smaller than max_crop_size {p.max_crop_size}")
        size = int(rng.integers(p.min_crop_size, p.max_crop_size + 1))
        y, x = h - size, w - size
        y, x = (int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))) if p.rand_crop else (y // 2, x // 2)
        return _cv.resize(res[y:y + size, x:x + size], dw, dh, _method(p, size, size, dw, dh, rng))
    h, w = res.shape[:2]
    method = _method(p, w, h, dw, dh, rng)
    if h < dh:
        res = _cv.resize(res, int(np.float32(dh) / np.float32(h) * np.float32(w)), dh, method)
        h, w = res.shape[:2]
    if w < dw:
        res = _cv.resize(res, dw, int(np.float32(dw) / np.float32(w) * np.float32(h)), method)
        h, w = res.shape[:2]
    if h < dh or w < dw:
        raise MXNetError(f"ImageRecordIter: input image size {w}x{h} smaller than input shape {dw}x{dh}")
    y, x = h - dh, w - dw
    y, x = (int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))) if p.rand_crop else (y // 2, x // 2)
    return res[y:y + dh, x:x + dw]


def _color(res, p: AugParams, rng):
    alphas = [1.0 + rng.uniform(-v, v) if v > 0 else 1.0 for v in (p.brightness, p.contrast, p.saturation)]
    for i in rng.permutation(3):
        x = res.astype(np.float32)
        if i == 0:
            x = x * alphas[0]
        elif i == 1:
            gray_mean = np.rint(x @ _GRAY_OF_RGB).mean()
            x = x * alphas[1] + (1 - alphas[1]) * gray_mean
        else:
            gray = np.rint(x @ _GRAY_OF_RGB)[..., None]
            x = x * alphas[2] + gray * (1 - alphas[2])
        res = np.clip(np.rint(x), 0, 255).astype(np.uint8)
    return res


def _hls(res, p: AugParams, rng):
    draws = [(rng.random() + 4 * rng.random()) / 5 for _ in range(3)]
    h, s, light = (int(r * v * 2 - v) for r, v in zip(draws, (p.random_h, p.random_s, p.random_l)))
    hls = _cv.rgb_to_hls(res).astype(np.int32) + np.array([h, light, s])
    return _cv.hls_to_rgb(np.clip(hls, 0, [180, 255, 255]).astype(np.uint8))


def _pca(res, p: AugParams, rng):
    alpha = rng.normal(0, p.pca_noise, 3).astype(np.float32)
    rgb = _EIGVEC.astype(np.float32) @ alpha  # (r, g, b)
    return np.clip(res.astype(np.int32) + rgb.astype(np.int32), 0, 255).astype(np.uint8)


def augment(img: np.ndarray, p: AugParams, rng) -> np.ndarray:
    """One decoded HWC uint8 image -> the cropped, augmented HWC uint8 image."""
    res = img
    if p.resize != -1:
        h, w = res.shape[:2]
        nh, nw = (p.resize * h // w, p.resize) if h > w else (p.resize, p.resize * w // h)
        res = _cv.resize(res, nw, nh, _method(p, w, h, nw, nh, rng))
    lo_ratio, hi_ratio = p.aspect_range()
    if (p.max_rotate_angle > 0 or p.max_shear_ratio > 0 or p.rotate > 0 or p.max_random_scale != 1
            or p.min_random_scale != 1 or (not p.random_resized_crop and (lo_ratio != 1 or hi_ratio != 1))
            or p.max_img_size != 1e10 or p.min_img_size != 0):
        res = _affine(res, p, rng)
    if p.pad > 0:
        res = _cv.copy_make_border(res, p.pad, p.pad, p.pad, p.pad, p.fill_value)
    res = _crop(res, p, rng)
    if res.shape[2] == 3:
        if p.brightness > 0 or p.contrast > 0 or p.saturation > 0:
            res = _color(res, p, rng)
        if p.random_h or p.random_s or p.random_l:
            res = _hls(res, p, rng)
        if p.pca_noise > 0:
            res = _pca(res, p, rng)
    return res


def process(buf: bytes, p: AugParams, seed: int, mean_img=None) -> np.ndarray:
    """Encoded image bytes -> CHW array of `p.out_dtype`, normalized and maybe mirrored.

    `mean_img` (C, H, W), if given, replaces the per-channel mean (`mean_img` of MXNet's,
    subtracted before the mirror, as MXNet does)."""
    rng = np.random.default_rng(seed)
    channels = p.data_shape[0]
    img = _codec.decode(buf, {1: 0, 3: 1, 4: -1}[channels])
    if img.shape[2] != channels:
        raise MXNetError(f"ImageRecordIter: an image has {img.shape[2]} channels, data_shape asks for {channels}")
    res = augment(img, p, rng)
    mirrored = (p.rand_mirror and rng.random() < 0.5) or p.mirror
    chw = res.transpose(2, 0, 1)
    if p.out_dtype == "uint8":
        out = chw
    else:
        mean = np.asarray(p.mean[:channels], np.float32).reshape(-1, 1, 1)
        if p.out_dtype == "int8":
            out = np.clip(chw.astype(np.int16) - np.rint(mean).astype(np.int16), -128, 127).astype(np.int8)
        else:
            if mean_img is not None:
                mean = mean_img
            contrast = (rng.random() * p.max_random_contrast * 2 - p.max_random_contrast + 1) * p.scale
            illumination = (rng.random() * p.max_random_illumination * 2 - p.max_random_illumination) * p.scale
            std = np.asarray(p.std[:channels], np.float32).reshape(-1, 1, 1)
            out = (chw.astype(np.float32) - mean) * (np.float32(contrast) / std) + np.float32(illumination) / std
            out = out.astype(p.out_dtype)
    return np.ascontiguousarray(out[..., ::-1] if mirrored else out)
