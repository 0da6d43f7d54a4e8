"""MXNet 1.9.1's optimizers as optax chains.

Each class's `_tx(lr, wd, t)` composes optax pieces in the order MXNet's kernel (or
Python rule) applies them; the docstrings give that rule. `rescale_grad` always comes
first. Hyperparameters that MXNet's C++ kernels hold as float32 are rounded the same way
(`f32`), so moments match MXNet's to float32 rounding.
"""
from __future__ import annotations

import jax.numpy as jnp
from ._lazy import optax

from ._base import Optimizer, register
from ._transforms import (clip_weights, delay_compensation, f32, ftml, ftrl, nag_momentum, one_minus_pow,
                          scale_by_mx_adam, scale_by_mx_adamax, scale_by_nadam)

__all__ = ["SGD", "ccSGD", "NAG", "Signum", "Adam", "RMSProp", "AdaGrad", "AdaDelta", "FTML", "Ftrl", "Adamax",
           "Nadam", "DCASGD"]


def _single(leaves):
    return leaves[0] if leaves else None


@register
class SGD(Optimizer):
    """SGD with momentum and weight decay (sgd_update / sgd_mom_update)::

        grad = clip(rescale_grad * grad, clip_gradient) + wd * weight
        mom = momentum * mom - lr * grad          # no state when momentum == 0
        weight += mom                             # or weight -= lr * grad

    With `lazy_update` (the default), a row_sparse gradient updates only its rows.
    """

    _hyper = ("momentum",)

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = 4

    def _init_state(self, weight):
        if self.momentum <= 0:  # MXNet's SGD keeps no state then; nor builds a chain to say so
            return None
        return super()._init_state(weight)

    def _tx(self, lr, wd, t):
        tail = [optax.trace(f32(self.momentum))] if self.momentum > 0 else []
        return optax.chain(optax.scale(f32(self.rescale_grad)), *self._clip(), optax.add_decayed_weights(wd),
                           optax.scale(-lr), *tail)

    _to_mx = staticmethod(_single)

    def _lazy(self):
        return bool(self.lazy_update)


@register
class ccSGD(SGD):  # noqa: N801  (MXNet's name)
    """[DEPRECATED] Same as `SGD`."""


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient (nag_mom_update), in MXNet's in-place order::

        grad = clip(rescale_grad * grad, clip_gradient)
        mom = momentum * mom
        weight += momentum * mom - (1 + momentum) * lr * (grad + wd * weight)
        mom -= lr * (grad + wd * weight)          # the updated weight, as MXNet's kernel
        # momentum == 0: weight -= lr * (grad + wd * weight)
    """

    _hyper = ("momentum",)

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def _tx(self, lr, wd, t):
        head = [optax.scale(f32(self.rescale_grad)), *self._clip()]
        if self.momentum > 0:
            return optax.chain(*head, nag_momentum(f32(self.momentum), lr, wd))
        return optax.chain(*head, optax.add_decayed_weights(wd), optax.scale(-lr))

    _to_mx = staticmethod(_single)


@register
class Signum(Optimizer):
    """signSGD / Signum (signsgd_update / signum_update)::

        grad = clip(rescale_grad * grad, clip_gradient)
        mom = momentum * mom - (1 - momentum) * (grad + wd * weight)
        weight = (1 - lr * wd_lh) * weight + lr * sign(mom)
        # momentum == 0: weight = (1 - lr * wd) * weight - lr * sign(grad)
    """

    _hyper = ("momentum", "wd_lh")

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def _tx(self, lr, wd, t):
        head = [optax.scale(f32(self.rescale_grad)), *self._clip()]
        if not self.momentum > 0:
            return optax.chain(*head, optax.scale_by_sign(), optax.add_decayed_weights(wd), optax.scale(-lr))
        m = f32(self.momentum)
        return optax.chain(*head, optax.add_decayed_weights(wd), optax.scale(-(1 - m)), optax.trace(m),
                           optax.scale_by_sign(), optax.add_decayed_weights(-f32(self.wd_lh)), optax.scale(lr))

    _to_mx = staticmethod(_single)


@register
class Adam(Optimizer):
    """Adam (adam_update), with the bias correction folded into the rate::

        grad = clip(rescale_grad * grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * grad;  v = beta2 * v + (1 - beta2) * grad**2
        weight -= lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m / (sqrt(v) + epsilon)
    """

    _hyper = ("beta1", "beta2", "epsilon")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lazy_update = lazy_update

    def _tx(self, lr, wd, t):
        rate = lr * jnp.sqrt(one_minus_pow(self.beta2, t)) / one_minus_pow(self.beta1, t)
        return optax.chain(optax.scale(f32(self.rescale_grad)), optax.add_decayed_weights(wd), *self._clip(),
                           scale_by_mx_adam(f32(self.beta1), f32(self.beta2), f32(self.epsilon)), optax.scale(-rate))

    def _lazy(self):  # with lazy_update, a row_sparse gradient updates only its rows
        return bool(self.lazy_update)


@register
class RMSProp(Optimizer):
    """RMSProp (rmsprop_update; rmspropalex_update when `centered`)::

        grad = clip(rescale_grad * grad + wd * weight, clip_gradient)
        n = gamma1 * n + (1 - gamma1) * grad**2
        weight -= lr * grad / sqrt(n + epsilon)                       # Tieleman & Hinton
        # centered: g = gamma1 * g + (1 - gamma1) * grad
        #           delta = gamma2 * delta - lr * grad / sqrt(n - g**2 + epsilon); weight += delta
        weight = clip(weight, clip_weights)

    State: `(n,)`, or `(n, g, delta)` when centered.
    """

    _hyper = ("gamma1", "gamma2", "epsilon", "centered", "clip_weights")

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False,
                 clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2, self.epsilon = gamma1, gamma2, epsilon
        self.centered = centered
        self.clip_weights = clip_weights

    def _tx(self, lr, wd, t):
        head = [optax.scale(f32(self.rescale_grad)), optax.add_decayed_weights(wd), *self._clip()]
        g1, eps = f32(self.gamma1), f32(self.epsilon)
        if not self.centered:
            return optax.chain(*head, optax.scale_by_rms(g1, eps, initial_scale=0.0), optax.scale(-lr))
        return optax.chain(*head, optax.scale_by_stddev(g1, eps, initial_scale=0.0), optax.scale(-lr),
                           optax.trace(f32(self.gamma2)))

    def _to_mx(self, leaves):
        return (leaves[1], leaves[0], leaves[2]) if self.centered else tuple(leaves)

    def _from_mx(self, state):
        return [state[1], state[0], state[2]] if self.centered else list(state)

    def _finish(self, new_weight):
        c = self.clip_weights
        return clip_weights(new_weight, c) if c and c > 0 else new_weight


@register
class AdaGrad(Optimizer):
    """AdaGrad (MXNet's Python rule)::

        grad = clip(rescale_grad * grad, clip_gradient)
        history += grad**2
        weight -= lr * (grad / sqrt(history + eps) + wd * weight)
    """

    _hyper = ("float_stable_eps",)
    _clip_when_set = True

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def _tx(self, lr, wd, t):
        return optax.chain(optax.scale(self.rescale_grad), *self._clip(),
                           optax.scale_by_rss(initial_accumulator_value=0.0, eps=self.float_stable_eps),
                           optax.add_decayed_weights(wd), optax.scale(-lr))

    _to_mx = staticmethod(_single)


@register
class AdaDelta(Optimizer):
    """AdaDelta (MXNet's Python rule; the learning rate is not used)::

        grad = clip(rescale_grad * grad, clip_gradient)
        acc_g = rho * acc_g + (1 - rho) * grad**2
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * grad
        acc_delta = rho * acc_delta + (1 - rho) * delta**2
        weight -= delta + wd * weight

    Unlike MXNet, the caller's gradient is not scaled in place by `rescale_grad`.
    """

    _hyper = ("rho", "epsilon")
    _clip_when_set = True

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho, self.epsilon = rho, epsilon

    def _tx(self, lr, wd, t):
        return optax.chain(optax.scale(self.rescale_grad), *self._clip(),
                           optax.scale_by_adadelta(self.rho, self.epsilon), optax.add_decayed_weights(wd),
                           optax.scale(-1.0))


@register
class FTML(Optimizer):
    """FTML (ftml_update)::

        grad = clip(rescale_grad * grad + wd * weight, clip_gradient)
        v = beta2 * v + (1 - beta2) * grad**2
        d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)
        z = beta1 * z + (1 - beta1) * grad - (d_t - beta1 * d) * weight;  d = d_t
        weight = -z / d_t

    State: `(d, v, z)`.
    """

    _hyper = ("beta1", "beta2", "epsilon")

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

    def _tx(self, lr, wd, t):
        return optax.chain(optax.scale(f32(self.rescale_grad)), optax.add_decayed_weights(wd), *self._clip(),
                           ftml(lr, f32(self.beta1), f32(self.beta2), f32(self.epsilon), t))


@register
class Ftrl(Optimizer):
    """FTRL-proximal (ftrl_update)::

        grad = clip(rescale_grad * grad, clip_gradient)
        z += grad - (sqrt(n + grad**2) - sqrt(n)) * weight / lr;  n += grad**2
        weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (|z| > lamda1)

    State: `(z, n)`.
    """

    _hyper = ("lamda1", "beta")

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(**kwargs)
        self.lamda1, self.beta = lamda1, beta
        self.lr = learning_rate

    def _tx(self, lr, wd, t):
        return optax.chain(optax.scale(f32(self.rescale_grad)), *self._clip(),
                           ftrl(lr, f32(self.lamda1), f32(self.beta), wd))

    def _lazy(self):  # MXNet's sparse ftrl_update: a row_sparse gradient updates only its rows
        return True


@register
class Adamax(Optimizer):
    """AdaMax (MXNet's Python rule)::

        grad = clip(rescale_grad * grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * grad;  u = max(beta2 * u, |grad|)
        weight -= lr / (1 - beta1**t) * m / u
    """

    _hyper = ("beta1", "beta2")
    _clip_when_set = True

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2 = beta1, beta2

    def _tx(self, lr, wd, t):
        return optax.chain(optax.scale(self.rescale_grad), optax.add_decayed_weights(wd), *self._clip(),
                           scale_by_mx_adamax(self.beta1, self.beta2),
                           optax.scale(-lr / one_minus_pow(self.beta1, t)))


@register
class Nadam(Optimizer):
    """Nesterov Adam (MXNet's Python rule), with the momentum schedule `m_schedule`.

    MXNet keeps one `m_schedule` per optimizer and multiplies it at every update of any
    parameter. The imperative `update` does the same; the functional `step` keeps it in
    each parameter's state, `(m, v, m_schedule)`, so with several parameters the
    functional path follows the paper rather than MXNet's shared product.
    """

    _hyper = ("beta1", "beta2", "epsilon", "schedule_decay")
    _clip_when_set = True

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def _tx(self, lr, wd, t):
        return optax.chain(optax.scale(self.rescale_grad), optax.add_decayed_weights(wd), *self._clip(),
                           scale_by_nadam(self.beta1, self.beta2, self.epsilon, self.schedule_decay, t),
                           optax.scale(-lr))

    def create_state(self, index, weight):
        return super().create_state(index, weight)[:2]

    def _keeps_master(self, weight) -> bool:  # the shared m_schedule state has no master-copy layout
        return False

    def _functional_state(self, state):
        return (state[0]._data, state[1]._data, jnp.asarray(self.m_schedule, jnp.float32))

    def _store_state(self, state, new_state):
        state[0]._data, state[1]._data = new_state[0], new_state[1]
        self.m_schedule = float(new_state[2])


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD (MXNet's Python rule)::

        grad = clip(rescale_grad * grad, clip_gradient)
        mom = momentum * mom - lr * (grad + wd * weight + lamda * grad**2 * (weight - previous_weight))
        previous_weight = weight;  weight += mom

    State: `(mom or None, previous_weight)`. MXNet 1.9.1 fails for momentum > 0 (it takes
    the truth value of the momentum array); jbind applies the rule above.
    """

    _hyper = ("momentum", "lamda")
    _clip_when_set = True

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def _tx(self, lr, wd, t):
        mom = [optax.trace(self.momentum)] if self.momentum != 0.0 else []
        return optax.chain(optax.scale(self.rescale_grad), *self._clip(), delay_compensation(self.lamda),
                           optax.add_decayed_weights(wd), optax.scale(-lr), *mom)

    def _to_mx(self, leaves):
        return (leaves[1] if len(leaves) > 1 else None, leaves[0])

    def _from_mx(self, state):
        return [state[1]] + ([] if state[0] is None else [state[0]])
