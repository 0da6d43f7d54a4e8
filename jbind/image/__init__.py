"""`mx.image` (also `mx.img`): MXNet 1.9.1's image decoding, resizing, cropping, augmenters
and `ImageIter`, on HxWxC uint8 NDArrays in RGB order.

Decoding and encoding use Pillow (`pip install jbind[image]`); resizing reproduces OpenCV's
interpolations in numpy, within one or two levels of MXNet's uint8 results.
"""
from ._aug import (Augmenter, BrightnessJitterAug, CastAug, CenterCropAug, ColorJitterAug, ColorNormalizeAug,
                   ContrastJitterAug, CreateAugmenter, ForceResizeAug, HorizontalFlipAug, HueJitterAug,
                   LightingAug, RandomCropAug, RandomGrayAug, RandomOrderAug, RandomSizedCropAug, ResizeAug,
                   SaturationJitterAug, SequentialAug)
from ._iter import ImageIter
from ._ops import (center_crop, color_normalize, copyMakeBorder, fixed_crop, imdecode, imread, imresize,
                   random_crop, random_size_crop, resize_short, scale_down)

__all__ = ["Augmenter", "BrightnessJitterAug", "CastAug", "CenterCropAug", "ColorJitterAug", "ColorNormalizeAug",
           "ContrastJitterAug", "CreateAugmenter", "ForceResizeAug", "HorizontalFlipAug", "HueJitterAug",
           "ImageIter", "LightingAug", "RandomCropAug", "RandomGrayAug", "RandomOrderAug", "RandomSizedCropAug",
           "ResizeAug", "SaturationJitterAug", "SequentialAug", "center_crop", "color_normalize",
           "copyMakeBorder", "fixed_crop", "imdecode", "imread", "imresize", "random_crop", "random_size_crop",
           "resize_short", "scale_down"]

from . import image  # noqa: E402,F401  (MXNet's `mx.image.image` module path)
