"""Registered operators called on NDArrays (`mx.nd.softmax(x)`), evaluated eagerly."""
from __future__ import annotations

import jax
import numpy as np

from ..base import MXNetError
from ..ops._base import ALIASES, REGISTRY, get_op
from .ndarray import NDArray


def invoke(op_name: str, args, kwargs):
    cls = get_op(op_name)
    kwargs = dict(kwargs)
    kwargs.pop("name", None)
    out = kwargs.pop("out", None)
    inputs = [a for a in args]
    params = {}
    for k, v in kwargs.items():
        if isinstance(v, NDArray):
            inputs.append(v)
        else:
            params[k] = v
    if cls.variadic:
        params.setdefault(cls.variadic, len(inputs))
    op = cls.from_attrs(params)
    nargs = len(op.arguments())
    if len(inputs) != nargs + len(cls.aux_names):
        raise MXNetError(f"{cls.name}: expected {nargs} input arrays {op.arguments()}, got {len(inputs)}")
    datas = [a._data if isinstance(a, NDArray) else np.asarray(a) for a in inputs]
    outs, _ = op.lower(datas[:nargs], datas[nargs:], False, jax.random.key(0))
    res = [NDArray(o) for o in outs]
    if out is not None:
        out[:] = res[0]
        return out
    return res[0] if len(res) == 1 else res


def _fn(op_name):
    def f(*args, **kwargs):
        return invoke(op_name, args, kwargs)
    f.__name__ = op_name
    f.__doc__ = get_op(op_name).__doc__
    return f


def imperative_functions() -> dict:
    return {n: _fn(n) for n in list(REGISTRY) + list(ALIASES)}
