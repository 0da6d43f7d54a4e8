"""Image decoding and encoding with Pillow (MXNet uses OpenCV, linked into libmxnet).

Pillow is an optional dependency (`pip install jbind[image]`), imported on first use.
JPEG decoding goes through libjpeg(-turbo) in both, but the two builds may pick different
IDCT and chroma-upsampling paths: a decoded JPEG pixel can differ from MXNet's by a few
levels. PNG and other lossless formats decode to the same values.
"""
from __future__ import annotations

import io

import numpy as np

from ..base import MXNetError

# A decompression-bomb bound checked before pixels are allocated (data never allocates without one).
MAX_PIXELS = 1 << 28


def pil():
    """The `PIL.Image` module, or an MXNetError naming the package to install."""
    try:
        from PIL import Image  # noqa: PLC0415 - optional dependency, loaded on first use
    except ImportError as e:
        raise MXNetError("mx.image needs Pillow to decode and encode images, and it is not installed: "
                         "pip install pillow (or jbind[image])") from e
    return Image


def decode(buf, flag: int = 1, to_rgb: bool = True) -> np.ndarray:
    """Encoded bytes -> uint8 array: HWC with 3 channels (flag=1, RGB or BGR by `to_rgb`),
    HxWx1 gray (flag=0), or the file's own channels (flag=-1: gray HxWx1, RGB(A))."""
    image_mod = pil()
    if isinstance(buf, np.ndarray):
        buf = buf.tobytes()
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise MXNetError(f"imdecode: buf must be bytes, bytearray or a uint8 numpy array, got {type(buf).__name__}")
    if len(buf) == 0:
        raise MXNetError("imdecode: the buffer is empty, there is no image to decode")
    try:
        im = image_mod.open(io.BytesIO(bytes(buf)))
        w, h = im.size
        if w * h > MAX_PIXELS:
            raise MXNetError(f"imdecode: the image is {w}x{h}, above jbind's bound of {MAX_PIXELS} pixels")
        if flag == 0:
            arr = np.asarray(im.convert("L"))[..., None]
        elif flag > 0:
            arr = np.asarray(im.convert("RGB"))
        else:
            if im.mode not in ("L", "RGB", "RGBA"):
                im = im.convert("RGBA" if "A" in im.mode else "RGB")
            arr = np.asarray(im)
            if arr.ndim == 2:
                arr = arr[..., None]
    except MXNetError:
        raise
    except Exception as e:  # Pillow raises several types for a broken stream
        raise MXNetError(f"imdecode: cannot decode the image ({len(buf)} bytes): {e}") from e
    if not to_rgb and arr.shape[-1] >= 3:
        arr = arr[..., [2, 1, 0] + list(range(3, arr.shape[-1]))]
    return np.ascontiguousarray(arr, dtype=np.uint8)


def encode(img: np.ndarray, fmt: str = ".jpg", quality: int = 95, bgr: bool = False) -> bytes:
    """uint8 HW, HWx1, HWx3 (RGB, or BGR if `bgr`) -> bytes in `fmt` ('.jpg' with JPEG quality
    0-100, '.png' with compression level 0-9 in `quality`, as OpenCV's parameters)."""
    image_mod = pil()
    arr = np.asarray(img)
    if arr.dtype != np.uint8:
        raise MXNetError(f"imencode: the image must be uint8, got {arr.dtype}")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[..., 0]
    if arr.ndim == 3 and arr.shape[2] in (3, 4) and bgr:
        arr = arr[..., [2, 1, 0] + list(range(3, arr.shape[2]))]
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (3, 4)):
        raise MXNetError(f"imencode: expected an HxW, HxWx1, HxWx3 or HxWx4 image, got shape {arr.shape}")
    kind = fmt.lower().lstrip(".")
    out = io.BytesIO()
    im = image_mod.fromarray(np.ascontiguousarray(arr))
    if kind in ("jpg", "jpeg"):
        im.save(out, format="JPEG", quality=int(quality))
    elif kind == "png":
        im.save(out, format="PNG", compress_level=int(quality) if 0 <= int(quality) <= 9 else 3)
    elif kind in ("bmp", "tif", "tiff", "webp"):
        im.save(out, format={"tif": "TIFF"}.get(kind, kind.upper()))
    else:
        raise MXNetError(f"imencode: unsupported image format {fmt!r}: use '.jpg' or '.png'")
    return out.getvalue()
