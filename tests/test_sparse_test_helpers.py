"""MXNet's sparse test helpers: `rand_sparse_ndarray(rsp_indices=...)`, `create_sparse_array(_zd)`."""
import numpy as np
import pytest

from jbind.test_utils import create_sparse_array, create_sparse_array_zd, rand_sparse_ndarray


def test_rand_sparse_ndarray_holds_exactly_the_given_rows():
    arr, (data, idx) = rand_sparse_ndarray((7, 2), "row_sparse", rsp_indices=np.array([2, 5]))
    assert list(idx) == [2, 5] and data.shape == (2, 2)
    dense = arr.asnumpy()
    assert (dense[[2, 5]] != 0).all() and (np.delete(dense, [2, 5], axis=0) == 0).all()


def test_create_sparse_array_sorts_the_rows():
    arr = create_sparse_array((6, 3), "row_sparse", rsp_indices=[4, 0, 3])
    assert list(arr.indices.asnumpy()) == [0, 3, 4]


def test_create_sparse_array_zd_row_sparse_uses_only_the_rows():
    assert create_sparse_array_zd((5, 2), "row_sparse", 0.9).data.shape == (0, 2)
    assert list(create_sparse_array_zd((5, 2), "row_sparse", 0.9, rsp_indices=[1]).indices.asnumpy()) == [1]
    with pytest.raises(AssertionError):
        create_sparse_array_zd((2, 2), "row_sparse", 0.5, rsp_indices=[0, 1, 1])


def test_create_sparse_array_zd_csr_keeps_the_density():
    assert create_sparse_array_zd((4, 4), "csr", 0.0).data.shape == (0,)
    assert create_sparse_array_zd((4, 4), "csr", 1.0).data.shape == (16,)
