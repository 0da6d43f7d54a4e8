"""NDArray views: which results share data with their array (as MXNet's do), and that a
write through any of them reaches every other holder."""
import ctypes
import itertools
import pickle

import numpy as np
import pytest

import jbind as mx
from jbind.ndarray import _view


def _grid(*shape):
    return mx.nd.array(np.arange(np.prod(shape)).reshape(shape))


def test_row_and_range_views_write_through_both_ways():
    x = _grid(3, 4)
    row, rows = x[1], x[1:3]
    row[:] = -1
    assert x.asnumpy()[1].tolist() == [-1] * 4 and rows.asnumpy()[0].tolist() == [-1] * 4
    x[2, 3] = 50                      # a write into the base shows in views taken before it
    assert rows.asnumpy()[1, 3] == 50
    rows += 1                         # in-place arithmetic on a view updates the base
    assert x.asnumpy()[1:].tolist() == [[0] * 4, [9, 10, 11, 51]]
    assert x.asnumpy()[0].tolist() == [0, 1, 2, 3]


def test_reshape_is_a_view_and_views_of_views_share_the_root():
    x = _grid(2, 3, 4)
    flat = x.reshape((-1,))
    part = flat.reshape((6, 4))[2:4]
    part[:] = 0
    expect = np.arange(24).reshape(2, 3, 4)
    expect.reshape(6, 4)[2:4] = 0
    np.testing.assert_array_equal(x.asnumpy(), expect)
    np.testing.assert_array_equal(flat.asnumpy(), expect.reshape(-1))


def test_inplace_flatten_expand_dims_squeeze_share_and_plain_forms_copy():
    x = _grid(2, 1, 3)
    views = [x.flatten(inplace=True), x.expand_dims(1, inplace=True), x.squeeze(inplace=True),
             x.squeeze(axis=1, inplace=True)]
    copies = [x.flatten(), x.expand_dims(1), x.squeeze()]
    assert [v.shape for v in views] == [(2, 3), (2, 1, 1, 3), (2, 3), (2, 3)]
    x[:] = 7
    assert all((v.asnumpy() == 7).all() for v in views)
    assert all(c.asnumpy().sum() == 15 for c in copies)
    with pytest.raises(mx.base.MXNetError, match="size 2, not 1"):
        x.squeeze(axis=0, inplace=True)


def test_a_view_of_a_single_element_has_shape_one():
    x = _grid(2, 3)
    one = x[1, 2]
    assert one.shape == (1,) and mx.nd.arange(4)[2].shape == (1,)
    one[:] = 99
    assert x.asnumpy()[1, 2] == 99


def test_strided_and_partial_inner_slices_are_copies():
    x = _grid(4, 4)
    for key in [(slice(None), 1), slice(None, None, 2), (slice(0, 2), slice(1, 3))]:
        x[key][:] = -5
    assert (x.asnumpy() >= 0).all()
    x[(slice(0, 1), slice(1, 3))][:] = -5   # one row's part is contiguous: a view
    assert x.asnumpy()[0].tolist() == [0, -5, -5, 3]


def test_contiguity_rule_matches_numpy():
    shape = (3, 4, 5)
    slices = [slice(None), slice(1), slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(2, 3)]
    for key in itertools.product(slices, repeat=3):
        want = np.empty(shape)[key].flags.c_contiguous
        assert mx.nd.NDArray._basic_indexing_slice_is_contiguous(key, shape) == want, key


def test_every_contiguous_index_writes_into_its_base():
    x = _grid(2, 3, 4)
    ref = np.arange(24.0).reshape(2, 3, 4)
    for n, key in enumerate([1, (0, 2), (1, slice(1, 3)), (slice(None), slice(None), slice(None)),
                             (1, Ellipsis), (None, 1, 2, slice(0, 2)), (0, slice(2, 3), 1)]):
        v = x[key]
        np.testing.assert_array_equal(v.asnumpy().reshape(-1), ref[key].reshape(-1))
        v[:] = -n
        ref[key] = -n
        np.testing.assert_array_equal(x.asnumpy(), ref)


def test_iteration_yields_row_views():
    x = _grid(3, 2)
    for i, row in enumerate(x):
        row[:] = i * 10
    assert x.asnumpy().tolist() == [[0, 0], [10, 10], [20, 20]]


def test_out_and_copyto_write_through_a_view():
    x = mx.nd.zeros((2, 3))
    mx.nd.ones((3,)).copyto(x[1])
    mx.nd.elemwise_add(mx.nd.ones((3,)), mx.nd.ones((3,)), out=x[0])
    assert x.asnumpy().tolist() == [[2, 2, 2], [1, 1, 1]]


def test_detach_shares_data():
    x = mx.nd.ones((2, 2))
    d = x.detach()
    d[0] = 5
    assert x.asnumpy()[0].tolist() == [5, 5]


def test_reading_an_unchanged_view_reuses_its_value():
    x = _grid(4, 3)
    v = x[1:3]
    first = v.data
    assert v.data is first                  # nothing changed: no new slice
    x[0] = 1                                # the base changed: the view reads it again
    assert v.data is not first and v.asnumpy().tolist() == [[3, 4, 5], [6, 7, 8]]


def test_a_view_that_no_longer_fits_its_base_says_so():
    x = _grid(4, 3)
    v = x[3]
    x._data = mx.nd.zeros((2, 3)).data  # what rebinding a handle to a smaller array does
    with pytest.raises(mx.base.MXNetError, match="no longer fits"):
        v.asnumpy()


def test_views_keep_the_context_label_and_record_as_ops_under_autograd():
    x = mx.nd.ones((2, 3), ctx=mx.cpu(5))
    assert x[1].context == mx.cpu(5) and x.reshape((3, 2)).context == mx.cpu(5)
    w = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    w.attach_grad()
    with mx.autograd.record():
        y = (w[1] * w.reshape((4,))[:2]).sum()
    y.backward()
    assert w.grad.asnumpy().tolist() == [[3, 4], [1, 2]]


def test_pickle_in_mxnet_form():
    x = _grid(2, 3)
    state = x.__getstate__()
    assert set(state) == {"handle"} and isinstance(state["handle"], bytearray)
    back = pickle.loads(pickle.dumps(x[1]))     # a view pickles as its values
    assert type(back) is mx.nd.NDArray and back.asnumpy().tolist() == [3, 4, 5]
    y = mx.nd.zeros((1,))
    y.__setstate__(state)
    assert y.asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(mx.base.MXNetError, match="must be bytes"):
        y.__setstate__({"handle": "not bytes"})


def test_from_numpy_zero_copy_shares_with_the_numpy_array():
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    m = mx.nd.from_numpy(a)
    with pytest.raises(ValueError):
        a[0, 0] = 1                 # numpy may no longer write it
    m[2, 1] = 100
    m.reshape((-1,))[0] = -1
    assert a.tolist() == [[-1, 1], [2, 3], [4, 100]]
    c = mx.nd.from_numpy(np.ones(2), zero_copy=False)
    c[:] = 3
    with pytest.raises(ValueError, match="C-contiguous"):
        mx.nd.from_numpy(np.ones((2, 3)).T)


class _Consumer:
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_dlpack_writer_writes_are_seen_by_the_array():
    x = mx.nd.array([1.0, 2.0, 3.0])
    shared = x
    y = mx.nd.array(x)                      # may hold the same jax buffer
    mem = np.from_dlpack(_Consumer(x.to_dlpack_for_write()))
    ctypes.c_float.from_address(mem.ctypes.data + 4).value = 42.0   # a writer through the capsule
    assert shared.asnumpy().tolist() == [1, 42, 3] and y.asnumpy().tolist() == [1, 2, 3]
    assert mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(x)).asnumpy().tolist() == [1, 42, 3]
    with pytest.raises(mx.base.MXNetError, match="view of part"):
        x[1:].to_dlpack_for_write()


def test_cpu_shared_and_pinned_contexts_are_reported():
    for ctx in (mx.Context("cpu_shared", 0), mx.cpu_pinned(0)):
        a = mx.nd.zeros((1, 2), ctx=ctx)
        assert a.context == ctx and (a + 1).context == ctx


def test_empty_array_is_false():
    assert not mx.nd.array([]) and not mx.nd.zeros((1,)) and mx.nd.ones((1,))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.nd.ones((2,)))


def test_window_helpers():
    assert _view.basic_index((1, Ellipsis), (2, 3, 4)) == ((slice(1, 2), slice(None), slice(None)), (3, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        _view.basic_index(5, (3,))
    assert not _view.is_basic([0, 1]) and not _view.is_basic(True) and _view.is_basic((None, 0))



def test_an_array_made_from_a_handle_shares_the_elements_of_the_array_that_gave_it():
    a = mx.nd.array([[1, 2], [3, 4]])
    ro = mx.nd.NDArray(ctypes.cast(a, mx.base.NDArrayHandle), writable=False)  # a monitor callback's idiom
    assert not ro.writable and a.writable
    with pytest.raises(mx.base.MXNetError, match="writable=False"):
        ro[:] = 0
    rw = mx.nd.NDArray(a.handle)          # writable: a write through it shows in `a`
    rw[0] = 9
    np.testing.assert_array_equal(a.asnumpy(), [[9, 9], [3, 4]])
    np.testing.assert_array_equal(ro.asnumpy(), [[9, 9], [3, 4]])
    view = a[1]
    row = mx.nd.NDArray(ctypes.cast(view, mx.base.NDArrayHandle))   # a view's handle: the same window
    row[:] = 7
    np.testing.assert_array_equal(a.asnumpy(), [[9, 9], [7, 7]])


def test_a_handle_of_no_live_array_is_refused():
    a = mx.nd.ones((2,))
    h = a.handle.value
    del a
    with pytest.raises(mx.base.MXNetError, match="not the handle of a live NDArray"):
        mx.nd.NDArray(ctypes.c_void_p(h))
