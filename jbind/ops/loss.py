"""Loss heads. Their backward is MXNet's, not the math gradient of the forward:
it ignores the head gradient and has its own normalisation (jax.custom_vjp).
Also softmax_cross_entropy, a loss whose gradient scales with the head gradient."""
from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

from ..base import fmt_shape
from ._base import Op, frozen, register


def _loss_vjp(forward, grad):
    """A function of (data, label) whose data-gradient is `grad(out, data, label, g)`."""
    @jax.custom_vjp
    def f(data, label):
        return forward(data)

    def fwd(data, label):
        out = forward(data)
        return out, (out, data, label)

    def bwd(res, g):
        out, data, label = res
        return grad(out, data, label, g).astype(data.dtype), jnp.zeros_like(label)

    f.defvjp(fwd, bwd)
    return f


@register(aliases=("Softmax",))
class SoftmaxOutput(Op):
    """softmax in forward; backward `grad_scale * (softmax - onehot(label)) / norm` (head gradient ignored)."""
    grad_scale: float = 1.0
    ignore_label: float = -1.0
    multi_output: bool = False
    use_ignore: bool = False
    preserve_shape: bool = False
    normalization: Literal["null", "batch", "valid"] = "null"
    out_grad: bool = False
    smooth_alpha: float = 0.0
    is_loss = True

    def arguments(self):
        return ("data", "label")

    def infer_shape(self, ins, outs):
        data, label = ins
        data = data if data is not None else outs[0]
        if data is None:
            return [None, label], [None], []
        if label is not None and tuple(label) == tuple(data):
            return [data, label], [data], []
        if self.multi_output:
            n, rest = data[0], data[2:]
            cands = [(n, _prod(rest)), (n, *rest), (n, 1, *rest)]
            if label is None:
                label = cands[0]
            elif tuple(label) not in cands and all(d > 0 for d in label):
                raise ValueError(f"label shape must be {cands[0]} or {cands[1]}, got {tuple(label)}")
        else:
            label = tuple(data[:-1])
        return [data, label], [data], []

    def infer_type(self, ins, outs):
        t = ins[0] if ins[0] is not None else outs[0]
        return [t, t], [t], []

    def _softmax(self, x):
        if self.multi_output:
            return jax.nn.softmax(x, axis=1)
        if self.preserve_shape:
            return jax.nn.softmax(x, axis=-1)
        return jax.nn.softmax(x.reshape(x.shape[0], -1), axis=-1).reshape(x.shape)

    def _grad(self, out, data, label, g):
        scale = self.grad_scale
        if label.shape == out.shape:  # probabilities as labels
            grad = (out - label) * scale
            return grad * g if self.out_grad else grad
        if self.multi_output:
            n, k = out.shape[0], out.shape[1]
            o = out.reshape(n, k, -1)
            lab = label.reshape(n, -1)
            r = o.shape[2]
            onehot = self._target(lab.astype(jnp.int32), k, axis=1, dtype=o.dtype)
            grad = o - onehot
            count = lab.size
            if self.use_ignore:
                grad = jnp.where((lab == self.ignore_label)[:, None, :], 0, grad)
            if self.normalization == "batch":
                denom = n * r
            elif self.normalization == "valid":
                denom = jnp.maximum(jnp.sum(lab != self.ignore_label), 1)
            else:
                denom = r if count else 1
            grad = grad * (scale / denom)
            grad = grad.reshape(out.shape)
            return grad * g if self.out_grad else grad
        rows = out.reshape(-1, out.shape[-1]) if self.preserve_shape else out.reshape(out.shape[0], -1)
        k = rows.shape[1]
        lab = label.reshape(-1)[: rows.shape[0]]
        grad = rows - self._target(lab.astype(jnp.int32), k, axis=-1, dtype=rows.dtype)
        if self.use_ignore:
            grad = jnp.where((lab == self.ignore_label)[:, None], 0, grad)
        if self.normalization == "batch":
            denom = label.size
        elif self.normalization == "valid":
            denom = jnp.maximum(jnp.sum(label.reshape(-1) != self.ignore_label), 1)
        else:
            denom = 1
        grad = (grad * (scale / denom)).reshape(out.shape)
        return grad * g if self.out_grad else grad

    def _target(self, lab, k, axis, dtype):
        onehot = jax.nn.one_hot(lab, k, axis=axis, dtype=dtype)
        if self.smooth_alpha:
            a = self.smooth_alpha
            onehot = onehot * (1 - a) + (1 - onehot) * (a / (k - 1))
        return onehot

    def lower(self, ins, aux, is_train, key):
        f = _loss_vjp(self._softmax, self._grad)
        return [f(ins[0], ins[1])], aux


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


@frozen
class _Regression(Op):
    grad_scale: float = 1.0
    is_loss = True

    def arguments(self):
        return ("data", "label")

    def infer_shape(self, ins, outs):
        data, label = ins
        data = data if data is not None else outs[0]
        if data is None:
            return [None, label], [None], []
        if label is None or not (len(label) == 1 and len(data) == 2 and data[1] == 1):
            label = data if label is None or len(label) == len(data) else label
        return [data, label], [data], []

    def _fwd(self, x):
        return x

    def _delta(self, out, label):
        return out - label

    def _grad(self, out, data, label, g):
        num_output = label.size // label.shape[0] if label.ndim else 1
        return self._delta(out, label.reshape(out.shape)) * (self.grad_scale / num_output)

    def lower(self, ins, aux, is_train, key):
        return [_loss_vjp(self._fwd, self._grad)(ins[0], ins[1])], aux


@register
class LinearRegressionOutput(_Regression):
    """Identity forward; backward `grad_scale/num_output * (out - label)`."""


@register
class LogisticRegressionOutput(_Regression):
    """Sigmoid forward; backward `grad_scale/num_output * (out - label)`."""

    def _fwd(self, x):
        return jax.nn.sigmoid(x)


@register
class MAERegressionOutput(_Regression):
    """Identity forward; backward `grad_scale/num_output * sign(out - label)`."""

    def _delta(self, out, label):
        return jnp.sign(out - label)


@register
class MakeLoss(Op):
    """Identity forward; backward `grad_scale` (divided by the batch or valid count)."""
    grad_scale: float = 1.0
    valid_thresh: float = 0.0
    normalization: Literal["null", "batch", "valid"] = "null"
    is_loss = True

    def lower(self, ins, aux, is_train, key):
        def grad(out, data, label, g):
            ones = jnp.full(out.shape, self.grad_scale, out.dtype)
            if self.normalization == "batch":
                return ones / out.shape[0]
            if self.normalization == "valid":
                return ones / jnp.maximum(jnp.sum(out > self.valid_thresh), 1)
            return ones
        x = ins[0]
        return [_loss_vjp(lambda d: d, grad)(x, jnp.zeros((), x.dtype))], aux


@register
class make_loss(Op):
    """MXNet's `make_loss`, a separate op from `MakeLoss`: no parameters, identity forward,
    gradient ones whatever the head gradient, its output named `loss` (`<name>_loss`)."""
    is_loss = True

    def outputs(self):
        return ("loss",)

    def lower(self, ins, aux, is_train, key):
        def grad(out, data, label, g):
            return jnp.ones(out.shape, out.dtype)
        x = ins[0]
        return [_loss_vjp(lambda d: d, grad)(x, jnp.zeros((), x.dtype))], aux


@register(aliases=("stop_gradient",))
class BlockGrad(Op):
    """Identity forward; zero gradient."""
    pointwise = True
    lists_input_names = False  # MXNet's monitors call its input NAME_input0
    is_loss = True
    blocks_gradient = True

    def lower(self, ins, aux, is_train, key):
        return [jax.lax.stop_gradient(ins[0])], aux


@register
class SVMOutput(Op):
    """Identity forward; backward the gradient of the L2-SVM hinge loss (L1-SVM with
    `use_linear`) times `regularization_coefficient`, head gradient ignored.

    data (..., classes), label data.shape[:-1] with class indices.
    """
    margin: float = 1.0
    regularization_coefficient: float = 1.0
    use_linear: bool = False
    is_loss = True

    def arguments(self):
        return ("data", "label")

    def infer_shape(self, ins, outs):
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:
            return [None, ins[1]], [None], []
        if len(data) < 2:
            raise ValueError(f"data must have a class axis last and at least 2 dimensions, got {fmt_shape(data)}")
        return [data, tuple(data[:-1])], [data], []

    def _grad(self, out, data, label, g):
        k = out.shape[-1]
        target = jax.nn.one_hot(label.reshape(out.shape[:-1]).astype(jnp.int32), k, dtype=jnp.bool_)
        m = jnp.asarray(self.margin, out.dtype)
        c = jnp.asarray(self.regularization_coefficient, out.dtype)
        zero = jnp.zeros_like(out)
        if self.use_linear:
            grad = jnp.where(target, -(m > out).astype(out.dtype), (m > -out).astype(out.dtype))
        else:
            grad = jnp.where(target, jnp.where(m > out, -2 * (m - out), zero),
                             jnp.where(m > -out, 2 * (m + out), zero))
        return grad * c

    def lower(self, ins, aux, is_train, key):
        return [_loss_vjp(lambda d: d, self._grad)(ins[0], ins[1])], aux


@jax.custom_vjp
def _softmax_ce(data, label):
    return _softmax_ce_fwd(data, label)[0]


def _softmax_ce_fwd(data, label):
    p = jax.nn.softmax(data, axis=-1)
    target = jax.nn.one_hot(label.astype(jnp.int32), data.shape[-1], dtype=data.dtype)
    picked = jnp.maximum(jnp.sum(p * target, axis=-1), jnp.asarray(1e-8, data.dtype))
    return -jnp.sum(jnp.log(picked)).reshape(1), (p, target, label)


def _softmax_ce_bwd(res, g):
    p, target, label = res
    return ((p - target) * g[0]).astype(p.dtype), jnp.zeros_like(label)


_softmax_ce.defvjp(_softmax_ce_fwd, _softmax_ce_bwd)


@register
class softmax_cross_entropy(Op):
    """sum over the batch of -log(softmax(data)[label]) (floored at 1e-8), shape (1,).

    data (batch, classes), label (batch,). The gradient is head * (softmax - onehot(label)),
    MXNet's; the label gets a zero gradient (MXNet refuses to compute one).
    """

    def arguments(self):
        return ("data", "label")

    def infer_shape(self, ins, outs):
        data, label = ins
        if data is not None and len(data) != 2:
            raise ValueError(f"data must be 2-D (batch, classes), got {fmt_shape(data)}")
        if label is not None and len(label) != 1:
            raise ValueError(f"label must be 1-D (batch,), got {fmt_shape(label)}")
        if data is not None and label is not None and data[0] and label[0] and data[0] != label[0]:
            raise ValueError(f"data {fmt_shape(data)} and label {fmt_shape(label)} differ in batch size")
        if label is None and data is not None:
            label = (data[0],)
        elif data is not None and not data[0]:
            data = (label[0], data[1])
        return [data, label], [(1,)], []

    def lower(self, ins, aux, is_train, key):
        return [_softmax_ce(ins[0], ins[1])], aux
