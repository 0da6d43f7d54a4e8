"""DenseNet 121/161/169/201 (Huang et al. 2016), as MXNet 1.9.1's zoo names them."""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent, Identity
from ..model_store import load_pretrained

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _bn_relu_conv(seq, channels, kernel_size, padding=0):
    seq.add(nn.BatchNorm(), nn.Activation("relu"))
    seq.add(nn.Conv2D(channels, kernel_size=kernel_size, padding=padding, use_bias=False))


def _dense_layer(growth_rate, bn_size, dropout):
    """The input concatenated (on channels) with `growth_rate` new feature maps computed from it
    by BN-ReLU-conv1x1 (to bn_size * growth_rate) and BN-ReLU-conv3x3."""
    new = nn.HybridSequential(prefix="")
    _bn_relu_conv(new, bn_size * growth_rate, 1)
    _bn_relu_conv(new, growth_rate, 3, padding=1)
    if dropout:
        new.add(nn.Dropout(dropout))
    both = HybridConcurrent(axis=1, prefix="")
    both.add(Identity(), new)
    return both


def _dense_block(num_layers, bn_size, growth_rate, dropout, index):
    block = nn.HybridSequential(prefix=f"stage{index}_")
    with block.name_scope():
        for _ in range(num_layers):
            block.add(_dense_layer(growth_rate, bn_size, dropout))
    return block


def _transition(channels):
    """BN-ReLU-conv1x1 to `channels`, then 2x2/2 average pooling."""
    seq = nn.HybridSequential(prefix="")
    _bn_relu_conv(seq, channels, 1)
    seq.add(nn.AvgPool2D(pool_size=2, strides=2))
    return seq


class DenseNet(HybridBlock):
    """DenseNet: a 7x7/2 stem with 3x3/2 max pooling, dense blocks joined by transitions that
    halve the channels, BN-ReLU, 7x7 average pooling (224x224 inputs), Dense classifier.

    Args:
        num_init_features: channels of the stem.
        growth_rate: channels each dense layer adds.
        block_config: dense layers per block.
        bn_size: the bottleneck width, in multiples of growth_rate.
        dropout: dropout rate after each dense layer (0: none).
        classes: outputs of the classifier.
    """

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0, classes=1000,
                 **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3, use_bias=False),
                              nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            channels = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_block(num_layers, bn_size, growth_rate, dropout, i + 1))
                channels += num_layers * growth_rate
                if i != len(block_config) - 1:
                    channels //= 2
                    self.features.add(_transition(channels))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (stem channels, growth rate, dense layers per block)
_SPEC = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]),
         169: (64, 32, [6, 12, 32, 32]), 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """DenseNet of depth `num_layers` (121, 161, 169, 201); `pretrained=True` loads
    'densenet<depth>' from `root` (default ~/.mxnet/models)."""
    assert num_layers in _SPEC, f"Invalid number of layers: {num_layers}. Options are {sorted(_SPEC)}"
    init, growth, config = _SPEC[num_layers]
    net = DenseNet(init, growth, config, **kwargs)
    return load_pretrained(net, f"densenet{num_layers}", ctx, root) if pretrained else net


def _variant(depth):
    def make(**kwargs):
        return get_densenet(depth, **kwargs)
    make.__name__ = f"densenet{depth}"
    make.__doc__ = f"DenseNet-{depth}; keyword arguments as `get_densenet`."
    return make


densenet121, densenet161, densenet169, densenet201 = (_variant(d) for d in (121, 161, 169, 201))
