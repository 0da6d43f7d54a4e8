"""Gluon's contrib layers: Concurrent, HybridConcurrent, Identity, SparseEmbedding, PixelShuffle1D/2D/3D."""
from __future__ import annotations

import numbers

import warnings

from .... import ndarray as nd
from ....context import num_gpus
from ..._util import check
from ...block import Block, HybridBlock
from ...nn.basic_layers import BatchNorm, HybridSequential, Sequential

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm", "PixelShuffle1D", "PixelShuffle2D",
           "PixelShuffle3D"]


class Concurrent(Sequential):
    """Runs every child on the same input and concatenates their outputs along `axis`."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return nd.concat(*[b(x) for b in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Concurrent for HybridBlocks: one `concat` of the children's outputs along `axis`."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[b(x) for b in self._children.values()], dim=self.axis)


class SparseEmbedding(Block):
    """An Embedding whose weight is stored row_sparse and whose gradient is row_sparse; the
    forward pass reads only the weight rows that `x` looks up."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype, "sparse_grad": True}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, grad_stype="row_sparse", stype="row_sparse")

    def forward(self, x):
        return nd.Embedding(x, self.weight.row_sparse_data(x), name="fwd", **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return f"{self.__class__.__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class Identity(HybridBlock):
    """Returns its input."""

    def hybrid_forward(self, F, x):
        return x


class SyncBatchNorm(BatchNorm):
    """BatchNorm over axis 1 whose batch statistics are those of all `num_devices` devices'
    batches together (the `_contrib_SyncBatchNorm` op, keyed by this block's prefix)."""

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones", **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer, in_channels=in_channels,
                         **kwargs)
        if num_devices is None:
            warnings.warn("Caution using SyncBatchNorm: if not using all the GPUs, please mannually set "
                          "num_devices", UserWarning, stacklevel=2)
            num_devices = max(num_gpus(), 1)
        self._kwargs = {"eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats, "ndev": num_devices, "key": self.prefix}

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.contrib.SyncBatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)


def _factors(factor, n):
    f = (int(factor),) * n if isinstance(factor, numbers.Integral) else tuple(int(x) for x in factor)
    check(len(f) == n, f"wrong length {len(f)}")
    return f


class PixelShuffle1D(HybridBlock):
    """(N, C*f, W) -> (N, C, W*f): channel groups of `factor` interleaved along the width."""

    def __init__(self, factor):
        super().__init__()
        self._factor = int(factor)

    def hybrid_forward(self, F, x):
        f = self._factor
        x = F.reshape(x, shape=(0, -4, -1, f, 0))        # N, C, f, W
        x = F.transpose(x, axes=(0, 1, 3, 2))            # N, C, W, f
        return F.reshape(x, shape=(0, 0, -3))            # N, C, W*f

    def __repr__(self):
        return f"{self.__class__.__name__}({self._factor})"


class PixelShuffle2D(HybridBlock):
    """(N, C*f1*f2, H, W) -> (N, C, H*f1, W*f2)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 2)

    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, shape=(0, -4, -1, f1 * f2, 0, 0))   # N, C, f1*f2, H, W
        x = F.reshape(x, shape=(0, 0, -4, f1, f2, 0, 0))     # N, C, f1, f2, H, W
        x = F.transpose(x, axes=(0, 1, 4, 2, 5, 3))          # N, C, H, f1, W, f2
        return F.reshape(x, shape=(0, 0, -3, -3))            # N, C, H*f1, W*f2

    def __repr__(self):
        return f"{self.__class__.__name__}({self._factors})"


class PixelShuffle3D(HybridBlock):
    """(N, C*f1*f2*f3, D, H, W) -> (N, C, D*f1, H*f2, W*f3)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 3)

    def hybrid_forward(self, F, x):
        f1, f2, f3 = self._factors
        x = F.reshape(x, shape=(0, -4, -1, f1 * f2 * f3, 0, 0, 0))   # N, C, f1*f2*f3, D, H, W
        x = F.reshape(x, shape=(0, 0, -4, f1, f2 * f3, 0, 0, 0))     # N, C, f1, f2*f3, D, H, W
        x = F.reshape(x, shape=(0, 0, 0, -4, f2, f3, 0, 0, 0))       # N, C, f1, f2, f3, D, H, W
        x = F.transpose(x, axes=(0, 1, 5, 2, 6, 3, 7, 4))            # N, C, D, f1, H, f2, W, f3
        return F.reshape(x, shape=(0, 0, -3, -3, -3))                # N, C, D*f1, H*f2, W*f3

    def __repr__(self):
        return f"{self.__class__.__name__}({self._factors})"
