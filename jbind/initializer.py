"""Weight initializers, as `mxnet.initializer` / `mx.init` (MXNet 1.9.1).

`init(InitDesc(name, attrs), arr)` fills the NDArray `arr` in place. An `__init__`
attribute (a registered name or a `dumps()` JSON string) picks the initializer;
otherwise the name's suffix does: `weight` -> `_init_weight`, `bias` and `beta` -> 0,
`gamma` -> 1, `min` -> 0, `max` -> 1; anything else is an error (BatchNorm's moving
statistics carry `__init__` attributes). Called with a plain string name (deprecated in
MXNet too), the legacy table applies, which also knows `moving_mean`, `moving_var`,
`moving_inv_var`, `moving_avg`, `upsampling*` and `stn_loc*`.

Random draws come from numpy's generator in `mx.random` (seeded by `mx.random.seed`), so
values differ from MXNet's; distributions, bounds and fan computations are MXNet's.
"""
from __future__ import annotations

import json
import logging
import re
import warnings
from math import sqrt

import numpy as np

from . import registry
from .base import MXNetError
from .ndarray import NDArray
from .random import host_sampler

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Load", "Mixed", "Zero", "One", "Constant",
           "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu", "Bilinear", "LSTMBias", "FusedRNN"]


class InitDesc(str):
    """A parameter name with its symbol attributes and the global initializer to fall back to."""

    def __new__(cls, name: str, attrs: dict | None = None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


def _fill(arr: NDArray, values) -> None:
    arr[:] = np.asarray(values).astype(np.dtype(arr.dtype), copy=False)


class Initializer:
    """Base class: dispatches on the descriptor's `__init__` attribute or name suffix."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose: bool = False, print_func=None) -> "Initializer":
        """Log a statistic of every initialized array (default: norm / sqrt(size))."""
        self._verbose = verbose
        if print_func is None:
            def print_func(x):
                return str(float(np.linalg.norm(x.asnumpy()) / sqrt(x.size)))
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr) -> None:
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self) -> str:
        """The JSON form `create` accepts, e.g. '["normal", {"sigma": 0.5}]'."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, desc, arr: NDArray) -> None:
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            try:  # the attribute is data (a symbol file's): a malformed one is an MXNetError
                create(init)._init_weight(desc, arr)
            except MXNetError:
                raise
            except (TypeError, ValueError, KeyError, IndexError, RecursionError) as e:
                text = init if len(init) <= 80 else init[:77] + "..."
                raise MXNetError(f"{desc}: its __init__ attribute {text!r} is not an initializer "
                                 f"jbind can apply: {type(e).__name__}: {e}") from e
            self._verbose_print(desc, init, arr)
            return
        for suffix, fn in (("weight", self._init_weight), ("bias", self._init_bias), ("gamma", self._init_gamma),
                           ("beta", self._init_beta), ("min", self._init_zero), ("max", self._init_one),
                           ("weight_quantize", self._init_quantized_weight),
                           ("bias_quantize", self._init_quantized_bias)):
            if desc.endswith(suffix):
                fn(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr) -> None:
        warnings.warn("Calling initializer with init(str, NDArray) has been deprecated. "
                      "please use init(mx.init.InitDesc(...), NDArray) instead.", DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError("name must be string")
        if not isinstance(arr, NDArray):
            raise TypeError("arr must be NDArray")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            table = (("bias", self._init_bias), ("gamma", self._init_gamma), ("beta", self._init_beta),
                     ("weight", self._init_weight), ("moving_mean", self._init_zero),
                     ("moving_var", self._init_one), ("moving_inv_var", self._init_zero),
                     ("moving_avg", self._init_zero), ("min", self._init_zero), ("max", self._init_one))
            fn = next((f for suffix, f in table if name.endswith(suffix)), self._init_default)
            fn(name, arr)

    def _init_bilinear(self, _, arr):
        shape = arr.shape
        f = np.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        x = np.arange(shape[3]) / f - c
        y = np.arange(shape[2]) / f - c
        kernel = (1 - np.abs(y))[:, None] * (1 - np.abs(x))[None, :]
        _fill(arr, np.broadcast_to(kernel.astype(np.float32), shape))

    def _init_loc_bias(self, _, arr):
        if arr.shape[0] != 6:
            raise ValueError(f"stn_loc bias must have 6 elements, got shape {arr.shape}")
        _fill(arr, np.array([1.0, 0, 0, 0, 1.0, 0]))

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_quantized_bias(self, _, arr):
        arr[:] = 0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_weight(self, name, arr):
        raise NotImplementedError("Must override it")

    def _init_quantized_weight(self, _, arr):
        # MXNet draws a single integer (randint without a shape) and fills the array with it
        arr[:] = int(np.int8(host_sampler().integers(-127, 127)))

    def _init_default(self, name, _):
        raise ValueError(f"Unknown initialization pattern for {name}. Default initialization is now limited to "
                         '"weight", "bias", "gamma" (1.0), and "beta" (0.0). Please use '
                         "mx.sym.Variable(init=mx.init.*) to set initialization pattern")

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = object.__hash__


_register = registry.get_register_func(Initializer, "initializer")
alias = registry.get_alias_func(Initializer, "initializer")
create = registry.get_create_func(Initializer, "initializer")


def register(klass):
    """Register an initializer class so `create` (and `__init__` attributes) find it by name."""
    return _register(klass)


class Load:
    """Initialize from a dict (or .params file) of arrays; `arg:`/`aux:` prefixes are dropped.

    Names not found go to `default_init`.
    """

    def __init__(self, param, default_init=None, verbose: bool = False):
        if isinstance(param, str):
            from .ndarray import load
            param = load(param)
        if not isinstance(param, dict):
            raise TypeError(f"Load expects a dict of name -> NDArray or a file name, got {type(param).__name__}")
        self.param = {}
        for name, arr in param.items():
            self.param[name[4:] if name.startswith(("arg:", "aux:")) else name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr: NDArray) -> None:
        if name in self.param:
            if tuple(arr.shape) != tuple(self.param[name].shape):
                raise ValueError(f"Parameter {name} cannot be initialized from loading. Shape mismatch, target "
                                 f"{tuple(arr.shape)} vs loaded {tuple(self.param[name].shape)}")
            arr[:] = self.param[name]
            if self.verbose:
                logging.info("Initialized %s by loading", name)
        else:
            if self.default_init is None:
                raise ValueError(f"Cannot Initialize {name}. Not found in loaded param and no default "
                                 "Initializer is provided.")
            self.default_init(name, arr)
            if self.verbose:
                logging.info("Initialized %s by default", name)


class Mixed:
    """The initializer of the first regex in `patterns` that matches (`re.match`) the name."""

    def __init__(self, patterns: list, initializers: list):
        if len(patterns) != len(initializers):
            raise ValueError(f"Mixed: {len(patterns)} patterns but {len(initializers)} initializers")
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr: NDArray) -> None:
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError(f"Parameter name {name} did not match any pattern. Consider add a \".*\" pattern at the "
                         "and with default Initializer.")


@register
@alias("zeros")
class Zero(Initializer):
    """Weights 0."""

    def _init_weight(self, _, arr):
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Weights 1."""

    def _init_weight(self, _, arr):
        arr[:] = 1


@register
class Constant(Initializer):
    """Weights set to `value` (a scalar or an array of the weight's shape)."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        arr[:] = self.value

    def dumps(self) -> str:
        val = self._kwargs["value"]
        if not np.isscalar(val):
            self._kwargs["value"] = val.tolist() if isinstance(val, np.ndarray) else val.asnumpy().tolist()
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


@register
class Uniform(Initializer):
    """Weights uniform in [-scale, scale]."""

    def __init__(self, scale: float = 0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _fill(arr, host_sampler().uniform(-self.scale, self.scale, arr.shape))


@register
class Normal(Initializer):
    """Weights normal with mean 0 and standard deviation `sigma`."""

    def __init__(self, sigma: float = 0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _fill(arr, host_sampler().normal(0, self.sigma, arr.shape))


@register
class Orthogonal(Initializer):
    """`scale` times an orthogonal matrix (SVD of a uniform or normal draw) of shape (out, prod(rest))."""

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        nout, nin = arr.shape[0], int(np.prod(arr.shape[1:]))
        rng = host_sampler()
        if self.rand_type == "uniform":
            tmp = rng.uniform(-1.0, 1.0, (nout, nin)).astype(np.float32)
        elif self.rand_type == "normal":
            tmp = rng.normal(0.0, 1.0, (nout, nin)).astype(np.float32)
        else:
            raise ValueError(f"Orthogonal: unknown rand_type {self.rand_type!r}")
        u, _, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        _fill(arr, self.scale * res.reshape(arr.shape))


@register
class Xavier(Initializer):
    """Xavier/Glorot: uniform in [-c, c] or normal with std c, `c = sqrt(magnitude / factor)`.

    `fan_in = shape[1] * hw`, `fan_out = shape[0] * hw` with `hw = prod(shape[2:])`;
    `factor` is their mean ('avg'), `fan_in` ('in') or `fan_out` ('out').
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def scale_for(self, shape) -> float:
        """The bound (uniform) or standard deviation (gaussian) for a weight of `shape`."""
        if len(shape) < 2:
            raise ValueError(f"Xavier initializer cannot be applied to vector of shape {tuple(shape)}. "
                             "It requires at least 2D.")
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}.get(self.factor_type)
        if factor is None:
            raise ValueError("Incorrect factor type")
        return float(np.sqrt(self.magnitude / factor))

    def _init_weight(self, name, arr):
        try:
            scale = self.scale_for(arr.shape)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        if self.rnd_type == "uniform":
            _fill(arr, host_sampler().uniform(-scale, scale, arr.shape))
        elif self.rnd_type == "gaussian":
            _fill(arr, host_sampler().normal(0, scale, arr.shape))
        else:
            raise ValueError("Unknown random type")


@register
class MSRAPrelu(Xavier):
    """He/MSRA: gaussian Xavier with `magnitude = 2 / (1 + slope**2)`."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Bilinear-upsampling kernels for Deconvolution weights (4-D)."""

    def _init_weight(self, name, arr):
        self._init_bilinear(name, arr)


@register
class LSTMBias(Initializer):
    """An LSTM i2h bias: 0 except the forget gate's quarter (gate order i, f, c, o) = `forget_bias`."""

    def __init__(self, forget_bias: float = 1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        bias = np.zeros(arr.shape)
        num_hidden = int(arr.shape[0] / 4)
        bias[num_hidden:2 * num_hidden] = self.forget_bias
        _fill(arr, bias)


@register
class FusedRNN(Initializer):
    """Initialize the packed `parameters` vector of a fused RNN layer gate by gate.

    Each per-gate weight is initialized by `init` (the global initializer if None), biases
    by its bias rule, and for 'lstm' every `_f_bias` (both i2h and h2h, as in MXNet) is
    set to `forget_bias`. Differs from MXNet 1.9.1, where a JSON-string `init` (as
    `dumps()` writes it) raises KeyError: jbind accepts it.
    """

    def __init__(self, init, num_hidden: int, num_layers: int, mode: str, bidirectional: bool = False,
                 forget_bias: float = 1.0):
        if isinstance(init, str):
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None, num_hidden=num_hidden,
                         num_layers=num_layers, mode=mode, bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr):
        from .rnn import FusedRNNCell
        cell = FusedRNNCell(self._num_hidden, self._num_layers, self._mode, self._bidirectional,
                            forget_bias=self._forget_bias, prefix="")
        args = cell.unpack_weights({"parameters": arr})
        for name in args:
            arg_desc = InitDesc(name, global_init=desc.global_init)
            if self._mode == "lstm" and name.endswith("_f_bias"):
                args[name][:] = self._forget_bias
            elif self._init is None:
                desc.global_init(arg_desc, args[name])
            else:
                self._init(arg_desc, args[name])
        arr[:] = cell.pack_weights(args)["parameters"]
