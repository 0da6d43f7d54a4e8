"""contrib.SparseEmbedding: MXNet's Embedding with a row_sparse weight gradient; here the same
op as Embedding, its weight gradient dense (the same numbers)."""
import numpy as np

import jbind as mx


def test_sparse_embedding_computes_what_embedding_does():
    rng = np.random.default_rng(0)
    idx = np.array([[0, 3], [3, 1]], np.float32)
    w = rng.normal(size=(4, 2)).astype(np.float32)
    head = rng.normal(size=(2, 2, 2)).astype(np.float32)
    results = []
    for make in (mx.sym.Embedding, mx.sym.contrib.SparseEmbedding):
        weight = mx.sym.Variable("w", stype="row_sparse")
        out = make(data=mx.sym.Variable("d"), weight=weight, input_dim=4, output_dim=2, name="embed")
        exe = out.simple_bind(mx.cpu(), d=(2, 2), grad_req={"d": "null", "w": "write"})
        y = exe.forward(is_train=True, d=idx, w=w)[0].asnumpy()
        exe.backward(mx.nd.array(head))
        results.append((y, exe.grad_dict["w"].asnumpy()))
    np.testing.assert_array_equal(results[1][0], w[idx.astype(int)])
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_allclose(results[1][1], results[0][1])
    assert results[1][1][2].tolist() == [0, 0]  # row 2 is never looked up
    nd = mx.nd.contrib.SparseEmbedding(mx.nd.array([1, 3]), mx.nd.array(w), input_dim=4, output_dim=2)
    np.testing.assert_array_equal(nd.asnumpy(), w[[1, 3]])
