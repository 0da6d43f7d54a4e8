"""Graph fuzzer builders for elementwise, scalar, activation and reduction ops.

A builder `(g: Gen, name, bad) -> value ids | None` picks inputs (existing values or new
leaves), draws parameters, and emits one step with its numpy reference and output
bounds. With `bad` it may emit an invalid step instead (see fuzz_graphs.py); builders
without an invalid mode of their own get an unknown parameter. References come from
the op tests (test_ops_math, test_ops_nn, test_ops_shape, test_ops_conv).
"""
from __future__ import annotations

import functools
import math

import numpy as np
import scipy.special as sp

from fuzz_graphs import ANY, CAP, conflict, op, span
from test_ops_math import BINARY, COMPARE, UNARY, _mod, _smooth_l1
from test_ops_nn import _selu, _softmax


def _hull(*vals):
    return min(v.lo for v in vals), max(v.hi for v in vals)


# --- elementwise ------------------------------------------------------------------------------
UNARY_REF = {("_copy" if k == "identity" else k): f for k, (f, _) in UNARY.items()}
DOMAIN = {  # where an inexact input must lie
    "exp": (-CAP, 4), "expm1": (-CAP, 4), "sinh": (-5, 5), "cosh": (-5, 5), "square": (-100, 100),
    "log": (0.2, CAP), "log2": (0.2, CAP), "log10": (0.2, CAP), "log1p": (-0.8, CAP), "sqrt": (0.05, CAP),
    "rsqrt": (0.2, CAP), "cbrt": (0.05, CAP), "reciprocal": (0.2, CAP), "gamma": (0.3, 4),
    "gammaln": (0.3, 100), "arcsin": (-0.95, 0.95), "arccos": (-0.95, 0.95), "arctanh": (-0.95, 0.95),
    "tan": (-1.3, 1.3), "arccosh": (1.1, CAP), "sin": (-100, 100), "cos": (-100, 100),
    "degrees": (-100, 100),
}
JUMPS = {"floor", "ceil", "round", "rint", "fix", "trunc", "sign"}      # need exact inputs
KEEPS = JUMPS | {"abs", "negative", "relu", "_copy", "zeros_like", "ones_like"}


@op(*UNARY_REF)
def unary(g, name, bad):
    f = UNARY_REF[name]
    x = g.arg(DOMAIN.get(name, ANY), exact=name in JUMPS)
    v = g.v(x)
    return g.emit(name, {}, [x], f, [(v.shape, *span(f, (v.lo, v.hi), n=257))], exact=name in KEEPS and v.exact)


BIN_DOMAIN = {"div": ((-CAP, CAP), (0.2, CAP)), "power": ((0.2, 50), (-2, 2))}
BIN_NAMES = {**{f"elemwise_{n}": n for n in ("add", "sub", "mul", "div")},
             **{f"_{n}": n for n in ("power", "maximum", "minimum", "mod", "hypot", *COMPARE)}}
BIN_REF = {**BINARY, **{n: (lambda f: lambda a, b: f(a, b).astype(np.float64))(f) for n, f in COMPARE.items()}}
BIN_JUMPS = {"mod", *COMPARE}


def _binary_args(g, kind, pred=None):
    dl, dr = BIN_DOMAIN.get(kind, (ANY, ANY))
    exact = kind in BIN_JUMPS
    lhs = g.arg(dl, exact=exact, pred=pred, make_shape=pred and (lambda: (2, 3)))
    return lhs, dr, exact


@op(*BIN_NAMES)
def binary(g, name, bad):
    kind = BIN_NAMES[name]
    lhs, dr, exact = _binary_args(g, kind)
    shape = g.v(lhs).shape
    if bad:
        rhs = g.leaf(conflict(g, shape), max(dr[0], -2), min(dr[1], 2))
    else:
        rhs = g.arg(dr, exact=exact, shape=shape)
    f = BIN_REF[kind]
    lo, hi = span(f, (g.v(lhs).lo, g.v(lhs).hi), (g.v(rhs).lo, g.v(rhs).hi))
    keeps = kind in BIN_JUMPS or kind in ("maximum", "minimum")
    return g.emit(name, {}, [lhs, rhs], f, [(shape, lo, hi)], exact=keeps and g.v(lhs).exact and g.v(rhs).exact,
                  bad="shapes differ" if bad else None)


@op(*[f"broadcast_{n}" for n in ("add", "sub", "mul", "div", "power", "maximum", "minimum", "mod", "hypot",
                                  *COMPARE)])
def broadcast(g, name, bad):
    kind = name[len("broadcast_"):]
    lhs, dr, exact = _binary_args(g, kind, (lambda v: max(v.shape) > 1) if bad else None)
    ls = g.v(lhs).shape
    if bad:  # a dim > 1 against another size > 1
        k = g.choice([k for k, d in enumerate(ls) if d > 1])
        rs = ls[:k] + (ls[k] + 1,) + ls[k + 1:]
    else:
        rs = tuple(1 if g.int(0, 2) == 0 else d for d in ls)[g.int(0, len(ls) - 1):]
    rhs = g.arg(dr, exact=exact, shape=rs) if not bad else g.leaf(rs, max(dr[0], -2), min(dr[1], 2))
    if g.flag() and kind not in BIN_DOMAIN:
        lhs, rhs = rhs, lhs
    f = BIN_REF[kind]
    a, b = g.v(lhs), g.v(rhs)
    out = None if bad else np.broadcast_shapes(a.shape, b.shape)
    keeps = kind in BIN_JUMPS or kind in ("maximum", "minimum")
    return g.emit(name, {}, [lhs, rhs], f, [(out, *span(f, (a.lo, a.hi), (b.lo, b.hi)))],
                  exact=keeps and a.exact and b.exact, bad="shapes do not broadcast" if bad else None)


SCALARS = (-2.0, -1.5, -0.5, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0)
SCALAR_REF = {
    "_plus_scalar": lambda x, s: x + s, "_minus_scalar": lambda x, s: x - s,
    "_rminus_scalar": lambda x, s: s - x, "_mul_scalar": lambda x, s: x * s,
    "_div_scalar": lambda x, s: x / s, "_rdiv_scalar": lambda x, s: s / x,
    "_power_scalar": lambda x, s: x ** s, "_rpower_scalar": lambda x, s: s ** x,
    "_maximum_scalar": np.maximum, "_minimum_scalar": np.minimum, "_hypot_scalar": np.hypot,
    "_mod_scalar": _mod, "_rmod_scalar": lambda x, s: _mod(s, x),
    **{f"_{n}_scalar": (lambda f: lambda x, s: f(x, s).astype(np.float64))(f) for n, f in COMPARE.items()},
}
SCALAR_DOMAIN = {"_rdiv_scalar": (0.2, CAP), "_power_scalar": (0.2, 50), "_rpower_scalar": (-5, 5)}


@op(*SCALAR_REF)
def scalar(g, name, bad):
    jumps = "mod" in name or name[1:-7] in COMPARE
    x = g.arg(SCALAR_DOMAIN.get(name, ANY), exact=jumps)
    s = g.choice([s for s in SCALARS if s > 0] if name == "_rpower_scalar" else SCALARS)
    f = functools.partial(lambda x, s, f: f(x, s), s=s, f=SCALAR_REF[name])
    v = g.v(x)
    keeps = jumps or name in ("_maximum_scalar", "_minimum_scalar")
    return g.emit(name, {"scalar": s}, [x], f, [(v.shape, *span(f, (v.lo, v.hi), n=257))], exact=keeps and v.exact)


@op("clip")
def clip(g, name, bad):
    x = g.arg()
    a, b = g.choice([(-1.0, 1.0), (0.0, 0.5), (-0.5, 1.5)])
    v = g.v(x)
    return g.emit(name, {"a_min": a, "a_max": b}, [x], lambda x: np.clip(x, a, b),
                  [(v.shape, max(a, min(v.lo, b)), min(b, max(v.hi, a)))], exact=v.exact)


@op("smooth_l1")
def smooth_l1(g, name, bad):
    x = g.arg()
    s = g.choice([0.5, 1.0, 2.0])
    v = g.v(x)
    f = functools.partial(_smooth_l1, s=s)
    return g.emit(name, {"scalar": s}, [x], f, [(v.shape, *span(f, (v.lo, v.hi), n=257))])


@op("BlockGrad")
def block_grad(g, name, bad):
    x = g.arg()
    v = g.v(x)
    return g.emit(name, {}, [x], lambda a: a, [(v.shape, v.lo, v.hi)], exact=v.exact)


def _same_shape_inputs(g, n):
    first = g.arg()
    return [first] + [g.arg(shape=g.v(first).shape) for _ in range(n - 1)]


@op("add_n")
def add_n(g, name, bad):
    ins = _same_shape_inputs(g, g.int(1, 3))
    vs = [g.v(i) for i in ins]
    return g.emit(name, {}, ins, lambda *a: sum(a), [(vs[0].shape, sum(v.lo for v in vs), sum(v.hi for v in vs))])


@op("where")
def where(g, name, bad):
    x = g.arg()
    shape = g.v(x).shape
    y = g.arg(shape=shape)
    if bad:
        c = g.leaf(conflict(g, shape) if g.flag() else (shape[0] + 1,), 0, 1, ints=True)
    elif g.flag():
        c = g.arg((-3, 3), exact=True, shape=shape, ints=True)
    else:
        c = g.leaf((shape[0],), 0, 1, ints=True)

    def ref(c, x, y):
        return np.where((c if c.ndim == x.ndim else c.reshape((-1,) + (1,) * (x.ndim - 1))) != 0, x, y)
    return g.emit(name, {}, [c, x, y], ref, [(shape, *_hull(g.v(x), g.v(y)))],
                  exact=g.v(x).exact and g.v(y).exact, bad="condition shape" if bad else None)


# --- activations and softmax --------------------------------------------------------------------
ACT = {"relu": lambda x: np.maximum(x, 0), "sigmoid": sp.expit, "tanh": np.tanh,
       "softrelu": lambda x: np.logaddexp(0, x), "softsign": lambda x: x / (1 + np.abs(x))}


@op("Activation")
def activation(g, name, bad):
    x = g.arg()
    t = "swish" if bad else g.choice(sorted(ACT))
    v = g.v(x)
    return g.emit(name, {"act_type": t}, [x], ACT.get(t), [(v.shape, *span(ACT.get(t, np.tanh), (v.lo, v.hi)))],
                  exact=t == "relu" and v.exact, bad="unknown act_type" if bad else None)


def _gelu(x):
    return 0.5 * x * (1 + sp.erf(x / np.sqrt(2)))


@op("LeakyReLU")
def leaky(g, name, bad):
    x = g.arg((-50, 50))
    t = "bogus" if bad else g.choice(["leaky", "elu", "selu", "gelu"])
    s = g.choice([0.1, 0.25, 0.5])
    f = {"leaky": lambda x: np.where(x > 0, x, s * x), "elu": lambda x: np.where(x > 0, x, s * np.expm1(x)),
         "selu": _selu, "gelu": _gelu}.get(t, np.tanh)
    v = g.v(x)
    return g.emit(name, {"act_type": t, "slope": s}, [x], f, [(v.shape, *span(f, (v.lo, v.hi), n=257))],
                  bad="unknown act_type" if bad else None)


def _log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


@op("softmax", "log_softmax")
def softmax(g, name, bad):
    x = g.arg()
    v = g.v(x)
    nd = len(v.shape)
    axis = nd if bad else g.axis(nd)
    t = g.choice([None, 0.5, 2.0])
    params = {"axis": axis} if t is None else {"axis": axis, "temperature": t}
    div = t or 1.0
    if name == "softmax":
        ref, bounds = (lambda a: _softmax(a / div, axis=axis)), (0.0, 1.0)
    else:
        n = v.shape[axis % nd]
        ref, bounds = (lambda a: _log_softmax(a / div, axis)), ((v.lo - v.hi) / div - math.log(n) - 1, 0.0)
    return g.emit(name, params, [x], ref, [(v.shape, *bounds)], bad="axis out of range" if bad else None)


@op("SoftmaxActivation")
def softmax_activation(g, name, bad):
    x = g.arg(ndim=(2, 4))
    mode = g.choice(["instance", "channel"])
    shape = g.v(x).shape

    def ref(a):
        if mode == "channel":
            return _softmax(a, axis=1)
        return _softmax(a.reshape(a.shape[0], -1), axis=-1).reshape(a.shape)
    return g.emit(name, {"mode": mode}, [x], ref, [(shape, 0.0, 1.0)])


# --- reductions ---------------------------------------------------------------------------------
REDUCE_REF = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
              "nansum": np.nansum, "nanprod": np.nanprod}


def _red_axes(g, nd, bad):
    if bad:
        return (g.choice([nd, -nd - 1]),), "axis out of range"
    if g.int(0, 3) == 0:
        return None, None
    return tuple(a - nd if g.flag() else a for a in g.subset(range(nd))), None


def _resolved(axis, nd, exclude=False):
    if not axis:
        return tuple(range(nd))
    ax = sorted(a % nd for a in axis)
    return tuple(i for i in range(nd) if i not in ax) if exclude else tuple(ax)


def _reduced_shape(shape, ax, keepdims):
    if keepdims:
        return tuple(1 if i in ax else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in ax) or (1,)


@op(*REDUCE_REF)
def reduce(g, name, bad):
    x = g.arg((-1.5, 1.5) if "prod" in name else ANY)
    v = g.v(x)
    nd = len(v.shape)
    axis, why = _red_axes(g, nd, bad)
    keepdims, exclude = g.flag(), g.flag()
    params = {"keepdims": keepdims, "exclude": exclude}
    if axis is not None:
        params["axis"] = axis
    if why:
        return g.emit(name, params, [x], None, [(v.shape, 0, 0)], bad=why)
    ax = _resolved(axis, nd, exclude)
    out = _reduced_shape(v.shape, ax, keepdims)
    n = math.prod(v.shape[a] for a in ax)
    m = max(abs(v.lo), abs(v.hi))
    bounds = {"sum": (n * min(v.lo, 0), n * max(v.hi, 0)), "mean": (v.lo, v.hi), "max": (v.lo, v.hi),
              "min": (v.lo, v.hi)}.get(name[3:] if name.startswith("nan") else name, (-m ** n, m ** n))
    f = REDUCE_REF[name]
    return g.emit(name, params, [x], lambda a: f(a, axis=ax, keepdims=keepdims).reshape(out), [(out, *bounds)],
                  exact=name in ("max", "min") and v.exact)


@op("norm")
def norm(g, name, bad):
    x = g.arg()
    v = g.v(x)
    nd = len(v.shape)
    axis, _ = _red_axes(g, nd, False)
    ord_ = 3 if bad else g.choice([1, 2])
    keepdims = g.flag()
    ax = _resolved(axis, nd)
    out = _reduced_shape(v.shape, ax, keepdims)
    n = math.prod(v.shape[a] for a in ax)
    params = {"ord": ord_, "keepdims": keepdims, **({} if axis is None else {"axis": axis})}

    def ref(a):
        y = np.abs(a).sum(axis=ax) if ord_ == 1 else np.sqrt((a * a).sum(axis=ax))
        return y.reshape(out)
    return g.emit(name, params, [x], ref, [(out, 0.0, n * max(abs(v.lo), abs(v.hi)))],
                  bad="ord must be 1 or 2" if bad else None)


@op("argmax", "argmin")
def argmax(g, name, bad):
    x = g.arg(exact=True)
    v = g.v(x)
    nd = len(v.shape)
    axis = g.choice([nd, -nd - 1]) if bad else (None if g.int(0, 3) == 0 else g.axis(nd))
    keepdims = g.flag()
    f = np.argmax if name == "argmax" else np.argmin
    if axis is None:
        out = (1,) * nd if keepdims else (1,)
        ref = (lambda a: np.asarray(f(a.reshape(-1)), np.float64).reshape(out))
    else:
        out = _reduced_shape(v.shape, (axis % nd,), keepdims)
        ref = (lambda a: f(a, axis=axis).astype(np.float64).reshape(out))
    params = {"keepdims": keepdims, **({} if axis is None else {"axis": axis})}
    return g.emit(name, params, [x], ref, [(out, 0.0, max(v.shape) if not bad else 0)], exact=True,
                  bad="axis out of range" if bad else None)
