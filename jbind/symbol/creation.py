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


def eye(N, M=0, k=0, dtype=None, **kwargs):
    """An N x M (M = N when 0) symbol with ones on the k-th diagonal."""
    name, attr = kwargs.pop("name", None), kwargs.pop("attr", None)
    params = dict(kwargs, N=N, M=M, k=k, dtype="float32" if dtype is None else dtype)
    return make("_eye", (), params, name=name, attr=attr, hint="_eye")


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """`num` evenly spaced values from start to stop (stop included if `endpoint`)."""
    params = {"start": start, "stop": stop, "num": num, "endpoint": endpoint,
              "dtype": "float32" if dtype is None else dtype}
    return make("_linspace", (), params, name=name, hint="_linspace")
