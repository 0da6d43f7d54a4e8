"""`mx.image`'s augmenters and `CreateAugmenter`, with MXNet 1.9.1's parameters and order.

An augmenter is called on an HxWxC NDArray and returns one. Random draws come from
Python's `random` (crops, flips, jitters) and numpy's global generator (LightingAug), as in
MXNet, so `random.seed` / `np.random.seed` make a run repeatable.
"""
from __future__ import annotations

import json
import random

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from . import _cv, _ops
from ._ops import to_nd, to_numpy

_GRAY = np.array([0.299, 0.587, 0.114], np.float32)


class Augmenter:
    """Base class: keeps its constructor arguments for `dumps()`."""

    def __init__(self, **kwargs):
        self._kwargs = {}
        for k, v in kwargs.items():
            if isinstance(v, NDArray):
                v = v.asnumpy()
            self._kwargs[k] = v.tolist() if isinstance(v, np.ndarray) else v

    def dumps(self) -> str:
        """JSON `[class name in lower case, constructor arguments]`."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")


class SequentialAug(Augmenter):
    """Apply `ts` one after the other."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        for t in self.ts:
            src = t(src)
        return src


class RandomOrderAug(Augmenter):
    """Apply `ts` in a random order (shuffled in place at each call, as MXNet)."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        random.shuffle(self.ts)
        for t in self.ts:
            src = t(src)
        return src


class ResizeAug(Augmenter):
    """Resize the shorter side to `size`."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return _ops.resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to `size` (w, h), ignoring the aspect ratio."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        arr = to_numpy(src)
        method = _ops._get_interp_method(self.interp, (arr.shape[0], arr.shape[1], self.size[1], self.size[0]))
        return to_nd(_cv.resize(arr, self.size[0], self.size[1], method))


class RandomCropAug(Augmenter):
    """Crop a random `size` (w, h) rectangle."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return _ops.random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """Crop a random area and aspect ratio, resized to `size` (see `random_size_crop`)."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        if "min_area" in kwargs:
            area = kwargs.pop("min_area")
        if kwargs:
            raise MXNetError(f"RandomSizedCropAug: unexpected keyword arguments {sorted(kwargs)}")
        self.size, self.area, self.ratio, self.interp = size, area, ratio, interp

    def __call__(self, src):
        return _ops.random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """Crop the central `size` (w, h) rectangle."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return _ops.center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Multiply by 1 + U(-brightness, brightness)."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        return to_nd(_float(src) * np.float32(alpha))


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean gray level: alpha * src + (1 - alpha) * mean(gray)."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        arr = _float(src)
        gray = arr * _GRAY
        gray_term = np.float32(3.0 * (1.0 - alpha) / gray.size) * gray.sum(dtype=np.float32)
        return to_nd(arr * np.float32(alpha) + gray_term)


class SaturationJitterAug(Augmenter):
    """Blend each pixel with its own gray level: alpha * src + (1 - alpha) * gray."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        arr = _float(src)
        gray = (arr * _GRAY).sum(axis=2, keepdims=True) * np.float32(1.0 - alpha)
        return to_nd(arr * np.float32(alpha) + gray)


class HueJitterAug(Augmenter):
    """Rotate the hue by U(-hue, hue) * 180 degrees in YIQ space."""

    _TYIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    _ITYIQ = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = (self._ITYIQ @ bt @ self._TYIQ).T.astype(np.float32)
        return to_nd(_float(src) @ t)


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those above 0) in random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA lighting noise: add eigvec @ (alpha * eigval), alpha ~ N(0, alphastd) (numpy's generator)."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd, self.eigval, self.eigvec = alphastd, np.asarray(eigval), np.asarray(eigvec)

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        return to_nd(_float(src) + rgb.astype(np.float32))


class ColorNormalizeAug(Augmenter):
    """(src - mean) / std."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = None if mean is None else np.asarray(to_numpy(mean), np.float32)
        self.std = None if std is None else np.asarray(to_numpy(std), np.float32)

    def __call__(self, src):
        arr = to_numpy(src)
        if self.mean is not None:
            arr = arr - self.mean
        if self.std is not None:
            arr = arr / self.std
        return to_nd(arr)


class RandomGrayAug(Augmenter):
    """With probability p, replace each channel by 0.21 R + 0.72 G + 0.07 B."""

    _MAT = np.array([[0.21] * 3, [0.72] * 3, [0.07] * 3], np.float32)

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            return to_nd(_float(src) @ self._MAT)
        return src


class HorizontalFlipAug(Augmenter):
    """With probability p, flip left-right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            return to_nd(np.ascontiguousarray(to_numpy(src)[:, ::-1]))
        return src


class CastAug(Augmenter):
    """Cast to `typ` (float32)."""

    def __init__(self, typ="float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return to_nd(to_numpy(src).astype(self.typ))


def _float(src) -> np.ndarray:
    arr = to_numpy(src)
    return arr if arr.dtype == np.float32 else arr.astype(np.float32)


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False, rand_mirror=False,  # noqa: N802
                    mean=None, std=None, brightness=0, contrast=0, saturation=0, hue=0,
                    pca_noise=0, rand_gray=0, inter_method=2):
    """MXNet's standard augmenter list for `data_shape` (C, H, W): optional short-side resize,
    a crop (random-sized, random or center) to (W, H), mirror, cast to float32, color jitter,
    hue, PCA lighting, random gray, then mean/std normalization (`mean=True` / `std=True`
    take ImageNet's RGB statistics)."""
    auglist = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise MXNetError("CreateAugmenter: rand_resize needs rand_crop")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        eigval = np.array([55.46, 4.794, 1.148])
        eigvec = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])
        auglist.append(LightingAug(pca_noise, eigval, eigvec))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = np.array([123.68, 116.28, 103.53])
    elif mean is not None:
        _check_stat("mean", mean)
    if std is True:
        std = np.array([58.395, 57.12, 57.375])
    elif std is not None:
        _check_stat("std", std)
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist


def _check_stat(name, v):
    if not isinstance(v, (np.ndarray, NDArray)) or v.shape[0] not in (1, 3):
        raise MXNetError(f"CreateAugmenter: {name} must be True or a numpy array / NDArray of 1 or 3 values, "
                         f"got {v!r}")
