"""im2col and col2im (MXNet's src/operator/nn/im2col.cc): the sliding blocks of an
(N, C, *spatial) image as columns, and their sum back into an image. Layout NCW, NCHW or
NCDHW (1 to 3 spatial dims, as many as `kernel` has); `stride`, `dilate`, `pad` as
Convolution's (empty: ones, ones, zeros)."""
from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp

from ..base import ShapeError, fmt_shape
from ._base import Op, frozen, register


@frozen
class _Blocks(Op):
    """The parameters and geometry shared by im2col and col2im."""

    def __post_init__(self):
        k = tuple(self.kernel)
        if not 1 <= len(k) <= 3:
            raise ValueError(f"kernel {fmt_shape(k)} must have 1, 2 or 3 dims")
        for what in ("stride", "dilate", "pad") + (("output_size",) if hasattr(self, "output_size") else ()):
            v = tuple(getattr(self, what))
            if v and len(v) != len(k):
                raise ValueError(f"{what} {fmt_shape(v)} must have as many dims as kernel {fmt_shape(k)}")
        for what, v, least in [("kernel", k, 1), ("stride", self.stride, 1), ("dilate", self.dilate, 1),
                               ("pad", self.pad, 0), ("output_size", getattr(self, "output_size", ()), 1)]:
            if any(d < least for d in v):
                raise ValueError(f"{what} {fmt_shape(tuple(v))} must be {'positive' if least else 'non-negative'}")

    def _geometry(self):
        n = len(self.kernel)
        return (tuple(self.kernel), tuple(self.stride) or (1,) * n, tuple(self.dilate) or (1,) * n,
                tuple(self.pad) or (0,) * n)

    def _blocks(self, spatial, what):
        """Block positions per spatial dim of an image of `spatial` dims (0 where unknown)."""
        k, s, d, p = self._geometry()
        out = []
        for i, n in enumerate(spatial):
            span = d[i] * (k[i] - 1) + 1
            if n and n + 2 * p[i] < span:
                raise ShapeError(f"the dilated kernel ({span}) exceeds {what} dim {i} ({n}) plus padding "
                                 f"({2 * p[i]})")
            out.append((n + 2 * p[i] - span) // s[i] + 1 if n else 0)
        return tuple(out)

    def _offsets(self):
        """The start of each kernel position in the padded image, row-major."""
        k, _, d, _ = self._geometry()
        return [tuple(o * dd for o, dd in zip(off, d)) for off in itertools.product(*[range(n) for n in k])]

    def _slices(self, start, blocks):
        _, s, _, _ = self._geometry()
        return (slice(None), slice(None)) + tuple(slice(a, a + st * (b - 1) + 1, st)
                                                  for a, b, st in zip(start, blocks, s))


@register
@frozen
class im2col(_Blocks):
    """The sliding blocks of `data` (N, C, *spatial) as columns: (N, C * prod(kernel), L),
    L the number of blocks (Convolution's output positions, row-major); row c * prod(kernel) + j
    holds channel c at kernel position j (row-major), zeros where a block reaches into the
    padding. `data` must have 2 + len(kernel) dims (MXNet 1.9.1 reads a mis-ranked input's
    first dims and returns the wrong shape)."""
    kernel: tuple[int, ...]
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()

    def infer_shape(self, ins, outs):
        x = ins[0]
        if x is None:
            return [None], [outs[0]], []
        x = tuple(x)
        if len(x) != 2 + len(self.kernel):
            raise ShapeError(f"data {fmt_shape(x)} must have {2 + len(self.kernel)} dims (N, C and "
                             f"{len(self.kernel)} spatial, as kernel {fmt_shape(tuple(self.kernel))})")
        blocks = self._blocks(x[2:], "data's spatial")
        rows = x[1] * math.prod(self.kernel)
        out = (x[0], rows, math.prod(blocks) if all(blocks) else 0)
        o = outs[0]
        if o is not None and (len(o) != 3 or any(a and b and a != b for a, b in zip(o, out))):
            raise ShapeError(f"the output {fmt_shape(tuple(o))} is not {fmt_shape(out)}")
        n = x[0] or (o[0] if o is not None else 0)
        return [(n,) + x[1:]], [(n,) + out[1:]], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        _, _, _, p = self._geometry()
        blocks = self._blocks(x.shape[2:], "data's spatial")
        xp = jnp.pad(x, [(0, 0), (0, 0)] + [(a, a) for a in p])
        cols = [xp[self._slices(off, blocks)] for off in self._offsets()]  # each (N, C, *blocks)
        y = jnp.stack(cols, axis=2)  # (N, C, prod(kernel), *blocks)
        return [y.reshape(x.shape[0], -1, math.prod(blocks))], aux


@register
@frozen
class col2im(_Blocks):
    """The columns of `data` (N, C * prod(kernel), L), laid out as im2col's, summed into an
    image (N, C, *output_size): overlapping blocks add up, what falls in the padding is
    dropped. col2im is im2col's transpose (each is the other's gradient)."""
    output_size: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...] = ()
    dilate: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()

    def infer_shape(self, ins, outs):
        size = tuple(self.output_size)
        blocks = self._blocks(size, "output_size")
        per = math.prod(self.kernel)
        x, o = ins[0], outs[0]
        n, c = 0, 0
        if o is not None:
            o = tuple(o)
            if len(o) != 2 + len(size) or any(a and a != b for a, b in zip(o[2:], size)):
                raise ShapeError(f"the output {fmt_shape(o)} is not (N, C) + output_size {fmt_shape(size)}")
            n, c = o[0], o[1]
        if x is not None:
            x = tuple(x)
            if len(x) != 3:
                raise ShapeError(f"data {fmt_shape(x)} must have 3 dims (N, C * prod(kernel), blocks)")
            if x[1] and x[1] % per:
                raise ShapeError(f"data's dim 1 ({x[1]}) must be a multiple of the kernel's size "
                                 f"{per} (kernel {fmt_shape(tuple(self.kernel))})")
            if x[2] and x[2] != math.prod(blocks):
                raise ShapeError(f"data's dim 2 ({x[2]}) must be the number of blocks {math.prod(blocks)} "
                                 f"that output_size {fmt_shape(size)} has with these parameters "
                                 f"({' x '.join(map(str, blocks))})")
            for what, a, b in [("batch", x[0], n), ("channels", x[1] // per, c)]:
                if a and b and a != b:
                    raise ShapeError(f"data {fmt_shape(x)} and the output {fmt_shape(o)} differ in {what}")
            n, c = n or x[0], c or x[1] // per
        return [(n, c * per, math.prod(blocks))], [(n, c) + size], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        _, _, _, p = self._geometry()
        size = tuple(self.output_size)
        blocks = self._blocks(size, "output_size")
        n, c = x.shape[0], x.shape[1] // math.prod(self.kernel)
        cols = x.reshape((n, c, math.prod(self.kernel)) + blocks)
        _, st, _, _ = self._geometry()
        padded = tuple(a + 2 * b for a, b in zip(size, p))
        out = None
        for j, off in enumerate(self._offsets()):
            # block j's elements spread `stride` apart from `off`, zeros elsewhere (a pad, no scatter)
            spread = [(0, 0, 0), (0, 0, 0)] + [(o, t - o - (s * (b - 1) + 1), s - 1)
                                               for o, t, s, b in zip(off, padded, st, blocks)]
            part = jax.lax.pad(cols[:, :, j], jnp.zeros((), x.dtype), spread)
            out = part if out is None else out + part
        crop = (slice(None), slice(None)) + tuple(slice(b, b + a) for a, b in zip(size, p))
        return [out[crop]], aux
