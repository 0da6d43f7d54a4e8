"""`mx.gluon.utils`: splitting batches over contexts, global-norm clipping, downloads
(see `_download` for how they are written and how they differ from MXNet's)."""
from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ._download import _get_repo_file_url, _get_repo_url, check_sha1, download, replace_file  # noqa: F401
from ._util import HookHandle, brief_print_list as _brief_print_list, indent as _indent, shape_is_known  # noqa: F401

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download", "replace_file",
           "HookHandle", "shape_is_known"]


def split_data(data, num_slice: int, batch_axis: int = 0, even_split: bool = True) -> list:
    """`data` cut into `num_slice` pieces along `batch_axis` (a list even for one piece).

    With `even_split`, a size that `num_slice` does not divide is a ValueError; otherwise
    the first `size % num_slice` pieces get one extra element."""
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(f"data with shape {data.shape!s} cannot be evenly split into {num_slice} slices along "
                         f"axis {batch_axis}. Use a batch size that's multiple of {num_slice} or set "
                         "even_split=False to allow uneven partitioning of data.")
    if num_slice > size:
        raise ValueError(f"Too many slices for data with shape {data.shape}. Arguments are num_slice={num_slice} "
                         f"and batch_axis={batch_axis}.")
    each, extra = divmod(size, num_slice)
    bounds = np.cumsum([0] + [each + 1] * extra + [each] * (num_slice - extra))
    if batch_axis == 0:
        return [data[int(bounds[i]):int(bounds[i + 1])] for i in range(num_slice)]
    return [nd.slice_axis(data, axis=batch_axis, begin=int(bounds[i]), end=int(bounds[i + 1]))
            for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis: int = 0, even_split: bool = True) -> list:
    """`split_data` into `len(ctx_list)` pieces, each copied to its context."""
    if not isinstance(data, nd.NDArray):
        data = nd.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    pieces = split_data(data, len(ctx_list), batch_axis, even_split)
    return [p.as_in_context(c) for p, c in zip(pieces, ctx_list)]


def clip_global_norm(arrays, max_norm: float, check_isfinite: bool = True):
    """Scale every array in place so that their joint 2-norm is at most `max_norm`.

    Returns the norm before scaling: a float, or (with `check_isfinite=False`, which skips
    the blocking read) an NDArray of shape (1,). A nan or inf norm warns."""
    if not arrays:
        raise MXNetError("clip_global_norm: no arrays given")
    ctx = arrays[0].context
    if _fusable(arrays, ctx):  # one compiled call instead of a few eager ops per array
        new, total = _clip_fused([a._data for a in arrays], np.float32(max_norm))
        for a, d in zip(arrays, new):
            a._data = d
        total = nd.NDArray(total)
        if check_isfinite and not np.isfinite(total.asscalar()):
            warnings.warn(UserWarning("nan or inf is detected. Clipping results will be undefined."), stacklevel=2)
        return total.asscalar() if check_isfinite else total
    squares = [nd.dot(a.reshape((-1,)), a.reshape((-1,))).as_in_context(ctx) for a in arrays]
    total = nd.sqrt(nd.add_n(*squares))
    if check_isfinite and not np.isfinite(total.asscalar()):
        warnings.warn(UserWarning("nan or inf is detected. Clipping results will be undefined."), stacklevel=2)
    scale = max_norm / (total + 1e-8)
    scale = nd.min(nd.concat(scale, nd.ones(1, ctx=ctx), dim=0))
    for a in arrays:
        a *= scale.as_in_context(a.context)
    return total.asscalar() if check_isfinite else total


def _fusable(arrays, ctx) -> bool:
    from ..autograd._state import STATE
    return (not STATE.recording and all(type(a) is nd.NDArray for a in arrays)
            and all(a.context == ctx for a in arrays))


@jax.jit
def _clip_fused(arrays, max_norm):
    """The eager path's arithmetic (squares in each array's dtype, summed; scale capped
    at 1) as one function of all the arrays."""
    total = jnp.sqrt(sum(jnp.vdot(a.ravel(), a.ravel()).astype(jnp.float32) for a in arrays)).reshape(1)
    scale = jnp.minimum(max_norm / (total + 1e-8), 1.0)
    return [(a * scale.astype(a.dtype)).astype(a.dtype) for a in arrays], total
