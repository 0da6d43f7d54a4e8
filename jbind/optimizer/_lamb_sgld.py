"""MXNet 1.9.1's LAMB (layer-wise adaptive moments) and SGLD (Langevin dynamics) optimizers."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ._lazy import optax
from ._base import Optimizer, register
from ._transforms import MomentsState, f32, one_minus_pow

__all__ = ["LAMB", "SGLD"]


def scale_by_lamb_moments(b1: float, b2: float, eps: float, bias_correction: bool, t):
    """`m_hat / (sqrt(v_hat) + eps)` (lamb_update_phase1 before weight decay), the hats
    bias-corrected by `1 - b**t` when `bias_correction`."""

    def init(params):
        return MomentsState(optax.tree.zeros_like(params), optax.tree.zeros_like(params))

    def update(updates, state, params=None):
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        nu = optax.tree.update_moment_per_elem_norm(updates, state.nu, b2, 2)
        if bias_correction:
            c1, c2 = one_minus_pow(b1, t), one_minus_pow(b2, t)
            out = jax.tree.map(lambda m, v: (m / c1.astype(m.dtype)) / (jnp.sqrt(v / c2.astype(v.dtype)) + eps),
                               mu, nu)
        else:
            out = jax.tree.map(lambda m, v: m / (jnp.sqrt(v) + eps), mu, nu)
        return out, MomentsState(mu, nu)

    return optax.GradientTransformation(init, update)


def scale_by_trust_ratio(lower_bound, upper_bound):
    """lamb_update_phase2's layer-wise ratio: `g * r1 / r2` with `r1 = ||weight||` (clamped
    into [lower_bound, upper_bound] where given), `r2 = ||g||`, and ratio 1 where either is 0."""

    def update(updates, state, params=None):
        def one(g, w):
            r1 = jnp.linalg.norm(w.astype(jnp.float32).ravel())
            if lower_bound:
                r1 = jnp.maximum(r1, lower_bound)
            if upper_bound:
                r1 = jnp.minimum(r1, upper_bound)
            r2 = jnp.linalg.norm(g.astype(jnp.float32).ravel())
            ratio = jnp.where((r1 == 0) | (r2 == 0), 1.0, r1 / jnp.where(r2 == 0, 1.0, r2))
            return (g * ratio).astype(g.dtype)
        return jax.tree.map(one, updates, params), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


@register
class LAMB(Optimizer):
    """LAMB (lamb_update_phase1 / lamb_update_phase2)::

        grad = clip(rescale_grad * grad, clip_gradient)
        mean = beta1 * mean + (1 - beta1) * grad;  var = beta2 * var + (1 - beta2) * grad**2
        g = mean_hat / (sqrt(var_hat) + epsilon) + wd * weight    # hats: / (1 - beta**t) if bias_correction
        r1 = clip(||weight||, lower_bound, upper_bound);  r2 = ||g||
        weight -= lr * (r1 / r2 if r1 and r2 else 1) * g

    State: `(mean, var)`.
    """

    _hyper = ("beta1", "beta2", "epsilon", "lower_bound", "upper_bound", "bias_correction")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, lower_bound=None,
                 upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bias_correction
        self.aggregate_num = 45

    def _tx(self, lr, wd, t):
        return optax.chain(optax.scale(f32(self.rescale_grad)), *self._clip(),
                           scale_by_lamb_moments(f32(self.beta1), f32(self.beta2), f32(self.epsilon),
                                                 bool(self.bias_correction), t),
                           optax.add_decayed_weights(wd), scale_by_trust_ratio(self.lower_bound, self.upper_bound),
                           optax.scale(-lr))


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics (MXNet's Python rule)::

        grad = clip(rescale_grad * grad, clip_gradient)
        weight += -lr / 2 * (grad + wd * weight) + normal(0, sqrt(lr))

    No state. The noise is drawn from `mx.random` (so `mx.random.seed` fixes it); the
    update runs imperatively, one parameter at a time, never inside a fused step.
    """

    _clip_when_set = True

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        from .. import ndarray as nd, random as mxrandom
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self.update(i, w, g, s)
            return
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        weight[:] = weight + (-lr / 2) * (grad + wd * weight)
        weight[:] = weight + mxrandom.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype,
                                             ctx=weight.context)
