"""BatchNorm, with MXNet 1.x's moving-statistics semantics."""
from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from ._base import Op, register


@register
class BatchNorm(Op):
    """Batch normalisation over every axis but `axis`.

    Training uses the batch mean and biased variance and returns updated moving
    statistics (`m = m*momentum + batch*(1-momentum)`); the executor publishes them when
    `backward()` runs, as MXNet does. Inference and `use_global_stats` use the moving
    statistics. `fix_gamma` treats gamma as 1 (its gradient is 0).
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

    def lower(self, ins, aux, is_train, key):
        x, gamma, beta = ins
        moving_mean, moving_var = aux
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
        outs = [y, mean, var] if self.output_mean_var else [y]
        return outs, new_aux
