"""gluon.utils: splitting batches, global-norm clipping, sha1 checks (downloads: test_gluon_download.py)."""
import hashlib
import warnings

import numpy as np
import pytest

import jbind as mx
from jbind.gluon import utils


def test_split_data_even_uneven_and_other_axis():
    x = mx.nd.array(np.arange(20).reshape(10, 2))
    parts = utils.split_data(x, 3, even_split=False)
    assert [p.shape[0] for p in parts] == [4, 3, 3]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), x.asnumpy())
    with pytest.raises(ValueError, match="evenly split"):
        utils.split_data(x, 3)
    cols = utils.split_data(x, 2, batch_axis=1)
    assert [c.shape for c in cols] == [(10, 1), (10, 1)]


def test_split_and_load_places_each_part():
    parts = utils.split_and_load(np.ones((4, 3)), [mx.cpu(0), mx.cpu(1)])
    assert [p.context for p in parts] == [mx.cpu(0), mx.cpu(1)] and parts[1].shape == (2, 3)
    assert utils.split_and_load(mx.nd.ones((4, 3)), [mx.cpu(1)])[0].context == mx.cpu(1)


def test_clip_global_norm_scales_in_place():
    a, b = mx.nd.array([3.0, 0.0]), mx.nd.array([[4.0]])
    norm = utils.clip_global_norm([a, b], 1.0)
    assert norm == pytest.approx(5.0)
    np.testing.assert_allclose(a.asnumpy(), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(b.asnumpy(), [[0.8]], rtol=1e-5)
    c = mx.nd.array([0.1])
    assert utils.clip_global_norm([c], 1.0, check_isfinite=False).shape == (1,)
    np.testing.assert_allclose(c.asnumpy(), [0.1], rtol=1e-6)  # under the bound: unchanged
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        utils.clip_global_norm([mx.nd.array([np.inf])], 1.0)
    assert "nan or inf" in str(w[0].message)


def test_check_sha1(tmp_path):
    f = tmp_path / "blob.bin"
    f.write_bytes(b"jbind")
    assert utils.check_sha1(str(f), hashlib.sha1(b"jbind").hexdigest())
    assert not utils.check_sha1(str(f), "0" * 40)


def test_clip_global_norm_reaches_parameter_gradients():
    """The word LM's use: gradients of a block's parameters, clipped in place, seen by the Trainer."""
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize()
    x = mx.nd.array(np.arange(8, dtype=np.float32).reshape(2, 4))
    with mx.autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    grads = [p.grad() for p in net.collect_params().values()]
    before = [g.asnumpy().astype(np.float64) for g in grads]
    expect = np.sqrt(sum((b ** 2).sum() for b in before))
    assert utils.clip_global_norm(grads, 0.5) == pytest.approx(expect, rel=1e-5)
    for p, b in zip(net.collect_params().values(), before):
        np.testing.assert_allclose(p.grad().asnumpy(), b * 0.5 / expect, rtol=1e-5)
