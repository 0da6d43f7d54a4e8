"""Gluon's contrib layers: Concurrent, HybridConcurrent, Identity, PixelShuffle1D/2D/3D."""
from __future__ import annotations

import numbers

from .... import ndarray as nd
from ..._util import check
from ...block import HybridBlock
from ...nn.basic_layers import HybridSequential, Sequential

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


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


class Identity(HybridBlock):
    """Returns its input."""

    def hybrid_forward(self, F, x):
        return x


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
