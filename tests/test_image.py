"""mx.image: decoding, OpenCV-equivalent resizing, crops, augmenters and ImageIter,
against MXNet 1.9.1's outputs (tests/golden/image, see make_image_golden.py) and numpy."""
import io
import json
import os
import random

import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError

pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "image")
REC, IDX = os.path.join(GOLDEN, "images.rec"), os.path.join(GOLDEN, "images.idx")


def _png(arr):
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _img(h=12, w=16, seed=0):
    return np.random.RandomState(seed).randint(0, 256, (h, w, 3)).astype(np.uint8)


def _nd(a):
    return mx.nd.array(a, dtype=a.dtype)


def test_mx_img_is_mx_image():
    assert mx.img is mx.image


@pytest.mark.parametrize("flag,to_rgb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_imdecode_matches_mxnet(flag, to_rgb):
    z = np.load(os.path.join(GOLDEN, "decode.npz"))
    got = mx.image.imdecode(z["png"].tobytes(), flag=flag, to_rgb=to_rgb)
    assert got.dtype == np.uint8 and got.shape == z[f"f{flag}_rgb{to_rgb}"].shape
    # color PNG is lossless: equal; gray conversion rounds in fixed point in OpenCV
    assert np.abs(got.asnumpy().astype(int) - z[f"f{flag}_rgb{to_rgb}"]).max() <= (1 if flag == 0 else 0)


def test_imdecode_inputs_and_jpeg():
    a = _img()
    png = _png(a)
    for buf in (png, bytearray(png), np.frombuffer(png, np.uint8), mx.nd.array(np.frombuffer(png, np.uint8))):
        np.testing.assert_array_equal(mx.image.imdecode(buf).asnumpy(), a)
    np.testing.assert_array_equal(mx.image.imdecode(png, to_rgb=0).asnumpy(), a[..., ::-1])
    out = mx.nd.zeros(a.shape, dtype="uint8")
    assert mx.image.imdecode(png, out=out) is out and (out.asnumpy() == a).all()
    smooth = np.full((16, 16, 3), (200, 40, 90), np.uint8)
    jpg = io.BytesIO()
    Image.fromarray(smooth).save(jpg, format="JPEG", quality=95)
    assert np.abs(mx.image.imdecode(jpg.getvalue()).asnumpy().astype(int) - smooth).max() <= 3


def test_imdecode_and_imread_errors(tmp_path):
    with pytest.raises(MXNetError, match="empty"):
        mx.image.imdecode(b"")
    with pytest.raises(MXNetError, match="cannot decode"):
        mx.image.imdecode(b"not an image at all")
    with pytest.raises(MXNetError, match="imread"):
        mx.image.imdecode("file.jpg")
    with pytest.raises(MXNetError, match="no-such.png"):
        mx.image.imread(str(tmp_path / "no-such.png"))
    path = tmp_path / "a.png"
    path.write_bytes(_png(_img()))
    np.testing.assert_array_equal(mx.image.imread(str(path)).asnumpy(), _img())
    assert mx.image.imread(str(path), flag=0).shape == (12, 16, 1)


def test_missing_pillow_is_named(monkeypatch):
    import sys
    png = _png(_img())
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(MXNetError, match="Pillow.*pip install pillow"):
        mx.image.imdecode(png)


@pytest.mark.parametrize("interp", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("size", [(80, 64), (23, 17), (52, 20)])
def test_imresize_matches_opencv(interp, size):
    """Within one level of MXNet's OpenCV for every interpolation, enlarging and shrinking."""
    z = np.load(os.path.join(GOLDEN, "resize.npz"))
    got = mx.image.imresize(_nd(z["src"]), *size, interp=interp)
    ref = z[f"i{interp}_{size[0]}x{size[1]}"]
    assert got.dtype == np.uint8 and got.shape == ref.shape
    assert np.abs(got.asnumpy().astype(int) - ref).max() <= 1


def test_resize_short_and_center_crop_match_mxnet():
    z = np.load(os.path.join(GOLDEN, "resize.npz"))
    src = _nd(z["src"])
    assert np.abs(mx.image.resize_short(src, 20).asnumpy().astype(int) - z["short_20_2"]).max() <= 1
    out, rect = mx.image.center_crop(src, (24, 16))
    np.testing.assert_array_equal(out.asnumpy(), z["center_24x16"])
    assert rect == (14, 12, 24, 16)
    big, _ = mx.image.center_crop(src, (60, 30))  # larger than the image: scaled down, then resized
    assert np.abs(big.asnumpy().astype(int) - z["center_60x30"]).max() <= 1


def test_imresize_float_and_interp_choice():
    a = _img().astype(np.float32)
    out = mx.image.imresize(_nd(a), 8, 6, interp=1)
    assert out.dtype == np.float32 and out.shape == (6, 8, 3)
    # 2x shrink with bilinear = mean of each 2x2 block
    np.testing.assert_allclose(out.asnumpy(), a.reshape(6, 2, 8, 2, 3).mean(axis=(1, 3)), rtol=1e-5)
    assert mx.image._ops._get_interp_method(9, (10, 10, 20, 20)) == 2
    assert mx.image._ops._get_interp_method(9, (10, 10, 5, 5)) == 3
    assert mx.image._ops._get_interp_method(9, (10, 10, 20, 5)) == 1
    with pytest.raises(MXNetError, match="interp"):
        mx.image.imresize(_nd(a), 8, 6, interp=7)


def test_scale_down_and_crops():
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)
    assert mx.image.scale_down((640, 480), (320, 240)) == (320, 240)
    a = _img(20, 30)
    np.testing.assert_array_equal(mx.image.fixed_crop(_nd(a), 3, 2, 10, 5).asnumpy(), a[2:7, 3:13])
    assert mx.image.fixed_crop(_nd(a), 3, 2, 10, 5, size=(4, 4)).shape == (4, 4, 3)
    random.seed(5)
    out, (x0, y0, w, h) = mx.image.random_crop(_nd(a), (8, 6))
    np.testing.assert_array_equal(out.asnumpy(), a[y0:y0 + h, x0:x0 + w])
    random.seed(5)
    assert mx.image.random_crop(_nd(a), (8, 6))[1] == (x0, y0, w, h)  # Python's random, as MXNet
    out, (x0, y0, w, h) = mx.image.random_size_crop(_nd(a), (10, 10), 0.3, (0.75, 1.33))
    assert out.shape == (10, 10, 3) and w * h >= 0.25 * 600 and 0 <= x0 <= 30 - w


def test_color_normalize_and_copy_make_border():
    a = _nd(_img().astype(np.float32))
    mean, std = mx.nd.array([1.0, 2.0, 3.0]), mx.nd.array([2.0, 4.0, 8.0])
    expect = (_img().astype(np.float32) - [1, 2, 3]) / [2, 4, 8]
    np.testing.assert_allclose(mx.image.color_normalize(a, mean, std).asnumpy(), expect, rtol=1e-6)
    b = mx.image.copyMakeBorder(_nd(_img(2, 2)), 1, 2, 3, 0, value=7).asnumpy()
    assert b.shape == (5, 5, 3) and (b[0] == 7).all() and (b[1:3, 3:] == _img(2, 2)).all()


def _replay(seed, draw):
    random.seed(seed)
    return draw()


def test_color_jitter_augmenters_follow_their_formulas():
    a = _img().astype(np.float32)
    b = mx.image.BrightnessJitterAug(0.3)
    alpha = 1 + _replay(3, lambda: random.uniform(-0.3, 0.3))
    random.seed(3)
    np.testing.assert_allclose(b(_nd(a)).asnumpy(), a * alpha, rtol=1e-5)

    c = mx.image.ContrastJitterAug(0.3)
    random.seed(3)
    gray = (a * [0.299, 0.587, 0.114]).sum()
    np.testing.assert_allclose(c(_nd(a)).asnumpy(), a * alpha + 3 * (1 - alpha) / a.size * gray, rtol=1e-4)

    s = mx.image.SaturationJitterAug(0.3)
    random.seed(3)
    g = (a * [0.299, 0.587, 0.114]).sum(axis=2, keepdims=True)
    np.testing.assert_allclose(s(_nd(a)).asnumpy(), a * alpha + g * (1 - alpha), rtol=1e-4, atol=1e-3)

    # hue: a rotation by alpha * pi of the I and Q axes of YIQ (MXNet's rounded YIQ matrices)
    tyiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])
    hue = _replay(3, lambda: random.uniform(-0.4, 0.4)) * np.pi
    rot = np.array([[1, 0, 0], [0, np.cos(hue), -np.sin(hue)], [0, np.sin(hue), np.cos(hue)]])
    random.seed(3)
    np.testing.assert_allclose(mx.image.HueJitterAug(0.4)(_nd(a)).asnumpy(), a @ (ityiq @ rot @ tyiq).T,
                               rtol=1e-4, atol=1e-3)


def test_other_augmenters():
    a = _img()
    np.testing.assert_array_equal(mx.image.HorizontalFlipAug(1.0)(_nd(a)).asnumpy(), a[:, ::-1])
    np.testing.assert_array_equal(mx.image.HorizontalFlipAug(0.0)(_nd(a)).asnumpy(), a)
    g = mx.image.RandomGrayAug(1.0)(_nd(a.astype(np.float32))).asnumpy()
    np.testing.assert_allclose(g[..., 0], a @ np.array([0.21, 0.72, 0.07]), rtol=1e-5)
    assert (g[..., 0] == g[..., 2]).all()
    assert mx.image.CastAug()(_nd(a)).dtype == np.float32
    np.random.seed(4)
    alpha = np.random.normal(0, 0.1, size=(3,))
    eigval, eigvec = np.array([1.0, 2.0, 3.0]), np.eye(3)
    np.random.seed(4)
    out = mx.image.LightingAug(0.1, eigval, eigvec)(_nd(a.astype(np.float32))).asnumpy()
    np.testing.assert_allclose(out, a + eigvec @ (alpha * eigval), rtol=1e-5)
    norm = mx.image.ColorNormalizeAug(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0]))
    np.testing.assert_allclose(norm(_nd(a.astype(np.float32))).asnumpy(), (a - [1, 2, 3]) / 2, rtol=1e-6)
    assert mx.image.ForceResizeAug((7, 5))(_nd(a)).shape == (5, 7, 3)
    assert mx.image.ResizeAug(6)(_nd(a)).shape == (6, 8, 3)
    assert mx.image.CenterCropAug((4, 4))(_nd(a)).shape == (4, 4, 3)
    assert mx.image.RandomCropAug((4, 4))(_nd(a)).shape == (4, 4, 3)
    assert mx.image.RandomSizedCropAug((4, 4), 0.5, (0.8, 1.2))(_nd(a)).shape == (4, 4, 3)
    seq = mx.image.SequentialAug([mx.image.CastAug(), mx.image.HorizontalFlipAug(1.0)])
    np.testing.assert_array_equal(seq(_nd(a)).asnumpy(), a[:, ::-1].astype(np.float32))
    assert seq.dumps() == ["sequentialaug", ['["castaug", {"type": "float32"}]', '["horizontalflipaug", {"p": 1.0}]']]
    order = mx.image.RandomOrderAug([mx.image.BrightnessJitterAug(0.0), mx.image.HorizontalFlipAug(1.0)])
    np.testing.assert_allclose(order(_nd(a.astype(np.float32))).asnumpy(), a[:, ::-1])


def test_create_augmenter():
    augs = mx.image.CreateAugmenter((3, 8, 8), resize=10, rand_crop=True, rand_mirror=True, mean=True, std=True,
                                    brightness=0.1, contrast=0.1, saturation=0.1, hue=0.1, pca_noise=0.1,
                                    rand_gray=0.2)
    names = [type(t).__name__ for t in augs]
    assert names == ["ResizeAug", "RandomCropAug", "HorizontalFlipAug", "CastAug", "ColorJitterAug", "HueJitterAug",
                     "LightingAug", "RandomGrayAug", "ColorNormalizeAug"]
    assert json.loads(augs[-1].dumps()) == ["colornormalizeaug", {"mean": [123.68, 116.28, 103.53],
                                                                  "std": [58.395, 57.12, 57.375]}]
    x = _nd(_img(20, 24))
    for t in augs:
        x = t(x)
    assert x.shape == (8, 8, 3) and x.dtype == np.float32
    plain = [type(t).__name__ for t in mx.image.CreateAugmenter((3, 8, 8))]
    assert plain == ["CenterCropAug", "CastAug"]
    assert type(mx.image.CreateAugmenter((3, 8, 8), rand_crop=True, rand_resize=True)[0]).__name__ == \
        "RandomSizedCropAug"
    with pytest.raises(MXNetError, match="rand_resize needs rand_crop"):
        mx.image.CreateAugmenter((3, 8, 8), rand_resize=True)
    with pytest.raises(MXNetError, match="mean"):
        mx.image.CreateAugmenter((3, 8, 8), mean=[1, 2, 3])


def test_imageiter_matches_mxnet():
    z = np.load(os.path.join(GOLDEN, "imageiter.npz"))
    it = mx.image.ImageIter(batch_size=3, data_shape=(3, 20, 24), path_imgrec=REC, path_imgidx=IDX,
                            mean=True, std=True, resize=26)
    assert it.provide_data[0].shape == (3, 3, 20, 24) and it.provide_label[0].shape == (3,)
    batches = list(it)
    assert len(batches) == 3
    for b, batch in enumerate(batches):
        assert np.abs(batch.data[0].asnumpy() - z[f"b{b}_data"]).max() <= 1.01 / 57.12  # one level
        np.testing.assert_array_equal(batch.label[0].asnumpy(), z[f"b{b}_label"])
        assert batch.pad == int(z[f"b{b}_pad"])


def test_imageiter_last_batch_and_shuffle():
    kw = dict(batch_size=3, data_shape=(3, 8, 8), path_imgrec=REC, path_imgidx=IDX)
    assert [b.pad for b in mx.image.ImageIter(last_batch_handle="discard", **kw)] == [0, 0]
    roll = mx.image.ImageIter(last_batch_handle="roll_over", **kw)
    assert len(list(roll)) == 2
    roll.reset()
    first = next(roll)  # the rolled-over image (label 0) first, then the start; MXNet reports pad 2 here
    np.testing.assert_array_equal(first.label[0].asnumpy(), [0, 0, 1])
    assert first.pad == 2 and [b.pad for b in roll] == [0]
    random.seed(0)
    shuf = mx.image.ImageIter(shuffle=True, **kw)
    labels = np.concatenate([b.label[0].asnumpy()[:3 - b.pad] for b in shuf])
    assert sorted(labels.tolist()) == sorted([i % 3 for i in range(7)])
    parts = [mx.image.ImageIter(num_parts=2, part_index=p, **kw).seq for p in (0, 1)]
    assert parts == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(MXNetError, match="3 channels"):
        mx.image.ImageIter(batch_size=2, data_shape=(1, 8, 8), path_imgrec=REC)
    with pytest.raises(MXNetError, match="path_imgidx"):
        mx.image.ImageIter(shuffle=True, batch_size=2, data_shape=(3, 8, 8), path_imgrec=REC)


def test_imageiter_from_lists(tmp_path):
    imgs = [_img(10, 12, s) for s in range(3)]
    for i, a in enumerate(imgs):
        (tmp_path / f"{i}.png").write_bytes(_png(a))
    (tmp_path / "x.lst").write_text("".join(f"{i}\t{i * 2}.0\t{i}.png\n" for i in range(3)))
    it = mx.image.ImageIter(batch_size=3, data_shape=(3, 10, 12), path_imglist=str(tmp_path / "x.lst"),
                            path_root=str(tmp_path))
    batch = next(it)
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [0, 2, 4])
    np.testing.assert_array_equal(batch.data[0].asnumpy()[1], imgs[1].transpose(2, 0, 1))
    it = mx.image.ImageIter(batch_size=2, data_shape=(3, 10, 12), label_width=2, path_root=str(tmp_path),
                            imglist=[[1.0, 2.0, "0.png"], [3.0, 4.0, "1.png"]])
    np.testing.assert_array_equal(next(it).label[0].asnumpy(), [[1, 2], [3, 4]])


def test_image_image_module_path():
    """`mx.img.image` is MXNet's module path of the same functions."""
    import jbind.image.image as module_path
    assert module_path is mx.image.image
    assert mx.img.image.imread is mx.image.imread and mx.img.image.imresize is mx.image.imresize
    with pytest.raises(mx.base.MXNetError, match="cannot read"):
        mx.img.image.imread("/no/such/dir/picture.jpg")
