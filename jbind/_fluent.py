"""MXNet's fluent methods (`x.sin()`, `s.reshape((3, 2))`, `a.sum(axis=1)`), defined once
for Symbol and NDArray.

Each method calls the registered op of its name (or the one `RENAMED` gives) with the
array as the first input and forwards every other argument, as MXNet 1.9.1's fluent
methods do, so `x.sum(axis=1)` and `mx.nd.sum(x, axis=1)` are one code path and give the
same node names. `install` puts them on a class; a method the class defines itself wins
(NDArray's `reshape` and `astype`, whose MXNet signatures are not the op's).
"""
from __future__ import annotations

from typing import Callable

from .base import NotImplementedForSymbol

# Methods that are `op(self, *args, **kwargs)` for the op of the same name.
FLUENT = tuple("""
    abs arccos arccosh arcsin arcsinh arctan arctanh argmax argmax_channel argmin argsort astype
    broadcast_axes broadcast_like broadcast_to cbrt ceil clip cos cosh degrees depth_to_space
    exp expm1 fix flip floor log log10 log1p log2 log_softmax max mean min nanprod nansum norm
    one_hot ones_like pad pick prod radians rcbrt reciprocal relu repeat reshape reshape_like
    rint round rsqrt shape_array sigmoid sign sin sinh size_array slice slice_axis slice_like
    softmax softmin sort space_to_depth split sqrt square sum swapaxes take tan tanh tile topk
    transpose trunc zeros_like""".split())
RENAMED = {"astype": "cast"}  # Symbol.astype is the Cast op (NDArray defines its own)

# Methods MXNet's Symbol has only to refuse: they need values.
NDARRAY_ONLY = ("as_in_context", "asnumpy", "asscalar", "backward", "copy", "detach", "wait_to_read")

Call = Callable[[str, object, tuple, dict], object]  # (op name, self, args, kwargs) -> result


def _plain(op: str, call: Call):
    def f(self, *args, **kwargs):
        return call(op, self, args, kwargs)
    return f


# MXNet's `inplace=True` returns a view sharing the data; NDArray defines its own
# (views, see jbind/ndarray/_view.py), so these serve Symbol, where both spellings are the op.
def _flatten(call: Call):
    def flatten(self, inplace=False, **kwargs):
        return call("flatten", self, (), kwargs)
    return flatten


def _expand_dims(call: Call):
    def expand_dims(self, axis, inplace=False, **kwargs):
        return call("expand_dims", self, (), {"axis": axis, **kwargs})
    return expand_dims


def _squeeze(call: Call):
    def squeeze(self, axis=None, inplace=False, **kwargs):
        return call("squeeze", self, (), {"axis": axis, **kwargs})
    return squeeze


def _diag(call: Call):
    def diag(self, k=0, **kwargs):
        return call("diag", self, (k,), kwargs)
    return diag


def split_v2_params(indices_or_sections, axis=0, squeeze_axis=False) -> dict:
    """MXNet's `split_v2` arguments as the `_split_v2` op's parameters: split points
    (a tuple; 0 is prepended) or a number of equal sections (an int)."""
    if isinstance(indices_or_sections, int):
        return {"indices": (), "sections": indices_or_sections, "axis": axis, "squeeze_axis": squeeze_axis}
    if isinstance(indices_or_sections, tuple):
        return {"indices": (0,) + indices_or_sections, "axis": axis, "squeeze_axis": squeeze_axis}
    raise ValueError("indices_or_sections must either int or tuple of ints")


def _split_v2(call: Call):
    def split_v2(self, indices_or_sections, axis=0, squeeze_axis=False):
        """Split along `axis` at the points of a tuple, or into an int's number of equal parts."""
        return call("_split_v2", self, (), split_v2_params(indices_or_sections, axis, squeeze_axis))
    return split_v2


SPECIAL = {"flatten": _flatten, "expand_dims": _expand_dims, "squeeze": _squeeze, "diag": _diag,
           "split_v2": _split_v2}


def _refuse(method: str):
    def f(self, *args, **kwargs):
        raise NotImplementedForSymbol(method)
    return f


def install(cls: type, call: Call, namespace: str, refuse: tuple = ()) -> None:
    """Add every fluent method `cls` does not define itself, each calling `call`; the
    methods named in `refuse` raise NotImplementedForSymbol instead (Symbol's NDArray-only ones)."""
    made = {m: special(call) for m, special in SPECIAL.items()}
    made.update({m: _plain(RENAMED.get(m, m), call) for m in FLUENT})
    for method, f in made.items():
        if f.__doc__ is None:
            f.__doc__ = f"Fluent form of `{namespace}.{RENAMED.get(method, method)}`, with this array as its first input."
    made.update({m: _refuse(m) for m in refuse})
    for method, f in made.items():
        if method in cls.__dict__:
            continue
        f.__name__ = method
        f.__qualname__ = f"{cls.__name__}.{method}"
        setattr(cls, method, f)
