"""gluon.contrib.cnn.DeformableConvolution: with its zero-initialised offsets it is a plain
convolution; parameters, deferred input channels, gradients reaching the offset branch."""
import numpy as np
import pytest

import jbind as mx
from jbind.gluon.contrib.cnn import DeformableConvolution


def test_zero_offsets_give_the_plain_convolution_and_offsets_get_gradients():
    layer = DeformableConvolution(4, kernel_size=(3, 2), padding=1, activation="relu", prefix="dc_")
    layer.initialize(mx.init.Uniform(0.5))
    layer.hybridize()
    x = mx.nd.array(np.random.RandomState(0).randn(2, 3, 6, 5))
    with mx.autograd.record():
        y = layer(x)
    y.backward()
    names = sorted(layer.collect_params().keys())
    assert names == ["dc_deformable_conv_bias", "dc_deformable_conv_weight", "dc_offset_bias", "dc_offset_weight"]
    assert layer.deformable_conv_weight.shape == (4, 3, 3, 2)
    assert layer.offset_weight.shape == (2 * 3 * 2, 3, 3, 2)
    w, b = layer.deformable_conv_weight.data(), layer.deformable_conv_bias.data()
    plain = mx.nd.relu(mx.nd.Convolution(x, w, b, kernel=(3, 2), pad=(1, 1), num_filter=4))
    np.testing.assert_allclose(y.asnumpy(), plain.asnumpy(), rtol=1e-5, atol=1e-5)
    assert np.abs(layer.offset_weight.grad().asnumpy()).sum() > 0


def test_without_biases_and_with_deformable_groups():
    layer = DeformableConvolution(6, kernel_size=3, use_bias=False, offset_use_bias=False, num_deformable_group=2)
    layer.initialize()
    assert layer.deformable_conv_bias is None and layer.offset_bias is None
    assert layer(mx.nd.ones((1, 4, 7, 7))).shape == (1, 6, 5, 5)
    assert layer.offset_weight.shape == (2 * 9 * 2, 4, 3, 3)
    assert repr(layer).startswith("DeformableConvolution(4 -> 6, kernel_size=(3, 3)") and "bias=False" in repr(layer)


def test_channels_last_is_refused_with_a_reason():
    with pytest.raises(mx.base.MXNetError, match="NCHW only"):
        DeformableConvolution(2, layout="NHWC")
