"""benchmarks/make_image_data.py writes data in MXNet's formats that jbind's iterators read back."""
import gzip
import os
import sys

import numpy as np
import pytest

import jbind as mx

pytest.importorskip("PIL")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import make_image_data as mid  # noqa: E402


def test_rec_files_read_back(tmp_path):
    prefix = str(tmp_path / "train")
    labels = mid.make_rec(prefix, 7, 3, seed=1, size=(20, 24))
    assert labels == [i % 3 for i in range(7)]
    it = mx.io.ImageRecordIter(path_imgrec=prefix + ".rec", path_imgidx=prefix + ".idx", data_shape=(3, 16, 16),
                               batch_size=7)
    batch = next(it)
    np.testing.assert_array_equal(batch.label[0].asnumpy(), labels)
    # each class has its own colour: the per-class mean colours differ
    data = batch.data[0].asnumpy().mean(axis=(2, 3))
    assert np.abs(data[0] - data[1]).max() > 20
    header, img = mx.recordio.unpack_img(mx.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec",
                                                                       "r").read_idx(3))
    assert header.label == 0 and header.id == 3 and 20 <= img.shape[0] <= 24 and img.shape[2] == 3
    mid.make_rec(str(tmp_path / "png"), 2, 2, seed=1, size=(32, 32), img_fmt=".png", indexed=False)
    assert not os.path.exists(tmp_path / "png.idx")
    assert next(mx.io.ImageRecordIter(path_imgrec=str(tmp_path / "png.rec"), data_shape=(3, 32, 32),
                                      batch_size=2)).data[0].shape == (2, 3, 32, 32)


def test_mnist_files_read_back(tmp_path):
    mid.make_mnist(str(tmp_path), 30, 10, seed=2)
    it = mx.io.MNISTIter(image=str(tmp_path / "train-images-idx3-ubyte"),
                         label=str(tmp_path / "train-labels-idx1-ubyte"), batch_size=10, shuffle=False, flat=False)
    batch = next(it)
    assert batch.data[0].shape == (10, 1, 28, 28) and 0 <= batch.data[0].asnumpy().min()
    assert sorted(np.concatenate([b.label[0].asnumpy() for b in [batch] + list(it)]).tolist()) == \
        sorted([i % 10 for i in range(30)])
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        raw = (tmp_path / name).read_bytes()
        assert gzip.decompress((tmp_path / (name + ".gz")).read_bytes()) == raw
    assert (tmp_path / "t10k-labels-idx1-ubyte").read_bytes()[:8] == b"\x00\x00\x08\x01\x00\x00\x00\x0a"


def test_main_writes_every_file(tmp_path):
    mid.main(["--out", str(tmp_path), "--num-images", "4", "--mnist-train", "10", "--mnist-test", "10"])
    names = sorted(os.listdir(tmp_path))
    assert names == ["cifar10_train.rec", "cifar10_val.rec", "imagenet_train.idx", "imagenet_train.rec",
                     "imagenet_val.idx", "imagenet_val.rec", "mnist"]
    assert len(os.listdir(tmp_path / "mnist")) == 8
