"""NumPy-shape semantics: mx.np_shape / use_np_shape / is_np_shape / set_np_shape."""
import json
import threading

import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError


def test_switch_is_scoped_and_restored():
    assert not mx.is_np_shape()
    with mx.np_shape():
        assert mx.is_np_shape() and mx.util.is_np_shape()
        with mx.np_shape(False):
            assert not mx.is_np_shape()
        assert mx.is_np_shape()
    assert not mx.is_np_shape()
    assert mx.set_np_shape(True) is False
    assert mx.set_np_shape(False) is True


def test_switch_is_per_thread():
    seen = []
    with mx.np_shape():
        t = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
        t.start()
        t.join()
    assert seen == [False]


def test_decorator_keeps_name_and_turns_on():
    @mx.use_np_shape
    def f():
        """doc"""
        return mx.is_np_shape()
    assert f.__name__ == "f" and f.__doc__ == "doc"
    assert f() is True and not mx.is_np_shape()


def test_creation_of_scalars_and_zero_size_needs_np_shape():
    with pytest.raises(MXNetError, match="np_shape"):
        mx.nd.ones(shape=())
    with pytest.raises(MXNetError, match="np_shape"):
        mx.nd.zeros((3, 0))
    with mx.np_shape():
        assert mx.nd.ones(()).asnumpy() == 1
        assert mx.nd.zeros((3, 0, 2)).shape == (3, 0, 2)


def test_partial_inference_unknown_marks():
    y = mx.sym.transpose(mx.sym.Variable("x"), axes=(0, 2, 1))
    assert y.infer_shape_partial(x=(0, 3, 4))[1] == [(0, 4, 3)]
    assert mx.sym.sin(mx.sym.var("d")).infer_shape_partial() == ([()], [()], [])
    with mx.np_shape():
        assert y.infer_shape_partial(x=(-1, 3, 4))[1] == [(-1, 4, 3)]
        assert mx.sym.sin(mx.sym.var("d")).infer_shape_partial() == ([None], [None], [])
        v = mx.sym.var("v", shape=(-1, 5))
        assert (v * 2).infer_shape_partial()[1] == [(-1, 5)]
    with pytest.raises(MXNetError):
        y.infer_shape_partial(x=(-1, 3, 4))


def test_tojson_marks_np_shape_graphs():
    s = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3)
    assert "is_np_shape" not in json.loads(s.tojson())["attrs"]
    with mx.np_shape():
        attrs = json.loads(s.tojson())["attrs"]
    assert attrs["is_np_shape"] == ["int", 1] and "mxnet_version" in attrs
    assert mx.sym.load_json(s.tojson()).tojson() == s.tojson()


def test_zero_size_and_scalar_arrays_through_operators():
    with mx.np_shape():
        assert mx.nd.Concat(mx.nd.ones((0, 2)), mx.nd.ones((3, 2)), dim=0).shape == (3, 2)
        assert mx.nd.contrib.index_array(mx.nd.ones(())).shape == (0,)
        assert mx.nd.contrib.index_array(mx.nd.ones((0, 2))).shape == (0, 2, 2)


def test_min_max_of_an_empty_axis_is_an_error_but_sum_is_zero():
    # MXNet refuses max / min over a zero-size axis (no identity); sum gives 0.
    with mx.util.np_shape(True):
        a = mx.nd.zeros(shape=(5, 0))
        for f in (a.min, a.max):
            with pytest.raises(mx.base.MXNetError, match="empty axis"):
                f()
        np.testing.assert_array_equal(a.sum(axis=1).asnumpy(), np.zeros(5))
