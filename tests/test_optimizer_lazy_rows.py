"""Lazy updates: a row_sparse gradient updates only its rows (SGD and Adam with
lazy_update, the default; Ftrl always), as MXNet 1.9.1's sparse kernels."""
import numpy as np
import pytest

import jbind as mx


def _rsp(dense):
    return mx.nd.array(np.asarray(dense, np.float32)).tostype("row_sparse")


def test_sgd_momentum_leaves_absent_rows_alone():
    w = mx.nd.ones((2, 1))
    opt = mx.optimizer.SGD(learning_rate=1.0, momentum=0.5, wd=0.1)
    state = opt.create_state(0, w)
    opt.update(0, w, _rsp([[1], [1]]), state)        # both rows: w = 1 - (1 + 0.1) = -0.1
    opt.update(0, w, _rsp([[0], [1]]), state)        # row 1 only
    got = w.asnumpy().ravel()
    assert got[0] == pytest.approx(-0.1)             # untouched: no decay, no momentum
    mom1 = 0.5 * -1.1 - (1 + 0.1 * -0.1)
    assert got[1] == pytest.approx(-0.1 + mom1)
    assert state.asnumpy().ravel()[0] == pytest.approx(-1.1)


def test_sgd_without_lazy_update_touches_every_row():
    w = mx.nd.ones((2, 1))
    opt = mx.optimizer.SGD(learning_rate=1.0, momentum=0.5, lazy_update=False)
    state = opt.create_state(0, w)
    opt.update(0, w, _rsp([[1], [1]]), state)
    opt.update(0, w, _rsp([[0], [1]]), state)
    assert w.asnumpy().ravel().tolist() == [-0.5, -1.5]


@pytest.mark.parametrize("make", [lambda: mx.optimizer.Adam(learning_rate=0.1, wd=0.01),
                                  lambda: mx.optimizer.Ftrl(learning_rate=0.1, wd=0.01)])
def test_rows_updated_equal_a_dense_update_of_those_rows(make):
    rng = np.random.default_rng(0)
    w0 = rng.uniform(0.5, 1, (5, 3)).astype(np.float32)
    g = np.zeros((5, 3), np.float32)
    g[[1, 3]] = rng.uniform(-1, 1, (2, 3))
    lazy, dense = make(), make()
    wl, wd_ = mx.nd.array(w0), mx.nd.array(w0[[1, 3]])
    sl, sd = lazy.create_state(0, wl), dense.create_state(0, wd_)
    lazy.update(0, wl, _rsp(g), sl)
    dense.update(0, wd_, mx.nd.array(g[[1, 3]]), sd)
    got = wl.asnumpy()
    np.testing.assert_array_equal(got[[0, 2, 4]], w0[[0, 2, 4]])
    np.testing.assert_allclose(got[[1, 3]], wd_.asnumpy(), rtol=1e-6)
