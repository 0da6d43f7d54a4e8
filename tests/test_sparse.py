"""`mx.nd.sparse`: csr and row_sparse NDArrays, checked against numpy (and scipy) values."""
import pathlib

import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError

sp = mx.nd.sparse
RNG = np.random.default_rng(7)

M = np.array([[0, 1.5, 0, 0],
              [0, 0, 0, 0],
              [2, 0, 0, -3],
              [0, 0, 4, 0]], np.float32)


def test_csr_from_components_has_mxnets_attributes():
    a = sp.csr_matrix(([1.5, 2, -3, 4], [1, 0, 3, 2], [0, 1, 1, 3, 4]), shape=(4, 4))
    assert isinstance(a, sp.CSRNDArray) and isinstance(a, mx.nd.NDArray)
    assert a.stype == "csr" and a.shape == (4, 4) and a.dtype == np.float32
    np.testing.assert_array_equal(a.asnumpy(), M)
    np.testing.assert_array_equal(a.data.asnumpy(), [1.5, 2, -3, 4])
    np.testing.assert_array_equal(a.indices.asnumpy(), [1, 0, 3, 2])
    np.testing.assert_array_equal(a.indptr.asnumpy(), [0, 1, 1, 3, 4])
    assert "CSRNDArray 4x4" in repr(a)
    a.check_format()


def test_csr_from_dense_coo_scipy_and_shape():
    for src in (M, mx.nd.array(M)):
        a = sp.csr_matrix(src)
        np.testing.assert_array_equal(a.asnumpy(), M)
        np.testing.assert_array_equal(a.indptr.asnumpy(), [0, 1, 1, 3, 4])
    coo = sp.csr_matrix(([1.0, 2.0, 5.0], ([0, 2, 0], [1, 3, 1])), shape=(3, 4))  # a repeated coordinate sums
    want = np.zeros((3, 4), np.float32)
    want[0, 1], want[2, 3] = 6, 2
    np.testing.assert_array_equal(coo.asnumpy(), want)
    scipy_sparse = pytest.importorskip("scipy.sparse")
    s = sp.csr_matrix(scipy_sparse.csr_matrix(M.astype(np.int32)))
    assert s.dtype == np.int32
    np.testing.assert_array_equal(s.asnumpy(), M.astype(np.int32))
    np.testing.assert_array_equal(s.asscipy().toarray(), M.astype(np.int32))
    np.testing.assert_array_equal(sp.array(scipy_sparse.csr_matrix(M)).asnumpy(), M)
    z = sp.csr_matrix((2, 5))
    assert z.shape == (2, 5) and z.data.shape == (0,) and not z.asnumpy().any()


def test_row_sparse_construction_and_zeros():
    r = sp.row_sparse_array(([[1, 2], [3, 4]], [1, 3]), shape=(5, 2))
    assert isinstance(r, sp.RowSparseNDArray) and r.stype == "row_sparse"
    want = np.zeros((5, 2), np.float32)
    want[1], want[3] = [1, 2], [3, 4]
    np.testing.assert_array_equal(r.asnumpy(), want)
    np.testing.assert_array_equal(r.indices.asnumpy(), [1, 3])
    assert r.data.shape == (2, 2)
    assert sp.row_sparse_array(want.astype(np.float16)).dtype == np.float16  # a numpy source keeps its dtype
    assert sp.row_sparse_array(([[1, 2]], [0]), shape=(2, 2)).dtype == np.float32  # lists: float32
    for stype, cls in (("csr", sp.CSRNDArray), ("row_sparse", sp.RowSparseNDArray)):
        for z in (sp.zeros(stype, (3, 4)), mx.nd.zeros((3, 4), stype=stype), mx.nd.empty((3, 4), stype=stype)):
            assert isinstance(z, cls) and z.shape == (3, 4) and not z.asnumpy().any() and z.data.shape[0] == 0
    assert mx.nd.zeros((2,), stype="default").stype == "default"


def test_round_trips_keep_canonical_form():
    x = mx.nd.array(M)
    c, r = x.tostype("csr"), x.tostype("row_sparse")
    np.testing.assert_array_equal(r.indices.asnumpy(), [0, 2, 3])  # the all-zero row 1 is not stored
    np.testing.assert_array_equal(c.indices.asnumpy(), [1, 0, 3, 2])  # sorted within each row
    for a in (c, r, c.tostype("row_sparse"), r.tostype("csr"), c.tostype("default"), sp.cast_storage(r, "default"),
              mx.nd.cast_storage(c, "row_sparse")):
        np.testing.assert_array_equal(a.asnumpy(), M)
    assert c.tostype("default").stype == "default" and type(c.tostype("default")) is mx.nd.NDArray
    assert c.tostype("csr") is not c and c.copy().stype == "csr"
    big = RNG.random((6, 5)).astype(np.float32) * (RNG.random((6, 5)) < 0.4)
    for stype in ("csr", "row_sparse"):
        np.testing.assert_array_equal(mx.nd.array(big).tostype(stype).asnumpy(), big)
        rs = sp.rand_sparse((6, 5), stype, density=0.3, rng=RNG)
        assert rs.stype == stype
        np.testing.assert_array_equal(rs.tostype("default").tostype(stype).asnumpy(), rs.asnumpy())


def test_csr_row_slicing():
    c = sp.csr_matrix(M)
    for key, want in ((slice(1, 3), M[1:3]), (slice(None), M), (2, M[2:3]), (-1, M[3:4]), (slice(2, 10), M[2:])):
        s = c[key]
        assert s.stype == "csr"
        np.testing.assert_array_equal(s.asnumpy(), want)
        s.check_format()
    with pytest.raises(MXNetError, match="contiguous"):
        c[::2]
    with pytest.raises(MXNetError, match="one row or a slice"):
        c[1, 2]
    with pytest.raises(IndexError):
        c[4]


def test_dot_against_numpy():
    c = sp.csr_matrix(M)
    d = RNG.normal(size=(4, 3)).astype(np.float32)
    out = sp.dot(c, mx.nd.array(d))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), M @ d, rtol=1e-5, atol=1e-6)
    t = sp.dot(c, mx.nd.array(d), transpose_a=True)
    assert t.stype == "row_sparse"
    np.testing.assert_allclose(t.asnumpy(), M.T @ d, rtol=1e-5, atol=1e-6)
    w = sp.row_sparse_array((RNG.normal(size=(2, 3)).astype(np.float32), [0, 2]), shape=(4, 3))
    lhs = RNG.normal(size=(5, 4)).astype(np.float32)
    got = sp.dot(mx.nd.array(lhs), w)
    assert got.stype == "default"
    np.testing.assert_allclose(got.asnumpy(), lhs @ w.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mx.nd.dot(c, mx.nd.array(d)).asnumpy(), M @ d, rtol=1e-5, atol=1e-6)
    with pytest.raises(MXNetError, match="do not align"):
        sp.dot(c, mx.nd.ones((3, 2)))


def test_retain_elemwise_and_square_sum():
    r = mx.nd.array(M).tostype("row_sparse")
    kept = sp.retain(r, mx.nd.array([3, 1, 0]))
    assert kept.stype == "row_sparse"
    np.testing.assert_array_equal(kept.indices.asnumpy(), [0, 3])
    want = np.zeros_like(M)
    want[[0, 3]] = M[[0, 3]]
    np.testing.assert_array_equal(kept.asnumpy(), want)
    np.testing.assert_array_equal(r.retain([2]).asnumpy()[2], M[2])
    s = sp.elemwise_add(r, kept)
    assert s.stype == "row_sparse"
    np.testing.assert_array_equal(s.asnumpy(), M + want)
    assert sp.add(r, r).stype == "row_sparse" and (r + r).stype == "row_sparse"
    np.testing.assert_array_equal((r * 2).asnumpy(), M * 2)
    assert (r * 2).stype == (2 * r).stype == (r / 2).stype == "row_sparse"
    np.testing.assert_array_equal((2 * r).asnumpy(), M * 2)
    assert sp.row_sparse_array((4, 3)).shape == (4, 3)
    np.testing.assert_array_equal(sp.add(r, mx.nd.ones((1, 4))).asnumpy(), M + 1)  # broadcast: dense
    dense_sin = mx.nd.sin(sp.csr_matrix(M))  # an op without a sparse kernel: the dense value
    assert dense_sin.stype == "default"
    np.testing.assert_allclose(dense_sin.asnumpy(), np.sin(M), rtol=1e-6)
    q = sp.square_sum(r, axis=1, keepdims=True)
    assert q.stype == "row_sparse" and q.shape == (4, 1)
    np.testing.assert_allclose(q.asnumpy()[:, 0], (M ** 2).sum(1))
    np.testing.assert_allclose(sp.square_sum(r, axis=0).asnumpy(), (M ** 2).sum(0))
    np.testing.assert_allclose(sp.sum(sp.csr_matrix(M), axis=0).asnumpy(), M.sum(0))  # other ops: mx.nd's
    with pytest.raises(AttributeError):
        sp.no_such_op
    w = sp.where(mx.nd.array(M > 0), sp.csr_matrix(M), mx.nd.zeros((4, 4)))
    np.testing.assert_array_equal(w.asnumpy(), np.where(M > 0, M, 0))


def test_copy_copyto_and_assignment():
    r = mx.nd.array(M).tostype("row_sparse")
    on1 = r.copyto(mx.cpu(1))
    assert on1.stype == "row_sparse" and on1.context == mx.cpu(1)
    np.testing.assert_array_equal(on1.asnumpy(), M)
    target = sp.zeros("row_sparse", (4, 4))
    assert r.copyto(target) is target
    np.testing.assert_array_equal(target.asnumpy(), M)
    dense = mx.nd.zeros((4, 4))
    r.copyto(dense)
    np.testing.assert_array_equal(dense.asnumpy(), M)
    c = sp.zeros("csr", (4, 4))
    c[:] = M
    assert c.stype == "csr"
    np.testing.assert_array_equal(c.indptr.asnumpy(), [0, 1, 1, 3, 4])
    c += mx.nd.ones((4, 4))
    assert c.stype == "csr" and c.data.shape == (16,)
    np.testing.assert_array_equal(c.asnumpy(), M + 1)
    with pytest.raises(MXNetError, match="whole-array"):
        c[1:2] = 0
    with pytest.raises(MXNetError, match="shape"):
        c[:] = np.ones((2, 2))
    assert r.astype("float16").stype == "row_sparse" and r.astype("float16").dtype == np.float16


def test_embedding_sparse_grad_under_autograd():
    weight = RNG.normal(size=(6, 3)).astype(np.float32)
    idx = mx.nd.array([[1, 4], [4, 0]])
    grads = {}
    for stype in ("row_sparse", "default"):
        w = mx.nd.array(weight)
        w.attach_grad(stype=stype)
        assert w.grad.stype == stype
        with mx.autograd.record():
            y = mx.nd.Embedding(idx, w, input_dim=6, output_dim=3, sparse_grad=True)
            loss = (y * y).sum()
        loss.backward()
        grads[stype] = w.grad
    g = grads["row_sparse"]
    assert g.stype == "row_sparse"
    np.testing.assert_array_equal(g.indices.asnumpy(), [0, 1, 4])  # only the rows looked up
    np.testing.assert_allclose(g.asnumpy(), grads["default"].asnumpy(), rtol=1e-6)
    want = np.zeros_like(weight)
    np.add.at(want, np.array([1, 4, 4, 0]), 2 * weight[[1, 4, 4, 0]])
    np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-5)


def test_autograd_grad_stype_detach_and_sparse_inputs():
    for stype in ("csr", "row_sparse"):
        x = mx.nd.zeros((2, 2), stype=stype)
        x.attach_grad()
        assert x.grad.stype == stype and x.detach().stype == stype
    lhs = sp.csr_matrix(M)
    rhs = mx.nd.ones((4, 2))
    rhs.attach_grad(stype="row_sparse")
    with mx.autograd.record():
        y = sp.dot(lhs, rhs)
    y.backward()
    assert rhs.grad.stype == "row_sparse"
    np.testing.assert_allclose(rhs.grad.asnumpy(), M.T @ np.ones((4, 2)), rtol=1e-6)


def test_kvstore_row_sparse_pull_and_ignored_pull():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.array(M).tostype("row_sparse"))
    outs = [sp.zeros("row_sparse", (4, 4)), sp.zeros("row_sparse", (4, 4), ctx=mx.cpu(1))]
    kv.row_sparse_pull("w", out=outs, row_ids=[mx.nd.array([2, 0, 2]), mx.nd.array([3])])
    np.testing.assert_array_equal(outs[0].indices.asnumpy(), [0, 2])
    np.testing.assert_array_equal(outs[0].asnumpy()[[0, 2]], M[[0, 2]])
    assert not outs[0].asnumpy()[[1, 3]].any()
    np.testing.assert_array_equal(outs[1].asnumpy()[3], M[3])
    assert outs[1].context == mx.cpu(1)
    kv.push("w", [mx.nd.array(M).tostype("row_sparse"), mx.nd.array(M)])
    one = sp.zeros("row_sparse", (4, 4))
    kv.row_sparse_pull("w", out=one, row_ids=mx.nd.arange(4))
    np.testing.assert_array_equal(one.asnumpy(), 2 * M)
    kv.pull("w", out=one)  # row_sparse outs are skipped unless ignore_sparse=False
    np.testing.assert_array_equal(one.asnumpy(), 2 * M)
    kv.init("d", mx.nd.ones((4, 4)))
    kept = sp.zeros("row_sparse", (4, 4))
    kv.pull("d", out=kept)
    assert not kept.asnumpy().any()
    kv.pull("d", out=kept, ignore_sparse=False)
    np.testing.assert_array_equal(kept.asnumpy(), np.ones((4, 4)))
    with pytest.raises(MXNetError, match="row_sparse NDArray"):
        kv.row_sparse_pull("d", out=mx.nd.zeros((4, 4)), row_ids=mx.nd.array([1]))
    with pytest.raises(MXNetError, match="row_ids"):
        kv.row_sparse_pull("d", out=kept)


def test_ndarrayiter_batches_csr_rows():
    c = sp.csr_matrix(M)
    with pytest.raises(NotImplementedError, match="discard"):
        mx.io.NDArrayIter({"data": c}, np.arange(4), batch_size=3)
    it = mx.io.NDArrayIter({"data": c}, np.arange(4), batch_size=2, last_batch_handle="discard")
    batches = list(it)
    assert len(batches) == 2 and all(b.data[0].stype == "csr" for b in batches)
    np.testing.assert_array_equal(batches[1].data[0].asnumpy(), M[2:])


@pytest.mark.parametrize("make, match", [
    (lambda: sp.csr_matrix(([1.0], [0], [0, 2]), shape=(1, 2)), "bad indptr"),
    (lambda: sp.csr_matrix(([1.0, 2.0], [0, 1], [1, 2]), shape=(1, 2)), "bad indptr"),
    (lambda: sp.csr_matrix(([1.0, 2.0], [0, 1], [0, 2]), shape=(2, 2)), "bad indptr"),
    (lambda: sp.csr_matrix(([1.0, 2.0], [1, 0], [0, 2]), shape=(1, 2)), "sorted and unique"),
    (lambda: sp.csr_matrix(([1.0, 2.0], [1, 1], [0, 2]), shape=(1, 2)), "sorted and unique"),
    (lambda: sp.csr_matrix(([1.0], [5], [0, 1]), shape=(1, 2)), r"column indices must lie in \[0, 2\)"),
    (lambda: sp.csr_matrix(([1.0, 2.0], [0], [0, 1]), shape=(1, 2)), "data has 2 entries"),
    (lambda: sp.csr_matrix(M, shape=(2, 8)), "does not match"),
    (lambda: sp.csr_matrix(([1.0], ([0], [3])), shape=(2, 2)), "do not fit shape"),
    (lambda: sp.csr_matrix(np.ones(3)), "2-D"),
    (lambda: sp.row_sparse_array(([[1.0], [2.0]], [3, 1]), shape=(4, 1)), "sorted and unique"),
    (lambda: sp.row_sparse_array(([[1.0], [2.0]], [1, 1]), shape=(4, 1)), "sorted and unique"),
    (lambda: sp.row_sparse_array(([[1.0], [2.0]], [1, 2]), shape=(4, 3)), "does not fit"),
    (lambda: sp.row_sparse_array(([[1.0]], [7]), shape=(4, 1)), r"row indices must lie in \[0, 4\)"),
    (lambda: mx.nd.ones((2, 2)).tostype("coo"), "unknown storage type 'coo'"),
    (lambda: sp.zeros("csr", (2, 2, 2)), "2 dimensions"),
    (lambda: sp.retain(mx.nd.ones((2, 2)), [0]), "row_sparse"),
    (lambda: mx.nd.ones((2, 2)).tostype("row_sparse")[0], "only x"),
    (lambda: sp.array(np.ones((2, 2))), "mx.nd.array"),
])
def test_bad_input_is_mxneterror(make, match):
    with pytest.raises(MXNetError, match=match):
        make()


def test_sparse_params_file_from_mxnet_loads_and_saves_byte_exact(tmp_path):
    golden = pathlib.Path(__file__).resolve().parent / "golden" / "params" / "sparse.params"
    got = mx.nd.load(str(golden))  # MXNet 1.9.1's mx.nd.save of [[0, 1], [0, 0]] as csr and row_sparse
    assert got["csr"].stype == "csr" and got["rsp"].stype == "row_sparse"
    for v in got.values():
        np.testing.assert_array_equal(v.asnumpy(), [[0, 1], [0, 0]])
    out = tmp_path / "again.params"
    mx.nd.save(str(out), got)
    assert out.read_bytes() == golden.read_bytes()
    mixed = {"c": sp.csr_matrix(M), "r": mx.nd.array(M).tostype("row_sparse"), "d": mx.nd.array(M)}
    mx.nd.save(str(out), mixed)
    back = mx.nd.load(str(out))
    for k, v in mixed.items():
        assert back[k].stype == v.stype
        np.testing.assert_array_equal(back[k].asnumpy(), M)


def test_sparse_params_file_with_bad_components_is_refused(tmp_path):
    blob = bytearray((pathlib.Path(__file__).resolve().parent / "golden" / "params" / "sparse.params").read_bytes())
    # the csr's indptr [0, 1, 1] sits after its one float32 value; make it [0, 2, 1]
    at = blob.index(np.array([1.0], "<f4").tobytes()) + 4 + 8
    blob[at:at + 8] = np.array([2], "<i8").tobytes()
    with pytest.raises(MXNetError, match="csr.*bad indptr"):
        mx.nd.load_frombuffer(bytes(blob))


def test_sparse_arrays_compare_elementwise():
    """Comparisons on a sparse NDArray (NDArray's cast path) give a dense array of its dtype."""
    a = mx.nd.array([[0, 1], [2, 0]]).tostype("row_sparse")
    assert (a > 0.5).asnumpy().tolist() == [[0, 1], [1, 0]]
    assert (a == mx.nd.array([[0, 1], [0, 0]])).dtype == np.float32
