"""`mx.nd`: NDArray handles over jax arrays, creation functions and imperative operators."""
from .. import _namespaces, _random_api
from .ndarray import NDArray, arange, array, concat, empty, full, ones, waitall, zeros
from .imperative import imperative_functions as _imperative_functions
from .serialize import load, load_frombuffer, save
from . import sparse
from .sparse import CSRNDArray, RowSparseNDArray, cast_storage

_functions = _imperative_functions()
globals().update({k: v for k, v in _functions.items() if k not in globals()})
globals().update(_namespaces.install(  # mx.nd.contrib, .linalg, .random (MXNet's samplers), .image
    __name__, _functions, {"random": _random_api.wrappers(_functions, NDArray, imperative=True),
     "contrib": _random_api.contrib_wrappers(_functions, NDArray, imperative=True)}))

from . import _ufunc  # noqa: E402
from ._cached_op import CachedOp  # noqa: E402
from ._dlpack import from_dlpack, to_dlpack_for_read, to_dlpack_for_write  # noqa: E402
from ._ufunc import concatenate, eye, from_numpy, histogram, linspace, moveaxis, onehot_encode  # noqa: E402
globals().update(_ufunc.FUNCTIONS)  # add, subtract, ..., maximum, power, equal, logical_and, ...
for _name in ("isinf", "isnan", "isfinite", "boolean_mask"):  # Python functions of MXNet's mx.nd.contrib
    setattr(contrib, _name, getattr(_ufunc, _name))  # noqa: F821 (installed above)
from . import _control_flow  # noqa: E402
for _name in ("foreach", "while_loop", "cond"):
    setattr(contrib, _name, getattr(_control_flow, _name))  # noqa: F821 (installed above)

__all__ = ["CSRNDArray", "CachedOp", "NDArray", "RowSparseNDArray", "arange", "array", "cast_storage", "concat", "empty", "full",
           "load", "load_frombuffer", "ones", "save", "sparse", "waitall", "zeros"]


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """MXNet's `split_v2`: split `ary` along `axis` at a tuple's points, or into an int's
    number of equal parts (each squeezed if `squeeze_axis`)."""
    return ary.split_v2(indices_or_sections, axis, squeeze_axis)


def reset_arrays(*data, num_arrays=None):
    """MXNet's `reset_arrays`: set every array of `data` to zero, in place (how Gluon's
    `zero_grad` clears many gradients at once). `num_arrays`, if given, must be len(data)."""
    if num_arrays is not None and int(num_arrays) != len(data):
        from ..base import MXNetError
        raise MXNetError(f"reset_arrays: num_arrays={num_arrays} but {len(data)} arrays were given")
    for a in data:
        if not isinstance(a, NDArray):
            raise TypeError(f"reset_arrays: every input must be an NDArray, got {type(a).__name__}")
        a[:] = 0
