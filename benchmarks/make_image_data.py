"""Make small image-classification data in MXNet's file formats, for machines that cannot
download ImageNet, CIFAR-10 or MNIST.

    python benchmarks/make_image_data.py --out /tmp/imgdata [--num-images 256] [--num-classes 10]

writes, under --out:

- `imagenet_train.rec/.idx`, `imagenet_val.rec/.idx`: RGB JPEGs of random sizes (short side
  36-60 pixels) packed with `mx.recordio.pack_img`, as `tools/im2rec.py` would, for
  `train_imagenet.py --data-train ... --data-val ...` (and `score.py`, `fine-tune.py`);
- `cifar10_train.rec`, `cifar10_val.rec`: 32x32 PNGs, for `train_cifar10.py` (its
  data/cifar10_*.rec);
- `mnist/`: `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte`,
  `t10k-labels-idx1-ubyte` and their `.gz` (what `train_mnist.py` and `mx.io.MNISTIter` read).

Each class has its own colour and stripe direction plus noise, so a network can learn
something in one epoch. Deterministic for a given --seed. Runs with jbind (or MXNet with
OpenCV) as `mx`; Pillow encodes when OpenCV is absent.
"""
from __future__ import annotations

import argparse
import gzip
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jbind as mx  # noqa: E402
from jbind.io_util import atomic_write_bytes  # noqa: E402


def class_image(rs: np.random.RandomState, label: int, num_classes: int, h: int, w: int) -> np.ndarray:
    """An RGB uint8 image whose colour and stripe angle depend on `label`, with noise."""
    hue = 2 * np.pi * label / num_classes
    color = 127 + 90 * np.cos(hue + np.array([0.0, 2.1, 4.2]))
    angle = np.pi * label / num_classes
    yy, xx = np.mgrid[0:h, 0:w]
    stripes = np.sin((np.cos(angle) * xx + np.sin(angle) * yy) * 0.5 + rs.uniform(0, 2 * np.pi))
    img = color + 40 * stripes[..., None] + rs.normal(0, 20, (h, w, 3))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def make_rec(prefix: str, num: int, num_classes: int, seed: int, size=(36, 60), img_fmt=".jpg",
             indexed: bool = True) -> list:
    """`prefix.rec` (+ `prefix.idx`) of `num` images with labels i % num_classes; -> the labels."""
    rs = np.random.RandomState(seed)
    if indexed:
        rec = mx.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "w")
    else:
        rec = mx.recordio.MXRecordIO(prefix + ".rec", "w")
    labels = []
    for i in range(num):
        label = i % num_classes
        h, w = (rs.randint(size[0], size[1] + 1) for _ in range(2))
        rgb = class_image(rs, label, num_classes, h, w)
        packed = mx.recordio.pack_img(mx.recordio.IRHeader(0, float(label), i, 0), rgb[..., ::-1],
                                      quality=95 if img_fmt == ".jpg" else 3, img_fmt=img_fmt)
        if indexed:
            rec.write_idx(i, packed)
        else:
            rec.write(packed)
        labels.append(label)
    rec.close()
    return labels


def _idx_bytes(arr: np.ndarray) -> bytes:
    magic = 0x800 + arr.ndim  # unsigned byte data, then the number of dimensions
    return struct.pack(">i", magic) + struct.pack(">%di" % arr.ndim, *arr.shape) + arr.astype(np.uint8).tobytes()


def make_mnist(folder: str, num_train: int, num_test: int, seed: int) -> None:
    """MNIST's four idx files (and .gz copies) of 28x28 digits-like images, labels 0-9."""
    os.makedirs(folder, exist_ok=True)
    rs = np.random.RandomState(seed)
    for name, n in (("train", num_train), ("t10k", num_test)):
        labels = (np.arange(n) % 10).astype(np.uint8)
        rs.shuffle(labels)
        images = np.zeros((n, 28, 28), np.uint8)
        yy, xx = np.mgrid[0:28, 0:28]
        for i, lab in enumerate(labels):
            cy, cx = 8 + 12 * (lab // 5) / 1.0, 4 + 5 * (lab % 5)
            blob = 255 * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 18.0)
            images[i] = np.clip(blob + rs.normal(0, 25, (28, 28)), 0, 255).astype(np.uint8)
        for kind, arr in (("images-idx3", images), ("labels-idx1", labels)):
            path = os.path.join(folder, f"{name}-{kind}-ubyte")
            raw = _idx_bytes(arr)
            atomic_write_bytes(path, raw)
            atomic_write_bytes(path + ".gz", gzip.compress(raw, mtime=0))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder to write into")
    ap.add_argument("--num-images", type=int, default=256, help="training images per .rec (val: a quarter)")
    ap.add_argument("--num-classes", type=int, default=10)
    ap.add_argument("--mnist-train", type=int, default=1000)
    ap.add_argument("--mnist-test", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    n, k = args.num_images, args.num_classes
    make_rec(os.path.join(args.out, "imagenet_train"), n, k, args.seed)
    make_rec(os.path.join(args.out, "imagenet_val"), max(n // 4, 1), k, args.seed + 1)
    make_rec(os.path.join(args.out, "cifar10_train"), n, 10, args.seed + 2, (32, 32), ".png", indexed=False)
    make_rec(os.path.join(args.out, "cifar10_val"), max(n // 4, 1), 10, args.seed + 3, (32, 32), ".png",
             indexed=False)
    make_mnist(os.path.join(args.out, "mnist"), args.mnist_train, args.mnist_test, args.seed + 4)
    print(f"wrote {args.out}: imagenet_{{train,val}}.rec/.idx, cifar10_{{train,val}}.rec, mnist/*-ubyte(.gz)")


if __name__ == "__main__":
    main()
