"""`LBSGD`: MXNet 1.9.1's large-batch SGD (what image-classification's fit.py builds for
`--optimizer lbsgd`): gradients summed over `batch_scale` calls, then one momentum-SGD step
with their mean at a learning rate scaled by a warmup schedule or by LARS."""
from __future__ import annotations

import logging

import jax.numpy as jnp

from ..base import MXNetError
from ._base import register
from ._optimizers import SGD


@register
class LBSGD(SGD):
    """Large-batch SGD with momentum and weight decay, as MXNet's `LBSGD`.

    Every call adds the gradient to a per-parameter sum; every `batch_scale`-th call (counted
    from `begin_epoch * updates_per_epoch`) takes an SGD step (see `SGD`) with sum / batch_scale
    at `lr * mult` and clears the sum, where `mult` rises from 1 to `batch_scale` over
    `warmup_epochs * updates_per_epoch` calls ('linear', 'power2' or 'sqrt'), or is LARS's
    sqrt(|w|^2 / (|g|^2 + wd |w|^2)) clipped to [0.01, 100] ('lars'). Other calls leave the
    weight as it is.

    State: `(momentum or None, gradient sum)`; MXNet keeps the sum inside the optimizer.
    """

    _hyper = ("momentum", "warmup_strategy", "warmup_epochs", "batch_scale", "updates_per_epoch", "init_updates")

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy="linear", warmup_epochs=5,
                 batch_scale=1, updates_per_epoch=32, begin_epoch=0, num_epochs=60, **kwargs):
        super().__init__(momentum=momentum, multi_precision=multi_precision, **kwargs)
        if warmup_strategy not in ("linear", "power2", "sqrt", "lars"):
            raise MXNetError(f"LBSGD: warmup_strategy {warmup_strategy!r} is not one of 'linear', 'power2', "
                             f"'sqrt', 'lars'")
        if int(batch_scale) < 1:
            raise MXNetError(f"LBSGD: batch_scale must be at least 1, got {batch_scale}")
        logging.info("Running Large-Batch SGD Algorithm")
        logging.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, updates_per_epoch=%d)",
                     batch_scale, warmup_epochs, warmup_strategy, updates_per_epoch)
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = int(batch_scale)
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs

    def _init_state(self, weight):
        return (super()._init_state(weight), jnp.zeros_like(weight))

    def _warmup(self, n):
        nwup = self.warmup_epochs * self.updates_per_epoch
        top = float(self.batch_scale)
        if nwup <= 1:
            return jnp.where(n >= nwup, top, 1.0)
        frac = n / nwup
        ramp = {"linear": 1.0 + (top - 1) * frac, "power2": 1.0 + (top - 1) * frac * frac,
                "sqrt": 1.0 + (top - 1) * jnp.sqrt(frac)}[self.warmup_strategy]
        return jnp.where(n >= nwup, top, ramp)

    def _step(self, weight, grad, state, lr, wd, t):
        mom, total = state
        total = total + grad
        n = self.init_updates + t  # MXNet's num_cums: this parameter's calls, from begin_epoch on
        due = (n % self.batch_scale) == 0
        mean = total / self.batch_scale
        if self.warmup_strategy == "lars":
            w2, g2 = jnp.sum(weight * weight), jnp.sum(mean * mean)
            mult = jnp.clip(jnp.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01, 100.0)
        else:
            mult = self._warmup(n)
        new_weight, new_mom = super()._step(weight, mean, mom, lr * mult, wd, t)
        keep = lambda new, old: None if old is None else jnp.where(due, new, old).astype(old.dtype)  # noqa: E731
        return keep(new_weight, weight), (keep(new_mom, mom), jnp.where(due, 0, total).astype(total.dtype))
