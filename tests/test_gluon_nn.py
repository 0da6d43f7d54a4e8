"""gluon.nn / gluon.contrib.nn layers: MXNet's parameter names and shapes, output shapes,
values against numpy for the key layers, and the same output hybridized or not."""
import numpy as np
import pytest

import jbind as mx
from jbind.gluon import contrib, nn


def _run(layer, *shapes, init=None, seed=0):
    """(output un-hybridized, output hybridized) of `layer` on random inputs of `shapes`."""
    rng = np.random.default_rng(seed)
    xs = [mx.nd.array(rng.standard_normal(s)) for s in shapes]
    layer.initialize(init)
    a = layer(*xs)
    layer.hybridize()
    b = layer(*xs)
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)
    return a.asnumpy(), [x.asnumpy() for x in xs]


LAYERS = [  # (factory, input shape, output shape, {param suffix: shape})
    (lambda: nn.Dense(4), (2, 3, 5), (2, 4), {"weight": (4, 15), "bias": (4,)}),
    (lambda: nn.Dense(4, flatten=False, use_bias=False), (2, 3, 5), (2, 3, 4), {"weight": (4, 5)}),
    (lambda: nn.Conv1D(4, 3), (2, 3, 9), (2, 4, 7), {"weight": (4, 3, 3), "bias": (4,)}),
    (lambda: nn.Conv2D(4, (3, 2), strides=2, padding=1), (2, 3, 8, 8), (2, 4, 4, 5), {"weight": (4, 3, 3, 2)}),
    (lambda: nn.Conv2D(4, 3, groups=2, in_channels=4), (1, 4, 5, 5), (1, 4, 3, 3), {"weight": (4, 2, 3, 3)}),
    (lambda: nn.Conv3D(2, 2), (1, 3, 4, 4, 4), (1, 2, 3, 3, 3), {"weight": (2, 3, 2, 2, 2)}),
    (lambda: nn.Conv1DTranspose(2, 3, strides=2), (1, 3, 4), (1, 2, 9), {"weight": (3, 2, 3)}),
    (lambda: nn.Conv2DTranspose(2, 3, output_padding=1, strides=2), (1, 3, 4, 4), (1, 2, 10, 10),
     {"weight": (3, 2, 3, 3)}),
    (lambda: nn.Conv3DTranspose(2, 2), (1, 3, 2, 2, 2), (1, 2, 3, 3, 3), {"weight": (3, 2, 2, 2, 2)}),
    (lambda: nn.MaxPool1D(), (2, 3, 8), (2, 3, 4), {}),
    (lambda: nn.MaxPool2D(3, 2, ceil_mode=True), (2, 3, 8, 8), (2, 3, 4, 4), {}),
    (lambda: nn.MaxPool3D(), (1, 2, 4, 4, 4), (1, 2, 2, 2, 2), {}),
    (lambda: nn.AvgPool1D(3, padding=1), (2, 3, 6), (2, 3, 2), {}),
    (lambda: nn.AvgPool2D(), (2, 3, 6, 6), (2, 3, 3, 3), {}),
    (lambda: nn.AvgPool3D(), (1, 2, 4, 4, 4), (1, 2, 2, 2, 2), {}),
    (lambda: nn.GlobalMaxPool1D(), (2, 3, 5), (2, 3, 1), {}),
    (lambda: nn.GlobalAvgPool2D(), (2, 3, 5, 4), (2, 3, 1, 1), {}),
    (lambda: nn.GlobalMaxPool3D(), (1, 2, 3, 3, 3), (1, 2, 1, 1, 1), {}),
    (lambda: nn.BatchNorm(), (2, 3, 4), (2, 3, 4),
     {"gamma": (3,), "beta": (3,), "running_mean": (3,), "running_var": (3,)}),
    (lambda: nn.InstanceNorm(), (2, 3, 4), (2, 3, 4), {"gamma": (3,), "beta": (3,)}),
    (lambda: nn.LayerNorm(), (2, 3, 4), (2, 3, 4), {"gamma": (4,), "beta": (4,)}),
    (lambda: nn.GroupNorm(num_groups=2), (2, 4, 3), (2, 4, 3), {"gamma": (2,), "beta": (2,)}),
    (lambda: nn.Dropout(0.5), (2, 3), (2, 3), {}),
    (lambda: nn.Flatten(), (2, 3, 4), (2, 12), {}),
    (lambda: nn.Activation("tanh"), (2, 3), (2, 3), {}),
    (lambda: nn.LeakyReLU(0.1), (2, 3), (2, 3), {}),
    (lambda: nn.PReLU(), (2, 3), (2, 3), {"alpha": (1,)}),
    (lambda: nn.ELU(), (2, 3), (2, 3), {}),
    (lambda: nn.SELU(), (2, 3), (2, 3), {}),
    (lambda: nn.Swish(), (2, 3), (2, 3), {}),
    (lambda: nn.GELU(), (2, 3), (2, 3), {}),
    (lambda: nn.ReflectionPad2D(2), (1, 2, 4, 4), (1, 2, 8, 8), {}),
    (lambda: contrib.nn.SyncBatchNorm(num_devices=1), (2, 3, 4), (2, 3, 4),
     {"gamma": (3,), "beta": (3,), "running_mean": (3,), "running_var": (3,)}),
    (lambda: contrib.nn.Identity(), (2, 3), (2, 3), {}),
    (lambda: contrib.nn.PixelShuffle1D(2), (1, 4, 3), (1, 2, 6), {}),
    (lambda: contrib.nn.PixelShuffle2D((2, 3)), (1, 12, 2, 2), (1, 2, 4, 6), {}),
    (lambda: contrib.nn.PixelShuffle3D(2), (1, 16, 1, 2, 3), (1, 2, 2, 4, 6), {}),
]


@pytest.mark.parametrize("factory,in_shape,out_shape,params", LAYERS, ids=lambda v: getattr(v, "__name__", None))
def test_layer_shapes_names_and_hybridized_output(factory, in_shape, out_shape, params):
    layer = factory()
    out, _ = _run(layer, in_shape)
    assert out.shape == out_shape
    got = {k[len(layer.prefix):]: p.shape for k, p in layer.collect_params().items()}
    assert {k: v for k, v in got.items() if k in params} == params
    assert set(params) <= set(got)


def test_dense_matches_numpy_and_activation_child_prefix():
    layer = nn.Dense(3, activation="relu", in_units=4, prefix="fc_")
    assert layer.act.prefix == "fc_relu_" and layer.weight.name == "fc_weight"
    out, (x,) = _run(layer, (5, 4))
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    np.testing.assert_allclose(out, np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-6)


def test_conv2d_matches_numpy():
    layer = nn.Conv2D(2, 3, padding=1, in_channels=3)
    out, (x,) = _run(layer, (1, 3, 4, 4))
    w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 2, 4, 4), np.float32)
    for i in range(4):
        for j in range(4):
            ref[0, :, i, j] = np.einsum("ckl,ockl->o", xp[0, :, i:i + 3, j:j + 3], w) + b
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_maxpool_and_global_avgpool_match_numpy():
    out, (x,) = _run(nn.MaxPool2D(), (1, 2, 4, 4))
    np.testing.assert_allclose(out, x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
    out, (x,) = _run(nn.GlobalAvgPool2D(), (2, 3, 4, 5))
    np.testing.assert_allclose(out, x.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)


def test_batchnorm_inference_uses_running_statistics():
    bn = nn.BatchNorm(in_channels=3)
    bn.initialize()
    bn.running_mean.set_data(mx.nd.array([1.0, 2.0, 3.0]))
    bn.running_var.set_data(mx.nd.array([4.0, 1.0, 0.25]))
    bn.gamma.set_data(mx.nd.array([1.0, 2.0, 3.0]))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for hybrid in (False, True):
        bn.hybridize(hybrid)
        y = bn(mx.nd.array(x)).asnumpy()
        ref = (x - [1, 2, 3]) / np.sqrt(np.array([4, 1, 0.25]) + 1e-5) * [1, 2, 3]
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_layernorm_and_embedding_match_numpy():
    out, (x,) = _run(nn.LayerNorm(), (2, 5))
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    emb = nn.Embedding(10, 3)
    emb.initialize()
    idx = np.array([[1, 9], [0, 1]], np.float32)
    np.testing.assert_allclose(emb(mx.nd.array(idx)).asnumpy(), emb.weight.data().asnumpy()[idx.astype(int)])
    assert emb.weight.shape == (10, 3) and emb.weight.name.endswith("_weight")


def test_pixelshuffle2d_matches_numpy():
    out, (x,) = _run(contrib.nn.PixelShuffle2D(2), (1, 8, 2, 3))
    ref = x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6)
    np.testing.assert_array_equal(out, ref)


def test_prelu_and_reflection_pad_values():
    out, (x,) = _run(nn.PReLU(), (3, 4))
    np.testing.assert_allclose(out, np.where(x >= 0, x, 0.25 * x), rtol=1e-6)
    out, (x,) = _run(nn.ReflectionPad2D(1), (1, 1, 3, 3))
    np.testing.assert_array_equal(out, np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"))


def test_containers_lambdas_and_concurrent():
    seq = nn.Sequential()
    with seq.name_scope():
        seq.add(nn.Dense(4), nn.Lambda(lambda x: x * 2), nn.Dense(2))
    seq.initialize()
    x = mx.nd.ones((3, 5))
    assert seq(x).shape == (3, 2) and len(seq) == 3 and isinstance(seq[1], nn.Lambda)
    assert isinstance(seq[:2], nn.Sequential) and len(seq[:2]) == 2
    conc = contrib.nn.HybridConcurrent(axis=1)
    with conc.name_scope():
        conc.add(nn.Dense(2), contrib.nn.Identity(), nn.HybridLambda(lambda F, x: F.relu(x)))
    out, (xx,) = _run(conc, (3, 4))
    assert out.shape == (3, 10)
    np.testing.assert_allclose(out[:, 2:6], xx)
    np.testing.assert_allclose(out[:, 6:], np.maximum(xx, 0))
    lam = nn.HybridLambda("tanh")
    out, (xx,) = _run(lam, (2, 2))
    np.testing.assert_allclose(out, np.tanh(xx), rtol=1e-6)
    c = contrib.nn.Concurrent(axis=0)
    c.add(nn.Lambda("ones_like"), nn.Lambda("zeros_like"))
    assert c(mx.nd.ones((1, 2))).asnumpy().tolist() == [[1, 1], [0, 0]]


def test_hybrid_sequential_refuses_a_plain_block_child():
    with pytest.raises(ValueError, match="HybridSequential|HybridBlock"):
        nn.HybridSequential().add(nn.Lambda("relu"))


def test_selu_equals_its_formula_written_with_ndarrays():
    # below zero SELU is lambda * alpha * expm1(x) with lambda * alpha one float32 constant,
    # so the formula spelled with NDArray arithmetic gives the very same bits
    lam, alpha = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
    x = mx.nd.array([-2.0, -0.5, -0.1, -0.01, 0.0, 0.1, 3.0])
    got = nn.SELU()(x).asnumpy()
    neg = (lam * alpha * mx.nd.expm1(x)).asnumpy()
    pos = (lam * x).asnumpy()
    np.testing.assert_array_equal(got, np.where(x.asnumpy() > 0, pos, neg))
    # and it is SELU: against float64 numpy at MXNet's float32 tolerance
    ref = lam * np.where(x.asnumpy() > 0, x.asnumpy(), alpha * np.expm1(x.asnumpy().astype(np.float64)))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
