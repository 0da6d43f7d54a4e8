"""mx.autograd against the symbolic executor (each op's gradient defined once), indexing
and assignment while recording, get_symbol, errors, and the backward's compile cache."""
import numpy as np
import pytest

import jbind as mx
from jbind import autograd as ag
from jbind.autograd import _backward
from jbind.base import MXNetError

RNG = np.random.default_rng(1)


def close(a, b, tol=1e-4):
    np.testing.assert_allclose(np.asarray(a.asnumpy() if hasattr(a, "asnumpy") else a),
                               np.asarray(b.asnumpy() if hasattr(b, "asnumpy") else b), rtol=tol, atol=tol)


# (op, {input: shape}, params, inputs with no gradient)
OPS = [
    ("FullyConnected", {"data": (4, 6), "weight": (3, 6), "bias": (3,)}, {"num_hidden": 3}, ()),
    ("Convolution", {"data": (2, 3, 6, 6), "weight": (4, 3, 3, 3), "bias": (4,)},
     {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1)}, ()),
    ("Pooling", {"data": (2, 3, 6, 6)}, {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}, ()),
    ("Activation", {"data": (3, 5)}, {"act_type": "tanh"}, ()),
    ("LeakyReLU", {"data": (3, 5)}, {"act_type": "elu", "slope": 0.3}, ()),
    ("softmax", {"data": (3, 5)}, {"axis": -1}, ()),
    ("log_softmax", {"data": (3, 5)}, {"axis": 0}, ()),
    ("sum", {"data": (3, 4, 5)}, {"axis": (0, 2), "keepdims": True}, ()),
    ("dot", {"lhs": (3, 4), "rhs": (5, 4)}, {"transpose_b": True}, ()),
    ("broadcast_mul", {"lhs": (3, 1, 4), "rhs": (1, 5, 4)}, {}, ()),
    ("transpose", {"data": (2, 3, 4)}, {"axes": (2, 0, 1)}, ()),
    ("LayerNorm", {"data": (3, 6), "gamma": (6,), "beta": (6,)}, {}, ()),
    ("BatchNorm", {"data": (4, 3, 2, 2), "gamma": (3,), "beta": (3,), "moving_mean": (3,), "moving_var": (3,)},
     {"fix_gamma": False}, ("moving_mean", "moving_var")),
    ("SoftmaxOutput", {"data": (4, 5), "label": (4,)}, {"grad_scale": 2.0, "normalization": "batch"}, ("label",)),
    ("LinearRegressionOutput", {"data": (4, 3), "label": (4, 3)}, {}, ("label",)),
    ("Embedding", {"data": (2, 3), "weight": (7, 4)}, {"input_dim": 7, "output_dim": 4}, ("data",)),
]


def _values(shapes, no_grad):
    vals = {}
    for name, shape in shapes.items():
        if name in ("label", "data") and name in no_grad:  # class ids
            vals[name] = RNG.integers(0, shape[-1] if name == "label" and len(shape) > 1 else 4, shape).astype(np.float32)
        elif name == "moving_var":
            vals[name] = RNG.uniform(0.5, 2, shape).astype(np.float32)
        else:
            vals[name] = RNG.normal(size=shape).astype(np.float32)
    return vals


@pytest.mark.parametrize("op,shapes,params,no_grad", OPS, ids=[o[0] for o in OPS])
def test_gradient_equals_the_symbolic_executors(op, shapes, params, no_grad):
    vals = _values(shapes, no_grad)
    sym = getattr(mx.sym, op)(**{k: mx.sym.Variable(k) for k in shapes}, **params, name="op")
    req = {k: "null" if k in no_grad else "write" for k in sym.list_arguments()}
    exe = sym.simple_bind(mx.cpu(), grad_req=req, **{k: shapes[k] for k in sym.list_arguments()})
    for k in sym.list_arguments():
        exe.arg_dict[k][:] = vals[k]
    for k in sym.list_auxiliary_states():
        exe.aux_dict[k][:] = vals[k]
    out = exe.forward(is_train=True)[0]
    head = RNG.normal(size=out.shape).astype(np.float32)
    exe.backward([mx.nd.array(head)])

    arrays = {k: mx.nd.array(vals[k]) for k in shapes}
    for k in shapes:
        if k not in no_grad:
            arrays[k].attach_grad()
    with ag.record():
        y = getattr(mx.nd, op)(**arrays, **params)
    close(y, out)
    y.backward(mx.nd.array(head))
    for k in shapes:
        if k not in no_grad:
            close(arrays[k].grad, exe.grad_dict[k])


# --- indexing and assignment while recording -----------------------------------------------
INDEXES = [1, -1, slice(1, 3), (slice(None), 2), (Ellipsis, 1), (None, 0), (slice(None, None, -2), slice(1, None)),
           np.array([0, 2, 2]), (np.array([0, 1]), np.array([3, 0])), (slice(None), [1, 1, 0]), [2, 0]]


@pytest.mark.parametrize("index", INDEXES, ids=[repr(i) for i in INDEXES])
def test_indexing_under_record_scatters_the_gradient(index):
    base = RNG.normal(size=(3, 4)).astype(np.float32)
    x = mx.nd.array(base)
    x.attach_grad()
    with ag.record():
        y = x[index]
    np.testing.assert_array_equal(y.asnumpy(), base[index])
    head = RNG.normal(size=y.shape).astype(np.float32)
    y.backward(mx.nd.array(head))
    want = np.zeros_like(base)
    np.add.at(want, index, head)
    close(x.grad, want, 1e-5)


def test_integer_variables_get_integer_gradients():
    a = mx.nd.arange(0, 12, dtype="int32")
    a.attach_grad()
    with ag.record():
        top = mx.nd.topk(a, k=3, ret_typ="value")
        part = a.reshape((3, 4))[1:, [0, 0, 2]]
    ag.backward([top, part], [mx.nd.array([5, 6, 7], dtype="int32"), None])
    want = np.zeros(12, np.int32)
    want[[11, 10, 9]] = [5, 6, 7]
    np.add.at(want, [4, 4, 6, 8, 8, 10], 1)
    assert a.grad.dtype == np.int32
    np.testing.assert_array_equal(a.grad.asnumpy(), want)


def test_a_single_element_comes_back_with_shape_1_as_mxnet():
    x = mx.nd.array(np.arange(6).reshape(2, 3))
    x.attach_grad()
    with ag.record():
        y = x[1, 2]
    assert y.shape == (1,) and y.asscalar() == 5
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[0, 0, 0], [0, 0, 1]])


def test_whole_array_assignment_records_a_copy_and_partial_writes_are_refused():
    x, y = mx.nd.zeros((2, 3)), mx.nd.ones((2, 3))
    y.attach_grad()
    with ag.record():
        x[:] = y * 3
        z = x * 2
    z.backward()
    close(y.grad, np.full((2, 3), 6.0))
    with ag.record():
        with pytest.raises(MXNetError, match="Inplace operations"):
            x[0] = y[0]
        with pytest.raises(MXNetError, match="Inplace operations"):
            x[(np.array([0, 1]),)] = y
        with pytest.raises(MXNetError, match="Inplace operations"):
            x += 1
        w = mx.nd.zeros((2, 3))
        w[None] = y * 2  # a[None] = v is a whole-array assignment, allowed as in MXNet
        close(w, np.full((2, 3), 2.0))
        with pytest.raises(MXNetError, match="Inplace operations"):
            y[:] = 2  # a marked variable is in the graph
        with pytest.raises(MXNetError, match="Inplace operations"):
            mx.nd.exp(y, out=y)


def test_reshape_astype_copy_concat_and_fluent_methods_are_recorded():
    x = mx.nd.array(RNG.normal(size=(2, 3)))
    x.attach_grad()
    with ag.record():
        y = mx.nd.concat(x.reshape((3, 2)).T, x.copy().astype("float16").astype("float32"), dim=0)
        z = y.sin().sum()
    z.backward()
    xv = x.asnumpy()
    g = np.cos(xv.reshape(3, 2).T).T.reshape(2, 3) + np.cos(xv.astype(np.float16).astype(np.float32))
    close(x.grad, g, 2e-3)


# --- get_symbol ----------------------------------------------------------------------------
def test_get_symbol_has_the_marked_variables_as_arguments_and_computes_the_same():
    x, z = mx.nd.array([1.5, 2.0]), mx.nd.array([3.0, -1.0])
    x.attach_grad()
    with ag.record():
        y1 = x * x + 2 * x - 1
    assert len(ag.get_symbol(y1).list_arguments()) == 1
    z.attach_grad()
    with ag.record():
        y2 = mx.nd.FullyConnected(x.reshape((1, 2)), z.reshape((1, 2)), num_hidden=1, no_bias=True) * x
    s = ag.get_symbol(y2)
    assert s.list_arguments() == ["var0", "var1"]
    ex = s.bind(mx.cpu(), {"var0": x, "var1": z})
    close(ex.forward()[0], y2)


def test_get_symbol_keeps_aux_states_apart_from_arguments():
    x = mx.nd.array(RNG.normal(size=(4, 3)))
    x.attach_grad()
    gamma, beta, mean, var = mx.nd.ones(3), mx.nd.zeros(3), mx.nd.zeros(3), mx.nd.ones(3)  # beta, mean: one buffer
    with ag.record():
        y = mx.nd.Dropout(mx.nd.BatchNorm(x, gamma, beta, mean, var), p=0.2)
        a, b = mx.nd.split(y, num_outputs=2, axis=0)
        out = a * b
    s = ag.get_symbol(out)
    assert s.list_arguments() == ["var0", "const0", "const1"]
    assert s.list_auxiliary_states() == ["const2", "const3"]
    assert s.infer_shape(var0=(4, 3))[1] == [(2, 3)]


def test_get_symbol_refuses_function_nodes():
    class Ident(ag.Function):
        def forward(self, a):
            return a * 1

        def backward(self, da):
            return da

    x = mx.nd.ones((2,))
    x.attach_grad()
    with ag.record():
        y = Ident()(x)
    with pytest.raises(MXNetError, match="Function Ident"):
        ag.get_symbol(y)


# --- errors ----------------------------------------------------------------------------------
def test_errors_name_what_is_wrong():
    x = mx.nd.ones((2,))
    with pytest.raises(MXNetError, match="not in a computational graph"):
        (x * 2).backward()
    with ag.record():
        y = x * 2
    with pytest.raises(MXNetError, match="no inputs in the computation graph that require gradients"):
        y.backward()
    w = mx.nd.ones((2,))
    w.attach_grad()
    with ag.record():
        y = w * 2
    with pytest.raises(MXNetError, match="variable 0 .* is not marked"):
        ag.grad(y, [x])
    with pytest.raises(MXNetError, match="head gradient 0 has shape"):
        y.backward(mx.nd.ones((3,)))
    with pytest.raises(MXNetError, match="grad_req 'sum'"):
        x.attach_grad(grad_req="sum")


# --- cost --------------------------------------------------------------------------------------
def test_a_repeated_computation_compiles_its_backward_once():
    w = mx.nd.array(RNG.normal(size=(3, 4)))
    w.attach_grad(grad_req="add")
    before = len(_backward._COMPILED)
    total = np.zeros((3, 4), np.float32)
    for step in range(4):
        x = mx.nd.array(RNG.normal(size=(5, 4)))
        with ag.record():
            # the step's weight is an array (a constant input): a scalar would be an op parameter
            loss = mx.nd.FullyConnected(x, w, num_hidden=3, no_bias=True).square().mean() * mx.nd.array([step + 1])
        loss.backward()
        xv = x.asnumpy()
        total += (step + 1) * 2 * ((xv @ w.asnumpy().T).T @ xv) / 15
    assert len(_backward._COMPILED) == before + 1
    close(w.grad, total)


def test_arrays_made_outside_record_carry_nothing():
    x = mx.nd.ones((2,)) * 3 + 1
    y = x[0:1].reshape((1,)).astype("float32")
    assert not hasattr(x, "_ag") and not hasattr(y, "_ag")
    assert x.grad is None


def test_record_call_puts_a_whole_jax_function_on_the_tape():
    import jax.numpy as jnp
    from jbind.autograd._tape import record_call
    x, w = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 4.0])
    x.attach_grad()
    w.attach_grad()

    def fn(ins):
        a, b = ins
        return [jnp.sin(a) * b, a + b]
    with ag.record():
        outs = [mx.nd.NDArray(o) for o in fn([x.data, w.data])]
        record_call(fn, ("test-sin-mul", 1), [x, w], outs, "test block")
        loss = outs[0] + outs[1] * 2
    loss.backward()
    close(x.grad, np.cos([1.0, 2.0]) * [3.0, 4.0] + 2)
    close(w.grad, np.sin([1.0, 2.0]) + 2)


def test_heads_on_two_devices_are_differentiated_each_on_its_own():
    ws = [mx.nd.ones((3,), ctx=mx.cpu(i)) for i in range(2)]
    for w in ws:
        w.attach_grad()
    xs = [mx.nd.array([1.0, 2.0, 3.0], ctx=mx.cpu(i)) * (i + 1) for i in range(2)]
    with ag.record():
        losses = [(w * x).sum() for w, x in zip(ws, xs)]
    gs = ag.grad(losses, ws, retain_graph=True)
    ag.backward(losses)
    for i, (w, g) in enumerate(zip(ws, gs)):
        assert w.grad.context == mx.cpu(i) and g.context == mx.cpu(i)
        close(w.grad, [(i + 1) * 1.0, (i + 1) * 2.0, (i + 1) * 3.0])
        close(g, w.grad)
