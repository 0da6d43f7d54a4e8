"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016), as MXNet 1.9.1's zoo names them."""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ..model_store import load_pretrained

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _conv_relu(channels, kernel_size, padding=0):
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return seq


def _fire(squeeze, expand1, expand3):
    """A fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated on channels."""
    seq = nn.HybridSequential(prefix="")
    seq.add(_conv_relu(squeeze, 1))
    expand = HybridConcurrent(axis=1, prefix="")
    expand.add(_conv_relu(expand1, 1), _conv_relu(expand3, 3, 1))
    seq.add(expand)
    return seq


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


class SqueezeNet(HybridBlock):
    """SqueezeNet `version` '1.0' or '1.1' with `classes` outputs (a 1x1 convolution, ReLU and
    13x13 average pooling: it takes 224x224 inputs)."""

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        assert version in ("1.0", "1.1"), f"Unsupported SqueezeNet version {version}: 1.0 or 1.1 expected"
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            f = self.features
            if version == "1.0":
                f.add(nn.Conv2D(96, kernel_size=7, strides=2), nn.Activation("relu"), _pool())
                f.add(_fire(16, 64, 64), _fire(16, 64, 64), _fire(32, 128, 128), _pool())
                f.add(_fire(32, 128, 128), _fire(48, 192, 192), _fire(48, 192, 192), _fire(64, 256, 256), _pool())
                f.add(_fire(64, 256, 256))
            else:
                f.add(nn.Conv2D(64, kernel_size=3, strides=2), nn.Activation("relu"), _pool())
                f.add(_fire(16, 64, 64), _fire(16, 64, 64), _pool())
                f.add(_fire(32, 128, 128), _fire(32, 128, 128), _pool())
                f.add(_fire(48, 192, 192), _fire(48, 192, 192), _fire(64, 256, 256), _fire(64, 256, 256))
            f.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"), nn.AvgPool2D(13),
                            nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=None, root=None, **kwargs):
    """SqueezeNet `version` ('1.0' or '1.1'); `pretrained=True` loads 'squeezenet<version>' from
    `root` (default ~/.mxnet/models)."""
    net = SqueezeNet(version, **kwargs)
    return load_pretrained(net, f"squeezenet{version}", ctx, root) if pretrained else net


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0; keyword arguments as `get_squeezenet`."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1; keyword arguments as `get_squeezenet`."""
    return get_squeezenet("1.1", **kwargs)
