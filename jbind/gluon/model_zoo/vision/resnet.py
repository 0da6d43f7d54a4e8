"""ResNet V1 (He et al. 2015, post-activation) and V2 (He et al. 2016, pre-activation),
18 to 152 layers, with the block structure and parameter names of MXNet 1.9.1's zoo."""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1", "BottleneckV2",
           "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
           "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2", "get_resnet"]


def _conv3(channels, stride, in_channels):
    """A bias-free 3x3 convolution, padded to keep the size (at stride 1)."""
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False, in_channels=in_channels)


def _shortcut_v1(channels, stride, in_channels):
    """The projection shortcut of a V1 block: 1x1 convolution, then BatchNorm."""
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False, in_channels=in_channels),
            nn.BatchNorm())
    return seq


class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions with BatchNorm, added to the input and passed through ReLU (ResNet-18/34 V1).

    Args:
        channels: output channels.
        stride: stride of the first convolution (and of the shortcut).
        downsample: project the shortcut with a 1x1 convolution.
        in_channels: input channels (0: inferred).
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(_conv3(channels, stride, in_channels), nn.BatchNorm(), nn.Activation("relu"),
                      _conv3(channels, 1, channels), nn.BatchNorm())
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        shortcut = self.downsample(x) if self.downsample else x
        return F.Activation(shortcut + self.body(x), act_type="relu")


class BottleneckV1(HybridBlock):
    """1x1 (to channels/4, strided), 3x3, 1x1 (to channels) convolutions with BatchNorm, added to
    the input and passed through ReLU (ResNet-50/101/152 V1). Arguments as BasicBlockV1."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        mid = channels // 4
        self.body = nn.HybridSequential(prefix="")
        self.body.add(nn.Conv2D(mid, kernel_size=1, strides=stride), nn.BatchNorm(), nn.Activation("relu"),
                      _conv3(mid, 1, mid), nn.BatchNorm(), nn.Activation("relu"),
                      nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm())
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        shortcut = self.downsample(x) if self.downsample else x
        return F.Activation(self.body(x) + shortcut, act_type="relu")


def _preact_start(F, block, x):
    """The first two BN-ReLU-conv steps of a v2 block and its shortcut (taken after the
    first BN-ReLU when the block downsamples)."""
    pre = F.Activation(block.bn1(x), act_type="relu")
    shortcut = block.downsample(pre) if block.downsample else x
    y = block.conv2(F.Activation(block.bn2(block.conv1(pre)), act_type="relu"))
    return y, shortcut


class BasicBlockV2(HybridBlock):
    """Pre-activation basic block: BN-ReLU-conv3x3, BN-ReLU-conv3x3, plus the shortcut, which
    (when projected) starts from the first BN-ReLU's output. Arguments as BasicBlockV1."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3(channels, 1, channels)
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels)
                           if downsample else None)

    def hybrid_forward(self, F, x):
        y, shortcut = _preact_start(F, self, x)
        return y + shortcut


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck: BN-ReLU-conv1x1, BN-ReLU-conv3x3 (strided), BN-ReLU-conv1x1,
    plus the shortcut. Arguments as BasicBlockV1."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        mid = channels // 4
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(mid, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3(mid, stride, mid)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels)
                           if downsample else None)

    def hybrid_forward(self, F, x):
        y, shortcut = _preact_start(F, self, x)
        y = self.conv3(F.Activation(self.bn3(y), act_type="relu"))
        return y + shortcut


def _stem(features, channels, thumbnail):
    """The first layers: one 3x3 convolution (thumbnail, for 32x32 inputs) or 7x7/2 conv,
    BN, ReLU, 3x3/2 max pooling."""
    if thumbnail:
        features.add(_conv3(channels, 1, 0))
    else:
        features.add(nn.Conv2D(channels, 7, 2, 3, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                     nn.MaxPool2D(3, 2, 1))


def _stage(block, count, channels, stride, index, in_channels):
    """Stage `index` (prefix 'stage<index>_'): `count` blocks, the first strided and projecting."""
    stage = nn.HybridSequential(prefix=f"stage{index}_")
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels, prefix=""))
        for _ in range(count - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


class ResNetV1(HybridBlock):
    """ResNet V1: stem, one stage per entry of `layers`, global average pooling, Dense.

    Args:
        block: BasicBlockV1 or BottleneckV1.
        layers: blocks per stage.
        channels: the stem's channels, then each stage's (one more entry than `layers`).
        classes: outputs of the classifier.
        thumbnail: a 3x3 stem for small (32x32) images.
    """

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(channels) - 1, "ResNetV1: `channels` needs one entry more than `layers`"
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            _stem(self.features, channels[0], thumbnail)
            for i, count in enumerate(layers):
                self.features.add(_stage(block, count, channels[i + 1], 1 if i == 0 else 2, i + 1, channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet V2: an input BatchNorm (no scale or shift), stem, stages, BN-ReLU, global average
    pooling, Flatten, Dense. Arguments as ResNetV1 (blocks BasicBlockV2 or BottleneckV2)."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(channels) - 1, "ResNetV2: `channels` needs one entry more than `layers`"
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            _stem(self.features, channels[0], thumbnail)
            for i, count in enumerate(layers):
                self.features.add(_stage(block, count, channels[i + 1], 1 if i == 0 else 2, i + 1, channels[i]))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (block kind, blocks per stage, channels of the stem and of each stage)
_SPEC = {18: ("basic", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
         34: ("basic", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
         50: ("bottleneck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
         101: ("bottleneck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
         152: ("bottleneck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
_NETS = {1: ResNetV1, 2: ResNetV2}
_BLOCKS = {1: {"basic": BasicBlockV1, "bottleneck": BottleneckV1},
           2: {"basic": BasicBlockV2, "bottleneck": BottleneckV2}}


def get_resnet(version, num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """ResNet `version` (1 or 2) of depth `num_layers` (18, 34, 50, 101, 152).

    `pretrained=True` loads `resnet<depth>_v<version>` from `root` (default ~/.mxnet/models);
    other keyword arguments (classes, thumbnail, prefix) go to the network's constructor.
    """
    assert num_layers in _SPEC, f"Invalid number of layers: {num_layers}. Options are {sorted(_SPEC)}"
    assert version in _NETS, f"Invalid resnet version: {version}. Options are 1 and 2."
    kind, layers, channels = _SPEC[num_layers]
    net = _NETS[version](_BLOCKS[version][kind], layers, channels, **kwargs)
    return load_pretrained(net, f"resnet{num_layers}_v{version}", ctx, root) if pretrained else net


def _variant(version, depth):
    def make(**kwargs):
        return get_resnet(version, depth, **kwargs)
    make.__name__ = f"resnet{depth}_v{version}"
    make.__doc__ = f"ResNet-{depth} V{version}; keyword arguments as `get_resnet`."
    return make


resnet18_v1, resnet34_v1, resnet50_v1, resnet101_v1, resnet152_v1 = (_variant(1, d) for d in (18, 34, 50, 101, 152))
resnet18_v2, resnet34_v2, resnet50_v2, resnet101_v2, resnet152_v2 = (_variant(2, d) for d in (18, 34, 50, 101, 152))
