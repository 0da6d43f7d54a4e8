"""`mx.sym.random` and `mx.nd.random`: MXNet's Python samplers over the `_random_*` ops
(number parameters) and the `_sample_*` ops (Symbol / NDArray parameters, one draw set
per parameter element), with MXNet's signatures and defaults: `exponential` takes a scale,
`mx.nd` draws shape (1,) when none is given, `multinomial` returns probabilities by
default in `mx.sym` only. The `<dist>_like` samplers are the `_random_<dist>_like` ops
themselves (`exponential_like` takes the rate `lam`, as MXNet's)."""
from __future__ import annotations

import numbers

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


def wrappers(ops: dict, tensor, imperative: bool) -> dict:
    """The functions of `mx.sym.random` (`imperative=False`, `tensor` Symbol) or
    `mx.nd.random` (`imperative=True`, `tensor` NDArray); `ops`: the namespace's op functions."""
    kind = tensor.__name__

    def draw(name, values, shape, dtype, kwargs):
        spec = _DISTRIBUTIONS[name]
        values = list(values)
        if name == "exponential":  # MXNet's exponential takes a scale; the ops take the rate
            values = [1.0 / values[0]]
        names = ["lam"] if name == "exponential" else [n for n, _ in spec]
        extra = {k: v for k, v in (("shape", shape), ("dtype", dtype)) if v is not None}
        if isinstance(values[0], tensor):
            if not all(isinstance(v, tensor) for v in values) or name == "randint":
                raise ValueError(f"random.{name}: the distribution parameters must all be {kind}s"
                                 + (" (randint takes numbers only)" if name == "randint" else "")
                                 + f", got {[type(v).__name__ for v in values]}")
            return ops["_sample_" + name](*values, **extra, **kwargs)
        if not all(isinstance(v, numbers.Number) for v in values):
            raise ValueError(f"random.{name}: distribution parameters must be either {kind} or numbers, "
                             f"but got {[type(v).__name__ for v in values]}")
        if imperative and "shape" not in extra and kwargs.get("out") is None:
            extra["shape"] = (1,)
        if "ctx" in kwargs:
            kwargs = {**kwargs, "ctx": str(kwargs["ctx"]) if kwargs["ctx"] is not None else ""}
        return ops["_random_" + name](**dict(zip(names, values)), **extra, **kwargs)

    def make(name):
        spec = _DISTRIBUTIONS[name]

        def f(*args, shape=None, dtype=None, **kwargs):
            if len(args) > len(spec):
                raise TypeError(f"random.{name}() takes {len(spec)} distribution parameters, got {len(args)}")
            values = list(args) + [kwargs.pop(n, d) for n, d in spec[len(args):]]
            if any(v is None for v in values):
                raise TypeError(f"random.{name}() needs {', '.join(n for n, _ in spec)}")
            return draw(name, values, shape, dtype, kwargs)
        f.__name__ = f.__qualname__ = name
        f.__doc__ = f"MXNet's random.{name}({', '.join(f'{n}={d}' for n, d in spec)}, shape, dtype, ...)."
        return f

    out = {name: make(name) for name in _DISTRIBUTIONS}

    def randn(*shape, **kwargs):
        loc, scale = kwargs.pop("loc", 0), kwargs.pop("scale", 1)
        return draw("normal", [loc, scale], tuple(shape) or None, kwargs.pop("dtype", None), kwargs)

    def multinomial(data, shape=None, get_prob=not imperative, dtype="int32", **kwargs):
        extra = {"shape": shape} if shape is not None else {}
        return ops["_sample_multinomial"](data, get_prob=get_prob, dtype=dtype, **extra, **kwargs)

    def shuffle(data, **kwargs):
        return ops["_shuffle"](data, **kwargs)

    out.update(randn=randn, multinomial=multinomial, shuffle=shuffle)
    if not imperative:  # MXNet's generated mx.sym.random.<dist>_like names its nodes <dist>_like<n>
        from .symbol.ops import _constructor
        out.update({d + "_like": _constructor(f"_random_{d}_like", hint=d + "_like")
                    for d in _DISTRIBUTIONS if d != "randint"})
    return out
