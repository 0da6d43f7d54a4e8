import numpy as np
import pytest

import jbind as mx
from jbind.module.executor_group import DataParallelExecutorGroup

CTX2 = [mx.cpu(0), mx.cpu(1)]
PARAMS = ["fc_weight", "fc_bias"]


class Batch:
    def __init__(self, data, label=None):
        self.data, self.label = data, label


def net(hidden=4):
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=hidden, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def group(sym=None, batch=8, ctxs=CTX2, workload=(1, 1), shared=None, **kw):
    return DataParallelExecutorGroup(sym if sym is not None else net(), ctxs, list(workload), [("data", (batch, 3))],
                                     [("softmax_label", (batch,))], PARAMS, True, False, shared_group=shared, **kw)


def _init(g, rng):
    params = {"fc_weight": mx.nd.array(rng.uniform(-1, 1, (4, 3))), "fc_bias": mx.nd.array(rng.uniform(-1, 1, 4))}
    g.set_params(params, {})
    return params


@pytest.mark.parametrize("workload", [(1, 1), (3, 1)])
def test_split_gradients_equal_one_device(workload):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1, 1, (8, 3)), rng.integers(0, 4, 8).astype(np.float32)
    one = group(ctxs=[mx.cpu(0)], workload=(1,))
    two = group(workload=workload)
    params = _init(one, rng)
    two.set_params(params, {})
    for g in (one, two):
        g.forward(Batch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
        g.backward()
    np.testing.assert_allclose(two.get_outputs()[0].asnumpy(), one.get_outputs()[0].asnumpy(), rtol=1e-6)
    for name, g1, g2 in zip(PARAMS, one.grad_arrays, two.grad_arrays):
        summed = sum(g.asnumpy() for g in g2)
        np.testing.assert_allclose(summed, g1[0].asnumpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert [s.stop - s.start for s in two.slices] == ([4, 4] if workload == (1, 1) else [6, 2])


def test_shared_group_shares_the_store_and_handles():
    g0 = group()
    g1 = group(batch=6, shared=g0)
    assert g1.store is g0.store
    for a, b in zip(g0.param_arrays, g1.param_arrays):
        assert all(x is y for x, y in zip(a, b))
    g0.param_arrays[0][1][:] = np.ones((4, 3))
    np.testing.assert_array_equal(g1.execs[1].arg_dict["fc_weight"].asnumpy(), 1)
    assert g1.execs[0].arg_dict["data"] is not g0.execs[0].arg_dict["data"]


def test_creating_cached_buckets_compiles_nothing_and_allocates_no_parameters():
    g0 = group()
    _init(g0, np.random.default_rng(1))
    for b in (8, 6, 4):
        g = group(batch=b, shared=g0)
        g.forward(Batch([mx.nd.ones((b, 3))], [mx.nd.zeros((b,))]), is_train=True)
        g.backward()
    before = g0.store.nbytes()
    with mx.compile.count_compiles() as n:
        for i in range(30):
            g = group(batch=(8, 6, 4)[i % 3], shared=g0)
            g.forward(Batch([mx.nd.ones((g.batch_size, 3))], [mx.nd.zeros((g.batch_size,))]), is_train=True)
            g.backward()
    assert n() == 0
    assert g0.store.nbytes() == before == 2 * (4 * 3 + 4) * 4  # one copy per device


def test_tnc_layout_splits_on_axis_1():
    data = mx.sym.Variable("data")
    out = mx.sym.sum(data, axis=0, name="s")  # (T, N, C) -> (N, C)
    desc = mx.io.DataDesc("data", (5, 4, 2), layout="TNC") if hasattr(mx, "io") else None
    if desc is None:
        from jbind.module.slicing import _Desc
        desc = _Desc("data", (5, 4, 2), "float32", "TNC")
    g = DataParallelExecutorGroup(out, CTX2, [1, 1], [desc], [], [], False, False)
    assert g.batch_size == 4 and g.execs[0].arg_dict["data"].shape == (5, 2, 2)
    x = np.arange(40, dtype=np.float32).reshape(5, 4, 2)
    g.forward(Batch([mx.nd.array(x)]), is_train=False)
    np.testing.assert_allclose(g.get_outputs()[0].asnumpy(), x.sum(axis=0))


def test_get_params_averages_devices():
    g = group()
    g.param_arrays[1][0][:] = np.full(4, 1.0)
    g.param_arrays[1][1][:] = np.full(4, 3.0)
    arg, aux = {}, {}
    g.get_params(arg, aux)
    np.testing.assert_allclose(arg["fc_bias"].asnumpy(), 2.0)
    assert arg["fc_bias"].context == mx.cpu(0)


def test_fixed_params_get_no_gradient_and_metric_update():
    g = group(fixed_param_names=["fc_bias"])
    assert g.grad_req["fc_bias"] == "null" and g.grad_req["fc_weight"] == "write"
    assert g.execs[0].grad_dict.get("fc_bias") is None

    class Count:
        def __init__(self):
            self.calls = []

        def update(self, labels, preds):
            self.calls.append((labels[0].shape, preds[0].shape))
    g.forward(Batch([mx.nd.ones((8, 3))], [mx.nd.zeros((8,))]), is_train=False)
    m = Count()
    g.update_metric(m, [mx.nd.zeros((8,))])
    assert m.calls == [((4,), (4, 4)), ((4,), (4, 4))]


def test_reshape_keeps_parameters():
    g = group()
    w = g.param_arrays[0][0]
    g.reshape([("data", (4, 3))], [("softmax_label", (4,))])
    assert g.batch_size == 4 and g.param_arrays[0][0] is w


def test_errors():
    with pytest.raises(mx.base.MXNetError, match=r"parameter 'fc_weight' is shared with shape \(4, 3\).*\(5, 3\)"):
        group(sym=net(hidden=5), shared=group())
    with pytest.raises(mx.base.MXNetError, match=r"param_names \['nope'\] are not arguments"):
        DataParallelExecutorGroup(net(), CTX2, [1, 1], [("data", (8, 3))], [("softmax_label", (8,))],
                                  ["nope"], True, False)
    with pytest.raises(mx.base.MXNetError, match="3 entries for 2 contexts"):
        group(workload=(1, 1, 1))
    with pytest.raises(mx.base.MXNetError, match="a batch of 1 cannot be split"):
        group(batch=1)


@pytest.mark.parametrize("spmd", [True, False])
@pytest.mark.parametrize("workload", [(1, 1), (1, 3)])
def test_outputs_and_head_gradients_follow_the_output_layout_attribute(spmd, workload):
    """An output whose __layout__ is 'TNC' is merged (and its head gradient split) on axis 1."""
    from jbind.module.spmd import set_spmd
    data = mx.sym.Variable("data")
    out = mx.sym.Activation(data * 3, act_type="relu", __layout__="TNC")
    desc = mx.io.DataDesc("data", (3, 4, 2), layout="TNC")
    old = set_spmd(spmd)
    try:
        g = DataParallelExecutorGroup(out, CTX2, list(workload), [desc], [], [], True, True)
        x = np.arange(24, dtype=np.float32).reshape(3, 4, 2) - 5
        g.forward(Batch([mx.nd.array(x)]), is_train=True)
        head = np.arange(24, dtype=np.float32).reshape(3, 4, 2)
        g.backward([mx.nd.array(head)])
        outs = g.get_outputs()[0].asnumpy()
        per_dev = [o.shape for o in g.get_outputs(merge_multi_context=False)[0]]
        grad = g.get_input_grads()[0].asnumpy()
    finally:
        set_spmd(old)
    split = 4 * workload[0] // sum(workload)
    assert per_dev == [(3, split, 2), (3, 4 - split, 2)]
    np.testing.assert_allclose(outs, np.maximum(3 * x, 0))
    np.testing.assert_allclose(grad, 3 * head * (x > 0))


def test_groups_made_with_a_shared_group_share_their_input_handles():
    """MXNet's shared_data_arrays: inputs and other non-parameter arguments are shared by name
    where shape and dtype agree; a different shape gets its own array."""
    def sym(extra):
        data = mx.sym.Variable("data")
        fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
        if extra:
            fc = fc + mx.sym.Variable("bonus")
        return mx.sym.SoftmaxOutput(fc, name="softmax")

    g1 = group(sym(False))
    assert [sorted(d) for d in g1.shared_data_arrays] == [["data", "softmax_label"]] * 2
    g2 = DataParallelExecutorGroup(sym(True), CTX2, [1, 1], [("data", (8, 3))], [("softmax_label", (8,))],
                                   PARAMS, True, False, shared_group=g1)
    assert g2.shared_data_arrays is g1.shared_data_arrays
    for i in range(2):
        assert sorted(g1.shared_data_arrays[i]) == ["bonus", "data", "softmax_label"]
        assert g2.execs[i].arg_dict["data"] is g1.execs[i].arg_dict["data"]
        assert g2.execs[i].arg_dict["fc_weight"] is g1.execs[i].arg_dict["fc_weight"]
        assert g2.grad_req["bonus"] == "null"  # not a parameter
    g3 = DataParallelExecutorGroup(sym(False), CTX2, [1, 1], [("data", (6, 3))], [("softmax_label", (6,))],
                                   PARAMS, True, False, shared_group=g1)
    assert g3.execs[0].arg_dict["data"].shape == (3, 3)
    assert g1.execs[0].arg_dict["data"].shape == (4, 3)  # g1's own handle is unchanged
