"""`mx.sym.sparse`: MXNet's sparse namespace holds every operator; jbind computes densely."""
import numpy as np

import jbind as mx


def test_sparse_namespace_builds_the_same_operators():
    a, b = mx.sym.Variable("a", stype="csr"), mx.sym.Variable("b", stype="row_sparse")
    out = mx.sym.sparse.dot(a, b)
    assert out.list_arguments() == ["a", "b"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.ones((3, 2), np.float32)
    exe = out.bind(mx.cpu(), {"a": mx.nd.array(x), "b": mx.nd.array(y)})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), x @ y)
    assert mx.sym.sparse.sin is not None and mx.sym.sparse.elemwise_add is not None
    import jbind.symbol.sparse as sparse_module   # importable as a module, as in MXNet
    assert sparse_module is mx.sym.sparse


def test_module_initializes_a_row_sparse_weight_densely():
    data = mx.sym.Variable("data", stype="csr")
    weight = mx.sym.Variable("w", shape=(4, 2), init=mx.init.Constant(3.0), stype="row_sparse")
    mod = mx.mod.Module(mx.sym.sparse.dot(data, weight), label_names=None)
    mod.bind(data_shapes=[("data", (5, 4))])
    mod.init_params()
    np.testing.assert_array_equal(mod.get_params()[0]["w"].asnumpy(), np.full((4, 2), 3.0, np.float32))
