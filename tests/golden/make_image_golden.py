"""Goldens for mx.image and mx.io.ImageRecordIter, made by real MXNet 1.9.1 (OpenCV inside libmxnet).

Run from the repository root with MXNet's venv:

    /tmp/mxvenv_gluon/bin/python tests/golden/make_image_golden.py

Writes tests/golden/image/: `images.rec` / `images.idx` (PNG images packed with
mx.recordio.pack, so decoding is lossless in both libraries), `resize.npz` (mx.image.imresize
of one image by each interpolation, enlarging and shrinking), `decode.npz` (imdecode flag 1
and 0, to_rgb 0 and 1) and `reciter.npz` (ImageRecordIter batches for several settings
that draw no random numbers), `imageiter.npz` (mx.image.ImageIter, center crop and normalization), `mean.bin`
and `meanimg.npz` (the mean image MXNet computes and saves, and batches normalized by it). Deterministic: the same bytes at every run. Needs only numpy
and mxnet (the PNG encoder is written here with zlib).
"""
import os
import struct
import zlib

import numpy as np
import mxnet as mx

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "image")


def png(img):
    """A minimal 8-bit RGB / gray PNG encoder (no OpenCV or Pillow in MXNet's venv)."""
    h, w = img.shape[:2]
    color = 2 if img.ndim == 3 else 0
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def smooth_image(rs, h, w):
    """Random but smooth (so interpolation differences stay small and meaningful), with some noise."""
    yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
    chans = []
    for _ in range(3):
        a, b, c = rs.uniform(-6, 6, 3)
        chans.append(127 + 100 * np.sin(a * xx + b * yy + c))
    img = np.stack(chans, -1) + rs.normal(0, 8, (h, w, 3))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def main():
    os.makedirs(OUT, exist_ok=True)
    rs = np.random.RandomState(22)
    sizes = [(40, 52), (36, 30), (48, 48), (29, 41), (44, 60), (33, 35), (50, 38)]
    images = [smooth_image(rs, h, w) for h, w in sizes]
    rec_path, idx_path = os.path.join(OUT, "images.rec"), os.path.join(OUT, "images.idx")
    rec = mx.recordio.MXIndexedRecordIO(idx_path, rec_path, "w")
    for i, img in enumerate(images):
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i % 3), i, 0), png(img)))
    rec.close()

    src = mx.nd.array(images[0], dtype=np.uint8)
    res = {"src": images[0]}
    for interp in range(5):
        for w, h in [(80, 64), (23, 17), (52, 20)]:
            res[f"i{interp}_{w}x{h}"] = mx.image.imresize(src, w, h, interp=interp).asnumpy()
    res["short_20_2"] = mx.image.resize_short(src, 20).asnumpy()
    res["center_24x16"] = mx.image.center_crop(src, (24, 16))[0].asnumpy()
    res["center_60x30"] = mx.image.center_crop(src, (60, 30))[0].asnumpy()
    np.savez(os.path.join(OUT, "resize.npz"), **res)

    dec = {"png": np.frombuffer(png(images[1]), np.uint8)}
    for flag in (0, 1):
        for to_rgb in (0, 1):
            dec[f"f{flag}_rgb{to_rgb}"] = mx.image.imdecode(png(images[1]), flag=flag, to_rgb=to_rgb).asnumpy()
    np.savez(os.path.join(OUT, "decode.npz"), **dec)

    settings = {
        "plain": dict(data_shape=(3, 28, 28), batch_size=3),
        "norm": dict(data_shape=(3, 24, 20), batch_size=4, mean_r=123.68, mean_g=116.779, mean_b=103.939,
                     std_r=58.4, std_g=57.1, std_b=57.4, scale=0.5),
        "resize": dict(data_shape=(3, 24, 24), batch_size=4, resize=26),
        "pad": dict(data_shape=(3, 32, 32), batch_size=5, pad=3, fill_value=127),
        "small": dict(data_shape=(3, 56, 56), batch_size=4),
        "mirror": dict(data_shape=(3, 20, 20), batch_size=4, mirror=True, label_width=1),
    }
    out = {}
    for name, kw in settings.items():
        it = mx.io.ImageRecordIter(path_imgrec=rec_path, path_imgidx=idx_path, preprocess_threads=1, **kw)
        for e in range(2):  # reset between epochs only, as Module.fit does
            if e:
                it.reset()
            for b, batch in enumerate(it):
                out[f"{name}_e{e}_b{b}_data"] = batch.data[0].asnumpy()
                out[f"{name}_e{e}_b{b}_label"] = batch.label[0].asnumpy()
                out[f"{name}_e{e}_b{b}_pad"] = np.array(batch.pad)
    np.savez(os.path.join(OUT, "reciter.npz"), **out)

    # mean_img: MXNet computes the mean image when the file is absent and saves it (mean.bin)
    mean_path = os.path.join(OUT, "mean.bin")
    if os.path.exists(mean_path):
        os.remove(mean_path)
    out = {}
    for name, kw in {"create": {}, "load": {"mirror": True, "scale": 0.5}}.items():
        it = mx.io.ImageRecordIter(path_imgrec=rec_path, data_shape=(3, 24, 24), batch_size=4, preprocess_threads=1,
                                   mean_img=mean_path, **kw)
        for b, batch in enumerate(it):
            out[f"{name}_b{b}_data"] = batch.data[0].asnumpy()
    np.savez(os.path.join(OUT, "meanimg.npz"), **out)

    # mx.image.ImageIter without random augmenters: center crop, mean and std
    it = mx.image.ImageIter(batch_size=3, data_shape=(3, 20, 24), path_imgrec=rec_path, path_imgidx=idx_path,
                            mean=True, std=True, resize=26)
    out = {}
    for b, batch in enumerate(it):
        out[f"b{b}_data"] = batch.data[0].asnumpy()
        out[f"b{b}_label"] = batch.label[0].asnumpy()
        out[f"b{b}_pad"] = np.array(batch.pad)
    np.savez(os.path.join(OUT, "imageiter.npz"), **out)


if __name__ == "__main__":
    main()
