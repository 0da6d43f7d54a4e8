"""Densities of the sampling distributions, `_random_pdf_*` (MXNet's pdf_op.h).

Inputs are `sample` and the distribution's parameters; the parameters share one shape,
the leading part of `sample`'s, and each density uses the parameters at its leading
index (the dirichlet's `alpha` ends in the sample's last axis, which the density
consumes). `is_log` gives the log-density. Formulas and gradients are MXNet 1.9.1's,
conventions included: the gamma density takes `beta` as a rate (MXNet's docs say scale),
the uniform density ignores the support, and the discrete densities (poisson, negative
binomial) give no gradient to `sample`.
"""
from __future__ import annotations

import math
from typing import Callable, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from ..base import ShapeError, fmt_shape
from ._base import Op, frozen, register
from .elemwise import _merge

_FLOATS = ("float16", "float32", "float64")


def _uniform(x, low, high, log):
    w = jnp.broadcast_to(high - low, x.shape)
    return -jnp.log(w) if log else 1 / w


def _normal(x, mu, sigma, log):
    e = -0.5 * (x - mu) * (x - mu) / (sigma * sigma)
    norm = math.sqrt(2 * math.pi) * sigma
    return e - jnp.log(norm) if log else jnp.exp(e) / norm


def _gamma(x, alpha, beta, log):
    lpdf = alpha * jnp.log(beta) + (alpha - 1) * jnp.log(x) - beta * x - gammaln(alpha)
    return lpdf if log else jnp.exp(lpdf)


def _exponential(x, lam, log):
    return jnp.log(lam) - lam * x if log else lam * jnp.exp(-lam * x)


def _poisson(x, lam, log):
    x = jax.lax.stop_gradient(x)
    lpdf = x * jnp.log(lam) - gammaln(x + 1) - lam
    return lpdf if log else jnp.exp(lpdf)


def _nb(x, k, p, log):
    x = jax.lax.stop_gradient(x)
    lpdf = gammaln(x + k) - gammaln(x + 1) - gammaln(k) + k * jnp.log(p) + x * jnp.log(1 - p)
    return lpdf if log else jnp.exp(lpdf)


def _negative_binomial(x, k, p, log):
    return _nb(x, k, p, log)


def _generalized_negative_binomial(x, mu, alpha, log):
    return _nb(x, 1 / alpha, 1 / (mu * alpha + 1), log)


def _dirichlet(x, alpha, log):
    lpdf = (jnp.sum((alpha - 1) * jnp.log(x), axis=-1)
            + gammaln(jnp.sum(alpha, axis=-1)) - jnp.sum(gammaln(alpha), axis=-1))
    return lpdf if log else jnp.exp(lpdf)


@frozen
class _Pdf(Op):
    is_log: bool = False
    params: ClassVar[tuple[str, ...]]
    density: ClassVar[Callable]
    vector: ClassVar[bool] = False  # the dirichlet: each sample is a vector along the last axis

    def arguments(self):
        return ("sample",) + self.params

    def infer_shape(self, ins, outs):
        if any(s is None for s in ins):  # MXNet needs every input's shape
            return list(ins), [None], []
        sample = tuple(ins[0])
        p = _merge(self.params, ins[1:])
        if len(p) > len(sample):
            raise ShapeError(f"the sample's dimension ({len(sample)}) must be at least the parameters' "
                             f"({len(p)}): sample {fmt_shape(sample)}, parameters {fmt_shape(p)}")
        lead = sample[:len(p)]
        if self.vector:
            lead = lead[:-1] + sample[-1:]
        p = _merge(["parameters", "the sample's leading dims"], [p, lead])
        out = ((1,) if len(sample) == 1 else sample[:-1]) if self.vector else sample
        return [sample] + [p] * len(self.params), [out], []

    def infer_type(self, ins, outs):
        t = next((t for t in list(ins) + list(outs) if t is not None), None)
        if t is not None and np.dtype(t).name not in _FLOATS:
            raise ValueError(f"inputs must be float16, float32 or float64, got {np.dtype(t).name}")
        return [t] * len(ins), [t], []

    def lower(self, ins, aux, is_train, key):
        x, *params = ins
        m = params[0].ndim
        if self.vector:  # alpha (lead..., k) against sample (lead..., more..., k)
            params = [p.reshape(p.shape[:-1] + (1,) * (x.ndim - m) + p.shape[-1:]) for p in params]
        else:
            params = [p.reshape(p.shape + (1,) * (x.ndim - m)) for p in params]
        y = type(self).density(x, *params, self.is_log)
        return [y.reshape(x.shape[:-1] or (1,)) if self.vector else y], aux


def _pdf(dist, params, doc, vector=False):
    name = "_random_pdf_" + dist
    cls = type(name, (_Pdf,), {"params": params, "density": staticmethod(globals()["_" + dist]),
                               "vector": vector, "__module__": __name__, "__qualname__": name,
                               "__doc__": doc})
    return register(frozen(cls), aliases=("random_pdf_" + dist,))


_pdf("uniform", ("low", "high"), "Density 1 / (high - low) of the uniform distribution (not checked against "
     "the support, as MXNet).")
_pdf("normal", ("mu", "sigma"), "Density of the normal distribution with mean `mu` and standard deviation `sigma`.")
_pdf("gamma", ("alpha", "beta"), "Density of the gamma distribution with shape `alpha` and rate `beta` "
     "(MXNet's formula: b^a x^(a-1) e^(-bx) / Gamma(a)).")
_pdf("exponential", ("lam",), "Density of the exponential distribution with rate `lam`.")
_pdf("poisson", ("lam",), "Probability of `sample` under the Poisson distribution with rate `lam`; no "
     "gradient to `sample`.")
_pdf("negative_binomial", ("k", "p"), "Probability of `sample` failures before the k-th success, success "
     "probability p; no gradient to `sample`.")
_pdf("generalized_negative_binomial", ("mu", "alpha"), "Probability of `sample` under the negative binomial "
     "with mean `mu` and dispersion `alpha` (k = 1/alpha, p = 1/(1 + mu alpha)); no gradient to `sample`.")
_pdf("dirichlet", ("alpha",), "Density of the Dirichlet distribution with concentrations `alpha` at the "
     "vectors along `sample`'s last axis (output: the sample's shape less that axis; (1,) for one vector).",
     vector=True)
