"""Inception V3 (Szegedy et al. 2015), as MXNet 1.9.1's zoo names it (299x299 inputs)."""
from __future__ import annotations

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ..model_store import load_pretrained

__all__ = ["Inception3", "inception_v3"]


def _conv(channels, kernel_size, strides=None, padding=None):
    """Bias-free convolution, BatchNorm (epsilon 0.001), ReLU."""
    kw = {k: v for k, v in (("strides", strides), ("padding", padding)) if v is not None}
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels=channels, kernel_size=kernel_size, use_bias=False, **kw),
            nn.BatchNorm(epsilon=0.001), nn.Activation("relu"))
    return seq


def _branch(pool, *convs):
    """An optional pooling ('avg': 3x3/1 padded, 'max': 3x3/2), then the convolutions, each
    given as (channels, kernel, strides or None, padding or None)."""
    seq = nn.HybridSequential(prefix="")
    if pool == "avg":
        seq.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        seq.add(nn.MaxPool2D(pool_size=3, strides=2))
    for spec in convs:
        seq.add(_conv(*spec))
    return seq


def _mixed(prefix, *branches):
    """Branches (thunks, built in order inside the scope) concatenated on channels."""
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for make in branches:
            out.add(make())
    return out


def _block_a(pool_features, prefix):
    return _mixed(prefix,
                  lambda: _branch(None, (64, 1)),
                  lambda: _branch(None, (48, 1), (64, 5, None, 2)),
                  lambda: _branch(None, (64, 1), (96, 3, None, 1), (96, 3, None, 1)),
                  lambda: _branch("avg", (pool_features, 1)))


def _block_b(prefix):
    return _mixed(prefix,
                  lambda: _branch(None, (384, 3, 2)),
                  lambda: _branch(None, (64, 1), (96, 3, None, 1), (96, 3, 2)),
                  lambda: _branch("max"))


def _block_c(c7, prefix):
    row, col = ((1, 7), None, (0, 3)), ((7, 1), None, (3, 0))
    return _mixed(prefix,
                  lambda: _branch(None, (192, 1)),
                  lambda: _branch(None, (c7, 1), (c7, *row), (192, *col)),
                  lambda: _branch(None, (c7, 1), (c7, *col), (c7, *row), (c7, *col), (192, *row)),
                  lambda: _branch("avg", (192, 1)))


def _block_d(prefix):
    return _mixed(prefix,
                  lambda: _branch(None, (192, 1), (320, 3, 2)),
                  lambda: _branch(None, (192, 1), (192, (1, 7), None, (0, 3)), (192, (7, 1), None, (3, 0)),
                                  (192, 3, 2)),
                  lambda: _branch("max"))


def _split_3x3(first):
    """`first` (a branch), then its output through 1x3 and 3x1 convolutions, concatenated."""
    seq = nn.HybridSequential(prefix="")
    seq.add(first())
    split = HybridConcurrent(axis=1, prefix="")
    split.add(_branch(None, (384, (1, 3), None, (0, 1))), _branch(None, (384, (3, 1), None, (1, 0))))
    seq.add(split)
    return seq


def _block_e(prefix):
    return _mixed(prefix,
                  lambda: _branch(None, (320, 1)),
                  lambda: _split_3x3(lambda: _branch(None, (384, 1))),
                  lambda: _split_3x3(lambda: _branch(None, (448, 1), (384, 3, None, 1))),
                  lambda: _branch("avg", (192, 1)))


class Inception3(HybridBlock):
    """Inception V3 with `classes` outputs (without the auxiliary classifier, as MXNet's zoo)."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            f = self.features
            f.add(_conv(32, 3, 2), _conv(32, 3), _conv(64, 3, None, 1), nn.MaxPool2D(pool_size=3, strides=2))
            f.add(_conv(80, 1), _conv(192, 3), nn.MaxPool2D(pool_size=3, strides=2))
            f.add(_block_a(32, "A1_"), _block_a(64, "A2_"), _block_a(64, "A3_"), _block_b("B_"))
            f.add(_block_c(128, "C1_"), _block_c(160, "C2_"), _block_c(160, "C3_"), _block_c(192, "C4_"))
            f.add(_block_d("D_"), _block_e("E1_"), _block_e("E2_"), nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=None, root=None, **kwargs):
    """Inception V3; `pretrained=True` loads 'inceptionv3' from `root` (default ~/.mxnet/models)."""
    net = Inception3(**kwargs)
    return load_pretrained(net, "inceptionv3", ctx, root) if pretrained else net
