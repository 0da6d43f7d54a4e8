"""mx.io.ImageRecordIter: batches against MXNet 1.9.1's (tests/golden/image/reciter.npz, made by
make_image_golden.py), options, partitions, shuffling, labels and the augmentation pipeline."""
import os

import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError
from jbind.image import _cv
from jbind.recordio import IRHeader

pytest.importorskip("PIL")

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "image")
REC, IDX = os.path.join(GOLDEN, "images.rec"), os.path.join(GOLDEN, "images.idx")
SETTINGS = {
    "plain": dict(data_shape=(3, 28, 28), batch_size=3),
    "norm": dict(data_shape=(3, 24, 20), batch_size=4, mean_r=123.68, mean_g=116.779, mean_b=103.939,
                 std_r=58.4, std_g=57.1, std_b=57.4, scale=0.5),
    "resize": dict(data_shape=(3, 24, 24), batch_size=4, resize=26),
    "pad": dict(data_shape=(3, 32, 32), batch_size=5, pad=3, fill_value=127),
    "small": dict(data_shape=(3, 56, 56), batch_size=4),
    "mirror": dict(data_shape=(3, 20, 20), batch_size=4, mirror=True, label_width=1),
}


def _it(**kw):
    kw.setdefault("path_imgrec", REC)
    kw.setdefault("preprocess_threads", 2)
    return mx.io.ImageRecordIter(**kw)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_batches_match_mxnet(name):
    """Two epochs, reset between them as fit does: same labels, pads and order (round_batch
    wraps to the start, the next epoch begins after the wrapped records); pixels within two
    levels of OpenCV's (two chained resizes for 'small')."""
    z = np.load(os.path.join(GOLDEN, "reciter.npz"))
    kw = SETTINGS[name]
    it = _it(path_imgidx=IDX, **kw)
    scale = kw.get("scale", 1.0) / min(kw.get("std_r", 1.0), kw.get("std_g", 1.0), kw.get("std_b", 1.0))
    for e in range(2):
        if e:
            it.reset()
        n = 0
        for b, batch in enumerate(it):
            key = f"{name}_e{e}_b{b}"
            assert batch.data[0].shape == z[key + "_data"].shape and batch.data[0].dtype == np.float32
            assert np.abs(batch.data[0].asnumpy() - z[key + "_data"]).max() <= 2 * scale + 1e-4
            np.testing.assert_array_equal(batch.label[0].asnumpy(), z[key + "_label"])
            assert batch.pad == int(z[key + "_pad"])
            n += 1
        assert f"{name}_e{e}_b{n}_data" not in z


def test_without_index_and_descs():
    it = _it(data_shape=(3, 20, 20), batch_size=7, data_name="img", label_name="lab")
    assert it.provide_data[0].name == "img" and it.provide_data[0].shape == (7, 3, 20, 20)
    assert it.provide_label[0].name == "lab" and it.provide_label[0].shape == (7,)
    batch = next(it)
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [i % 3 for i in range(7)])
    np.testing.assert_array_equal(batch.index, np.arange(7))
    with pytest.raises(StopIteration):
        next(it)


def test_round_batch_false_pads_with_zeros():
    it = _it(data_shape=(3, 20, 20), batch_size=5, round_batch=False)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 3]
    assert (batches[1].data[0].asnumpy()[2:] == 0).all()
    it.reset()
    assert [b.pad for b in it] == [0, 3]  # no wrap: every epoch starts at the first record


def test_partitions_and_shuffle():
    ids = []
    for part in range(3):
        it = _it(path_imgidx=IDX, data_shape=(3, 20, 20), batch_size=1, num_parts=3, part_index=part)
        ids.append([int(b.index[0]) for b in it])
    assert sorted(sum(ids, [])) == list(range(7)) and all(ids)
    it = _it(path_imgidx=IDX, data_shape=(3, 20, 20), batch_size=7, shuffle=True, seed=1)
    orders = []
    for _ in range(3):
        orders.append(next(it).index.tolist())
        it.reset()
    assert all(sorted(o) == list(range(7)) for o in orders) and len({tuple(o) for o in orders}) > 1
    with pytest.raises(MXNetError, match="part_index"):
        _it(data_shape=(3, 20, 20), batch_size=1, num_parts=2, part_index=2)


def test_options_are_checked():
    with pytest.raises(MXNetError, match=r"unknown option\(s\) \['rand_flip'\]"):
        _it(data_shape=(3, 20, 20), batch_size=2, rand_flip=True)
    with pytest.raises(MXNetError, match=r"\['shuffle_chunk_size'\] are not supported"):
        _it(data_shape=(3, 20, 20), batch_size=2, shuffle_chunk_size=4)
    with pytest.raises(MXNetError, match="mean_img .* must hold one array of shape"):
        _it(data_shape=(3, 20, 20), batch_size=2, mean_img=os.path.join(GOLDEN, "mean.bin"))
    with pytest.raises(MXNetError, match="no such file"):
        _it(path_imgrec="/nonexistent.rec", data_shape=(3, 20, 20), batch_size=2)
    with pytest.raises(MXNetError, match="inter_method"):
        _it(data_shape=(3, 20, 20), batch_size=2, inter_method=7)
    with pytest.raises(MXNetError, match="random_resized_crop conflicts"):
        _it(data_shape=(3, 20, 20), batch_size=2, random_resized_crop=True, rand_crop=True)
    with pytest.raises(MXNetError, match="label_width is 2"):
        _it(data_shape=(3, 20, 20), batch_size=2, label_width=2)
    it = _it(data_shape=(3, 20, 20), batch_size=2, verbose=False, prefetch_buffer=2, ctx="cpu")
    assert next(it).data[0].shape == (2, 3, 20, 20)


def test_gray_uint8_and_multi_labels(tmp_path):
    rs = np.random.RandomState(0)
    imgs = [rs.randint(0, 256, (10, 12, 3)).astype(np.uint8) for _ in range(3)]
    rec = mx.recordio.MXRecordIO(str(tmp_path / "m.rec"), "w")
    for i, a in enumerate(imgs):
        rec.write(mx.recordio.pack_img(IRHeader(0, np.array([i, 10 + i], np.float32), i, 0), a[..., ::-1],
                                       img_fmt=".png"))
    rec.close()
    kw = dict(path_imgrec=str(tmp_path / "m.rec"), batch_size=3, label_width=2)
    raw = next(mx.io.ImageRecordIter(data_shape=(3, 10, 12), dtype="uint8", **kw))
    assert raw.data[0].dtype == np.uint8
    np.testing.assert_array_equal(next(mx.io.ImageRecordUInt8Iter(data_shape=(3, 10, 12), **kw)).data[0].asnumpy(),
                                  raw.data[0].asnumpy())
    assert next(mx.io.ImageRecordInt8Iter(data_shape=(3, 10, 12), **kw)).data[0].dtype == np.int8
    np.testing.assert_array_equal(raw.data[0].asnumpy(), np.stack(imgs).transpose(0, 3, 1, 2))  # RGB
    np.testing.assert_array_equal(raw.label[0].asnumpy(), [[0, 10], [1, 11], [2, 12]])
    gray = next(mx.io.ImageRecordIter(data_shape=(1, 10, 12), **kw)).data[0].asnumpy()
    expect = np.stack(imgs).astype(np.float32) @ np.array([0.299, 0.587, 0.114])
    assert gray.shape == (3, 1, 10, 12) and np.abs(gray[:, 0] - expect).max() <= 1.0
    i8 = next(mx.io.ImageRecordIter(data_shape=(3, 10, 12), dtype="int8", mean_r=128, mean_g=128, mean_b=128,
                                    **kw)).data[0].asnumpy()
    np.testing.assert_array_equal(i8, np.clip(np.stack(imgs).transpose(0, 3, 1, 2).astype(int) - 128, -128, 127))


def test_random_augmentations_shapes_and_seed_aug():
    kw = dict(path_imgidx=IDX, data_shape=(3, 24, 24), batch_size=7, rand_crop=True, rand_mirror=True,
              max_rotate_angle=15, max_shear_ratio=0.1, max_aspect_ratio=0.2, max_random_scale=1.2,
              min_random_scale=0.9, pad=2, brightness=0.2, contrast=0.2, saturation=0.2, pca_noise=0.1,
              random_h=20, random_s=20, random_l=20, mean_r=120, mean_g=120, mean_b=120, std_r=60, std_g=60,
              std_b=60)
    a = next(_it(seed_aug=3, preprocess_threads=1, **kw)).data[0].asnumpy()
    b = next(_it(seed_aug=3, preprocess_threads=3, **kw)).data[0].asnumpy()
    c = next(_it(seed_aug=4, **kw)).data[0].asnumpy()
    assert a.shape == (7, 3, 24, 24) and np.isfinite(a).all() and np.abs(a).max() <= 255 / 60
    np.testing.assert_array_equal(a, b)  # seed_aug: each image's draws depend on its position only
    assert not np.array_equal(a, c)
    for extra in (dict(random_resized_crop=True, min_random_area=0.3, max_aspect_ratio=1.3, min_aspect_ratio=0.7),
                  dict(min_crop_size=20, max_crop_size=28, rand_crop=True), dict(resize=30, inter_method=10)):
        batch = next(_it(path_imgidx=IDX, data_shape=(3, 16, 16), batch_size=7, **extra))
        assert batch.data[0].shape == (7, 3, 16, 16)


def test_mirror_flips_and_hls_roundtrip():
    plain = next(_it(data_shape=(3, 20, 20), batch_size=2)).data[0].asnumpy()
    flipped = next(_it(data_shape=(3, 20, 20), batch_size=2, mirror=True)).data[0].asnumpy()
    np.testing.assert_array_equal(flipped, plain[..., ::-1])
    rgb = np.random.RandomState(1).randint(0, 256, (16, 16, 3)).astype(np.uint8)
    # 8-bit hue is in steps of 2 degrees: up to 4.25 levels lost in a saturated colour
    assert np.abs(_cv.hls_to_rgb(_cv.rgb_to_hls(rgb)).astype(int) - rgb).max() <= 5
    import colorsys
    h, l, s = colorsys.rgb_to_hls(*(rgb[0, 0] / 255.0))
    np.testing.assert_allclose(_cv.rgb_to_hls(rgb)[0, 0], [h * 180, l * 255, s * 255], atol=1)


def test_warp_affine_identity_and_shift():
    img = np.random.RandomState(2).randint(0, 256, (6, 7, 3)).astype(np.uint8)
    np.testing.assert_array_equal(_cv.warp_affine(img, np.array([[1.0, 0, 0], [0, 1.0, 0]]), 7, 6, 0), img)
    shifted = _cv.warp_affine(img, np.array([[1.0, 0, 2], [0, 1.0, 1]]), 7, 6, 9)
    np.testing.assert_array_equal(shifted[1:, 2:], img[:-1, :-2])
    assert (shifted[0] == 9).all() and (shifted[:, :2] == 9).all()


def test_mean_img_is_made_and_used_as_mxnet(tmp_path):
    """Without the file, the mean of the processed images is computed and saved (MXNet's mean.bin
    within float rounding); with it, each pixel loses its own mean, before the mirror."""
    z = np.load(os.path.join(GOLDEN, "meanimg.npz"))
    path = str(tmp_path / "mean.bin")
    it = _it(data_shape=(3, 24, 24), batch_size=4, mean_img=path)
    ref = mx.nd.load(os.path.join(GOLDEN, "mean.bin"))["mean_img"].asnumpy()
    np.testing.assert_allclose(mx.nd.load(path)["mean_img"].asnumpy(), ref, atol=1e-4)
    for b, batch in enumerate(it):
        np.testing.assert_allclose(batch.data[0].asnumpy(), z[f"create_b{b}_data"], atol=1e-4)
    it = _it(data_shape=(3, 24, 24), batch_size=4, mean_img=os.path.join(GOLDEN, "mean.bin"), mirror=True, scale=0.5)
    for b, batch in enumerate(it):
        np.testing.assert_allclose(batch.data[0].asnumpy(), z[f"load_b{b}_data"], atol=1e-4)
