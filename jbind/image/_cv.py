"""OpenCV's image kernels as MXNet 1.9.1 calls them, in numpy: `cv::resize` (nearest,
bilinear, bicubic, area, Lanczos), `cv::warpAffine` (bilinear, constant border),
`cv::copyMakeBorder` (constant) and the 8-bit RGB <-> HLS conversion.

Arrays are HWC (or HW). OpenCV computes uint8 results in fixed point; these kernels compute
in float and round, so a uint8 pixel can differ from OpenCV's by one (two after bicubic
or Lanczos ringing near a clipped edge). Resizing is separable: a few taps per output pixel on each
axis, gathered and summed by numpy (which releases the GIL, so ImageRecordIter's decoding
threads run in parallel).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..base import MXNetError

NEAREST, LINEAR, CUBIC, AREA, LANCZOS4 = 0, 1, 2, 3, 4


def _cubic(x: np.ndarray) -> np.ndarray:
    a = -0.75  # OpenCV's bicubic constant (Pillow and others use -0.5)
    x = np.abs(x)
    return np.where(x <= 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))


def _lanczos4(x: np.ndarray) -> np.ndarray:
    return np.sinc(x) * np.sinc(x / 4) * (np.abs(x) < 4)


@functools.lru_cache(maxsize=256)
def _taps(src: int, dst: int, method: int):
    """One axis's filter: (index, weight) arrays of shape (dst, K), out[d] = sum_k w[d, k] * in[index[d, k]],
    indices clamped to the edge (OpenCV replicates the border pixel)."""
    scale = 1.0 / (dst / src)  # as OpenCV computes it (1/fx): floor(d * scale) rounds as it does
    d = np.arange(dst)
    if method == AREA and scale >= 1:
        # each output pixel averages the input interval [d*scale, (d+1)*scale)
        k = int(math.ceil(scale)) + 1
        lo = d * scale
        first = np.floor(lo).astype(np.int64)
        idx = first[:, None] + np.arange(k)[None, :]
        cover = np.minimum(lo[:, None] + scale, idx + 1) - np.maximum(lo[:, None], idx)
        weight = np.where((cover > 0) & (idx < src), cover, 0.0) / scale
        return np.minimum(idx, src - 1), weight.astype(np.float32)
    if method == AREA:  # enlarging: OpenCV's bilinear variant for INTER_AREA
        base = np.floor(d * scale).astype(np.int64)
        frac = ((d + 1) - (base + 1) * (dst / src)).astype(np.float32)  # float, as OpenCV rounds it
        frac = np.where(frac <= 0, 0.0, frac - np.floor(frac))
        taps, coef = [base, base + 1], [1 - frac, frac]
    else:
        pos = (d + 0.5) * scale - 0.5
        base = np.floor(pos).astype(np.int64)
        frac = pos - base
        if method == LINEAR:
            # OpenCV: a position left of the first pixel or right of the last takes it whole
            frac = np.where(base < 0, 0.0, frac)
            base = np.maximum(base, 0)
            frac = np.where(base >= src - 1, 0.0, frac)
            base = np.minimum(base, src - 1)
            taps, coef = [base, base + 1], [1 - frac, frac]
        elif method == CUBIC:
            taps = [base + k for k in (-1, 0, 1, 2)]
            coef = [_cubic(frac - k) for k in (-1, 0, 1, 2)]
        else:
            ks = range(-3, 5)
            taps = [base + k for k in ks]
            coef = [_lanczos4(frac - k) for k in ks]
            total = sum(coef)
            coef = [c / total for c in coef]
    idx = np.clip(np.stack(taps, 1), 0, src - 1)
    return idx, np.stack(coef, 1).astype(np.float32)


def _filter(x: np.ndarray, axis: int, src: int, dst: int, method: int) -> np.ndarray:
    idx, weight = _taps(src, dst, method)
    shape = [1] * x.ndim
    shape[axis] = dst
    out = None
    for k in range(idx.shape[1]):
        term = np.take(x, idx[:, k], axis=axis) * weight[:, k].reshape(shape)
        out = term if out is None else out + term
    return out


def resize(img: np.ndarray, w: int, h: int, method: int) -> np.ndarray:
    """`cv::resize(img, (w, h), interpolation=method)`; keeps img's dtype (uint8 rounds and saturates)."""
    if w < 1 or h < 1:
        raise MXNetError(f"resize: the target size must be positive, got width {w} and height {h}")
    if method not in (NEAREST, LINEAR, CUBIC, AREA, LANCZOS4):
        raise MXNetError(f"resize: unknown interpolation {method}: expected 0 (nearest), 1 (bilinear), "
                         f"2 (bicubic), 3 (area) or 4 (Lanczos)")
    src_h, src_w = img.shape[:2]
    if (src_h, src_w) == (h, w):
        return img.copy()
    if method == NEAREST:
        ys = np.minimum(np.floor(np.arange(h) * (1.0 / (h / src_h))).astype(np.int64), src_h - 1)
        xs = np.minimum(np.floor(np.arange(w) * (1.0 / (w / src_w))).astype(np.int64), src_w - 1)
        return img[ys][:, xs]
    x = img.astype(np.float32)
    # filter the axis that shrinks most first: the second pass then works on less data
    if h / src_h <= w / src_w:
        out = _filter(_filter(x, 0, src_h, h, method), 1, src_w, w, method)
    else:
        out = _filter(_filter(x, 1, src_w, w, method), 0, src_h, h, method)
    return _like(out, img.dtype)


def _like(out: np.ndarray, dtype) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(dtype)
    return out.astype(dtype)


def warp_affine(img: np.ndarray, m: np.ndarray, w: int, h: int, fill: float) -> np.ndarray:
    """`cv::warpAffine(img, m, (w, h), INTER_LINEAR, BORDER_CONSTANT, fill)`: m maps input to output."""
    full = np.vstack([np.asarray(m, np.float64), [0.0, 0.0, 1.0]])
    inv = np.linalg.inv(full)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    sx = inv[0, 0] * xs + inv[0, 1] * ys + inv[0, 2]
    sy = inv[1, 0] * xs + inv[1, 1] * ys + inv[1, 2]
    x0, y0 = np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64)
    fx, fy = sx - x0, sy - y0
    src = img.reshape(img.shape[0], img.shape[1], -1).astype(np.float32)
    out = np.zeros((h, w, src.shape[2]), np.float32)
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            yy, xx = y0 + dy, x0 + dx
            inside = (yy >= 0) & (yy < src.shape[0]) & (xx >= 0) & (xx < src.shape[1])
            tap = np.where(inside[..., None], src[np.clip(yy, 0, src.shape[0] - 1),
                                                  np.clip(xx, 0, src.shape[1] - 1)], fill)
            out += (wy * wx)[..., None] * tap
    return _like(out.reshape((h, w) + img.shape[2:]), img.dtype)


def copy_make_border(img: np.ndarray, top: int, bot: int, left: int, right: int, value=0) -> np.ndarray:
    """`cv::copyMakeBorder(..., BORDER_CONSTANT, value)`."""
    pad = [(top, bot), (left, right)] + [(0, 0)] * (img.ndim - 2)
    return np.pad(img, pad, mode="constant", constant_values=value)


def rgb_to_hls(img: np.ndarray) -> np.ndarray:
    """uint8 RGB -> uint8 HLS as OpenCV's 8-bit conversion (H in [0, 180), L and S in [0, 255])."""
    x = img.astype(np.float32) / 255.0
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    vmax, vmin = x.max(axis=-1), x.min(axis=-1)
    diff = vmax - vmin
    light = (vmax + vmin) / 2
    safe = np.where(diff > 0, diff, 1.0)
    sat = np.where(diff > 0, np.where(light < 0.5, diff / np.where(vmax + vmin > 0, vmax + vmin, 1.0),
                                      diff / np.maximum(2.0 - vmax - vmin, 1e-12)), 0.0)
    hue = np.where(vmax == r, 60 * (g - b) / safe,
                   np.where(vmax == g, 120 + 60 * (b - r) / safe, 240 + 60 * (r - g) / safe))
    hue = np.where(diff > 0, np.where(hue < 0, hue + 360, hue), 0.0)
    return np.stack([np.rint(hue / 2), np.rint(light * 255), np.rint(sat * 255)], -1).clip(0, 255).astype(np.uint8)


def hls_to_rgb(img: np.ndarray) -> np.ndarray:
    """uint8 HLS (OpenCV's 8-bit ranges) -> uint8 RGB."""
    h = img[..., 0].astype(np.float32) * 2.0
    light = img[..., 1].astype(np.float32) / 255.0
    sat = img[..., 2].astype(np.float32) / 255.0
    q = np.where(light <= 0.5, light * (1 + sat), light + sat - light * sat)
    p = 2 * light - q

    def channel(t):
        t = np.mod(t, 360.0)
        return np.where(t < 60, p + (q - p) * t / 60,
                        np.where(t < 180, q, np.where(t < 240, p + (q - p) * (240 - t) / 60, p)))
    rgb = np.stack([channel(h + 120), channel(h), channel(h - 120)], -1)
    rgb = np.where((sat == 0)[..., None], light[..., None], rgb)
    return np.clip(np.rint(rgb * 255), 0, 255).astype(np.uint8)
