"""Small optax transformations for the parts of MXNet's update rules optax lacks.

Each is an `optax.GradientTransformation` over a single array (or a pytree), kept as
close to optax's own pieces as the rule allows: moments come from `optax.tree`
helpers. The optimizers in this package chain these with optax's `scale`, `clip`,
`add_decayed_weights`, `trace`, `scale_by_rms`, ... so that the composed rule equals
MXNet 1.9.1's kernel or Python code.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from ._lazy import optax

__all__ = ["f32", "one_minus_pow", "kernel_one_minus_pow", "scale_by_mx_adam", "scale_by_mx_adamax", "scale_by_nadam",
           "ftml", "ftrl", "nag_momentum", "delay_compensation", "clip_weights"]


def f32(x: float) -> float:
    """`x` rounded to float32, as MXNet's C++ kernels hold their float hyperparameters."""
    return float(np.float32(x))


def one_minus_pow(base: float, t):
    """`1 - base**t` for a traced step count, accurate where `1 - base**t` is tiny (t=1, base=0.999)."""
    if base <= 0.0:
        return jnp.ones_like(jnp.asarray(t, jnp.float32))
    return -jnp.expm1(jnp.asarray(t, jnp.float32) * math.log(base))


def kernel_one_minus_pow(base: float, t):
    """`1 - base**t` in float32, rounding included, as MXNet's C++ kernels compute it (FTML)."""
    return 1.0 - jnp.power(jnp.float32(base), jnp.asarray(t, jnp.float32))


class MomentsState(NamedTuple):
    """First moment `mu` and second (or infinity) moment `nu`, MXNet's (mean, var)."""
    mu: optax.Updates
    nu: optax.Updates


def scale_by_mx_adam(b1: float, b2: float, eps: float) -> optax.GradientTransformation:
    """MXNet's adam_update without its learning rate: `m / (sqrt(v) + eps)`, no bias correction.

    MXNet folds the bias correction into the learning rate (`lr * sqrt(1-b2^t) / (1-b1^t)`),
    so epsilon is added to the uncorrected `sqrt(v)`, unlike `optax.scale_by_adam`.
    """

    def init(params):
        return MomentsState(optax.tree.zeros_like(params), optax.tree.zeros_like(params))

    def update(updates, state, params=None):
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        nu = optax.tree.update_moment_per_elem_norm(updates, state.nu, b2, 2)
        out = jax.tree.map(lambda m, v: m / (jnp.sqrt(v) + eps), mu, nu)
        return out, MomentsState(mu, nu)

    return optax.GradientTransformation(init, update)


def scale_by_mx_adamax(b1: float, b2: float) -> optax.GradientTransformation:
    """Adamax's `m / u` with `u = max(b2 * u, |g|)`; MXNet folds `1/(1-b1^t)` into the rate."""

    def init(params):
        return MomentsState(optax.tree.zeros_like(params), optax.tree.zeros_like(params))

    def update(updates, state, params=None):
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        nu = optax.tree.update_infinity_moment(updates, state.nu, b2, 0.0)
        return jax.tree.map(jnp.divide, mu, nu), MomentsState(mu, nu)

    return optax.GradientTransformation(init, update)


class NadamState(NamedTuple):
    mu: optax.Updates
    nu: optax.Updates
    m_schedule: jax.Array  # float32 scalar, the running product of the momentum schedule


def scale_by_nadam(b1: float, b2: float, eps: float, schedule_decay: float, t) -> optax.GradientTransformation:
    """MXNet's Nadam (Python rule) without the learning rate, at step `t`."""

    def init(params):
        return NadamState(optax.tree.zeros_like(params), optax.tree.zeros_like(params), jnp.ones((), jnp.float32))

    def update(updates, state, params=None):
        tf = jnp.asarray(t, jnp.float32)
        log96 = math.log(0.96) * schedule_decay
        momentum_t = b1 * (1.0 - 0.5 * jnp.exp(tf * log96))
        momentum_t_1 = b1 * (1.0 - 0.5 * jnp.exp((tf + 1.0) * log96))
        m_schedule = state.m_schedule * momentum_t
        m_schedule_next = m_schedule * momentum_t_1
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        nu = optax.tree.update_moment_per_elem_norm(updates, state.nu, b2, 2)
        corr2 = one_minus_pow(b2, t)

        def direction(g, m, v):
            m_bar = (1.0 - momentum_t) * (g / (1.0 - m_schedule)) + momentum_t_1 * (m / (1.0 - m_schedule_next))
            return (m_bar / (jnp.sqrt(v / corr2) + eps)).astype(g.dtype)

        out = jax.tree.map(direction, updates, mu, nu)
        return out, NadamState(mu, nu, m_schedule.astype(jnp.float32))

    return optax.GradientTransformation(init, update)


class FtmlState(NamedTuple):
    d: optax.Updates
    v: optax.Updates
    z: optax.Updates


def ftml(lr, b1: float, b2: float, eps: float, t) -> optax.GradientTransformation:
    """MXNet's ftml_update: the weight becomes `-z / d_t`; returned as the update `-z/d_t - w`."""
    corr1, corr2 = kernel_one_minus_pow(b1, t), kernel_one_minus_pow(b2, t)

    def init(params):
        z = optax.tree.zeros_like(params)
        return FtmlState(z, z, z)

    def update(updates, state, params):
        v = optax.tree.update_moment_per_elem_norm(updates, state.v, b2, 2)
        d = jax.tree.map(lambda vi: corr1 / lr * (jnp.sqrt(vi / corr2) + eps), v)
        z = jax.tree.map(lambda g, zi, di, dp, w: b1 * zi + (1 - b1) * g - (di - b1 * dp) * w,
                         updates, state.z, d, state.d, params)
        out = jax.tree.map(lambda zi, di, w: -zi / di - w, z, d, params)
        return out, FtmlState(d, v, z)

    return optax.GradientTransformation(init, update)


class FtrlState(NamedTuple):
    z: optax.Updates
    n: optax.Updates


def ftrl(lr, lamda1: float, beta: float, wd) -> optax.GradientTransformation:
    """MXNet's ftrl_update: the weight is solved in closed form; returned as `new - w`."""

    def init(params):
        return FtrlState(optax.tree.zeros_like(params), optax.tree.zeros_like(params))

    def update(updates, state, params):
        def one(g, z, n, w):
            z = z + g - (jnp.sqrt(n + g * g) - jnp.sqrt(n)) * w / lr
            n = n + g * g
            new = (jnp.sign(z) * lamda1 - z) / ((beta + jnp.sqrt(n)) / lr + wd) * (jnp.abs(z) > lamda1)
            return new - w, z, n

        res = jax.tree.map(one, updates, state.z, state.n, params)
        pick = lambda k: jax.tree.map(lambda r: r[k], res, is_leaf=lambda r: isinstance(r, tuple))  # noqa: E731
        return pick(0), FtrlState(pick(1), pick(2))

    return optax.GradientTransformation(init, update)


class NagState(NamedTuple):
    mom: optax.Updates


def nag_momentum(momentum: float, lr, wd) -> optax.GradientTransformation:
    """MXNet's nag_mom_update on a (rescaled, clipped) gradient, run in place as MXNet runs it.

    `mom' = momentum * mom`; `w_new = w + momentum * mom' - (1 + momentum) * lr * (g + wd * w)`;
    then `mom = mom' - lr * (g + wd * w_new)`: the kernel writes the weight before it
    updates the momentum, so the stored momentum's decay term sees the new weight.
    """

    def init(params):
        return NagState(optax.tree.zeros_like(params))

    def update(updates, state, params):
        m1 = jax.tree.map(lambda m: momentum * m, state.mom)
        step = jax.tree.map(lambda g, m, w: m * momentum - (momentum + 1) * lr * (g + wd * w), updates, m1, params)
        mom = jax.tree.map(lambda g, m, w, s: m - lr * (g + wd * (w + s)), updates, m1, params, step)
        return step, NagState(mom)

    return optax.GradientTransformation(init, update)


class PreviousWeight(NamedTuple):
    weight: optax.Params


def delay_compensation(lamda: float) -> optax.GradientTransformation:
    """DCASGD's `g + lamda * g * g * (w - w_prev)`; remembers the weight it saw."""

    def init(params):
        return PreviousWeight(jax.tree.map(jnp.array, params))

    def update(updates, state, params):
        out = jax.tree.map(lambda g, w, p: g + lamda * g * g * (w - p), updates, params, state.weight)
        return out, PreviousWeight(params)

    return optax.GradientTransformation(init, update)


def clip_weights(weight, bound):
    """RMSProp's `clip_weights`: the new weight clipped into `[-bound, bound]`."""
    return jnp.clip(weight, -bound, bound)
