"""MobileNet (Howard et al. 2017) and MobileNetV2 (Sandler et al. 2018) at width multipliers
1.0, 0.75, 0.5 and 0.25, as MXNet 1.9.1's zoo names them."""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained

__all__ = ["MobileNet", "MobileNetV2", "mobilenet1_0", "mobilenet_v2_1_0", "mobilenet0_75", "mobilenet_v2_0_75",
           "mobilenet0_5", "mobilenet_v2_0_5", "mobilenet0_25", "mobilenet_v2_0_25", "get_mobilenet",
           "get_mobilenet_v2"]


class RELU6(HybridBlock):
    """min(max(x, 0), 6)."""

    def hybrid_forward(self, F, x):
        return F.clip(x, 0, 6, name="relu6")


def _conv_bn(seq, channels, kernel=1, stride=1, pad=0, groups=1, active=True, relu6=False):
    """Append a bias-free convolution, BatchNorm and (when `active`) ReLU or ReLU6 to `seq`."""
    seq.add(nn.Conv2D(channels, kernel, stride, pad, groups=groups, use_bias=False))
    seq.add(nn.BatchNorm(scale=True))
    if active:
        seq.add(RELU6() if relu6 else nn.Activation("relu"))


class LinearBottleneck(HybridBlock):
    """MobileNetV2's inverted residual: expand 1x1 (x t), depthwise 3x3 (strided), project 1x1
    without activation; the input is added when the stride is 1 and the channels agree."""

    def __init__(self, in_channels, channels, t, stride, **kwargs):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        wide = in_channels * t
        with self.name_scope():
            self.out = nn.HybridSequential()
            _conv_bn(self.out, wide, relu6=True)
            _conv_bn(self.out, wide, kernel=3, stride=stride, pad=1, groups=wide, relu6=True)
            _conv_bn(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F, x):
        y = self.out(x)
        return F.elemwise_add(y, x) if self.use_shortcut else y


class MobileNet(HybridBlock):
    """MobileNet: a 3x3/2 convolution, 13 depthwise-separable convolutions, global average
    pooling, Dense classifier; every width times `multiplier`.

    Args:
        multiplier: width multiplier.
        classes: outputs of the classifier.
    """

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        scale = lambda widths: [int(w * multiplier) for w in widths]  # noqa: E731
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _conv_bn(self.features, int(32 * multiplier), kernel=3, pad=1, stride=2)
                depthwise = scale([32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024])
                pointwise = scale([64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2)
                strides = [1, 2] * 3 + [1] * 5 + [2, 1]
                for dw, pw, s in zip(depthwise, pointwise, strides):
                    _conv_bn(self.features, dw, kernel=3, stride=s, pad=1, groups=dw)
                    _conv_bn(self.features, pw)
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class MobileNetV2(HybridBlock):
    """MobileNetV2: a 3x3/2 convolution, 17 inverted residuals, a 1x1 convolution to 1280
    channels (more when `multiplier` > 1), global average pooling, a 1x1 convolution classifier.
    Arguments as MobileNet."""

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        scale = lambda widths: [int(w * multiplier) for w in widths]  # noqa: E731
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                _conv_bn(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1, relu6=True)
                ins = scale([32, 16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3)
                outs = scale([16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3 + [320])
                expansions = [1] + [6] * 16
                strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
                for i, c, t, s in zip(ins, outs, expansions, strides):
                    self.features.add(LinearBottleneck(in_channels=i, channels=c, t=t, stride=s))
                _conv_bn(self.features, int(1280 * multiplier) if multiplier > 1.0 else 1280, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"), nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def _suffix(multiplier):
    """'1.0', '0.75', '0.5', '0.25': how MXNet's pretrained file names spell a multiplier."""
    s = f"{multiplier:.2f}"
    return s[:-1] if s in ("1.00", "0.50") else s


def get_mobilenet(multiplier, pretrained=False, ctx=None, root=None, **kwargs):
    """MobileNet at width `multiplier`; `pretrained=True` loads 'mobilenet<multiplier>' from
    `root` (default ~/.mxnet/models)."""
    net = MobileNet(multiplier, **kwargs)
    return load_pretrained(net, f"mobilenet{_suffix(multiplier)}", ctx, root) if pretrained else net


def get_mobilenet_v2(multiplier, pretrained=False, ctx=None, root=None, **kwargs):
    """MobileNetV2 at width `multiplier`; `pretrained=True` loads 'mobilenetv2_<multiplier>'."""
    net = MobileNetV2(multiplier, **kwargs)
    return load_pretrained(net, f"mobilenetv2_{_suffix(multiplier)}", ctx, root) if pretrained else net


def _variant(get, multiplier, name):
    def make(**kwargs):
        return get(multiplier, **kwargs)
    make.__name__ = name
    make.__doc__ = f"{get.__name__}({multiplier}, ...)."
    return make


mobilenet1_0, mobilenet0_75, mobilenet0_5, mobilenet0_25 = (
    _variant(get_mobilenet, m, f"mobilenet{str(m).replace('.', '_')}") for m in (1.0, 0.75, 0.5, 0.25))
mobilenet_v2_1_0, mobilenet_v2_0_75, mobilenet_v2_0_5, mobilenet_v2_0_25 = (
    _variant(get_mobilenet_v2, m, f"mobilenet_v2_{str(m).replace('.', '_')}") for m in (1.0, 0.75, 0.5, 0.25))
