"""MXNet's Python-level symbol creators with positional arguments (`mx.sym.zeros(shape)`)."""
from __future__ import annotations

from .ops import make


def zeros(shape, dtype=None, **kwargs):
    """A symbol of zeros; unknown dims (0) are inferred from where it is used."""
    return _init("_zeros", shape, dtype, kwargs)


def ones(shape, dtype=None, **kwargs):
    return _init("_ones", shape, dtype, kwargs)


def full(shape, val, dtype=None, **kwargs):
    kwargs["value"] = val
    return _init("_full", shape, dtype, kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    params = {"start": start, "stop": stop, "step": step, "repeat": repeat}
    if dtype is not None:
        params["dtype"] = dtype
    return make("_arange", (), params, name=name, hint="_arange")


def _init(op, shape, dtype, kwargs):
    name, attr = kwargs.pop("name", None), kwargs.pop("attr", None)
    kwargs["shape"] = (shape,) if isinstance(shape, int) else tuple(shape)
    kwargs["dtype"] = "float32" if dtype is None else dtype  # MXNet writes the dtype attribute
    return make(op, (), kwargs, name=name, attr=attr, hint=op)
