"""GridGenerator, BilinearSampler and SpatialTransformer (MXNet 1.x's src/operator/
grid_generator-inl.h, bilinear_sampler.cc, spatial_transformer.cc): the spatial
transformer network's sampling grid and its bilinear sampler, on NCHW data.

A grid (N, 2, Ho, Wo) holds normalised source coordinates, channel 0 x, channel 1 y, -1 the
first pixel's centre and +1 the last's. The sampler reads pixel (x + 1) * (W - 1) / 2,
(y + 1) * (H - 1) / 2 of the data, bilinearly, corners outside the image reading zero. Its
gradient with respect to the grid is the derivative of that interpolation with the
top-left corner held (MXNet's: at a point exactly on a pixel column or row, the one-sided
derivative towards the next one); JAX's derivative of the same formula, floor constant,
is exactly that. The grids are built with MXNet's own float arithmetic, so points meant to
fall on pixel centres fall on the same side of them as in MXNet.
"""
from __future__ import annotations

from typing import Literal, Optional

import numpy as np
import jax.numpy as jnp

from ..base import ShapeError, fmt_shape
from ._base import Op, float_types, frozen, register


def _merge(what, a, b):
    """One dim known from two places (0 unknown)."""
    if a and b and a != b:
        raise ShapeError(f"{what} differ: {a} vs {b}")
    return a or b


def _rank(name, shape, n, layout):
    if shape is not None and len(shape) != n:
        raise ShapeError(f"{name} {fmt_shape(tuple(shape))} must have {n} dims ({layout})")
    return tuple(shape) if shape is not None else (0,) * n


def _known(shape):
    return None if not any(shape) else tuple(shape)


def _check_target(target_shape, what):
    ts = tuple(target_shape)
    if len(ts) != 2 or any(d < 2 for d in ts):
        # MXNet 1.9.1 reads the first two dims of a longer shape, fails on (0, 0) in
        # infer_shape and gives NaN coordinates for a dim of 1 (2 / (1 - 1))
        raise ValueError(f"{what} needs target_shape (H, W), each at least 2; got {fmt_shape(ts)}")


def _affine_dst(h, w, dtype, exact):
    """The target grid (3, h * w): x, y in [-1, 1] row-major, then ones. GridGenerator
    builds it in the data's dtype (-1 + j * dtype(2 / (w - 1))); SpatialTransformer in
    double, rounded once (`exact`)."""
    j, i = np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64)
    if exact:
        xs, ys = -1.0 + j * 2.0 / (w - 1), -1.0 + i * 2.0 / (h - 1)
    else:
        t = np.dtype(dtype).type
        xs = t(-1.0) + j.astype(dtype) * t(2.0 / (w - 1))
        ys = t(-1.0) + i.astype(dtype) * t(2.0 / (h - 1))
    xs, ys = np.broadcast_to(xs[None, :], (h, w)), np.broadcast_to(ys[:, None], (h, w))
    return np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)]).astype(dtype)


def _affine_grid(theta, h, w, exact):
    """theta (N, 6), rows (a b c; d e f) -> grid (N, 2, h, w): x' = a x + b y + c, y' = d x + e y + f."""
    xs, ys, _ = _affine_dst(h, w, theta.dtype, exact)
    t = theta.reshape(-1, 2, 3, 1)
    # elementwise, not a matmul: exact where MXNet's gemm is (integer maps on the target's
    # grid), and never at a GPU's reduced (TF32) matmul precision
    src = t[:, :, 0] * jnp.asarray(xs) + t[:, :, 1] * jnp.asarray(ys) + t[:, :, 2]
    return src.reshape(-1, 2, h, w)


def _sample(data, grid):
    """Bilinear sampling of data (N, C, H, W) at grid (N, 2, Ho, Wo), zeros outside."""
    n, c, h, w = data.shape
    ho, wo = grid.shape[2:]
    x = (grid[:, 0] + 1) * (w - 1) / 2
    y = (grid[:, 1] + 1) * (h - 1) / 2
    x0, y0 = jnp.floor(x), jnp.floor(y)
    wx, wy = 1 - (x - x0), 1 - (y - y0)  # the top-left corner's weights
    flat = data.reshape(n, c, h * w)
    ats, weights = [], []
    for dy, fy in ((0, wy), (1, 1 - wy)):
        for dx, fx in ((0, wx), (1, 1 - wx)):
            cx, cy = x0 + dx, y0 + dy
            inside = (cx >= 0) & (cx <= w - 1) & (cy >= 0) & (cy <= h - 1)
            ats.append((jnp.clip(cy, 0, h - 1) * w + jnp.clip(cx, 0, w - 1)).astype(jnp.int32))
            weights.append(jnp.where(inside, fy * fx, 0))
    # the four corners in one gather (and so one scatter-add in the backward pass): XLA:CPU
    # compiles a gather or scatter for 0.1-0.2 s each, most of a sampler's compile time
    at = jnp.stack(ats, 1).reshape(n, 1, 4 * ho * wo)
    v = jnp.take_along_axis(flat, at, axis=2).reshape(n, c, 4, ho, wo)
    return jnp.sum(v * jnp.stack(weights, 1)[:, None], axis=2).astype(data.dtype)


@register
@frozen
class GridGenerator(Op):
    """A sampling grid (N, 2, H, W) for BilinearSampler. `affine`: data (N, 6) is the affine
    map (a b c; d e f) of the target's normalised (x, y, 1), H, W = target_shape. `warp`:
    data (N, 2, H, W) is a flow in pixels, the grid is (pixel + flow) / ((W - 1, H - 1) / 2) - 1
    (target_shape ignored)."""
    transform_type: Literal["affine", "warp"]
    target_shape: tuple[int, ...] = (0, 0)

    def __post_init__(self):
        if self.transform_type == "affine":
            _check_target(self.target_shape, "transform_type='affine'")

    def total_outputs(self):
        return 2  # output, grid_dst (hidden)

    def infer_shape(self, ins, outs):
        o = outs[0]
        if self.transform_type == "affine":
            h, w = self.target_shape
            d = _rank("data", ins[0], 2, "batch, 6: the affine matrix")
            if d[1] and d[1] != 6:
                raise ShapeError(f"data {fmt_shape(d)} must be (batch, 6): the affine matrix")
            o = _rank("the output", o, 4, "batch, 2, H, W")
            if any(a and a != b for a, b in zip(o[1:], (2, h, w))):
                raise ShapeError(f"the output {fmt_shape(o)} is not (batch, 2) + target_shape {fmt_shape((h, w))}")
            n = _merge("the batch of data and the output", d[0], o[0])
            return [(n, 6)], [(n, 2, h, w)], []
        d = _rank("data", ins[0], 4, "batch, 2, H, W: the flow")
        o = _rank("the output", o, 4, "batch, 2, H, W")
        if d[1] and d[1] != 2:
            raise ShapeError(f"data {fmt_shape(d)} must be (batch, 2, H, W): the flow")
        s = tuple(_merge(f"dim {i} of data and the output", a, b) for i, (a, b) in enumerate(zip(d, o)))
        s = (s[0], 2) + s[2:]
        if any(v == 1 for v in s[2:]):
            # MXNet 1.9.1 divides by (size - 1) / 2 = 0: inf and NaN coordinates
            raise ShapeError(f"the flow {fmt_shape(s)} must have H and W of at least 2")
        return [_known(s)], [_known(s)], []

    def infer_type(self, ins, outs):
        # MXNet 1.9.1 has GridGenerator kernels for float32 only (it fails at bind otherwise)
        return float_types(self, ins, outs, ("float32",))

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        if self.transform_type == "affine":
            h, w = self.target_shape
            return [_affine_grid(x, h, w, exact=False)], aux
        h, w = x.shape[2:]
        t = np.dtype(x.dtype).type
        ys, xs = np.meshgrid(np.arange(h, dtype=x.dtype), np.arange(w, dtype=x.dtype), indexing="ij")
        pix = jnp.asarray(np.stack([xs, ys]))
        half = jnp.asarray(np.array([t((w - 1.0) / 2.0), t((h - 1.0) / 2.0)]).reshape(1, 2, 1, 1))
        return [(x + pix) / half - 1], aux


@register
@frozen
class BilinearSampler(Op):
    """Sample data (N, C, H, W) at grid (N, 2, Ho, Wo) (normalised x, y; see the module's
    docstring) bilinearly: output (N, C, Ho, Wo), zero outside the image. `cudnn_off` is
    accepted and ignored."""
    cudnn_off: Optional[bool] = None

    def arguments(self):
        return ("data", "grid")

    def total_outputs(self):
        return 2  # output, tmp (hidden)

    def infer_shape(self, ins, outs):
        d = _rank("data", ins[0], 4, "batch, channels, H, W")
        g = _rank("grid", ins[1], 4, "batch, 2, Ho, Wo")
        o = _rank("the output", outs[0], 4, "batch, channels, Ho, Wo")
        if g[1] and g[1] != 2:
            raise ShapeError(f"grid {fmt_shape(g)} must be (batch, 2, Ho, Wo): x and y")
        n = _merge(f"the batch of data {fmt_shape(d)} and grid {fmt_shape(g)}", d[0], g[0])
        n = _merge("the batch of the inputs and the output", n, o[0])
        c = _merge("the channels of data and the output", d[1], o[1])
        ho = _merge("grid's H and the output's", g[2], o[2])
        wo = _merge("grid's W and the output's", g[3], o[3])
        return [_known((n, c) + d[2:]), _known((n, 2, ho, wo))], [_known((n, c, ho, wo))], []

    def infer_type(self, ins, outs):
        return float_types(self, ins, outs)

    def lower(self, ins, aux, is_train, key):
        return [_sample(*ins)], aux


@register
@frozen
class SpatialTransformer(Op):
    """BilinearSampler of data (N, C, H, W) at the affine grid of loc (N, 6) (GridGenerator's
    `affine`): output (N, C) + target_shape. MXNet's only transform and sampler, affine and
    bilinear, must be named, as in MXNet. `cudnn_off` is accepted and ignored."""
    mxnet_order = ("target_shape", "transform_type", "sampler_type", "cudnn_off")
    transform_type: Literal["affine"]
    sampler_type: Literal["bilinear"]
    target_shape: tuple[int, ...] = (0, 0)
    cudnn_off: Optional[bool] = None

    def __post_init__(self):
        _check_target(self.target_shape, "the affine transform")

    def arguments(self):
        return ("data", "loc")

    def total_outputs(self):
        return 3  # output, grid_dst, grid_src (hidden)

    def infer_shape(self, ins, outs):
        h, w = self.target_shape
        d = _rank("data", ins[0], 4, "batch, channels, H, W")
        loc = _rank("loc", ins[1], 2, "batch, 6: the affine matrix")
        o = _rank("the output", outs[0], 4, "batch, channels, H, W")
        if loc[1] and loc[1] != 6:
            raise ShapeError(f"loc {fmt_shape(loc)} must be (batch, 6): the affine matrix")
        if any(a and a != b for a, b in zip(o[2:], (h, w))):
            raise ShapeError(f"the output {fmt_shape(o)} is not (batch, channels) + target_shape {fmt_shape((h, w))}")
        # MXNet 1.9.1 takes a loc of another batch (and reads past a shorter one's end)
        n = _merge(f"the batch of data {fmt_shape(d)} and loc {fmt_shape(loc)}", d[0], loc[0])
        n = _merge("the batch of the inputs and the output", n, o[0])
        c = _merge("the channels of data and the output", d[1], o[1])
        return [_known((n, c) + d[2:]), _known((n, 6))], [_known((n, c, h, w))], []

    def infer_type(self, ins, outs):
        return float_types(self, ins, outs)

    def lower(self, ins, aux, is_train, key):
        data, loc = ins
        h, w = self.target_shape
        return [_sample(data, _affine_grid(loc, h, w, exact=True))], aux
