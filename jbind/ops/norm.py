"""BatchNorm, with MXNet 1.x's moving-statistics semantics, and GroupNorm."""
from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..base import fmt_shape
from ._base import Op, register
from .normalize import MeanStdNorm


@register
class BatchNorm(Op):
    """Batch normalisation over every axis but `axis`.

    Training uses the batch mean and biased variance and returns updated moving
    statistics (`m = m*momentum + batch*(1-momentum)`); the executor publishes them when
    `backward()` runs, as MXNet does. Inference and `use_global_stats` use the moving
    statistics. `fix_gamma` treats gamma as 1 (its gradient is 0).

    As MXNet's, float16 data has float32 gamma, beta, moving statistics and mean / var
    outputs, and is normalised in float32; other float data has its own dtype throughout.
    With `output_mean_var` the outputs `mean` and `var` are the mean used and, as MXNet's
    CPU kernel writes it, 1 / sqrt(var + eps).
    """
    eps: float = 1e-3
    momentum: float = 0.9
    fix_gamma: bool = True
    use_global_stats: bool = False
    output_mean_var: bool = False
    axis: int = 1
    cudnn_off: bool = False
    min_calib_range: Optional[float] = None
    max_calib_range: Optional[float] = None
    aux_names = ("moving_mean", "moving_var")
    input_var_attrs = {"moving_mean": {"__init__": '["zero", {}]'}, "moving_var": {"__init__": '["one", {}]'}}

    def arguments(self):
        return ("data", "gamma", "beta")

    def outputs(self):
        return ("output", "mean", "var") if self.output_mean_var else ("output",)

    def total_outputs(self):
        return 3

    def _axis(self, ndim):
        ax = self.axis + ndim if self.axis < 0 else self.axis
        if not 0 <= ax < ndim:
            raise ValueError(f"axis {self.axis} is out of range for data with {ndim} dimensions")
        return ax

    def infer_shape(self, ins, outs):
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:
            c = next((s for s in ins[1:] if s is not None), None)
            return [None, c, c], [None] * len(outs), [c, c]
        c = (data[self._axis(len(data))],)
        stats = [c] * (len(outs) - 1)
        return [data, c, c], [data, *stats], [c, c]

    def infer_type(self, ins, outs):
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:  # MXNet infers nothing from the parameters alone
            return list(ins), list(outs), [None, None]
        name = np.dtype(data).name
        if name not in ("float16", "bfloat16", "float32", "float64"):
            raise ValueError(f"data must be float16, bfloat16, float32 or float64, got {name}")
        p = np.dtype(np.float32 if name in ("float16", "bfloat16") else data)  # as MXNet (AMP's bfloat16)
        return [np.dtype(data), p, p], [np.dtype(data)] + [p] * (len(outs) - 1), [p, p]

    def lower(self, ins, aux, is_train, key):
        x, gamma, beta = ins
        moving_mean, moving_var = aux
        out_dtype = x.dtype
        x = x.astype(gamma.dtype)  # float16 data: normalised in float32, as MXNet does
        ax = self._axis(x.ndim)
        red = tuple(i for i in range(x.ndim) if i != ax)
        bshape = [1] * x.ndim
        bshape[ax] = x.shape[ax]
        if self.fix_gamma:
            gamma = jax.lax.stop_gradient(jnp.ones_like(gamma))
        if is_train and not self.use_global_stats:
            mean = jnp.mean(x, axis=red)
            var = jnp.mean(jnp.square(x - mean.reshape(bshape)), axis=red)
            m = self.momentum
            new_aux = [moving_mean * m + jax.lax.stop_gradient(mean) * (1 - m),
                       moving_var * m + jax.lax.stop_gradient(var) * (1 - m)]
        else:
            mean, var = moving_mean, moving_var
            new_aux = list(aux)
        inv = jax.lax.rsqrt(var + self.eps)
        y = (x - mean.reshape(bshape)) * (inv * gamma).reshape(bshape) + beta.reshape(bshape)
        y = y.astype(out_dtype)
        if not self.output_mean_var:
            return [y], new_aux
        # MXNet's extra outputs: the mean used and 1 / sqrt(var + eps) (not the variance),
        # gradients of which its backward ignores
        return [y, jax.lax.stop_gradient(mean), jax.lax.stop_gradient(inv)], new_aux


@register
class GroupNorm(MeanStdNorm):
    """Split the channels (axis 1) into `num_groups` groups and normalise each group of each
    sample over its channels and the spatial axes; then scale by `gamma`, shift by `beta`.

    As in MXNet 1.9.1, `gamma` and `beta` hold one value per group (shape (num_groups,)),
    and the optional outputs are the mean and the std, sqrt(var + eps), of shape
    (batch, num_groups); gradients reach data, gamma and beta through the output only.
    """
    num_groups: int = 1
    eps: float = 1e-5
    output_mean_var: bool = False

    def __post_init__(self):
        if self.num_groups < 1:
            raise ValueError(f"num_groups must be positive, got {self.num_groups}")

    def infer_shape(self, ins, outs):
        g = (self.num_groups,)
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:
            return [None, g, g], [None] * len(outs), []
        if len(data) < 3:
            raise ValueError(f"data must have at least 3 dimensions (batch, channel, ...), got {fmt_shape(data)}")
        if data[1] % self.num_groups:
            raise ValueError(f"the {data[1]} channels of data {fmt_shape(data)} do not split into "
                             f"num_groups={self.num_groups} groups")
        stats = (data[0], self.num_groups)
        return [data, g, g], [data, stats, stats][:len(outs)], []

    def lower(self, ins, aux, is_train, key):
        x, gamma, beta = ins
        n, g = x.shape[0], self.num_groups
        xg = x.reshape(n, g, -1)
        mean = jnp.mean(xg, axis=2, keepdims=True)
        centered = xg - mean
        std = jnp.sqrt(jnp.mean(jnp.square(centered), axis=2, keepdims=True) + self.eps)
        y = (centered / std * gamma.reshape(1, g, 1) + beta.reshape(1, g, 1)).reshape(x.shape)
        if not self.output_mean_var:
            return [y], aux
        stats = [jax.lax.stop_gradient(s.reshape(n, g)) for s in (mean, std)]
        return [y, *stats], aux
