"""Errors and small shared helpers.

`MXNetError` is the root of every error jbind raises on bad input, so scripts that
catch `mx.base.MXNetError` keep working. As in MXNet it subclasses `RuntimeError`.
"""
from __future__ import annotations

import numpy as np


class MXNetError(RuntimeError):
    """Base class of jbind's errors (MXNet 1.x name)."""


class ShapeError(MXNetError):
    """Shape inference found contradictory or impossible shapes."""


class DTypeError(MXNetError):
    """Type inference found contradictory dtypes."""


class ParamError(MXNetError, TypeError):
    """An operator got an unknown or malformed parameter."""


class NotImplementedForSymbol(MXNetError):
    """A method that needs values called on a Symbol (MXNet's `mxnet.base.NotImplementedForSymbol`)."""

    def __init__(self, function: str, alias: str | None = None, *args):
        msg = f"Function {function}"
        if alias:
            msg += f' (namely operator "{alias}")'
        if args:
            msg += f" with arguments ({', '.join(str(type(a)) for a in args)})"
        super().__init__(msg + " is not implemented for Symbol and only available in NDArray.")


class JbindWarning(RuntimeWarning):
    """Base class of jbind's warnings about degraded operation (it carries on)."""


# MXNet's numeric dtype codes, as stored in `__dtype__` attributes and .params files.
DTYPE_MX_TO_NP = {
    0: np.float32, 1: np.float64, 2: np.float16, 3: np.uint8,
    4: np.int32, 5: np.int8, 6: np.int64, 7: np.bool_,
}
DTYPE_NP_TO_MX = {np.dtype(v): k for k, v in DTYPE_MX_TO_NP.items()}


def np_dtype(dtype) -> np.dtype:
    """Normalise a dtype given as a string, numpy type or MXNet code."""
    if dtype is None:
        return np.dtype(np.float32)
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        if int(dtype) not in DTYPE_MX_TO_NP:
            raise MXNetError(f"unknown dtype code {int(dtype)}; MXNet's codes are {sorted(DTYPE_MX_TO_NP)}")
        return np.dtype(DTYPE_MX_TO_NP[int(dtype)])
    try:
        return np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError) as e:
        raise MXNetError(f"unknown dtype {dtype!r}") from e


def fmt_shape(shape) -> str:
    return "None" if shape is None else str(tuple(shape))
