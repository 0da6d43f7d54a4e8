"""AlexNet (Krizhevsky 2014, "One weird trick"), as MXNet 1.9.1's zoo names it."""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained

__all__ = ["AlexNet", "alexnet"]


class AlexNet(HybridBlock):
    """Five convolutions (11x11/4, 5x5, three 3x3; ReLU) with three 3x3/2 max poolings, two
    Dense(4096) with ReLU and Dropout(0.5), and the Dense classifier (`classes` outputs)."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                f = self.features
                f.add(nn.Conv2D(64, kernel_size=11, strides=4, padding=2, activation="relu"),
                      nn.MaxPool2D(pool_size=3, strides=2),
                      nn.Conv2D(192, kernel_size=5, padding=2, activation="relu"),
                      nn.MaxPool2D(pool_size=3, strides=2))
                for channels in (384, 256, 256):
                    f.add(nn.Conv2D(channels, kernel_size=3, padding=1, activation="relu"))
                f.add(nn.MaxPool2D(pool_size=3, strides=2), nn.Flatten())
                for _ in range(2):
                    f.add(nn.Dense(4096, activation="relu"), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=None, root=None, **kwargs):
    """AlexNet; `pretrained=True` loads 'alexnet' from `root` (default ~/.mxnet/models)."""
    net = AlexNet(**kwargs)
    return load_pretrained(net, "alexnet", ctx, root) if pretrained else net
