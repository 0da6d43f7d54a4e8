"""`mx.sym.random` and `mx.nd.random` (and so `mx.random`): MXNet's Python samplers over the
`_random_*` ops (number parameters) and the `_sample_*` ops (Symbol / NDArray parameters,
one draw set per parameter element), with MXNet's signatures and defaults:
`uniform(low=0, high=1, shape, dtype, ctx, out)` in `mx.nd` (`shape, dtype` in `mx.sym`),
all positional as MXNet's; `exponential` takes a scale; `mx.nd` draws shape (1,) when
neither shape nor `out` is given (with `out`, its shape and dtype); `multinomial` returns
probabilities by default in `mx.sym` only. The `<dist>_like` samplers are the
`_random_<dist>_like` ops themselves (`exponential_like` takes the rate `lam`, as MXNet's)."""
from __future__ import annotations

import numbers

import numpy as np

# name (of the wrapper and of its `_random_` / `_sample_` ops) -> MXNet's parameter names and defaults
_DISTRIBUTIONS = {
    "uniform": (("low", 0), ("high", 1)),
    "normal": (("loc", 0), ("scale", 1)),
    "poisson": (("lam", 1),),
    "exponential": (("scale", 1),),
    "gamma": (("alpha", 1), ("beta", 1)),
    "negative_binomial": (("k", 1), ("p", 1)),
    "generalized_negative_binomial": (("mu", 1), ("alpha", 1)),
    "randint": (("low", None), ("high", None)),
}
_FLOATS = ("float16", "float32", "float64")


def wrappers(ops: dict, tensor, imperative: bool) -> dict:
    """The functions of `mx.sym.random` (`imperative=False`, `tensor` Symbol) or
    `mx.nd.random` (`imperative=True`, `tensor` NDArray); `ops`: the namespace's op functions."""
    kind = tensor.__name__
    # after the distribution's parameters, MXNet's positional order: shape, dtype (, ctx, out)
    tail = ("shape", "dtype", "ctx", "out") if imperative else ("shape", "dtype")

    def draw(name, values, shape, dtype, ctx, out, kwargs):
        values = list(values)
        dtypes = ("int32", "int64") if name == "randint" else _FLOATS
        extra = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
        if isinstance(values[0], tensor):
            if not all(isinstance(v, tensor) for v in values) or name == "randint":
                raise ValueError(f"random.{name}: the distribution parameters must all be {kind}s"
                                 + (" (randint takes numbers only)" if name == "randint" else "")
                                 + f", got {[type(v).__name__ for v in values]}")
            if name == "exponential":  # MXNet's exponential takes a scale; the ops take the rate
                values = [1.0 / values[0]]
            if out is not None:
                _fill_from_out(extra, out, values[0].shape, dtypes)
                kwargs = {**kwargs, "out": out}
            return ops["_sample_" + name](*values, **extra, **kwargs)
        if not all(isinstance(v, numbers.Number) for v in values):
            raise ValueError(f"random.{name}: distribution parameters must be either {kind} or numbers, "
                             f"but got {[type(v).__name__ for v in values]}")
        names = [n for n, _ in _DISTRIBUTIONS[name]]
        if name == "exponential":
            names, values = ["lam"], [1.0 / values[0]]
        if not imperative:
            # MXNet composes keyword Symbols only into ops that have inputs: `_random_*` have
            # none, so one given (randn(..., data=x)) is ignored there, not an error
            kwargs = {k: v for k, v in kwargs.items() if not isinstance(v, tensor)}
        else:
            if out is not None:
                _fill_from_out(extra, out, (), dtypes)
                kwargs = {**kwargs, "out": out}
            extra.setdefault("shape", (1,))
            if ctx is not None:
                kwargs = {**kwargs, "ctx": str(ctx)}
        return ops["_random_" + name](**dict(zip(names, values)), **extra, **kwargs)

    def make(name):
        spec = _DISTRIBUTIONS[name]
        names = [n for n, _ in spec] + list(tail)

        def f(*args, **kwargs):
            if len(args) > len(names):
                raise TypeError(f"random.{name}() takes at most {len(names)} positional arguments "
                                f"({', '.join(names)}), got {len(args)}")
            given = dict(zip(names, args))
            for k in list(kwargs):
                if k in names:
                    if k in given:
                        raise TypeError(f"random.{name}() got multiple values for argument {k!r}")
                    given[k] = kwargs.pop(k)
            values = [given.get(n, d) for n, d in spec]
            if any(v is None for v in values):
                raise TypeError(f"random.{name}() needs {', '.join(n for n, _ in spec)}")
            return draw(name, values, given.get("shape"), given.get("dtype"), given.get("ctx"),
                        given.get("out"), kwargs)
        f.__name__ = f.__qualname__ = name
        f.__doc__ = (f"MXNet's random.{name}({', '.join(f'{n}={d}' for n, d in spec)}, "
                     f"{', '.join(tail)}): samples of the distribution; number parameters give `shape` "
                     f"samples, {kind} parameters `shape` samples per element.")
        return f

    out = {name: make(name) for name in _DISTRIBUTIONS}

    def randn(*shape, **kwargs):
        """MXNet's random.randn(*shape, loc=0, scale=1, dtype, ...): normal samples of the
        shape given positionally."""
        loc, scale = kwargs.pop("loc", 0), kwargs.pop("scale", 1)
        dtype, ctx, dst = kwargs.pop("dtype", None), kwargs.pop("ctx", None), kwargs.pop("out", None)
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)
        return draw("normal", [loc, scale], shape or None, dtype, ctx, dst, kwargs)

    def multinomial(data, shape=None, get_prob=not imperative, *args, **kwargs):
        """MXNet's random.multinomial(data, shape, get_prob, [out,] dtype='int32'): category
        indices drawn from the distributions along `data`'s last axis (and their log
        probabilities with `get_prob`)."""
        rest = ("out", "dtype") if imperative else ("dtype",)
        if len(args) > len(rest):
            raise TypeError(f"random.multinomial() takes at most {3 + len(rest)} positional arguments")
        kwargs.update(zip(rest, args))
        kwargs.setdefault("dtype", "int32")
        extra = {"shape": shape} if shape is not None else {}
        return ops["_sample_multinomial"](data, get_prob=get_prob, **extra, **kwargs)

    def shuffle(data, **kwargs):
        """MXNet's random.shuffle(data): `data` with its first axis randomly permuted."""
        return ops["_shuffle"](data, **kwargs)

    out.update(randn=randn, multinomial=multinomial, shuffle=shuffle)
    if not imperative:  # MXNet's generated mx.sym.random.<dist>_like names its nodes <dist>_like<n>
        from .symbol.ops import _constructor
        out.update({d + "_like": _constructor(f"_random_{d}_like", hint=d + "_like")
                    for d in _DISTRIBUTIONS if d != "randint"})
    return out


def _fill_from_out(extra: dict, out, lead: tuple, dtypes: tuple) -> None:
    """Where `out=` is given and shape / dtype are not, take them from `out` (MXNet infers
    them from the output array): the sample shape is what `out` has beyond `lead` (the
    parameters' shape)."""
    if "shape" not in extra:
        extra["shape"] = tuple(out.shape[len(lead):])
    if "dtype" not in extra and np.dtype(out.dtype).name in dtypes:
        extra["dtype"] = np.dtype(out.dtype).name


def contrib_wrappers(ops: dict, tensor, imperative: bool) -> dict:
    """MXNet's Python samplers of `mx.sym.contrib` / `mx.nd.contrib`: `rand_zipfian`."""
    import math

    import jax

    def canon(dtype):  # int64 / float64 are 32-bit without JAX's x64 mode, as for arrays
        return jax.dtypes.canonicalize_dtype(np.dtype(dtype)).name

    def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
        """MXNet's contrib.rand_zipfian: `num_sampled` classes in [0, range_max) drawn with
        replacement from the log-uniform (Zipfian) law P(c) = log((c + 2) / (c + 1)) /
        log(range_max + 1), and the expected counts of `true_classes` and of the sampled
        classes in `num_sampled` draws. Returns (sampled classes (int64), expected counts
        of the true classes, of the sampled ones (float64))."""
        log_range = math.log(range_max + 1)
        extra = {}
        if imperative:
            extra["ctx"] = str(ctx) if ctx is not None else ""
            if ctx is not None:
                true_classes = true_classes.as_in_context(ctx)
        rand = ops["_random_uniform"](low=0, high=log_range, shape=(num_sampled,), dtype=canon("float64"), **extra)
        sampled = (rand.exp() - 1).astype(canon("int64")) % range_max
        true_f = true_classes.astype(canon("float64"))
        count_true = ((true_f + 2.0) / (true_f + 1.0)).log() / log_range * num_sampled
        sampled_f = sampled.astype(canon("float64"))
        count_sampled = ((sampled_f + 2.0) / (sampled_f + 1.0)).log() / log_range * num_sampled
        return sampled, count_true, count_sampled

    return {"rand_zipfian": rand_zipfian}
