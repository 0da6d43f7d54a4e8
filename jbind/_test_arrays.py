"""mx.test_utils' contexts, tolerances, random data and comparisons (see test_utils.py)."""
from __future__ import annotations

import functools
import numbers

import numpy as np

from . import context as _context
from .base import MXNetError
from .context import Context, current_context, num_gpus
from .ndarray import NDArray, array


# --- contexts and dtypes ------------------------------------------------------------------
def default_context() -> Context:
    """The context the checks run on when none is given: the current context."""
    return current_context()


def set_default_context(ctx: Context) -> None:
    """Make `ctx` this thread's current context (what `with ctx:` sets for a block)."""
    _context._local.ctx = ctx


def default_dtype():
    return np.float32


def list_gpus() -> range:
    """range(number of GPUs JAX sees): [] on a machine without one."""
    return range(num_gpus())


# MXNet 1.9.1's tables (test_utils.default_rtols / default_atols / default_numeric_eps);
# tests/golden/test_utils/test_utils.json records them from MXNet and the tests compare.
_EXACT = (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)


def default_rtols() -> dict:
    """Relative tolerance per dtype."""
    return {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5,
            **{np.dtype(t): 0 for t in _EXACT}}


def default_atols() -> dict:
    """Absolute tolerance per dtype."""
    return {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20,
            **{np.dtype(t): 0 for t in _EXACT}}


def default_numeric_eps() -> dict:
    """Finite-difference step per dtype: powers of two, so adding one to an input is exact."""
    return {np.dtype(np.float16): 2.0 ** -6, np.dtype(np.float32): 2.0 ** -9, np.dtype(np.float64): 2.0 ** -14}


def effective_dtype(dat) -> np.dtype:
    """The dtype whose tolerances apply to `dat`: its own (never float16's for float32 on a
    GPU, as MXNet's does for TF32: jbind's float32 products run in full float32)."""
    return np.dtype(dat.dtype)


def get_tolerance(dat, tol, default_tol: dict):
    """`tol` if it is a number; else `tol[dtype]` (a dict keyed by np.dtype), else the default."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    if tol and dtype in tol:
        return tol[dtype]
    if dtype not in default_tol:
        raise KeyError(f"no default tolerance for dtype {dtype}; pass rtol and atol for it")
    return default_tol[dtype]


def get_tols(x, y, rtol, atol) -> tuple:
    """(rtol, atol) for comparing x and y: the looser of the two inputs' tolerances."""
    x = np.array(x) if isinstance(x, (numbers.Number, list, tuple)) else x
    y = np.array(y) if isinstance(y, (numbers.Number, list, tuple)) else y
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    return default_rtols()[dtype] if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    return default_atols()[dtype] if atol is None else atol


def get_etol(etol=None):
    return 0 if etol is None else etol


# --- random data (numpy's global stream, drawn as MXNet draws it) ----------------------------


def random_arrays(*shapes):
    """float32 standard-normal arrays of the given shapes (one array if one shape)."""
    out = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
           else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return out[0] if len(out) == 1 else out


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=None):
    dtype = default_dtype() if dtype is None else dtype
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """k elements of `population` in random order."""
    if not 0 <= k <= len(population):
        raise AssertionError(f"random_sample: k={k} is not between 0 and len(population)={len(population)}")
    pool = population[:]
    np.random.shuffle(pool)
    return pool[:k]


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False) -> tuple:
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False) -> tuple:
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1), np.random.randint(low, dim2 + 1)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False) -> tuple:
    low = 0 if allow_zero_size else 1
    return tuple(int(d) for d in np.random.randint(low, dim + 1, size=num_dim))


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None) -> NDArray:
    """A random NDArray: standard normal when dense (cast to `dtype`, float32 by default);
    for 'csr' / 'row_sparse', uniform values at about `density` of the entries or rows
    (a random density when None, as MXNet's)."""
    if stype == "default":
        return array(random_arrays(shape), ctx=ctx or default_context(), dtype=dtype)
    return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype, ctx=ctx)[0]


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None, data_init=None,
                        rsp_indices=None, modifier_func=None, shuffle_csr_indices=False, ctx=None):
    """A random sparse array and its parts as numpy arrays: (arr, (data, indices, indptr)) for
    'csr', (arr, (data, indices)) for 'row_sparse', as MXNet's."""
    from .ndarray import sparse
    if stype not in ("csr", "row_sparse"):
        raise MXNetError(f"rand_sparse_ndarray: stype must be 'csr' or 'row_sparse'; got {stype!r}")
    density = np.random.rand() if density is None else density
    if stype == "row_sparse" and rsp_indices is not None:   # exactly these rows, uniform values
        rows = np.asarray(rsp_indices, dtype=np.int64)
        dense = np.zeros(shape, dtype=np.dtype(dtype or np.float32))
        dense[rows] = np.random.uniform(0.001, 1.0, (len(rows),) + tuple(shape[1:]))
        arr = sparse.row_sparse_array((dense[rows], rows), shape=shape, dtype=dense.dtype,
                                      ctx=ctx or default_context())
    else:
        arr = sparse.rand_sparse(shape, stype, density=density, dtype=dtype, ctx=ctx or default_context())
    if data_init is not None:
        arr = _from_dense(stype, np.where(arr.asnumpy() != 0, data_init, 0).astype(arr.dtype), ctx)
    if modifier_func is not None:
        arr = _from_dense(stype, np.where(arr.asnumpy() != 0, modifier_func(arr.asnumpy()), 0).astype(arr.dtype),
                          ctx)
    parts = (arr.data.asnumpy(), arr.indices.asnumpy()) + ((arr.indptr.asnumpy(),) if stype == "csr" else ())
    return arr, parts


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None, modifier_func=None,
                        density=0.5, shuffle_csr_indices=False):
    """A random sparse array (MXNet's test helper), without its parts; a row_sparse one holds
    the rows `rsp_indices` (sorted) where given."""
    if stype not in ("csr", "row_sparse"):
        raise AssertionError(f"Unknown storage type: {stype}")
    rows = np.sort(np.asarray(rsp_indices)) if stype == "row_sparse" and rsp_indices is not None else None
    return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype, data_init=data_init,
                               rsp_indices=rows, modifier_func=modifier_func,
                               shuffle_csr_indices=shuffle_csr_indices)[0]


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None, dtype=None,
                           modifier_func=None, shuffle_csr_indices=False):
    """`create_sparse_array` where a row_sparse array's rows are `rsp_indices` alone (density 0
    otherwise, so possibly no rows at all), as MXNet's."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None and len(rsp_indices) > shape[0]:
            raise AssertionError(f"create_sparse_array_zd: {len(rsp_indices)} row indices for {shape[0]} rows")
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices, dtype=dtype,
                               modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def _from_dense(stype, dense, ctx):
    return array(dense, ctx=ctx or default_context()).tostype(stype)


# --- comparing ---------------------------------------------------------------------------------


def _host(x):
    """NDArrays (and lists) as numpy arrays; numpy arrays and scalars as they are."""
    if isinstance(x, NDArray):
        return x.asnumpy()
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    return x


def same(a, b) -> bool:
    """Whether two arrays are equal in shape and every element."""
    return np.array_equal(_host(a), _host(b))


def same_array(array1: NDArray, array2: NDArray) -> bool:
    """Whether two NDArrays are one buffer: a write into the first shows in the second."""
    array1 += 1
    shared = same(array1, array2)
    array1 -= 1
    return shared and same(array1, array2)


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True) -> bool:
    """np.allclose, with float64's tolerances where none are given (as MXNet's)."""
    if not use_broadcast:
        _check_shapes(a, b)
    return bool(np.allclose(_host(a), _host(b), rtol=get_rtol(rtol), atol=get_atol(atol), equal_nan=equal_nan))


def _check_shapes(a, b):
    if np.shape(a) != np.shape(b):
        raise AssertionError(_report(_host(a), _host(b),
                                     f"a.shape = {np.shape(a)} and b.shape = {np.shape(b)} are not equal"))


# numpy 2 writes scalars as `np.float32(1.0)` and adds `shape=` to summarized arrays; MXNet
# 1.9.1's messages were written by numpy 1.x.
_NUMPY1_REPR = {"legacy": "1.25"} if int(np.__version__.split(".")[0]) >= 2 else {}


def _report(a, b, text, **printopts):
    """numpy 1.x's `build_err_msg([a, b], text)`: the message MXNet's assertions raise."""
    head = "Items are not equal:"
    lines = ["\n" + head + " " + text] if "\n" not in text and len(text) < 79 - len(head) else ["\n" + head, text]
    with np.printoptions(**printopts, **_NUMPY1_REPR):
        for name, x in (("ACTUAL", a), ("DESIRED", b)):
            r = np.array_repr(x, precision=8) if isinstance(x, np.ndarray) else repr(x)
            if r.count("\n") > 3:
                r = "\n".join(r.splitlines()[:3]) + "..."
            lines.append(f" {name}: {r}")
    return "\n".join(lines)


def _max_violation(a, b, rtol, atol):
    """(index, ratio) of the element furthest outside |a - b| <= atol + rtol * |b|."""
    diff = np.where(np.equal(a, b), 0, np.abs(a - b))  # equal infinities count as no error
    mag = np.abs(b)
    if np.ndim(a) == 0 and np.ndim(b) == 0:  # numpy 1.x, MXNet's, took rtol * scalar in float64
        mag = np.float64(mag)
    ratio = diff / (atol + rtol * mag + 1e-20)
    worst = np.unravel_index(np.argmax(ratio), np.shape(ratio))
    return tuple(int(i) for i in worst), np.max(ratio)


def _where(a, b, index, names, maximum=False):
    return "Location of %serror: %s, %s=%.8f, %s=%.8f" % (
        "maximum " if maximum else "", index, names[0], a[index], names[1], b[index])


def _mismatch_report(a, b, rtol, atol, names, equal_nan, mismatches):
    """Print the worst mismatches, worst first (at most mismatches[0] of them, looking at
    mismatches[1]; 0 looks at all), and return MXNet's message naming the worst."""
    index, ratio = _max_violation(a, b, rtol, atol)
    if index == ():
        return _report(a, b, "Error %f exceeds tolerance rtol=%e, atol=%e.\n" % (ratio, rtol, atol),
                       threshold=4, suppress=True)
    wa, wb = (np.array(x) for x in np.broadcast_arrays(a, b))
    size = wa.size
    print(f"\n*** Maximum errors for vector of size {size}:  rtol={rtol}, atol={atol}\n")
    worst, worst_ratio = index, ratio
    count = 1
    while count <= size:
        if count <= mismatches[0]:
            print("%3d: Error %f  %s" % (count, ratio, _where(wa, wb, index, names)))
        wa[index] = wb[index] = 0
        if almost_equal(wa, wb, rtol, atol, equal_nan=equal_nan):
            break
        count += 1
        if count > mismatches[1] > 0:
            break
        index, ratio = _max_violation(wa, wb, rtol, atol)
    degree = "at least " if 0 < mismatches[1] < count else ""
    ba, bb = np.broadcast_arrays(a, b)
    text = "Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %s%f%%).\n%s" % (
        worst_ratio, rtol, atol, degree, 100 * count / size, _where(ba, bb, worst, names, maximum=True))
    return _report(a, b, text, threshold=4, suppress=True)


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raise AssertionError unless |a - b| <= atol + rtol * |b| everywhere.

    `a`, `b`: NDArrays, numpy arrays or numbers. `rtol` / `atol`: a number, a dict from
    np.dtype to number, or None for the defaults of the inputs' dtypes (the looser of the
    two). On failure the worst `mismatches[0]` elements are printed and the message names
    the worst, the share of elements that fail and both arrays, in MXNet's words.
    """
    if not use_broadcast:
        _check_shapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _host(a), _host(b)
    if getattr(a, "dtype", None) == np.bool_ and getattr(b, "dtype", None) == np.bool_:
        np.testing.assert_equal(a, b)
        return
    if not almost_equal(a, b, rtol, atol, equal_nan=equal_nan):
        raise AssertionError(_mismatch_report(a, b, rtol, atol, names, equal_nan, mismatches))


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"), equal_nan=False,
                                 mismatches=(10, 10)):
    """assert_almost_equal that lets a share `etol` of the elements fail."""
    etol = get_etol(etol)
    if etol <= 0:
        return assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _host(a), _host(b)
    close = np.isclose(a, b, rtol=rtol, atol=atol)
    if 1 - np.count_nonzero(close) / close.size > etol:
        raise AssertionError(_mismatch_report(a, b, rtol, atol, names, equal_nan, mismatches))


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """assert_almost_equal after zeroing every position where either array is NaN."""
    a, b = np.copy(_host(a)), np.copy(_host(b))
    nan = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan] = b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """Raise AssertionError unless f(*args, **kwargs) raises `exception_type`."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise {exception_type}")


def retry(n: int):
    """Decorator: run a stochastic test up to n times; fail only if every run fails."""
    if n <= 0:
        raise ValueError(f"retry(n): n must be positive, not {n}")

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if i == n - 1:
                        raise
        return wrapper
    return decorate
