"""Gluon with row_sparse storage: sparse Parameters living in the Trainer's kvstore, sparse
gradients, and the kvstore choices a Trainer makes (MXNet 1.9's rules, KVStoreBase stores)."""
import numpy as np
import pytest

import jbind as mx
from jbind import autograd, gluon

CTXS = [mx.cpu(0), mx.cpu(1)]


def _step_with_ones_grad(trainer, arrays):
    """Gradient 1 everywhere on each of `arrays` (y = w + 1), then one step of batch 1."""
    with autograd.record():
        ys = [w + 1 for w in arrays]
    autograd.backward(ys)
    trainer.step(1)


def test_row_sparse_parameter_is_read_through_its_trainer():
    p = gluon.Parameter("w", shape=(4, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init=mx.init.Constant(3.0), ctx=CTXS)
    rows = mx.nd.array([1, 3], ctx=mx.cpu(1))
    with pytest.raises(RuntimeError, match="row_sparse_data"):
        p.data()                                   # dense access to a sparse weight
    with pytest.raises(RuntimeError, match="no Trainer"):
        p.row_sparse_data(rows)
    gluon.Trainer([p], "sgd")
    got = p.row_sparse_data(rows)
    assert got.stype == "row_sparse" and got.context == mx.cpu(1) and got.shape == (4, 2)
    assert got.indices.asnumpy().tolist() == [1, 3]
    np.testing.assert_array_equal(got.asnumpy(), [[0, 0], [3, 3], [0, 0], [3, 3]])
    assert len(p.list_row_sparse_data(rows)) == 2
    assert p.grad(mx.cpu(0)).stype == "row_sparse"
    assert p.var().attr("__storage_type__") == "1"   # MXNet's id for row_sparse


def test_dense_parameter_refuses_row_sparse_access_and_bad_stypes_are_assertions():
    p = gluon.Parameter("w", shape=(2, 2))
    p.initialize()
    with pytest.raises(RuntimeError, match="data\\(\\) instead"):
        p.row_sparse_data(mx.nd.array([0]))
    with pytest.raises(AssertionError, match="stype"):
        gluon.Parameter("w", shape=(2, 2), stype="dense")
    with pytest.raises(AssertionError, match="grad_stype"):
        gluon.Parameter("w", shape=(2, 2), grad_stype="coo")


def test_sparse_weight_is_updated_in_the_kvstore_and_saved_whole(tmp_path):
    params = gluon.ParameterDict("net_")
    x = params.get("x", shape=(3, 1), stype="row_sparse", grad_stype="row_sparse")
    params.initialize(ctx=CTXS, init="zeros")
    tr = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore="local")
    all_rows = mx.nd.arange(0, 3)
    _step_with_ones_grad(tr, x.list_row_sparse_data(all_rows))
    assert tr._kvstore.type == "local" and tr._update_on_kvstore is True
    # the gradients of both contexts are summed: 0 - 0.1 * 2
    np.testing.assert_allclose(x.row_sparse_data(all_rows).asnumpy(), np.full((3, 1), -0.2), rtol=1e-6)
    params.save(str(tmp_path / "p.params"))
    dense = gluon.ParameterDict("net_")
    dense.get("x", shape=(3, 1))
    dense.load(str(tmp_path / "p.params"), ctx=mx.cpu(0))
    assert dense["net_x"].data().stype == "default"
    np.testing.assert_allclose(dense["net_x"].data().asnumpy(), np.full((3, 1), -0.2), rtol=1e-6)


def test_sparse_weight_refuses_update_off_the_kvstore_and_a_second_trainer():
    x = gluon.Parameter("x", shape=(2, 1), stype="row_sparse")
    x.initialize(ctx=[mx.cpu(0)], init="zeros")
    tr = gluon.Trainer([x], "sgd", update_on_kvstore=False)
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        tr._init_kvstore()
    with pytest.raises(RuntimeError, match="More than one trainer"):
        gluon.Trainer([x], "sgd")
    x._set_trainer(None)
    assert gluon.Trainer([x], "sgd") is x._trainer


def test_sparse_gradient_on_one_context_needs_no_kvstore():
    x = gluon.Parameter("x", shape=(4,), grad_stype="row_sparse")
    x.initialize(ctx=[mx.cpu(0)], init="zeros")
    tr = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5})
    _step_with_ones_grad(tr, x.list_data())
    assert tr._kvstore is None and tr._update_on_kvstore is None
    np.testing.assert_array_equal(x.data().asnumpy(), [-1, -1, -1, -1])


def test_embedding_sparse_grad_gives_a_row_sparse_gradient_hybridized_or_not():
    for hybrid in (False, True):
        emb = gluon.nn.Embedding(6, 2, sparse_grad=True)
        emb.initialize()
        if hybrid:
            emb.hybridize()
        with autograd.record():
            loss = emb(mx.nd.array([4, 1, 4])).sum()
        loss.backward()
        g = emb.weight.grad()
        assert g.stype == "row_sparse" and g.indices.asnumpy().tolist() == [1, 4]
        np.testing.assert_array_equal(g.asnumpy()[:, 0], [0, 1, 0, 0, 2, 0])
        emb.collect_params().zero_grad()
        assert not emb.weight.grad().asnumpy().any()


def test_sparse_embedding_in_a_block_trained_on_two_contexts():
    class Net(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.table = self.params.get("table", shape=(4, 3), stype="row_sparse", grad_stype="row_sparse")
                self.out = gluon.nn.Dense(2)       # deferred: waits in the Trainer until the first forward

        def forward(self, x):
            w = self.table.row_sparse_data(x)
            return self.out(mx.nd.Embedding(x, w, input_dim=4, output_dim=3, sparse_grad=True))

    net = Net(prefix="net_")
    net.initialize(mx.init.One(), ctx=CTXS)
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    xs = gluon.utils.split_and_load(mx.nd.array([[0, 2], [1, 2]]), CTXS)
    with autograd.record():
        ys = [net(x) for x in xs]
    autograd.backward(ys)
    tr.step(1)
    assert not tr._params_to_init
    w = net.table.row_sparse_data(mx.nd.arange(0, 4)).asnumpy()
    # each looked-up row gets gradient 2 (two outputs of weight 1) per lookup; row 2 twice
    np.testing.assert_array_equal(w[:, 0], [-1, -1, -3, 1])


def test_teststore_sums_in_process_and_the_trainer_updates():
    x = gluon.Parameter("x", shape=(3,))
    x.initialize(ctx=CTXS, init="zeros")
    kv = mx.kv.create("teststore")
    assert isinstance(kv, mx.kv.KVStoreBase) and not kv.is_capable("optimizer")
    tr = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5}, kvstore=kv)
    _step_with_ones_grad(tr, x.list_data())
    assert tr._kvstore is kv and tr._update_on_kvstore is False
    np.testing.assert_array_equal(x.data(mx.cpu(1)).asnumpy(), [-2, -2, -2])
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        gluon.Trainer([x], "sgd", kvstore=kv, update_on_kvstore=True)._init_kvstore()


def test_a_registered_kvstore_class_is_made_by_create_and_driven_by_the_trainer():
    calls = []

    @mx.kv.KVStoreBase.register
    class CountingStore(mx.kv.KVStoreBase):
        def broadcast(self, key, value, out, priority=0):
            calls.append("broadcast")
            for o in out:
                o[:] = value

        def pushpull(self, key, value, out=None, priority=0):
            calls.append("pushpull")
            total = sum(v.as_in_context(mx.cpu(0)) for v in value)
            for o in (value if out is None else out):
                o[:] = total

        def is_capable(self, capability):
            return False

        type = "countingstore"

    try:
        x = gluon.Parameter("x", shape=(2,))
        x.initialize(ctx=CTXS, init="zeros")
        tr = gluon.Trainer([x], "sgd", {"learning_rate": 0.5}, kvstore="countingstore")
        _step_with_ones_grad(tr, x.list_data())
        assert isinstance(tr._kvstore, CountingStore) and calls == ["broadcast", "pushpull"]
        np.testing.assert_array_equal(x.data(mx.cpu(0)).asnumpy(), [-1, -1])
    finally:
        del mx.kv.KVStoreBase.kv_registry["countingstore"]


def test_reset_arrays_zeroes_in_place():
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((4,), dtype="float16")
    mx.nd.reset_arrays(a, b, num_arrays=2)
    assert not a.asnumpy().any() and not b.asnumpy().any() and b.dtype == np.float16
    with pytest.raises(mx.MXNetError, match="num_arrays"):
        mx.nd.reset_arrays(a, num_arrays=2)


def test_a_hybrid_block_with_a_row_sparse_weight_refuses_to_run():
    params = gluon.ParameterDict("net_")
    params.get("weight", shape=(3, 3), stype="row_sparse")
    params.get("bias", shape=(3,))
    for hybrid in (False, True):
        net = gluon.nn.Dense(3, in_units=3, params=params)
        net.initialize(force_reinit=True)
        if hybrid:
            net.hybridize()
        with pytest.raises(RuntimeError, match="row_sparse"):
            net(mx.nd.ones((2, 3)))
    with pytest.raises(AssertionError, match="grad_stype"):
        params.get("bias", grad_stype="row_sparse")   # an existing parameter's attributes must match


def test_registering_a_kvstore_name_twice_warns_and_the_later_class_wins():
    class TwiceStore(mx.kv.KVStoreBase):
        pass
    first = mx.kv.KVStoreBase.register(TwiceStore)
    try:
        class TwiceStore(mx.kv.KVStoreBase):  # noqa: F811 - the same lower-case name on purpose
            pass
        with pytest.warns(UserWarning, match="overriding"):
            mx.kv.KVStoreBase.register(TwiceStore)
        assert type(mx.kv.create("TwiceStore")) is TwiceStore is not first
    finally:
        del mx.kv.KVStoreBase.kv_registry["twicestore"]
    with pytest.raises(TypeError):
        mx.kv.KVStoreBase.register(lambda: None)


def test_variable_stype_is_stored_as_mxnets_storage_id():
    from jbind.ndarray.ndarray import _STORAGE_TYPE_STR_TO_ID
    assert mx.sym.var("w", stype="csr").attr("__storage_type__") == str(_STORAGE_TYPE_STR_TO_ID["csr"]) == "2"
    with pytest.raises(mx.MXNetError, match="stype"):
        mx.sym.var("w", stype="sparse")


def test_contrib_sparse_embedding_reads_and_updates_only_looked_up_rows():
    from jbind.gluon.contrib.nn import SparseEmbedding
    layer = SparseEmbedding(6, 3, weight_initializer=mx.init.One())
    layer.initialize()
    assert layer.weight.stype == "row_sparse" and layer.weight.grad_stype == "row_sparse"
    trainer = mx.gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 0.5})
    ids = mx.nd.array([4, 1, 4])
    with mx.autograd.record():
        out = layer(ids)
    assert out.shape == (3, 3)
    out.backward()
    grad = layer.weight.grad()
    assert grad.stype == "row_sparse"
    np.testing.assert_array_equal(grad.asnumpy()[:, 0], [0, 1, 0, 0, 2, 0])
    trainer.step(1)
    rows = layer.weight.row_sparse_data(mx.nd.arange(6)).asnumpy()
    np.testing.assert_allclose(rows[:, 0], [1, 0.5, 1, 1, 0, 1])
    assert repr(layer) == "SparseEmbedding(6 -> 3, float32)"
