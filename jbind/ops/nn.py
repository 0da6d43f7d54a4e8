"""Layers: FullyConnected, Embedding, Activation, LeakyReLU, Dropout, softmax family."""
from __future__ import annotations

import math
from typing import Literal, Optional

import jax
import jax.numpy as jnp

from ..base import DTypeError, ShapeError, fmt_shape, np_dtype
from . import _dense, _rand
from ._base import Op, frozen, register


def _known(s) -> bool:
    return s is not None and all(d > 0 for d in s)


@register
class FullyConnected(Op):
    """y = flatten(data) @ weight.T + bias."""
    num_hidden: int
    no_bias: bool = False
    flatten: bool = True

    def __post_init__(self):
        if self.num_hidden < 1:
            raise ValueError(f"num_hidden must be positive, got {self.num_hidden}")

    def arguments(self):
        return ("data", "weight") if self.no_bias else ("data", "weight", "bias")

    def infer_shape(self, ins, outs):
        data, weight = ins[0], ins[1]
        if data is None:  # as MXNet: nothing is inferred (not even the bias) before the data's shape
            return list(ins), [None], []
        if outs[0] is not None and data and data[0] == 0:
            data = (outs[0][0], *data[1:])  # the batch size flows back from the output (begin states)
        if self.flatten:
            k = math.prod(data[1:]) if _known(data[1:]) else (weight[1] if weight else 0)
            out = (data[0], self.num_hidden)
        else:
            k = data[-1]
            out = (*data[:-1], self.num_hidden)
        return [data, (self.num_hidden, k), (self.num_hidden,)][:len(ins)], [out], []

    def lower(self, ins, aux, is_train, key):
        data, weight, *bias = ins
        x = data.reshape(data.shape[0], -1) if self.flatten else data
        # contracting with the weight's own axis 1, not `x @ weight.T`: XLA:CPU runs the
        # transposed form 10x slower at batch 1 (benchmarks/RESULTS.md, "Convolution forms")
        dt = jnp.result_type(x, weight)
        if bias and bias[0].dtype == dt and _dense.wants_fold(x, weight):
            return [_dense.dense_bias(x, weight, bias[0])], aux
        y = jax.lax.dot_general(x.astype(dt), weight.astype(dt), (((x.ndim - 1,), (1,)), ((), ())))
        return [y + bias[0] if bias else y], aux


@register(aliases=("_contrib_SparseEmbedding",))
class Embedding(Op):
    """Row lookup: out[..., :] = weight[data[...]]; indices are clipped as MXNet does."""
    input_dim: int
    output_dim: int
    dtype: str = "float32"
    sparse_grad: bool = False

    def arguments(self):
        return ("data", "weight")

    def infer_shape(self, ins, outs):
        data = ins[0]
        out = None if data is None else (*data, self.output_dim)
        return [data, (self.input_dim, self.output_dim)], [out], []

    def infer_type(self, ins, outs):
        w = np_dtype(self.dtype)
        return [ins[0] if ins[0] is not None else w, w], [w], []

    def lower(self, ins, aux, is_train, key):
        data, weight = ins
        idx = jnp.clip(data.astype(jnp.int32), 0, self.input_dim - 1)
        return [jnp.take(weight, idx, axis=0)], aux


def _softrelu(x):
    return jax.nn.softplus(x)


@jax.custom_jvp
def _relu_inexact(x):
    return jnp.maximum(x, jnp.zeros((), x.dtype))


@_relu_inexact.defjvp
def _relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    # MXNet's relu_grad: NaN where the input is NaN, else 1 above 0 and 0 elsewhere (times
    # the head gradient, so an infinite head gradient at 0 gives NaN as in MXNet)
    slope = jnp.where(jnp.isnan(x), x, (x > 0).astype(x.dtype))
    return _relu_inexact(x), t * slope


def relu(x):
    """max(x, 0), NaN for NaN, with MXNet's gradient (NaN at a NaN input; jax.nn.relu's is 0)."""
    return _relu_inexact(x) if jnp.issubdtype(x.dtype, jnp.inexact) else jnp.maximum(x, 0)


_ACTS = {
    "relu": relu,
    "sigmoid": jax.nn.sigmoid,
    "tanh": jnp.tanh,
    "softrelu": _softrelu,
    "softsign": jax.nn.soft_sign,
}


@register
class Activation(Op):
    """Elementwise activation: relu, sigmoid, tanh, softrelu, softsign."""
    pointwise = True
    lists_input_names = False  # MXNet's monitors call its input NAME_input0
    act_type: Literal["relu", "sigmoid", "tanh", "softrelu", "softsign"]

    def lower(self, ins, aux, is_train, key):
        return [_ACTS[self.act_type](ins[0])], aux


@register
class LeakyReLU(Op):
    """leaky, elu, prelu (learned slope `gamma`), selu, gelu (erf form), rrelu (inference slope)."""
    act_type: Literal["leaky", "elu", "prelu", "selu", "gelu", "rrelu"] = "leaky"
    slope: float = 0.25
    lower_bound: float = 0.125
    upper_bound: float = 0.334

    # MXNet initialises the learned slope of the gamma variable it creates to 0.25.
    input_var_attrs = {"gamma": {"__init__": '["Constant", {"value": 0.25}]'}}

    def arguments(self):
        return ("data", "gamma") if self.act_type == "prelu" else ("data",)

    def total_outputs(self):
        return 2 if self.act_type == "rrelu" else 1  # rrelu: MXNet's hidden mask

    def infer_shape(self, ins, outs):
        data = ins[0] if ins[0] is not None else outs[0]
        if self.act_type != "prelu":
            return [data], [data], []
        gamma = ins[1] if ins[1] is not None else (None if data is None else (data[1] if len(data) > 1 else 1,))
        if gamma is not None and data is not None and all(gamma) and all(data):
            _prelu_gamma_shape(gamma, data)  # refuses a gamma that does not fit
        return [data, gamma], [data], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        t = self.act_type
        if t == "leaky":
            y = jnp.where(x > 0, x, x * self.slope)
        elif t == "elu":
            y = jnp.where(x > 0, x, self.slope * jnp.expm1(jnp.minimum(x, 0)))
        elif t == "selu":
            y = _selu(x)
        elif t == "gelu":
            y = jax.nn.gelu(x, approximate=False)
        elif t == "rrelu":
            y = jnp.where(x > 0, x, x * ((self.lower_bound + self.upper_bound) / 2))
        else:  # prelu: gamma's dims cover data's axes 1 (and 0) from the right, as MXNet's expand_shape
            gamma = ins[1].reshape(_prelu_gamma_shape(ins[1].shape, x.shape))
            y = jnp.where(x > 0, x, x * gamma)
        return [y], aux


def _prelu_gamma_shape(gamma, data) -> tuple:
    """PReLU's gamma, (C,), (1,) or (N, C), laid over data's axes 0 and 1 (1 elsewhere)."""
    out, s = [1] * len(data), len(gamma) - 1
    for i in range(len(data) - 1, -1, -1):
        if s >= 0 and i <= 1 and gamma[s] in (data[i], 1):
            out[i], s = gamma[s], s - 1
    if s != -1:
        raise ShapeError(f"cannot broadcast gamma {fmt_shape(gamma)} to data {fmt_shape(data)}")
    return tuple(out)


_SELU_LAMBDA, _SELU_ALPHA = 1.0507009873554805, 1.6732632423543772


def _selu_value(x):
    # lambda * alpha as one constant (one rounding in x's dtype): SELU then equals
    # `lambda * alpha * expm1(x)` written with NDArrays bit for bit, as MXNet's tests check.
    return jnp.where(x > 0, _SELU_LAMBDA * x, (_SELU_LAMBDA * _SELU_ALPHA) * jnp.expm1(jnp.minimum(x, 0)))


@jax.custom_vjp
def _selu(x):
    return _selu_value(x)


def _selu_fwd(x):
    y = _selu_value(x)
    return y, (x, y)


def _selu_bwd(res, g):
    # MXNet 1.x's gradient for x <= 0 is lambda * (out + alpha), not lambda * alpha * exp(x);
    # golden values from MXNet 1.9.1 pin this down.
    x, y = res
    return (g * jnp.where(x > 0, _SELU_LAMBDA, _SELU_LAMBDA * (y + _SELU_ALPHA)),)


_selu.defvjp(_selu_fwd, _selu_bwd)


@register
class Dropout(Op):
    """Zeroes elements with probability p in training (scaled by 1/(1-p)); identity at inference."""
    p: float = 0.5
    mode: Literal["training", "always"] = "training"
    axes: tuple[int, ...] = ()
    cudnn_off: Optional[bool] = False
    random = True

    def total_outputs(self):
        return 2  # MXNet's hidden mask

    def draws(self, is_train):
        return (is_train or self.mode == "always") and 0 < self.p < 1

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        if (not is_train and self.mode == "training") or self.p == 0:
            return [x], aux
        if self.p >= 1:  # MXNet scales the all-zero mask by 1 / (1 - p) = inf: NaN everywhere
            return [x * jnp.asarray(jnp.nan, x.dtype)], aux
        shape = list(x.shape)
        for a in self.axes:
            shape[a] = 1
        keep = _rand.bernoulli(key, jnp.float32(1.0 - self.p), tuple(shape))  # drawn in float32
        return [jnp.where(keep, x / (1.0 - self.p), jnp.zeros((), x.dtype))], aux


FloatDType = Optional[Literal["float16", "float32", "float64"]]


@frozen
class _Softmax(Op):
    """softmax / log_softmax of data / temperature along `axis`, output in `dtype` (default:
    the input's). softmax with `use_length` takes a `length` input (integers, the data's
    shape without `axis`): entries at or past a row's length are left out and output 0."""
    axis: int = -1
    temperature: Optional[float] = None
    dtype: FloatDType = None
    use_length: Optional[bool] = False
    _log = False

    def __post_init__(self):
        if self.use_length and self._log:
            raise ValueError("use_length=True is not supported: MXNet 1.9.1's log_softmax takes no length input")

    def arguments(self):
        return ("data", "length") if self.use_length else ("data",)

    def infer_shape(self, ins, outs):
        if not self.use_length:
            return super().infer_shape(ins, outs)
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:
            return [None, ins[1]], [None], []
        if not -len(data) <= self.axis < len(data):
            raise ValueError(f"axis {self.axis} is out of range for data {tuple(data)}")
        ax = self.axis % len(data)
        want = tuple(d for i, d in enumerate(data) if i != ax)
        length = ins[1]
        if length is not None and (len(length) != len(want) or any(a and b and a != b for a, b in zip(length, want))):
            raise ValueError(f"length {tuple(length)} must have the shape of data {tuple(data)} without axis "
                             f"{self.axis}: {want}")
        return [tuple(data), want], [tuple(data)], []

    def infer_type(self, ins, outs):
        t = ins[0]
        out = np_dtype(self.dtype) if self.dtype else (t if t is not None else outs[0])
        if not self.use_length:
            return [t if t is not None else (None if self.dtype else out)], [out], []
        # a float length binds (simple_bind's default float32, as MXNet's); running refuses it
        length = ins[1] if ins[1] is not None else np_dtype("int32")
        return [t, length], [out], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        out = jax.dtypes.canonicalize_dtype(np_dtype(self.dtype)) if self.dtype else x.dtype
        # float16 is computed in float32 (MXNet's MXNET_SAFE_ACCUMULATION), forward and gradient.
        x = x.astype(jnp.promote_types(jnp.promote_types(x.dtype, out), jnp.float32))
        if self.temperature not in (None, 1.0):
            x = x / self.temperature
        if not self.use_length:
            fn = jax.nn.log_softmax if self._log else jax.nn.softmax
            return [fn(x, axis=self.axis).astype(out)], aux
        if not jnp.issubdtype(ins[1].dtype, jnp.integer):
            raise DTypeError(f"softmax: length must hold integers (MXNet 1.9.1 refuses {ins[1].dtype.name})")
        ax = self.axis % x.ndim
        steps = jnp.arange(x.shape[ax]).reshape([-1 if i == ax else 1 for i in range(x.ndim)])
        keep = steps < jnp.expand_dims(ins[1], ax)
        y = jax.nn.softmax(jnp.where(keep, x, jnp.finfo(x.dtype).min), axis=ax)
        return [jnp.where(keep, y, 0).astype(out)], aux


@register
class softmax(_Softmax):
    """softmax(data / temperature) along `axis`; with `use_length`, over each row's first
    `length` entries (the rest 0)."""


@register
class log_softmax(_Softmax):
    """log(softmax(data / temperature)) along `axis`."""
    _log = True


@register
class SoftmaxActivation(Op):
    """Softmax over all but the batch axis (instance) or over axis 1 (channel)."""
    lists_input_names = False  # MXNet's monitors call its input NAME_input0
    mode: Literal["instance", "channel"] = "instance"

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        if self.mode == "channel":
            return [jax.nn.softmax(x, axis=1)], aux
        flat = x.reshape(x.shape[0], -1)
        return [jax.nn.softmax(flat, axis=-1).reshape(x.shape)], aux
