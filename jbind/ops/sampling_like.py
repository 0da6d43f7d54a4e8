"""`_random_*_like`: samples of a `_random_*` op's distribution in the shape and dtype of
an input (MXNet 1.9.1's random ops with `_like`), made from those ops (sampling.py)."""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from ._base import Op, fields, frozen, register
from .sampling import (_FLOATS, _NOTE, _random_exponential, _random_gamma, _random_generalized_negative_binomial,
                       _random_negative_binomial, _random_normal, _random_poisson, _random_uniform)


# --- the input's shape: _random_*_like ---------------------------------------------------------
@frozen
class _RandomLike(Op):
    """Samples of one distribution in the shape and dtype of `data`, whose values are not
    read (and get a zero gradient, as MXNet's). Subclasses are made by `_like` from a
    `_random_*` op, whose parameter checks and drawing they reuse."""
    random = True
    pointwise = True  # i.i.d. samples, one per element of `data`: any reshaping draws the same law
    base: ClassVar[type]

    def __post_init__(self):
        self._base()  # the `_random_*` op's parameter checks

    def _base(self):
        return self.base(*self._values())

    def infer_type(self, ins, outs):
        t = next((t for t in list(ins) + list(outs) if t is not None), None)
        if t is not None and np.dtype(t).name not in _FLOATS:
            raise ValueError(f"data must be float16, float32 or float64, got {np.dtype(t).name}")
        return [t], [t], []

    def lower(self, ins, aux, is_train, key):
        data = ins[0]
        return [self._base()._draw(key, data.shape, data.dtype)], aux


def _like(base):
    """`<base>_like`: MXNet's parameters of `base` (less shape, ctx, dtype), its defaults."""
    name = base.name + "_like"
    params = [f for f in fields(base) if f.name not in ("shape", "ctx", "dtype")]
    ns = {"__module__": __name__, "__qualname__": name, "base": base,
          "__annotations__": {f.name: f.type for f in params}, **{f.name: f.default for f in params},
          "__doc__": (base.__doc__.split(_NOTE)[0].replace("Samples", "Samples in the shape and dtype of `data`", 1)
                      + " `data`'s values are not read (its gradient is zero); it must be a float." + _NOTE)}
    return register(frozen(type(name, (_RandomLike,), ns)))


for _base_op in (_random_uniform, _random_normal, _random_gamma, _random_exponential, _random_poisson,
                 _random_negative_binomial, _random_generalized_negative_binomial):
    _like(_base_op)
del _base_op
