"""Errors and small shared helpers.

`MXNetError` is the root of every error jbind raises on bad input, so scripts that
catch `mx.base.MXNetError` keep working. As in MXNet it subclasses `RuntimeError`.
"""
from __future__ import annotations

import ctypes
import os
import platform

import ml_dtypes
import numpy as np

# MXNet's type groups, as `isinstance` checks in user code use them.
integer_types = (int, np.int32, np.int64)
numeric_types = (float, int, np.generic)
string_types = (str,)
mx_real_t = np.float32  # MXNet's default real type
# MXNet's handle type of an NDArray: `NDArray(ctypes.cast(arr, NDArrayHandle))` in a monitor
# callback makes an array over `arr`'s elements (jbind's handles are those of live NDArrays).
NDArrayHandle = ctypes.c_void_p


def py_str(x) -> str:
    """MXNet's `py_str`: bytes from the C API as a str (UTF-8). jbind's own callbacks and
    names already hand out str, which is returned unchanged (MXNet's raises on a str)."""
    return x.decode("utf-8") if isinstance(x, (bytes, bytearray)) else x


def data_dir_default() -> str:
    """Where MXNet keeps downloaded data when MXNET_HOME is unset: %APPDATA%\\mxnet on
    Windows, ~/.mxnet elsewhere."""
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA", ""), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir() -> str:
    """MXNet's data directory: $MXNET_HOME, else `data_dir_default()`."""
    return os.getenv("MXNET_HOME", data_dir_default())


def _as_list(obj):
    """`obj` itself if it is a list or tuple, else `[obj]`."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


class _NullType:
    """MXNet's placeholder for an argument not given (`_Null`)."""

    def __repr__(self):
        return "_Null"


_Null = _NullType()


class MXNetError(RuntimeError):
    """Base class of jbind's errors (MXNet 1.x name)."""


class DeferredError(MXNetError):
    """A check an op makes while its program runs (take's mode='raise'): as in MXNet, an
    executor reports it when an output of that forward is read."""


class ShapeError(MXNetError):
    """Shape inference found contradictory or impossible shapes."""


class DTypeError(MXNetError):
    """Type inference found contradictory dtypes."""


class ParamError(MXNetError, TypeError):
    """An operator got an unknown or malformed parameter."""


class ArgumentError(MXNetError, ValueError):
    """A bad argument value where MXNet's Python front end raises ValueError (an NDArray's
    `reshape` to another size, `moveaxis` out of bounds)."""


class NotImplementedForSymbol(MXNetError):
    """A method that needs values called on a Symbol (MXNet's `mxnet.base.NotImplementedForSymbol`)."""

    def __init__(self, function: str, alias: str | None = None, *args):
        msg = f"Function {function}"
        if alias:
            msg += f' (namely operator "{alias}")'
        if args:
            msg += f" with arguments ({', '.join(str(type(a)) for a in args)})"
        super().__init__(msg + " is not implemented for Symbol and only available in NDArray.")


class NotSupportedForSparseNDArray(MXNetError):
    """A function called on a sparse array that only dense NDArrays have (MXNet's name)."""

    def __init__(self, function, alias: str | None = None, *args):
        name = getattr(function, "__name__", str(function))
        msg = f"Function {name}"
        if alias:
            msg += f' (namely operator "{alias}")'
        if args:
            msg += f" with arguments ({', '.join(str(type(a)) for a in args)})"
        super().__init__(msg + " is not supported for SparseNDArray and only available in NDArray.")


class JbindWarning(RuntimeWarning):
    """Base class of jbind's warnings about degraded operation (it carries on)."""


# MXNet's numeric dtype codes, as stored in `__dtype__` attributes and .params files.
DTYPE_MX_TO_NP = {
    0: np.float32, 1: np.float64, 2: np.float16, 3: np.uint8,
    4: np.int32, 5: np.int8, 6: np.int64, 7: np.bool_, 12: ml_dtypes.bfloat16,
}
DTYPE_NP_TO_MX = {np.dtype(v): k for k, v in DTYPE_MX_TO_NP.items()}
# MXNet's storage-type ids, as its symbol JSON (`__storage_type__`) and .params files keep them.
STYPE_STR_TO_ID = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}


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
