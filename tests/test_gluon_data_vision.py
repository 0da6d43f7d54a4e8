"""gluon.data.vision: transforms against MXNet 1.9.1 (tests/golden/gluon/make_data_golden.py),
random transforms by their properties, and the datasets read from MXNet's on-disk formats
in a local root (never downloaded)."""
import gzip
import os
import random
import struct
import sys

import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError
from jbind.gluon.data import DataLoader
from jbind.gluon.data import vision
from jbind.gluon.data.vision import transforms as T

HERE = os.path.join(os.path.dirname(__file__), "golden", "gluon")
sys.path.insert(0, HERE)
from data_cases import transform_cases  # noqa: E402

GOLD = np.load(os.path.join(HERE, "data", "transforms.npz"))
CASES = transform_cases(T)


@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_matches_mxnet(name):
    t, which = CASES[name]
    img = GOLD["input:" + which]
    out = t(mx.nd.array(img, dtype=img.dtype)).asnumpy()
    want = GOLD[name]
    assert out.shape == want.shape and out.dtype == want.dtype
    if want.dtype == np.uint8:
        # OpenCV resizes uint8 in fixed point; jbind rounds the exact bilinear value
        assert np.abs(out.astype(int) - want.astype(int)).max() <= 1
    else:
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3 if want.dtype == np.float16 else 1e-4)


def _img(h=6, w=8):
    return mx.nd.array(np.arange(h * w * 3).reshape(h, w, 3) % 251, dtype=np.uint8)


def test_random_flips_and_probability():
    img = _img()
    np.testing.assert_array_equal(T.RandomFlipLeftRight(p=1)(img).asnumpy(), img.asnumpy()[:, ::-1])
    np.testing.assert_array_equal(T.RandomFlipTopBottom(p=1)(img).asnumpy(), img.asnumpy()[::-1])
    np.testing.assert_array_equal(T.RandomFlipLeftRight(p=0)(img).asnumpy(), img.asnumpy())
    random.seed(3)
    flips = sum(np.array_equal(T.RandomFlipLeftRight()(img).asnumpy(), img.asnumpy()[:, ::-1]) for _ in range(40))
    assert 8 < flips < 32


def test_random_resized_crop_is_a_resized_crop():
    random.seed(0)
    img = mx.nd.array(np.tile(np.arange(20, dtype=np.float32), (10, 1))[:, :, None].repeat(3, 2))
    t = T.RandomResizedCrop((5, 4), scale=(0.3, 0.6))
    for _ in range(5):
        out = t(img).asnumpy()
        assert out.shape == (4, 5, 3)
        row = out[0, :, 0]
        assert np.all(np.diff(row) > 0) and np.allclose(out[:, :, 0], row)  # a horizontal ramp stays one
        assert row[-1] - row[0] < 19  # a part of the image, not the whole


def test_color_transforms_keep_shape_and_range():
    random.seed(1)
    np.random.seed(1)
    img = _img()
    for t in [T.RandomBrightness(0.3), T.RandomContrast(0.3), T.RandomSaturation(0.3), T.RandomLighting(0.1),
              T.RandomColorJitter(0.2, 0.2, 0.2), T.RandomApply(T.RandomBrightness(0.5), p=1)]:
        out = t(img)
        assert out.shape == img.shape and out.dtype == np.uint8
    random.seed(2)
    a = img.asnumpy().astype(np.float64)
    sat = T.RandomSaturation(0.5)(img).asnumpy().astype(np.float64)
    gray = a @ [0.299, 0.587, 0.114]
    alpha = (sat[..., 0] - gray) / np.where(a[..., 0] - gray == 0, 1, a[..., 0] - gray)
    assert 0.5 <= np.median(alpha) <= 1.5  # a blend with the gray level, alpha in [1 - 0.5, 1 + 0.5]
    np.testing.assert_array_equal(T.RandomApply(T.RandomBrightness(0.5), p=0)(img).asnumpy(), img.asnumpy())


def test_transforms_on_batches_and_bad_shapes():
    batch = mx.nd.array(np.stack([_img().asnumpy()] * 2))
    assert T.Resize((4, 3))(batch).shape == (2, 3, 4, 3)
    assert T.ToTensor()(batch).shape == (2, 3, 6, 8)
    with pytest.raises(MXNetError, match=r"\(H, W, C\)"):
        T.Resize(3)(mx.nd.ones((4, 4)))
    with pytest.raises(MXNetError, match="does not fit"):
        T.CropResize(5, 0, 4, 4)(_img())
    with pytest.raises(MXNetError, match="interpolation 5"):
        T.Resize(3, interpolation=5)(_img())
    with pytest.raises(MXNetError, match="must be positive"):
        T.Resize(-3, keep_ratio=True)(_img())
    bad_size = T.Resize((3, 3, 3))  # as in MXNet, a bad size is reported when the transform runs
    with pytest.raises(MXNetError, match="width, height"):
        bad_size(_img())
    with pytest.raises(MXNetError, match="does not fit"):
        T.CropResize(0, 0, -2, -1)(_img())


def test_image_crop_and_flip_ops():
    a = np.arange(2 * 5 * 4 * 3, dtype=np.float32).reshape(2, 5, 4, 3)
    np.testing.assert_array_equal(mx.nd.image.flip_left_right(mx.nd.array(a[0])).asnumpy(), a[0, :, ::-1])
    np.testing.assert_array_equal(mx.nd.image.flip_top_bottom(mx.nd.array(a)).asnumpy(), a[:, ::-1])
    np.testing.assert_array_equal(mx.nd.image.crop(mx.nd.array(a), 1, 2, 3, 2).asnumpy(), a[:, 2:4, 1:4])
    # symbolic: shape inference and the gradient (the head inside the window, zero elsewhere)
    s = mx.sym.image.crop(mx.sym.Variable("img"), x=0, y=1, width=2, height=3)
    assert s.infer_shape(img=(5, 4, 3))[1] == [(3, 2, 3)]
    x = mx.nd.array(a[0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.image.crop(x, 0, 1, 2, 3)
    y.backward(mx.nd.ones_like(y) * 2)
    want = np.zeros_like(a[0])
    want[1:4, 0:2] = 2
    np.testing.assert_array_equal(x.grad.asnumpy(), want)
    for bad in [dict(x=3, y=0, width=2, height=2), dict(x=0, y=0, width=0, height=2)]:
        with pytest.raises(MXNetError, match="width"):
            mx.nd.image.crop(mx.nd.array(a[0]), **bad)
    with pytest.raises(MXNetError, match="1 or 3 channels"):
        mx.nd.image.crop(mx.nd.ones((5, 4, 2)), 0, 0, 1, 1)


# ------------------------------------------------------------------ datasets from files


def _write_idx(path, arr, gz=True):
    head = struct.pack(">I", 0x800 + arr.ndim) + struct.pack(">%dI" % arr.ndim, *arr.shape)
    data = head + arr.astype(np.uint8).tobytes()
    with (gzip.open(path, "wb") if gz else open(path, "wb")) as f:
        f.write(data)


@pytest.mark.parametrize("cls", [vision.MNIST, vision.FashionMNIST])
def test_mnist_reads_idx_files(tmp_path, cls):
    rng = np.random.default_rng(0)
    images, labels = rng.integers(0, 256, (5, 28, 28)), np.array([3, 1, 4, 1, 5])
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels)
    ds = cls(root=str(tmp_path), train=False)
    assert len(ds) == 5
    data, label = ds[2]
    assert data.shape == (28, 28, 1) and data.dtype == np.uint8 and label == 4 and label.dtype == np.int32
    np.testing.assert_array_equal(data.asnumpy()[:, :, 0], images[2])
    ds2 = cls(root=str(tmp_path), train=False, transform=lambda d, lbl: (d.astype("float32") / 255, lbl + 1))
    assert ds2[0][1] == 4 and ds2[0][0].dtype == np.float32
    with pytest.raises(MXNetError, match=r"train-images-idx3-ubyte\.gz.*absent.*does not download"):
        cls(root=str(tmp_path), train=True)


def test_mnist_refuses_bad_files(tmp_path):
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", np.zeros((3, 28, 28)))
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros((4,)))
    with pytest.raises(MXNetError, match="3 images but .* 4 labels"):
        vision.MNIST(root=str(tmp_path), train=False)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros((2, 2)))
    with pytest.raises(MXNetError, match="magic number"):
        vision.MNIST(root=str(tmp_path), train=False)


def test_mnist_default_root_is_mxnet_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    with pytest.raises(MXNetError, match=str(tmp_path / "datasets" / "mnist" / "train-images-idx3-ubyte.gz")):
        vision.MNIST()


def _cifar_records(rng, n, labels):
    images = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
    lab = rng.integers(0, 20, (n, labels), dtype=np.uint8)
    return images, lab, np.concatenate([lab, images.reshape(n, -1)], axis=1).tobytes()


def test_cifar10_reads_binary_batches(tmp_path):
    rng = np.random.default_rng(1)
    images, labels, raw = _cifar_records(rng, 4, 1)
    (tmp_path / "test_batch.bin").write_bytes(raw)
    ds = vision.CIFAR10(root=str(tmp_path), train=False)
    assert len(ds) == 4
    data, label = ds[3]
    assert data.shape == (32, 32, 3) and label == labels[3, 0]
    np.testing.assert_array_equal(data.asnumpy(), images[3].transpose(1, 2, 0))
    with pytest.raises(MXNetError, match="data_batch_1.bin.*absent"):
        vision.CIFAR10(root=str(tmp_path), train=True)
    (tmp_path / "test_batch.bin").write_bytes(raw[:-5])
    with pytest.raises(MXNetError, match="not a whole number"):
        vision.CIFAR10(root=str(tmp_path), train=False)


def test_cifar100_coarse_and_fine_labels_in_archive_folder(tmp_path):
    rng = np.random.default_rng(2)
    images, labels, raw = _cifar_records(rng, 3, 2)
    (tmp_path / "cifar-100-binary").mkdir()
    (tmp_path / "cifar-100-binary" / "train.bin").write_bytes(raw)
    coarse = vision.CIFAR100(root=str(tmp_path))
    fine = vision.CIFAR100(root=str(tmp_path), fine_label=True)
    assert [coarse[i][1] for i in range(3)] == list(labels[:, 0])
    assert [fine[i][1] for i in range(3)] == list(labels[:, 1])
    np.testing.assert_array_equal(fine[1][0].asnumpy(), images[1].transpose(1, 2, 0))


def _png(path, arr):
    from PIL import Image
    Image.fromarray(arr).save(path)


def test_image_folder_dataset_decodes_png(tmp_path):
    pytest.importorskip("PIL")  # jbind decodes with OpenCV or Pillow (an optional dependency)
    rng = np.random.default_rng(3)
    pics = {}
    for cls in ("cat", "dog"):
        (tmp_path / cls).mkdir()
        for i in range(2):
            pics[(cls, i)] = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
            _png(tmp_path / cls / f"{i}.png", pics[(cls, i)])
    (tmp_path / "dog" / "notes.txt").write_text("x")
    with pytest.warns(UserWarning, match="Ignoring .*notes.txt"):
        ds = vision.ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ["cat", "dog"] and len(ds) == 4
    img, label = ds[2]
    assert label == 1 and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), pics[("dog", 0)])
    with pytest.warns(UserWarning):
        gray = vision.ImageFolderDataset(str(tmp_path), flag=0)
    assert gray[0][0].shape == (5, 7, 1)
    loader = DataLoader(ds.transform_first(T.Compose([T.Resize(4), T.ToTensor()])), batch_size=3)
    shapes = [(d.shape, lbl.asnumpy().tolist()) for d, lbl in loader]
    assert shapes == [((3, 3, 4, 4), [0, 0, 1]), ((1, 3, 4, 4), [1])]
    with pytest.raises(MXNetError, match="does not exist"):
        vision.ImageFolderDataset(str(tmp_path / "nope"))


def test_image_record_dataset(tmp_path):
    pytest.importorskip("PIL")
    import io
    from PIL import Image
    rec, idx = str(tmp_path / "x.rec"), str(tmp_path / "x.idx")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    pics = []
    for i in range(3):
        arr = np.full((4, 6, 3), 40 * i, np.uint8)
        arr[0, 0] = (255, 0, 10)
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, format="PNG")
        writer.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, float(i) + 0.5, i, 0), buf.getvalue()))
        pics.append(arr)
    writer.close()
    ds = vision.ImageRecordDataset(rec)
    assert len(ds) == 3
    img, label = ds[2]
    assert label == 2.5
    np.testing.assert_array_equal(img.asnumpy(), pics[2])
    raw = mx.gluon.data.RecordFileDataset(rec)
    assert isinstance(raw[0], bytes) and len(raw) == 3


def test_hue_turns_colours_around_the_wheel():
    from jbind.gluon.data.vision.transforms import _hue
    rgb = np.array([[[255, 0, 0], [0, 255, 0], [40, 80, 200], [90, 90, 90]]], np.float32)
    np.testing.assert_allclose(_hue(rgb, 0.0), rgb, atol=1e-3)
    np.testing.assert_allclose(_hue(rgb, 1.0), rgb, atol=1e-3)
    third = _hue(rgb, 1 / 3)
    np.testing.assert_allclose(third[0, :2], [[0, 255, 0], [0, 0, 255]], atol=1e-3)  # red -> green -> blue
    np.testing.assert_allclose(third[0, 3], [90, 90, 90], atol=1e-3)  # gray has no hue
    np.testing.assert_allclose(third[0, 2], [200, 40, 80], atol=1e-3)
    random.seed(4)
    out = T.RandomHue(0.2)(_img())
    assert out.shape == (6, 8, 3) and out.dtype == np.uint8
    jitter = T.RandomColorJitter(0.1, 0.1, 0.1, 0.1)(_img())
    assert jitter.shape == (6, 8, 3)


def test_random_saturation_uses_the_gray_level():
    img = _img()
    random.seed(7)
    out = T.RandomSaturation(0.5)(img).asnumpy()
    random.seed(7)
    alpha = random.uniform(0.5, 1.5)
    a = img.asnumpy().astype(np.float64)
    want = a * alpha + (1 - alpha) * (a @ [0.299, 0.587, 0.114])[..., None]
    assert np.abs(out - np.clip(np.rint(want), 0, 255)).max() <= 1


def test_random_rotation_and_rotate_errors():
    x = T.ToTensor()(_img())
    np.random.seed(0)
    batch = mx.nd.array(np.stack([x.asnumpy()] * 2))
    out = T.RandomRotation((-40.0, 40.0))(batch).asnumpy()
    assert out.shape == (2, 3, 6, 8) and not np.allclose(out[0], out[1])  # one angle per image
    np.testing.assert_array_equal(T.RandomRotation((0.0, 1.0), rotate_with_proba=0.0)(x).asnumpy(), x.asnumpy())
    np.testing.assert_allclose(T.Rotate(0.0)(x).asnumpy(), x.asnumpy(), atol=1e-5)
    with pytest.raises(TypeError, match="float32"):
        T.Rotate(10.0)(_img())
    with pytest.raises(ValueError, match="cannot be both True"):
        T.Rotate(10.0, zoom_in=True, zoom_out=True)(x)
    with pytest.raises(ValueError, match="ordered tuple"):
        T.RandomRotation((5.0, 1.0))
