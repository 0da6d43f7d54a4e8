"""Gluon's basic layers: containers, Dense, Dropout, the normalizations, Embedding,
Flatten and the lambdas. Each layer is its registered op with MXNet's parameter names."""
from __future__ import annotations

import warnings

import numpy as np

from ... import ndarray as nd
from ... import symbol as sym
from .._util import GluonValueError, check, indent
from ..block import Block, HybridBlock
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Embedding", "BatchNorm", "InstanceNorm",
           "LayerNorm", "GroupNorm", "Flatten", "Lambda", "HybridLambda"]


def _scale_and_shift(block, size, scale, center, gamma_init, beta_init, differentiable=False):
    """A norm layer's 'gamma' and 'beta' (`size` entries, deferred while 0); one that is off
    (`scale` / `center` False) gets grad_req 'null' and, for BatchNorm, is not differentiable."""
    def get(name, on, init):
        extra = {"differentiable": on} if differentiable else {}
        return block.params.get(name, grad_req="write" if on else "null", shape=(size,), init=init,
                                allow_deferred_init=True, **extra)
    return get("gamma", scale, gamma_init), get("beta", center, beta_init)


class _Stack:
    """What Sequential and HybridSequential share: `add`, indexing, `len`, repr."""

    def add(self, *blocks):
        """Append blocks, run in the order added."""
        for b in blocks:
            self.register_child(b)

    def __repr__(self):
        mods = "\n".join(f"  ({key}): {indent(repr(b), 2)}" for key, b in self._children.items())
        return f"{self.__class__.__name__}(\n{mods}\n)"

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if not isinstance(layers, list):
            return layers
        net = type(self)(prefix=self._prefix)
        with net.name_scope():
            net.add(*layers)
        return net

    def __len__(self):
        return len(self._children)


class Sequential(_Stack, Block):
    """Runs its children one after another."""

    def forward(self, x):
        for b in self._children.values():
            x = b(x)
        return x

    def hybridize(self, active=True, **kwargs):
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are HybridBlocks. Consider using "
                          "HybridSequential for the best performance.", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_Stack, HybridBlock):
    """Runs its (hybrid) children one after another; hybridizes as one graph."""

    def hybrid_forward(self, F, x):
        for b in self._children.values():
            x = b(x)
        return x


class Dense(HybridBlock):
    """`FullyConnected`: `activation(dot(x, weight.T) + bias)`. Parameters 'weight'
    (units, in_units) and 'bias' (units,); in_units 0 is inferred at the first forward."""

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units), init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), init=bias_initializer, dtype=dtype,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        ins = (x, weight) if bias is None else (x, weight, bias)
        out = F.FullyConnected(*ins, no_bias=bias is None, num_hidden=self._units, flatten=self._flatten,
                               name="fwd")
        return self.act(out) if self.act is not None else out

    def __repr__(self):
        shape = self.weight.shape
        return f"{self.__class__.__name__}({shape[1] if shape[1] else None} -> {shape[0]}, " \
               f"{self.act if self.act else 'linear'})"


class Dropout(HybridBlock):
    """`Dropout` with probability `rate` (the identity outside training), shared along `axes`."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self):
        return f"{self.__class__.__name__}(p = {self._rate}, axes={self._axes})"


def _kwargs_repr(block, extra=""):
    content = ", ".join(f"{k}={v!r}" for k, v in block._kwargs.items())
    return f"{block.__class__.__name__}({content}{extra})"


class BatchNorm(HybridBlock):
    """`BatchNorm` over `axis`; parameters 'gamma', 'beta' and the aux states
    'running_mean', 'running_var' (in_channels 0 is inferred). A cast to float16 keeps
    them float32, as MXNet."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True, use_global_stats=False,
                 beta_initializer="zeros", gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats}
        if in_channels != 0:
            self.in_channels = in_channels
        self.gamma, self.beta = _scale_and_shift(self, in_channels, scale, center, gamma_initializer,
                                                 beta_initializer, differentiable=True)
        self.running_mean = self.params.get("running_mean", grad_req="null", shape=(in_channels,),
                                            init=running_mean_initializer, allow_deferred_init=True,
                                            differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null", shape=(in_channels,),
                                           init=running_variance_initializer, allow_deferred_init=True,
                                           differentiable=False)

    def cast(self, dtype):
        super().cast("float32" if np.dtype(dtype).name == "float16" else dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)

    def __repr__(self):
        c = self.gamma.shape[0]
        return _kwargs_repr(self, f", in_channels={c if c else None}")


class Embedding(HybridBlock):
    """`Embedding`: rows of 'weight' (input_dim, output_dim) picked by the integer input.

    With `sparse_grad=True` the weight's gradient is a row_sparse array (holding the rows
    whose gradient is nonzero, where MXNet holds every looked-up row)."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None, sparse_grad=False,
                 **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, allow_deferred_init=True,
                                      grad_stype="row_sparse" if sparse_grad else "default")

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return f"{self.__class__.__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class Flatten(HybridBlock):
    """Reshape to (batch, everything else)."""

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return self.__class__.__name__


class InstanceNorm(HybridBlock):
    """`InstanceNorm` over `axis` (default 1); parameters 'gamma' (used only when
    `scale`) and 'beta'."""

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self.gamma, self.beta = _scale_and_shift(self, in_channels, scale, center, gamma_initializer,
                                                 beta_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = F.swapaxes(x, dim1=1, dim2=self._axis)
        return F.swapaxes(F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon), dim1=1, dim2=self._axis)

    def __repr__(self):
        return _kwargs_repr(self, f", in_channels={self.gamma.shape[0]}")


class LayerNorm(HybridBlock):
    """`LayerNorm` over `axis` (default the last); parameters 'gamma' and 'beta'."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self.gamma, self.beta = _scale_and_shift(self, in_channels, scale, center, gamma_initializer,
                                                 beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self):
        return _kwargs_repr(self, f", in_channels={self.gamma.shape[0]}")


class GroupNorm(HybridBlock):
    """`GroupNorm` with `num_groups` groups over the channel axis (1); 'gamma' and 'beta'
    have one entry per group, as MXNet 1.9.1's."""

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center, "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self.gamma, self.beta = _scale_and_shift(self, num_groups, scale, center, gamma_initializer,
                                                 beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups, eps=self._epsilon)

    def __repr__(self):
        return _kwargs_repr(self)


class Lambda(Block):
    """A Block running `function` (a callable, or the name of an `mx.nd` function)."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            check(hasattr(nd, function), f"Function name {function} is not found in ndarray.")
            self._func_impl = getattr(nd, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise GluonValueError(f"Unrecognized function in lambda: {function} of type {type(function)}")

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._func_impl.__name__})"


class HybridLambda(HybridBlock):
    """A HybridBlock running `function(F, x, *args)` (or the `mx.nd` / `mx.sym` function of
    that name)."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            check(hasattr(nd, function) and hasattr(sym, function),
                  f"Function name {function} is not found in symbol/ndarray.")
            by_f = {sym: getattr(sym, function), nd: getattr(nd, function)}
            self._func = lambda F, *args: by_f[F](*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = function.__name__
        else:
            raise GluonValueError(f"Unrecognized function in lambda: {function} of type {type(function)}")

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._func_name})"
