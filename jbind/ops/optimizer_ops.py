"""MXNet's optimizer update operators (`mx.nd.sgd_update`, `adam_update`, ...).

The weight and the gradient are arguments; the optimizer states (momentum, Adam's mean
and var, the float32 master weight of the `mp_` ops) are aux states, so `mx.nd` writes
their new values back into the caller's arrays, as MXNet mutates them in place. The
output is the new weight (MXNet's `out=weight` writes it back too).

The arithmetic follows MXNet 1.9.1's kernels, float32 scalars included: the rescale,
clip and weight-decay order differs by op (noted per op); `clip_gradient < 0` turns
clipping off, as does `clip_weights < 0`. `lazy_update` only matters for sparse
gradients, which jbind does not have: accepted and ignored.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._base import Op, register

_f32 = np.float32


def _clip(x, bound):
    """MXNet's clip of a gradient or weight: off when the bound is negative."""
    b = _f32(bound)
    return jnp.clip(x, -b, b) if b >= 0 else x


class _Update(Op):
    """Shared structure: inputs (weight, grad), states in `aux_names`, output the weight."""

    def arguments(self):
        return ("weight", "grad")

    def outputs(self):
        return ("output",)

    def infer_shape(self, ins, outs):
        try:
            return super().infer_shape(ins, outs)
        except ValueError as e:  # states are checked against the inferred shape by the caller
            raise ValueError(f"the gradient must have the weight's shape: {e}") from None

    def lower(self, ins, aux, is_train, key):
        weight, grad = ins
        new_w, new_states = self.update(weight, grad, *aux)
        return [new_w.astype(weight.dtype)], [s.astype(a.dtype) for s, a in zip(new_states, aux)]


class _MixedPrecision(_Update):
    """The `mp_` ops: the last state is a float32 master copy of the weight (`weight32`);
    the update runs in float32 on it and the output is cast to the weight's dtype. An mp_
    op lists its plain op after this class in its bases: the plain op's parameters, and its
    update applied to weight32 and the float32 gradient."""

    def infer_type(self, ins, outs):
        t = next((x for x in list(ins) + list(outs) if x is not None), None)
        return [t, t], [t], [np.dtype(np.float32).name] * len(self.aux_names)

    def update(self, w, g, *states):
        *states, w32 = states
        w32, states = super().update(w32, g.astype(jnp.float32), *states)
        return w32, [*states, w32]


def _sgd_w(w, g, lr, wd, rescale, clip):
    lr, wd, rescale = _f32(lr), _f32(wd), _f32(rescale)
    decay = _f32(1) - lr * wd
    if clip >= 0:
        return decay * w - lr * _clip(rescale * g, clip)
    return decay * w - (lr * rescale) * g


def _mom(w, g, m, lr, momentum, wd, rescale, clip):
    lr, wd, rescale, momentum = _f32(lr), _f32(wd), _f32(rescale), _f32(momentum)
    step = lr * _clip(rescale * g, clip) if clip >= 0 else (lr * rescale) * g
    return momentum * m - (lr * wd) * w - step


def _nag(w, g, m, lr, momentum, wd, rescale, clip):
    """-> (new weight, new mom): mom = momentum*mom - lr*g; w += momentum*mom_new - lr*g
    with g = clip(rescale*grad) + wd*w."""
    lr, wd, rescale, momentum = _f32(lr), _f32(wd), _f32(rescale), _f32(momentum)
    gr = _clip(rescale * g, clip) + wd * w
    m = momentum * m
    new_w = w - m + (momentum + _f32(1)) * (m - lr * gr)
    return new_w, m - lr * gr


@register
class sgd_update(_Update):
    """weight = (1 - lr*wd)*weight - lr*clip(rescale_grad*grad)."""
    lr: float
    wd: float = 0.0
    rescale_grad: float = 1.0
    clip_gradient: float = -1.0
    lazy_update: bool = True

    def update(self, w, g):
        return _sgd_w(w, g, self.lr, self.wd, self.rescale_grad, self.clip_gradient), []


@register
class sgd_mom_update(_Update):
    """mom = momentum*mom - lr*wd*weight - lr*clip(rescale_grad*grad); weight += mom."""
    lr: float
    momentum: float = 0.0
    wd: float = 0.0
    rescale_grad: float = 1.0
    clip_gradient: float = -1.0
    lazy_update: bool = True
    aux_names = ("mom",)

    def update(self, w, g, m):
        m = _mom(w, g, m, self.lr, self.momentum, self.wd, self.rescale_grad, self.clip_gradient)
        return w + m, [m]


@register
class nag_mom_update(_Update):
    """Nesterov momentum: g = clip(rescale_grad*grad) + wd*weight; mom = momentum*mom;
    weight += -mom + (1 + momentum)*(mom - lr*g); mom -= lr*g."""
    lr: float
    momentum: float = 0.0
    wd: float = 0.0
    rescale_grad: float = 1.0
    clip_gradient: float = -1.0
    aux_names = ("mom",)

    def update(self, w, g, m):
        w, m = _nag(w, g, m, self.lr, self.momentum, self.wd, self.rescale_grad, self.clip_gradient)
        return w, [m]


@register
class adam_update(_Update):
    """g = clip(rescale_grad*grad + wd*weight); mean, var: moving averages of g and g*g;
    weight -= lr*mean/(sqrt(var) + epsilon) (no bias correction: the optimizer folds it into lr)."""
    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8
    wd: float = 0.0
    rescale_grad: float = 1.0
    clip_gradient: float = -1.0
    lazy_update: bool = True
    aux_names = ("mean", "var")

    def update(self, w, g, mean, var):
        b1, b2 = _f32(self.beta1), _f32(self.beta2)
        g = _clip(g * _f32(self.rescale_grad) + w * _f32(self.wd), self.clip_gradient)
        mean = b1 * mean + (_f32(1) - b1) * g
        var = b2 * var + (_f32(1) - b2) * jnp.square(g)
        return w - _f32(self.lr) * mean / (jnp.sqrt(var) + _f32(self.epsilon)), [mean, var]


@register
class rmsprop_update(_Update):
    """Tieleman & Hinton: g = clip(rescale_grad*grad + wd*weight); n = (1-gamma1)*g*g + gamma1*n;
    weight = clip_weights(weight - lr*g/sqrt(n + epsilon))."""
    lr: float
    gamma1: float = 0.95
    epsilon: float = 1e-8
    wd: float = 0.0
    rescale_grad: float = 1.0
    clip_gradient: float = -1.0
    clip_weights: float = -1.0
    aux_names = ("n",)

    def update(self, w, g, n):
        g1 = _f32(self.gamma1)
        g = _clip(_f32(self.rescale_grad) * g + _f32(self.wd) * w, self.clip_gradient)
        n = (_f32(1) - g1) * g * g + g1 * n
        w = w - _f32(self.lr) * (g / jnp.sqrt(n + _f32(self.epsilon)))
        return _clip(w, self.clip_weights), [n]


@register
class rmspropalex_update(_Update):
    """Graves 2013: g = clip(rescale_grad*grad + wd*weight); n, g_avg: moving averages of g*g
    and g; delta = gamma2*delta - lr*g/sqrt(n - g_avg^2 + epsilon); weight = clip_weights(weight + delta)."""
    lr: float
    gamma1: float = 0.95
    gamma2: float = 0.9
    epsilon: float = 1e-8
    wd: float = 0.0
    rescale_grad: float = 1.0
    clip_gradient: float = -1.0
    clip_weights: float = -1.0
    aux_names = ("n", "g", "delta")

    def update(self, w, g, n, gavg, delta):
        g1 = _f32(self.gamma1)
        g = _clip(_f32(self.rescale_grad) * g + _f32(self.wd) * w, self.clip_gradient)
        n = (_f32(1) - g1) * g * g + g1 * n
        gavg = (_f32(1) - g1) * g + g1 * gavg
        delta = _f32(self.gamma2) * delta - _f32(self.lr) * (g / jnp.sqrt(n - gavg * gavg + _f32(self.epsilon)))
        return _clip(w + delta, self.clip_weights), [n, gavg, delta]


@register
class signsgd_update(_Update):
    """weight = (1 - lr*wd)*weight - lr*sign(grad) (rescale and clip cannot change a sign)."""
    lr: float
    wd: float = 0.0
    rescale_grad: float = 1.0
    clip_gradient: float = -1.0

    def update(self, w, g):
        lr = _f32(self.lr)
        return (_f32(1) - lr * _f32(self.wd)) * w - lr * jnp.sign(g), []


@register
class signum_update(_Update):
    """mom = momentum*mom - (1-momentum)*(wd*weight + clip(rescale_grad*grad));
    weight = (1 - lr*wd_lh)*weight + lr*sign(mom)."""
    lr: float
    momentum: float = 0.0
    wd: float = 0.0
    rescale_grad: float = 1.0
    clip_gradient: float = -1.0
    wd_lh: float = 0.0
    aux_names = ("mom",)

    def update(self, w, g, m):
        mo, lr = _f32(self.momentum), _f32(self.lr)
        rest = _f32(1) - mo
        m = mo * m - rest * _f32(self.wd) * w - rest * _clip(_f32(self.rescale_grad) * g, self.clip_gradient)
        return (_f32(1) - lr * _f32(self.wd_lh)) * w + lr * jnp.sign(m), [m]


@register
class ftrl_update(_Update):
    """FTRL-proximal: g = clip(rescale_grad*grad); z += g - (sqrt(n + g*g) - sqrt(n))*weight/lr;
    n += g*g; weight = (sign(z)*lamda1 - z)/((beta + sqrt(n))/lr + wd) where |z| > lamda1, else 0."""
    lr: float
    lamda1: float = 0.01
    beta: float = 1.0
    wd: float = 0.0
    rescale_grad: float = 1.0
    clip_gradient: float = -1.0
    aux_names = ("z", "n")

    def update(self, w, g, z, n):
        lr, l1 = _f32(self.lr), _f32(self.lamda1)
        g = _clip(_f32(self.rescale_grad) * g, self.clip_gradient)
        z = z + g - (jnp.sqrt(n + jnp.square(g)) - jnp.sqrt(n)) * w / lr
        n = n + jnp.square(g)
        w = (jnp.sign(z) * l1 - z) / ((_f32(self.beta) + jnp.sqrt(n)) / lr + _f32(self.wd))
        return jnp.where(jnp.abs(z) > l1, w, jnp.zeros_like(w)), [z, n]


@register
class ftml_update(_Update):
    """FTML (Zheng & Kwok 2017) at step t: g = clip_grad(rescale_grad*grad + wd*weight);
    v = beta2*v + (1-beta2)*g*g; d_t = (1-beta1^t)/lr*(sqrt(v/(1-beta2^t)) + epsilon);
    z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*weight; d = d_t; weight = -z/d_t."""
    lr: float
    t: int
    beta1: float = 0.6
    beta2: float = 0.999
    epsilon: float = 1e-8
    wd: float = 0.0
    rescale_grad: float = 1.0
    clip_grad: float = -1.0
    aux_names = ("d", "v", "z")
    mxnet_order = ("lr", "beta1", "beta2", "epsilon", "t", "wd", "rescale_grad", "clip_grad")

    def update(self, w, g, d, v, z):
        b1, b2, lr = _f32(self.beta1), _f32(self.beta2), _f32(self.lr)
        t = _f32(self.t)
        g = _clip(_f32(self.rescale_grad) * g + _f32(self.wd) * w, self.clip_grad)
        v = b2 * v + (_f32(1) - b2) * jnp.square(g)
        d_t = (_f32(1) - b1 ** t) / lr * (jnp.sqrt(v / (_f32(1) - b2 ** t)) + _f32(self.epsilon))
        z = b1 * z + (_f32(1) - b1) * g - (d_t - b1 * d) * w
        return -z / d_t, [d_t, v, z]


@register
class mp_sgd_update(_MixedPrecision, sgd_update):
    """sgd_update on the float32 master weight `weight32`; the output is it in weight's dtype."""
    aux_names = ("weight32",)


@register
class mp_sgd_mom_update(_MixedPrecision, sgd_mom_update):
    """sgd_mom_update on the float32 master weight `weight32` (mom is float32 too)."""
    aux_names = ("mom", "weight32")


@register
class mp_nag_mom_update(_MixedPrecision, nag_mom_update):
    """nag_mom_update on the float32 master weight `weight32` (mom is float32 too)."""
    aux_names = ("mom", "weight32")

    def update(self, w, g, m, w32):
        g = g.astype(jnp.float32)
        new_w32, _ = _nag(w32, g, m, self.lr, self.momentum, self.wd, self.rescale_grad, self.clip_gradient)
        # MXNet 1.9.1's kernel takes the weight decay of the new momentum from the *updated*
        # weight32 (nag_mom_update takes it from the old weight): kept, so states match
        lr, momentum = _f32(self.lr), _f32(self.momentum)
        gr = _clip(_f32(self.rescale_grad) * g, self.clip_gradient) + _f32(self.wd) * new_w32
        return new_w32, [momentum * m - lr * gr, new_w32]
