"""Random sampling ops (MXNet's src/operator/random): `_random_*` draw `shape` samples of
one distribution given by parameters, `_sample_*` draw `shape` samples per element of
their parameter inputs; `_random_*_like` are in sampling_like.py, `_sample_multinomial` and
`_shuffle` in sampling_more.py, the densities `_random_pdf_*` in pdf.py.

Draws come from jax.random with the op's key (seeded by `mx.random.seed`, new numbers at
every training step, as Dropout): MXNet's random streams cannot be reproduced inside a
compiled program, so the values differ from MXNet's while the distributions are MXNet's.
That is the one deliberate difference. Samplers have no gradient (MXNet's `_sample_*` give
zero gradients to their parameters; `_shuffle` has none in MXNet and zero here).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar, Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..base import fmt_shape, np_dtype
from . import _rand
from ._base import Op, frozen, register
from .elemwise import DType, _dtype_name, _merge
from .reduce import ShapedBy

_FLOATS = ("float16", "float32", "float64")


def _out_dtype(name):
    return jax.dtypes.canonicalize_dtype(np_dtype(name))  # float64 is float32 without x64


def _draw_dtype(out) -> np.dtype:
    """The dtype samples are drawn in: float64 for a float64 output, else float32."""
    return np.dtype(np.float64) if np.dtype(out) == np.float64 else np.dtype(np.float32)


# --- the distributions, shared by _random_* and _sample_* ------------------------------------
# Each draws an array of `shape` in dtype `dt` (float32 or float64) from parameters of that
# dtype that broadcast to it.
def _uniform(key, shape, dt, low, high):
    return low + (high - low) * _rand.uniform(key, shape, dtype=dt)


def _normal(key, shape, dt, loc, scale):
    return loc + scale * _rand.normal(key, shape, dtype=dt)


def _gamma(key, shape, dt, alpha, beta):
    """alpha is the shape, beta the scale. Marsaglia and Tsang's method, as MXNet's sampler:
    for shape a >= 1, d (1 + x / sqrt(9 d))^3 with d = a - 1/3 and x normal, accepted with
    probability above 0.95; a < 1 draws with a + 1 and scales by u^(1/a). Every element
    proposes at once and rejected ones propose again, a handful of whole-array rounds
    (jax.random.gamma loops per element: tens of times slower on CPU); 0 where a is 0."""
    alpha = jnp.broadcast_to(jnp.asarray(alpha, dt), shape)
    boost = alpha < 1
    d = jnp.where(boost, alpha + 1, alpha) - 1.0 / 3.0
    c = jax.lax.rsqrt(9.0 * d)
    kb, key = jax.random.split(key)

    def propose(state):
        key, out, done = state
        key, kx, ku = jax.random.split(key, 3)
        x = _rand.normal(kx, shape, dtype=dt)
        v = (1.0 + c * x) ** 3
        log_u = jnp.log(_rand.uniform(ku, shape, dtype=dt, minval=jnp.finfo(dt).tiny))
        ok = (v > 0) & (log_u < 0.5 * x * x + d - d * v + d * jnp.log(jnp.where(v > 0, v, 1.0)))
        take = ok & ~done
        return key, jnp.where(take, d * v, out), done | ok

    _, out, _ = jax.lax.while_loop(lambda s: ~jnp.all(s[2]), propose,
                                   (key, jnp.zeros(shape, dt), jnp.zeros(shape, bool)))
    u = _rand.uniform(kb, shape, dtype=dt)
    scale = jnp.where(boost, u ** (1.0 / jnp.where(boost, alpha, 1.0)), 1.0)
    return out * scale * beta


def _exponential(key, shape, dt, lam):
    return _rand.exponential(key, shape, dtype=dt) / lam


def _poisson(key, shape, dt, lam):
    # MXNet draws 0 for a negative rate; jax.random.poisson gives -1
    return jax.random.poisson(key, jnp.maximum(lam, 0.0), shape).astype(dt)


def _negative_binomial(key, shape, dt, k, p):
    """Failures before the k-th success of trials succeeding with probability p (MXNet's
    Gamma(k, (1 - p) / p) - Poisson mixture; MXNet's docs call p the failure probability)."""
    kg, kp = jax.random.split(key)
    return _poisson(kp, shape, dt, _gamma(kg, shape, dt, k, (1 - p) / p))


def _generalized_negative_binomial(key, shape, dt, mu, alpha):
    """Mean mu, variance mu + alpha mu^2: Poisson(mu) where alpha is 0."""
    kg, kp = jax.random.split(key)
    safe = jnp.where(alpha == 0, 1.0, alpha)
    lam = jnp.where(alpha == 0, mu, _gamma(kg, shape, dt, 1 / safe, safe * mu))
    return _poisson(kp, shape, dt, lam)


# --- no inputs: _random_* --------------------------------------------------------------------
@frozen
class _Random(ShapedBy):
    """A sampler without inputs. Subclasses declare MXNet's fields (the distribution's
    parameters, then shape, ctx, dtype) and `draw`. `shape` dims of 0 are inferred from the
    consumers; dtype None is float32 (int32 for randint) unless the consumers fix it."""
    random = True
    draw: ClassVar[Callable]
    dtypes: ClassVar[tuple] = _FLOATS
    default_dtype: ClassVar[str] = "float32"

    def __post_init__(self):
        if self.dtype is not None:
            object.__setattr__(self, "dtype", _dtype_name(self.dtype, self.dtypes))
        self._check()

    def _check(self):
        pass

    def _params(self) -> tuple:
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self))[:-3]

    def infer_type(self, ins, outs):
        out = outs[0]
        if out is None:
            return [], [np_dtype(self.dtype or self.default_dtype)], []
        if self.dtype is not None and np.dtype(out) != np_dtype(self.dtype):
            raise ValueError(f"the output's dtype {np.dtype(out).name} does not match dtype={self.dtype}")
        if np.dtype(out).name not in self.dtypes:
            raise ValueError(f"the output must be one of {', '.join(self.dtypes)}, got {np.dtype(out).name}")
        return [], [out], []

    def lower(self, ins, aux, is_train, key):
        return [self._draw(key, self._full_shape(), _out_dtype(self.dtype or self.default_dtype))], aux

    def _draw(self, key, shape, dtype):
        dt = _draw_dtype(dtype)
        return type(self).draw(key, shape, dt, *[jnp.asarray(p, dt) for p in self._params()]).astype(dtype)


def _positive(**values):
    for k, v in values.items():
        if not v > 0:
            raise ValueError(f"{k} must be positive, got {v}")


def _nonnegative(**values):
    for k, v in values.items():
        if not v >= 0:
            raise ValueError(f"{k} must be non-negative, got {v}")


_NOTE = " Values come from jax.random (MXNet's stream cannot be reproduced), drawn from the same distribution."


@register(aliases=("uniform", "random_uniform"))
@frozen
class _random_uniform(_Random):
    __doc__ = "Samples uniform on [low, high)." + _NOTE
    low: float = 0.0
    high: float = 1.0
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: Optional[DType] = None
    draw = staticmethod(_uniform)

    def _check(self):
        if not self.low <= self.high:
            raise ValueError(f"low ({self.low}) must be less or equal to high ({self.high})")


@register(aliases=("normal", "random_normal"))
@frozen
class _random_normal(_Random):
    __doc__ = "Samples of the normal distribution with mean `loc` and standard deviation `scale`." + _NOTE
    loc: float = 0.0
    scale: float = 1.0
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: Optional[DType] = None
    draw = staticmethod(_normal)

    def _check(self):
        _positive(scale=self.scale)


@register(aliases=("random_gamma",))
@frozen
class _random_gamma(_Random):
    __doc__ = "Samples of the gamma distribution with shape `alpha` and scale `beta`." + _NOTE
    alpha: float = 1.0
    beta: float = 1.0
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: Optional[DType] = None
    draw = staticmethod(_gamma)

    def _check(self):
        _positive(alpha=self.alpha, beta=self.beta)


@register(aliases=("random_exponential",))
@frozen
class _random_exponential(_Random):
    __doc__ = "Samples of the exponential distribution with rate `lam`." + _NOTE
    lam: float = 1.0
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: Optional[DType] = None
    draw = staticmethod(_exponential)

    def _check(self):
        _positive(lam=self.lam)


@register(aliases=("random_poisson",))
@frozen
class _random_poisson(_Random):
    __doc__ = "Samples of the Poisson distribution with rate `lam`, as floats." + _NOTE
    lam: float = 1.0
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: Optional[DType] = None
    draw = staticmethod(_poisson)

    def _check(self):
        _nonnegative(lam=self.lam)


@register(aliases=("random_negative_binomial",))
@frozen
class _random_negative_binomial(_Random):
    __doc__ = ("Samples of the negative binomial distribution: failures before the `k`-th success, "
               "each trial succeeding with probability `p` (mean k(1-p)/p), as floats. p must lie in "
               "(0, 1]; MXNet 1.9.1 returns garbage for p = 0 and zeros for p > 1." + _NOTE)
    k: int = 1
    p: float = 1.0
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: Optional[DType] = None
    draw = staticmethod(_negative_binomial)

    def _check(self):
        _nonnegative(k=self.k)
        if not 0 < self.p <= 1:
            raise ValueError(f"p must be in (0, 1], got {self.p}")


@register(aliases=("random_generalized_negative_binomial",))
@frozen
class _random_generalized_negative_binomial(_Random):
    __doc__ = ("Samples of the generalized negative binomial distribution with mean `mu` and dispersion "
               "`alpha` (variance mu + alpha mu^2; Poisson where alpha is 0), as floats." + _NOTE)
    mu: float = 1.0
    alpha: float = 1.0
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: Optional[DType] = None
    draw = staticmethod(_generalized_negative_binomial)

    def _check(self):
        _nonnegative(mu=self.mu, alpha=self.alpha)


@register(aliases=("random_randint", "_npi_random_randint"))
@frozen
class _random_randint(_Random):
    __doc__ = ("Integers uniform on [low, high), int32 by default. low == high (where MXNet 1.9.1 "
               "divides by zero) is an error." + _NOTE)
    low: int
    high: int
    shape: tuple[int, ...] = ()
    ctx: str = ""
    dtype: Optional[DType] = None
    dtypes = ("int32", "int64")
    default_dtype = "int32"

    def _check(self):
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be less than high ({self.high})")

    def _draw(self, key, shape, dtype):
        info = jnp.iinfo(dtype)  # int64 is int32 without x64: bounds beyond it are clipped
        return _rand.randint(key, shape, max(self.low, info.min), min(self.high, info.max), dtype)


# --- parameters as inputs: _sample_* -----------------------------------------------------------
@frozen
class _Sample(Op):
    """`shape` samples for every element of the parameter inputs (all of one shape s):
    the output has shape s + shape. No gradient flows to the parameters (MXNet's are zero)."""
    shape: tuple[int, ...] = ()
    dtype: Optional[DType] = None
    random = True
    params: ClassVar[tuple[str, ...]]
    draw: ClassVar[Callable]

    def __post_init__(self):
        if not all(d > 0 for d in self.shape):
            raise ValueError(f"shape {fmt_shape(self.shape)} must be non-zero within each dimension")
        if self.dtype is not None:
            object.__setattr__(self, "dtype", _dtype_name(self.dtype, _FLOATS))

    def arguments(self):
        return self.params

    def infer_shape(self, ins, outs):
        n, out = len(self.shape), outs[0]
        s = tuple(out[:len(out) - n]) if out is not None and len(out) > n else None
        s = _merge(["output (less the sample dims)", *self.params], [s, *ins])
        return [s] * len(ins), [None if s is None else s + tuple(self.shape)], []

    def infer_type(self, ins, outs):
        t = next((t for t in ins if t is not None), None)
        if t is None:
            return list(ins), [None], []
        out = outs[0]
        if out is None:
            out = np_dtype(self.dtype or "float32")
        elif self.dtype is not None and np.dtype(out) != np_dtype(self.dtype):
            raise ValueError(f"the output's dtype {np.dtype(out).name} does not match dtype={self.dtype}")
        if np.dtype(out).name not in _FLOATS:
            raise ValueError(f"the output must be one of {', '.join(_FLOATS)}, got {np.dtype(out).name}")
        return [t] * len(ins), [out], []

    def lower(self, ins, aux, is_train, key):
        shape = ins[0].shape + tuple(self.shape)
        extra = (1,) * len(self.shape)
        out = _out_dtype(self.dtype or "float32")
        dt = _draw_dtype(out)
        params = [jax.lax.stop_gradient(p).astype(dt).reshape(p.shape + extra) for p in ins]
        y = type(self).draw(key, shape, dt, *params)
        return [y.astype(out)], aux


def _sampler(dist, params, doc):
    name = "_sample_" + dist
    cls = type(name, (_Sample,), {"params": params, "draw": staticmethod(globals()["_" + dist]),
                                  "__module__": __name__, "__qualname__": name, "__doc__": doc + _NOTE})
    return register(frozen(cls), aliases=("sample_" + dist,))


_sampler("uniform", ("low", "high"), "Uniform samples on [low, high) per element of `low` and `high`.")
_sampler("normal", ("mu", "sigma"), "Normal samples with means `mu` and standard deviations `sigma`.")
_sampler("gamma", ("alpha", "beta"), "Gamma samples with shapes `alpha` and scales `beta` (0 where alpha is 0).")
_sampler("exponential", ("lam",), "Exponential samples with rates `lam`.")
_sampler("poisson", ("lam",), "Poisson samples with rates `lam` (0 where lam < 0), as floats.")
_sampler("negative_binomial", ("k", "p"),
         "Negative binomial samples: failures before the k-th success, success probability p, as floats.")
_sampler("generalized_negative_binomial", ("mu", "alpha"),
         "Generalized negative binomial samples with means `mu` and dispersions `alpha`, as floats.")


from . import pdf, sampling_like, sampling_more  # noqa: E402,F401  (registration: ops/__init__ imports only this module)
