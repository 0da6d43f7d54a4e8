import numpy as np
import pytest

import jbind as mx


def net():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=50, name="pred")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def test_forward_and_backward_inference():
    arg, out, aux = net().infer_shape(data=(320, 200))
    assert arg == [(320, 200), (50, 200), (50,), (320,)]
    assert out == [(320, 50)] and aux == []
    # positional shapes follow list_arguments order
    assert net().infer_shape((320, 200))[0] == arg


def test_incomplete_warns_and_returns_none():
    with pytest.warns(UserWarning, match="Cannot decide shape for the following arguments"):
        assert net().infer_shape() == (None, None, None)
    arg, out, aux = net().infer_shape_partial()
    # as MXNet: FullyConnected infers nothing, not even its bias, before the data's shape
    assert arg == [(), (), (), ()] and out == [()]


def test_contradiction_names_op_node_argument_and_shapes():
    with pytest.raises(mx.base.MXNetError) as e:
        net().infer_shape(data=(320, 200), pred_weight=(50, 100))
    msg = str(e.value)
    assert "FullyConnected 'pred'" in msg and "pred_weight" in msg
    assert "(50, 100)" in msg and "(50, 200)" in msg
    assert "inputs: data=(320, 200)" in msg
    assert isinstance(e.value, RuntimeError)


def test_unknown_input_name():
    with pytest.raises(mx.base.MXNetError, match="'dat' is not an input"):
        net().infer_shape(dat=(3, 4))


def test_variable_shape_hint_and_conflict():
    data = mx.sym.Variable("data", shape=(4, 6))
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    assert fc.infer_shape()[0] == [(4, 6), (3, 6), (3,)]
    # a shape given to infer_shape replaces the declared one, as in MXNet
    assert fc.infer_shape(data=(5, 7))[0] == [(5, 7), (3, 7), (3,)]


def test_infer_type():
    arg, out, aux = net().infer_type(data="float32")
    assert arg == [np.float32] * 4 and out == [np.float32]
    with pytest.warns(UserWarning, match="Cannot decide type for the following arguments") as w:
        assert net().infer_type() == (None, None, None)
    assert "data: None" in str(w[0].message)
    emb = mx.sym.Embedding(mx.sym.Variable("tok"), input_dim=5, output_dim=2, name="e")
    assert emb.infer_type(tok="int32")[0] == [np.int32, np.float32]


def test_partial_batch_flows_backward_into_zeros_state():
    # mx.rnn's begin states are zeros with an unknown batch dimension
    x = mx.sym.Variable("x")
    h0 = mx.sym.FullyConnected(mx.sym.Variable("h", shape=(0, 4)), num_hidden=8, name="h2h")
    s = mx.sym.FullyConnected(x, num_hidden=8, name="i2h") + h0
    arg, out, _ = s.infer_shape(x=(3, 5))
    assert dict(zip(s.list_arguments(), arg))["h"] == (3, 4)


def test_simple_bind_lists_what_needs_a_shape():
    with pytest.raises(mx.base.MXNetError, match=r"cannot infer the shapes of data, pred_weight.*softmax_label"):
        net().simple_bind(mx.cpu())


def test_partial_inference_leaves_unknown_what_mxnet_leaves_unknown():
    x, y, c = mx.sym.var("x"), mx.sym.var("y"), mx.sym.var("c")
    # batch_dot: nothing before lhs's last dim and rhs's second-last dim are known
    bd = mx.sym.batch_dot(x, y)
    assert bd.infer_shape_partial(x=(0, 3, 4), y=(0, 4, 5))[1] == [(0, 3, 5)]
    assert bd.infer_shape_partial(x=(0, 3, 4), y=(0, 0, 5))[1] == [()]
    # where: nothing before the condition's whole shape is known
    w = mx.sym.where(c, x, y)
    assert w.infer_shape_partial(c=(0, 2), x=(0, 2), y=(0, 2))[1] == [()]
    assert w.infer_shape_partial(c=(3, 2), x=(0, 2))[0] == [(3, 2), (3, 2), (3, 2)]
    # dot fills what it can of a partial lhs
    assert mx.sym.dot(x, y).infer_shape_partial(x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]
    with mx.np_shape():
        assert bd.infer_shape_partial(x=(-1, 3, 4), y=(-1, -1, 5))[1] == [None]
        assert mx.sym.dot(x, y).infer_shape_partial(x=(-1, 3, 4), y=(4, 5))[1] == [(-1, 3, 5)]
