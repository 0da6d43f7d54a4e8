import json

import numpy as np
import pytest

import jbind as mx
from helpers import Case, check_op

V = mx.sym.Variable


def _masked_softmax(x, length, axis):
    keep = np.arange(x.shape[axis]).reshape([-1 if i == axis else 1 for i in range(x.ndim)]) < \
        np.expand_dims(length, axis)
    e = np.where(keep, np.exp(x - x.max(axis=axis, keepdims=True)), 0)
    total = e.sum(axis=axis, keepdims=True)
    return np.where(keep, e / np.where(total == 0, 1, total), 0)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _selu(x):
    return 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))


def _onehot(lab, k):
    return np.eye(k)[lab.astype(int)]


CASES = [
    Case("fc", lambda: mx.sym.FullyConnected(V("data"), num_hidden=4, name="fc"),
         lambda data, fc_weight, fc_bias: [data.reshape(data.shape[0], -1) @ fc_weight.T + fc_bias],
         {"data": (5, 2, 3)}),
    Case("fc_noflatten_nobias", lambda: mx.sym.FullyConnected(V("data"), num_hidden=3, no_bias=True,
                                                              flatten=False, name="fc"),
         lambda data, fc_weight: [data @ fc_weight.T], {"data": (2, 4, 5)}),
    Case("embedding", lambda: mx.sym.Embedding(V("data"), input_dim=7, output_dim=3, name="emb"),
         lambda data, emb_weight: [emb_weight[data.astype(int)]], {"data": (2, 5)},
         inputs={"data": ("int", 0, 7)}, no_grad=("data",)),
    *[Case(f"act_{t}", lambda t=t: mx.sym.Activation(V("data"), act_type=t, name="a"), f, {"data": (3, 4)})
      for t, f in [("relu", lambda data: [np.maximum(data, 0)]),
                   ("sigmoid", lambda data: [1 / (1 + np.exp(-data))]),
                   ("tanh", lambda data: [np.tanh(data)]),
                   ("softrelu", lambda data: [np.log1p(np.exp(data))]),
                   ("softsign", lambda data: [data / (1 + np.abs(data))])]],
    Case("leaky", lambda: mx.sym.LeakyReLU(V("data"), act_type="leaky", slope=0.1, name="l"),
         lambda data: [np.where(data > 0, data, 0.1 * data)], {"data": (3, 4)}),
    Case("elu", lambda: mx.sym.LeakyReLU(V("data"), act_type="elu", slope=0.5, name="l"),
         lambda data: [np.where(data > 0, data, 0.5 * np.expm1(data))], {"data": (3, 4)}),
    Case("prelu", lambda: mx.sym.LeakyReLU(V("data"), act_type="prelu", name="l"),
         lambda data, l_gamma: [np.where(data > 0, data, data * l_gamma[None, :, None])], {"data": (2, 3, 4)}),
    Case("selu", lambda: mx.sym.LeakyReLU(V("data"), act_type="selu", name="l"),
         lambda data: [_selu(data)], {"data": (3, 4)},
         # MXNet's selu gradient for x <= 0 is lambda * (out + alpha) (checked against MXNet 1.9.1)
         ref_grad=lambda data: {"data": np.where(data > 0, 1.0507009873554805,
                                                 1.0507009873554805 * (_selu(data) + 1.6732632423543772))},
         is_train=True),
    Case("gelu", lambda: mx.sym.LeakyReLU(V("data"), act_type="gelu", name="l"),
         lambda data: [0.5 * data * (1 + np.vectorize(__import__("math").erf)(data / np.sqrt(2)))],
         {"data": (3, 4)}),
    Case("dropout_infer", lambda: mx.sym.Dropout(V("data"), p=0.5, name="d"), lambda data: [data],
         {"data": (3, 4)}, grad=False),
    Case("softmax", lambda: mx.sym.softmax(V("data"), axis=1, temperature=2.0, name="s"),
         lambda data: [_softmax(data / 2.0, axis=1)], {"data": (2, 3, 4)}),
    Case("softmax_use_length", lambda: mx.sym.softmax(V("data"), V("length"), axis=1, use_length=True, name="s"),
         lambda data, length: [_masked_softmax(data, length, axis=1)], {"data": (2, 4, 3)},
         inputs={"length": ("int", 0, 5)}, no_grad=("length",), type_dict={"data": "float32", "length": "int32"}),
    Case("log_softmax", lambda: mx.sym.log_softmax(V("data"), name="s"),
         lambda data: [np.log(_softmax(data))], {"data": (3, 4)}),
    Case("softmax_activation", lambda: mx.sym.SoftmaxActivation(V("data"), name="s"),
         lambda data: [_softmax(data.reshape(2, -1)).reshape(data.shape)], {"data": (2, 3, 2)}),
    Case("softmax_activation_channel", lambda: mx.sym.SoftmaxActivation(V("data"), mode="channel", name="s"),
         lambda data: [_softmax(data, axis=1)], {"data": (2, 3, 2)}),
    Case("softmax_output", lambda: mx.sym.SoftmaxOutput(V("data"), name="sm", grad_scale=2.0),
         lambda data, sm_label: [_softmax(data)], {"data": (4, 5)}, inputs={"sm_label": ("int", 0, 5)},
         ref_grad=lambda data, sm_label: {"data": 2.0 * (_softmax(data) - _onehot(sm_label, 5))},
         no_grad=("sm_label",)),
    Case("softmax_output_ignore_valid",
         lambda: mx.sym.SoftmaxOutput(V("data"), name="sm", use_ignore=True, ignore_label=0,
                                      normalization="valid"),
         lambda data, sm_label: [_softmax(data)], {"data": (6, 3)},
         inputs={"sm_label": np.array([0, 1, 2, 0, 1, 2.0])},
         ref_grad=lambda data, sm_label: {"data": (_softmax(data) - _onehot(sm_label, 3))
                                          * (sm_label != 0)[:, None] / 4},
         no_grad=("sm_label",)),
    Case("linear_regression", lambda: mx.sym.LinearRegressionOutput(V("data"), name="lr", grad_scale=3.0),
         lambda data, lr_label: [data], {"data": (4, 2)},
         ref_grad=lambda data, lr_label: {"data": 3.0 * (data - lr_label) / 2}, no_grad=("lr_label",)),
    Case("logistic_regression", lambda: mx.sym.LogisticRegressionOutput(V("data"), name="lr"),
         lambda data, lr_label: [1 / (1 + np.exp(-data))], {"data": (4, 3)},
         ref_grad=lambda data, lr_label: {"data": (1 / (1 + np.exp(-data)) - lr_label) / 3},
         no_grad=("lr_label",)),
    Case("mae_regression", lambda: mx.sym.MAERegressionOutput(V("data"), name="lr"),
         lambda data, lr_label: [data], {"data": (4, 1)},
         ref_grad=lambda data, lr_label: {"data": np.sign(data - lr_label)}, no_grad=("lr_label",)),
    Case("MakeLoss", lambda: mx.sym.MakeLoss(mx.sym.square(V("data")), name="ml", normalization="batch"),
         lambda data: [data * data], {"data": (4, 3)},
         ref_grad=lambda data: {"data": 2 * data / 4}),
    Case("make_loss", lambda: mx.sym.make_loss(mx.sym.square(V("data")), name="ml"),
         lambda data: [data * data], {"data": (4, 3)},
         ref_grad=lambda data: {"data": 2 * data}),
    Case("batchnorm_train", lambda: mx.sym.BatchNorm(V("data"), fix_gamma=False, eps=1e-3, name="bn"),
         lambda data, bn_gamma, bn_beta: [(data - data.mean(axis=(0, 2), keepdims=True))
                                          / np.sqrt(data.var(axis=(0, 2), keepdims=True) + 1e-3)
                                          * bn_gamma[None, :, None] + bn_beta[None, :, None]],
         {"data": (4, 3, 2)}, is_train=True, grad_rtol=5e-3, grad_atol=1e-3),
    Case("block_grad", lambda: mx.sym.MakeLoss(mx.sym.BlockGrad(V("a"), name="bg") * V("b"), name="ml"),
         lambda a, b: [a * b], {"a": (3,), "b": (3,)},
         ref_grad=lambda a, b: {"a": np.zeros(3), "b": a}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op(case):
    check_op(case)


def test_dropout_training_drops_and_scales():
    x = mx.sym.Variable("x")
    exe = mx.sym.Dropout(x, p=0.5, name="d").simple_bind(mx.cpu(), x=(1000,), grad_req="null")
    exe.arg_dict["x"][:] = np.ones(1000)
    out = exe.forward(is_train=True)[0].asnumpy()
    assert set(np.unique(out)) <= {0.0, 2.0}
    assert 350 < (out == 0).sum() < 650
    again = exe.forward(is_train=True)[0].asnumpy()
    assert not np.array_equal(out, again), "each training step draws a fresh mask"
    np.testing.assert_array_equal(exe.forward(is_train=False)[0].asnumpy(), np.ones(1000))


def test_softmax_use_length_and_dtype_as_mxnet():
    """Values read from MXNet 1.9.1: rows masked past their length (a 0 length gives zeros),
    the gradient, `dtype`, and the refusals (float lengths; log_softmax has no length input)."""
    x = mx.nd.array(np.arange(12.0).reshape(2, 2, 3) / 4)
    length = mx.nd.array([[1, 2], [3, 0]], dtype="int32")
    np.testing.assert_allclose(mx.nd.softmax(x, length, use_length=True).asnumpy(), [
        [[1, 0, 0], [0.4378235, 0.5621765, 0]], [[0.25427523, 0.32649586, 0.41922897], [0, 0, 0]]], rtol=1e-6)
    sym = mx.sym.softmax(mx.sym.Variable("x"), mx.sym.Variable("l"), use_length=True, name="sm")
    assert sym.list_arguments() == ["x", "l"] and sym.infer_shape(x=(2, 2, 3))[0] == [(2, 2, 3), (2, 2)]
    exe = sym.simple_bind(mx.cpu(), x=(2, 2, 3), type_dict={"x": "float32", "l": "int32"},
                          grad_req={"x": "write", "l": "null"})
    exe.arg_dict["x"][:] = x
    exe.arg_dict["l"][:] = length
    exe.forward(is_train=True)
    exe.backward(mx.nd.array(np.arange(12.0).reshape(2, 2, 3)))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), [
        [[0, 0, 0], [-0.24613418, 0.24613398, 0]], [[-0.296219, -0.05385686, 0.3500754], [0, 0, 0]]], atol=1e-6)
    assert mx.sym.softmax(mx.sym.Variable("x"), dtype="float16").infer_type(x=np.float32)[1] == [np.float16]
    assert mx.nd.softmax(x.astype("float16"), dtype="float32").dtype == np.float32
    with pytest.raises(mx.base.DTypeError, match="length must hold integers"):
        mx.nd.softmax(x, mx.nd.array([[1, 2], [3, 0]]), use_length=True)
    with pytest.raises(mx.base.ParamError, match="log_softmax takes no length input"):
        mx.sym.log_softmax(mx.sym.Variable("x"), use_length=True)


def test_make_loss_is_its_own_op_as_in_mxnet():
    """MXNet 1.9.1: `make_loss` is not `MakeLoss`: its node is 'make_loss' in the JSON and its
    output `<name>_loss`; the gradient is ones whatever the head gradient."""
    s = mx.sym.make_loss(V("x") * 2, name="ml")
    assert s.list_outputs() == ["ml_loss"]
    assert [n["op"] for n in json.loads(s.tojson())["nodes"]] == ["null", "_mul_scalar", "make_loss"]
    assert mx.sym.load_json(s.tojson()).list_outputs() == ["ml_loss"]
    exe = s.simple_bind(mx.cpu(), x=(2,))
    exe.arg_dict["x"][:] = np.array([1.0, 3.0])
    np.testing.assert_array_equal(exe.forward(is_train=True)[0].asnumpy(), [2.0, 6.0])
    exe.backward(mx.nd.array([5.0, 7.0]))
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [2.0, 2.0])


def test_softmax_float16_is_computed_in_float32():
    # MXNet (MXNET_SAFE_ACCUMULATION) sums float16 softmax in float32: the gradient of
    # sum(softmax(x)) is then zero to float16's resolution, not float16 rounding noise.
    x = mx.nd.array(np.random.RandomState(0).uniform(size=(4, 500))).astype("float16")
    x.attach_grad()
    for op in (mx.nd.softmax, mx.nd.softmin, mx.nd.log_softmax):
        with mx.autograd.record():
            y = op(x, axis=-1)
        y.backward()
        assert y.dtype == np.float16 and x.grad.dtype == np.float16
        if op is not mx.nd.log_softmax:
            assert np.abs(x.grad.asnumpy()).max() < 1e-5, op


def test_integer_argument_gradient_is_written_as_zeros():
    # grad_req 'write' on an integer input (softmax's length) leaves zeros, as MXNet's backward.
    sym = mx.sym.softmax(mx.sym.Variable("x"), mx.sym.Variable("l"), use_length=True, axis=1)
    lgrad = mx.nd.array([[3, -2]], dtype="int32")
    exe = sym.bind(mx.cpu(), args={"x": mx.nd.ones((1, 3, 2)), "l": mx.nd.array([[1, 3]], dtype="int32")},
                   args_grad={"x": mx.nd.ones((1, 3, 2)), "l": lgrad})
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((1, 3, 2)))
    np.testing.assert_array_equal(lgrad.asnumpy(), [[0, 0]])
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), np.zeros((1, 3, 2)), atol=1e-6)


def test_dropout_of_probability_one_is_nan_as_mxnet():
    # MXNet 1.9.1 scales the all-zero mask by 1 / (1 - p): every output (even of a 0) is NaN.
    x = mx.nd.array([[0.0, 1.0, 2.0]])
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=1.0)
    assert np.isnan(y.asnumpy()).all()
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=1.0).asnumpy(), x.asnumpy())  # inference: identity
