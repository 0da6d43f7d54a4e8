"""VGG 11/13/16/19 (Simonyan & Zisserman 2014), optionally with BatchNorm after each
convolution, with the parameter names and initializers of MXNet 1.9.1's zoo."""
from __future__ import annotations

from .... import initializer
from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn", "get_vgg"]


class VGG(HybridBlock):
    """Groups of 3x3 convolutions (each group ends in 2x2 max pooling), two Dense(4096) layers
    with ReLU and Dropout(0.5), and the Dense classifier.

    Args:
        layers: convolutions per group.
        filters: channels of each group.
        classes: outputs of the classifier.
        batch_norm: BatchNorm after each convolution.
    """

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(filters), "VGG: `layers` and `filters` differ in length"
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            conv_init = initializer.Xavier(rnd_type="gaussian", factor_type="out", magnitude=2)
            for count, channels in zip(layers, filters):
                for _ in range(count):
                    self.features.add(nn.Conv2D(channels, kernel_size=3, padding=1, weight_initializer=conv_init,
                                                bias_initializer="zeros"))
                    if batch_norm:
                        self.features.add(nn.BatchNorm())
                    self.features.add(nn.Activation("relu"))
                self.features.add(nn.MaxPool2D(strides=2))
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"), nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


_SPEC = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
         13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
         16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
         19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """VGG of depth `num_layers` (11, 13, 16, 19); `batch_norm=True` for the _bn variants.

    `pretrained=True` loads `vgg<depth>[_bn]` from `root` (default ~/.mxnet/models).
    """
    assert num_layers in _SPEC, f"Invalid number of layers: {num_layers}. Options are {sorted(_SPEC)}"
    layers, filters = _SPEC[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        load_pretrained(net, f"vgg{num_layers}{'_bn' if kwargs.get('batch_norm') else ''}", ctx, root)
    return net


def _variant(depth, batch_norm):
    def make(**kwargs):
        if batch_norm:
            kwargs["batch_norm"] = True
        return get_vgg(depth, **kwargs)
    make.__name__ = f"vgg{depth}{'_bn' if batch_norm else ''}"
    make.__doc__ = f"VGG-{depth}{' with BatchNorm' if batch_norm else ''}; keyword arguments as `get_vgg`."
    return make


vgg11, vgg13, vgg16, vgg19 = (_variant(d, False) for d in (11, 13, 16, 19))
vgg11_bn, vgg13_bn, vgg16_bn, vgg19_bn = (_variant(d, True) for d in (11, 13, 16, 19))
