"""`mx.gluon.data.vision.transforms`: image transforms on NDArrays, as MXNet 1.9.1's.

Images are (H, W, C) NDArrays (uint8 as decoded, or float); ToTensor makes them (C, H, W)
float32 in [0, 1]. ToTensor, Normalize and Cast are HybridBlocks on jbind's ops; the
geometric and colour transforms run on the host in numpy (as MXNet's run in OpenCV) and
draw their randomness from numpy's / Python's global generators.
"""
from __future__ import annotations

import random

import numpy as np

from .... import ndarray as nd
from ....base import MXNetError
from ...block import Block, HybridBlock
from ...nn import Sequential
from . import _image

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Rotate", "RandomRotation", "RandomResizedCrop", "CropResize", "CenterCrop", "Resize",
           "RandomFlipLeftRight", "RandomFlipTopBottom", "RandomBrightness", "RandomContrast", "RandomSaturation",
           "RandomHue", "RandomColorJitter", "RandomLighting", "RandomApply"]


def _size2(size, what):
    """An int or (w, h) as (w, h)."""
    if isinstance(size, (int, np.integer)):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise MXNetError(f"{what}: size must be an int or a (width, height) pair, got {size!r}")


def _images(x, what):
    """NDArray (H, W, C) or (N, H, W, C) -> (numpy array, whether batched)."""
    arr = x.asnumpy() if isinstance(x, nd.NDArray) else np.asarray(x)
    if arr.ndim not in (3, 4):
        raise MXNetError(f"{what}: expected an (H, W, C) image or an (N, H, W, C) batch, got shape {arr.shape}")
    return arr, arr.ndim == 4


def _each(x, what, fn):
    """fn on each (H, W, C) image of `x`, back as an NDArray of the input's dtype."""
    arr, batched = _images(x, what)
    out = np.stack([fn(a) for a in arr]) if batched else fn(arr)
    return nd.array(np.ascontiguousarray(out), dtype=arr.dtype)


class Compose(Sequential):
    """Applies `transforms` (Blocks or callables) one after another."""

    def __init__(self, transforms):
        super().__init__()
        with self.name_scope():
            for t in transforms:
                self.add(t if isinstance(t, Block) else _Call(t))


class _Call(Block):
    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def forward(self, x):
        return self._fn(x)


class Cast(HybridBlock):
    """Casts to `dtype` (default float32)."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(HybridBlock):
    """(H, W, C) / (N, H, W, C) in [0, 255] -> float32 (C, H, W) / (N, C, H, W) in [0, 1]."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """(x - mean[c]) / std[c] per channel of a (C, H, W) / (N, C, H, W) tensor; `mean` and `std`
    are a number or one value per channel."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = tuple(mean) if isinstance(mean, (tuple, list)) else (float(mean),)
        self._std = tuple(std) if isinstance(std, (tuple, list)) else (float(std),)

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, mean=self._mean, std=self._std)


def _rotate(x, degrees, zoom_in, zoom_out):
    """Rotate float32 (C, H, W) / (N, C, H, W) `x` by `degrees` (one or one per image) about its
    centre, sampling bilinearly (zero outside); zoom_in scales so that no zero border shows,
    zoom_out so that the whole image stays in view."""
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    if x.dtype != np.float32:
        raise TypeError("This transformation only supports float32. Consider calling it after ToTensor")
    single = x.ndim == 3
    if x.ndim not in (3, 4):
        raise MXNetError(f"Rotate: expected a (C, H, W) image or an (N, C, H, W) batch, got shape {x.shape}")
    batch = x.expand_dims(0) if single else x
    n, _, h, w = batch.shape
    rad = np.deg2rad(np.broadcast_to(np.asarray(degrees, np.float64), (n,)))[:, None, None]
    cy, cx = (h - 1) / 2, (w - 1) / 2
    ys, xs = np.meshgrid(np.arange(h) - cy, np.arange(w) - cx, indexing="ij")
    gx = (xs * np.cos(rad) - ys * np.sin(rad)) / cx
    gy = (xs * np.sin(rad) + ys * np.cos(rad)) / cy
    if zoom_in or zoom_out:
        rho, corner = np.hypot(h, w), np.arctan(h / w)
        turn = np.abs(rad)
        span_x = np.maximum(np.abs(rho * np.cos(corner + turn)), np.abs(rho * np.cos(corner - turn)))
        span_y = np.maximum(np.abs(rho * np.sin(corner + turn)), np.abs(rho * np.sin(corner - turn)))
        scale = (np.maximum(span_x / w, span_y / h) if zoom_out else np.minimum(w / span_x, h / span_y))
        gx, gy = gx * scale, gy * scale
    grid = nd.array(np.stack([gx, gy], axis=1).astype(np.float32), ctx=batch.context)
    out = nd.BilinearSampler(batch, grid)
    return out[0] if single else out


class Rotate(Block):
    """Rotates a float32 (C, H, W) image or (N, C, H, W) batch by `rotation_degrees` about its
    centre (bilinear, zeros outside), keeping its shape; `zoom_in` / `zoom_out` as in MXNet."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        return _rotate(x, *self._args)


class RandomRotation(Block):
    """Rotate (see `Rotate`) by an angle uniform in `angle_limits` (degrees, one per image),
    with probability `rotate_with_proba`; draws from numpy's global generator."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError("`angle_limits` must be an ordered tuple")
        if not 0 <= rotate_with_proba <= 1:
            raise ValueError("Probability of rotating the image should be between 0 and 1")
        self._limits, self._zoom, self._p = (lower, upper), (zoom_in, zoom_out), rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._p:
            return x
        angles = np.random.uniform(*self._limits, size=None if x.ndim == 3 else x.shape[0])
        return _rotate(x, angles, *self._zoom)


class Resize(Block):
    """Resize to `size`: (w, h), or an int for a square (or, with `keep_ratio`, for the shorter
    side, the other scaled and rounded down). `interpolation` 0 nearest, 1 bilinear, 2 bicubic,
    3 area, 4 Lanczos (OpenCV's)."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._size, self._keep, self._interp = size, keep_ratio, interpolation  # checked when called, as MXNet

    def _target(self, h, w):
        if isinstance(self._size, (int, np.integer)) and self._keep:
            s = int(self._size)
            return (s, h * s // w) if h > w else (w * s // h, s)
        return _size2(self._size, "Resize")

    def forward(self, x):
        return _each(x, "Resize", lambda a: _image.imresize(a, *self._target(*a.shape[:2]), self._interp))


class CenterCrop(Block):
    """The centred crop with `size`'s (w, h) aspect ratio, as large as fits, resized to `size`."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        self._size, self._interp = _size2(size, "CenterCrop"), interpolation

    def forward(self, x):
        return _each(x, "CenterCrop", lambda a: _image.center_crop(a, self._size, self._interp))


class CropResize(Block):
    """The crop of `width` x `height` at (x, y), resized to `size` when given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._box = (int(x), int(y), int(width), int(height))
        self._size = None if size is None else _size2(size, "CropResize")
        self._interp = 1 if interpolation is None else interpolation

    def forward(self, x):
        x0, y0, w, h = self._box

        def crop(a):
            if w <= 0 or h <= 0 or x0 < 0 or y0 < 0 or x0 + w > a.shape[1] or y0 + h > a.shape[0]:
                raise MXNetError(f"CropResize: the box x={x0}, y={y0}, width={w}, height={h} does not fit in "
                                 f"an image of height {a.shape[0]} and width {a.shape[1]}")
            return _image.fixed_crop(a, x0, y0, w, h, self._size, self._interp)
        return _each(x, "CropResize", crop)


class RandomResizedCrop(Block):
    """A crop of random area (fraction of the image in `scale`) and aspect ratio (in `ratio`),
    resized to `size`; the centre crop when 10 draws do not fit."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        self._size = _size2(size, "RandomResizedCrop")
        self._scale, self._ratio, self._interp = scale, ratio, interpolation

    def forward(self, x):
        return _each(x, "RandomResizedCrop",
                     lambda a: _image.random_size_crop(a, self._size, self._scale, self._ratio, self._interp))


class _RandomFlip(Block):
    axis = 1

    def __init__(self, p=0.5):
        super().__init__()
        self._p = p

    def forward(self, x):
        return _each(x, type(self).__name__, lambda a: np.flip(a, self.axis) if random.random() < self._p else a)


class RandomFlipLeftRight(_RandomFlip):
    """Mirrors the image left to right with probability `p`."""
    axis = 1


class RandomFlipTopBottom(_RandomFlip):
    """Flips the image upside down with probability `p`."""
    axis = 0


_GRAY = np.array([0.299, 0.587, 0.114])


def _float_op(x, what, fn):
    """fn on a float copy of each image; the result cast back to the input's dtype."""
    def one(a):
        out = fn(a.astype(np.float32))
        return np.clip(np.rint(out), 0, 255).astype(a.dtype) if np.issubdtype(a.dtype, np.integer) else \
            out.astype(a.dtype)
    return _each(x, what, one)


def _factor(v):
    """A factor uniform in [max(0, 1 - v), 1 + v]."""
    return random.uniform(max(0.0, 1.0 - v), 1.0 + v)


def _brightness(a, alpha):
    return a * alpha


def _contrast(a, alpha):
    return a * alpha + (1.0 - alpha) * float((a[..., :3] @ _GRAY).mean())


def _saturation(a, alpha):
    return a * alpha + (1.0 - alpha) * (a[..., :3] @ _GRAY)[..., None]


def _hue(a, turns):
    """Rotate the hue of RGB values in [0, 255] by `turns` of the colour wheel (through HLS)."""
    rgb = a[..., :3] / 255.0
    vmax, vmin = rgb.max(-1), rgb.min(-1)
    light, diff = (vmax + vmin) / 2, vmax - vmin
    grey = diff <= np.finfo(np.float32).eps
    sat = np.where(grey, 0.0, diff / np.where(light < 0.5, vmax + vmin, 2.0 - vmax - vmin + grey))
    safe = np.where(grey, 1.0, diff)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    hue = np.where(vmax == r, (g - b) / safe, np.where(vmax == g, (b - r) / safe + 2, (r - g) / safe + 4)) * 60
    hue = np.where(grey, 0.0, hue) + turns * 360.0
    hi = np.where(light <= 0.5, light * (1 + sat), light + sat - light * sat)
    lo = 2 * light - hi

    def channel(deg):
        d = np.mod(deg, 360.0)
        ramp_up, ramp_down = lo + (hi - lo) * d / 60, lo + (hi - lo) * (240 - d) / 60
        return np.select([d < 60, d < 180, d < 240], [ramp_up, hi, ramp_down], lo)
    out = np.stack([channel(hue + 120), channel(hue), channel(hue - 120)], -1) * 255.0
    return np.concatenate([out, a[..., 3:]], -1) if a.shape[-1] > 3 else out


class RandomBrightness(Block):
    """Multiplies by a factor uniform in [max(0, 1 - brightness), 1 + brightness]."""

    def __init__(self, brightness):
        super().__init__()
        self._b = brightness

    def forward(self, x):
        return _float_op(x, "RandomBrightness", lambda a: _brightness(a, _factor(self._b)))


class RandomContrast(Block):
    """Blends with the image's mean gray level: alpha * x + (1 - alpha) * mean, alpha uniform in
    [max(0, 1 - contrast), 1 + contrast]."""

    def __init__(self, contrast):
        super().__init__()
        self._c = contrast

    def forward(self, x):
        return _float_op(x, "RandomContrast", lambda a: _contrast(a, _factor(self._c)))


class RandomSaturation(Block):
    """Blends each pixel with its gray level (0.299 R + 0.587 G + 0.114 B): alpha * x +
    (1 - alpha) * gray, alpha uniform in [max(0, 1 - saturation), 1 + saturation]."""

    def __init__(self, saturation):
        super().__init__()
        self._s = saturation

    def forward(self, x):
        return _float_op(x, "RandomSaturation", lambda a: _saturation(a, _factor(self._s)))


class RandomHue(Block):
    """Turns the hue (in HLS) by a factor uniform in [max(0, 1 - hue), 1 + hue] of a full turn."""

    def __init__(self, hue):
        super().__init__()
        self._h = hue

    def forward(self, x):
        return _float_op(x, "RandomHue", lambda a: _hue(a, _factor(self._h)) if a.shape[-1] >= 3 else a)


class RandomColorJitter(Block):
    """Brightness, contrast and saturation factors 1 + u, u uniform in [-v, v], and a hue turn
    uniform in [-hue, hue], applied in a random order (those with v = 0 skipped)."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._steps = [(v, fn) for v, fn in ((brightness, _brightness), (contrast, _contrast),
                                             (saturation, _saturation), (hue, _hue)) if v > 0]

    def forward(self, x):
        def fn(a):
            for v, step in random.sample(self._steps, len(self._steps)):
                if step is _hue:
                    a = _hue(a, random.uniform(-v, v)) if a.shape[-1] >= 3 else a
                else:
                    a = step(a, 1.0 + random.uniform(-v, v))
            return a
        return _float_op(x, "RandomColorJitter", fn)


class RandomLighting(Block):
    """AlexNet-style PCA lighting noise with standard deviation `alpha`."""
    _EIGVAL = np.array([55.46, 4.794, 1.148])
    _EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def forward(self, x):
        def fn(a):
            rgb = self._EIGVEC @ (np.random.normal(0, self._alpha, 3) * self._EIGVAL)
            return a + rgb
        return _float_op(x, "RandomLighting", fn)


class RandomApply(Sequential):
    """Applies `transforms` (one Block or a list) with probability `p`, else returns the input."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self._p = p
        for t in transforms if isinstance(transforms, (list, tuple)) else [transforms]:
            self.add(t)

    def forward(self, x):
        if random.random() >= self._p:
            return x
        return super().forward(x)
