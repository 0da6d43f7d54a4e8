"""mx.test_utils' reference reductions, comparisons, fixtures and environment checks (see
test_utils.py)."""
from __future__ import annotations

import copy
import functools
import json
import os
import platform

import numpy as np

from .base import MXNetError
from .io import DataIter
from ._test_arrays import assert_almost_equal, default_context


# --- numpy references ----------------------------------------------------------------------------
def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce `dat` with `numpy_reduce_func` (np.sum, np.max, ...) over `axis` (an int, a
    sequence of ints, or None for every axis) one axis at a time, from the last named axis
    to the first; `keepdims` keeps each reduced axis as size 1. The reference MXNet's
    reduction tests compare against, for functions that take one axis only."""
    if isinstance(axis, (int, np.integer)):
        axes = [int(axis)]
    else:
        axes = list(range(dat.ndim)) if axis is None else [int(a) for a in axis]
    ret = dat
    for a in sorted(axes, reverse=True):
        ret = numpy_reduce_func(ret, axis=a)
    if keepdims:
        shape = list(dat.shape)
        for a in axes:
            shape[a] = 1
        ret = np.reshape(ret, tuple(shape))
    return ret


def collapse_sum_like(a, shape):
    """Sum the numpy array `a` down to `shape` (which broadcasts to `a.shape`): over the
    leading axes `shape` lacks and over the axes where `shape` has 1 and `a` more. The
    reference gradient of a broadcasting op. An empty `a` or `shape` gives zeros."""
    shape = tuple(shape)
    if len(a.shape) < len(shape):
        raise AssertionError(f"collapse_sum_like: shape {shape} has more axes than the array's {a.shape}")
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[lead + i]:
            if s != 1:
                raise AssertionError(f"collapse_sum_like: shape {shape} does not broadcast to {a.shape}")
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def assign_each(the_input, function):
    """`function` applied to every element of the numpy array `the_input`, as a float64
    array of its shape (a copy of `the_input` if `function` is None)."""
    if function is None:
        return np.array(the_input)
    flat = [function(v) for v in np.asarray(the_input).ravel()]
    return np.array(flat, dtype=np.float64).reshape(np.shape(the_input))


def assign_each2(input1, input2, function):
    """`function(a, b)` for every pair of elements of two numpy arrays of one shape, as a
    float64 array of that shape (a copy of `input1` if `function` is None)."""
    if function is None:
        return np.array(input1)
    if np.shape(input1) != np.shape(input2):
        raise AssertionError(f"assign_each2: shapes {np.shape(input1)} and {np.shape(input2)} differ")
    flat = [function(a, b) for a, b in zip(np.asarray(input1).ravel(), np.asarray(input2).ravel())]
    return np.array(flat, dtype=np.float64).reshape(np.shape(input1))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point (x, y), x in [x_low, x_high), y in [y_low, y_high)."""
    return np.random.randint(x_low, x_high, dtype=np.int64), np.random.randint(y_low, y_high, dtype=np.int64)


def create_2d_tensor(rows, columns, dtype=np.int64):
    """An NDArray of `rows` rows, row i filled with i."""
    from .ndarray import array
    return array(np.repeat(np.arange(rows, dtype=dtype)[:, None], columns, axis=1), dtype=dtype)


def create_vector(size, dtype=np.int64):
    """The NDArray [0, 1, ..., size - 1]."""
    from .ndarray import arange
    return arange(0, size, dtype=dtype)


def get_identity_mat(size):
    """The (size, size) float32 identity as an NDArray."""
    from .ndarray import array
    return array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size):
    """The identity of `get_identity_mat(size)` stacked twice: shape (2, size, size)."""
    from .ndarray import array
    return array(np.stack([np.eye(size, dtype=np.float32)] * 2))


# --- comparisons ------------------------------------------------------------------------------------
def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """assert_almost_equal on two arrays, or on nested tuples of them pairwise; nothing to
    compare if either side is None (an optimizer without state)."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Apply one update of `opt1` and of `opt2` to the same random weight and gradient
    (uniform on [0, 1)) and compare their states and weights. `shape` a list: `opt2` updates
    all `ntensors` weights in one call, `opt1` one at a time. With a sparse `w_stype` /
    `g_stype` ('row_sparse', 'csr'; one shape only), `opt2` gets a random sparse array
    (the weight at density 1) and `opt1` its dense copy, as MXNet's."""
    from . import random as mxrandom
    from ._test_arrays import rand_ndarray
    for stype in (w_stype, g_stype):
        if stype not in ("default", "row_sparse", "csr"):
            raise MXNetError(f"compare_optimizer: storage type {stype!r} is not 'default', 'row_sparse' or 'csr'")
    ctx = default_context()
    if not isinstance(shape, list):
        if ntensors != 1:
            raise AssertionError("compare_optimizer: one shape given, so ntensors must be 1")

        def pair(stype, density):
            if stype == "default":
                a2 = mxrandom.uniform(shape=shape, ctx=ctx, dtype=dtype)
                return a2.copyto(ctx), a2
            a2 = rand_ndarray(shape, stype, density=density, dtype=dtype)
            return a2.copyto(ctx).tostype("default"), a2
        w1, w2 = pair(w_stype, 1)
        g1, g2 = pair(g_stype, None)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1 = tuple(mxrandom.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(mxrandom.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2, g2 = copy.deepcopy(w1), copy.deepcopy(g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def same_symbol_structure(sym1, sym2) -> bool:
    """Whether the two symbols' JSON node lists have the same op at every position (up to
    the shorter list)."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2))


# --- fixtures -------------------------------------------------------------------------------------------
class DummyIter(DataIter):
    """An iterator that returns the first batch of `real_iter` forever (never raises
    StopIteration), for timing a model without the cost of reading data."""

    def __init__(self, real_iter):
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        """The first batch of the real iterator, again."""
        return self.the_batch


# --- the environment ----------------------------------------------------------------------------------
def getenv(name):
    """The value of environment variable `name` as jbind sees it (None when unset)."""
    return os.environ.get(name)


def setenv(name, value):
    """Set (or with None, unset) environment variable `name`."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def is_cd_run() -> bool:
    """Whether the tests run in MXNet's continuous delivery job (CD_JOB=1)."""
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run() -> bool:
    """Whether this machine is an aarch64 one."""
    return platform.machine() == "aarch64"


def has_tvm_ops() -> bool:
    """False: jbind has no operators generated by TVM."""
    return False


def is_op_runnable() -> bool:
    """True: every jbind operator runs on every context jbind offers (MXNet's answer depends
    on TVM operators and the GPU's compute capability)."""
    return True


def use_np(func):
    """MXNet's decorator running `func` (or every method of a class) with NumPy shape and
    array semantics (`mx.np` arrays). jbind has no `mx.np` arrays: decorating succeeds, so
    a module that decorates imports, and calling the function (or making an instance of
    the class) raises MXNetError."""
    def refuse(name):
        raise MXNetError(f"{name} is decorated with use_np, which needs MXNet's NumPy array semantics "
                         "(mx.np arrays); jbind has no mx.np")

    if isinstance(func, type):
        init = func.__init__

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            refuse(func.__name__)
        func.__init__ = __init__
        func.__init__.__wrapped__ = init
        return func

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        refuse(getattr(func, "__name__", repr(func)))
    return wrapper


# --- matrices with known spectra -------------------------------------------------------------------------
def new_matrix_with_real_eigvals_2d(n):
    """A well-conditioned (n, n) matrix with real eigenvalues in [-10, 10]: Q^-1 D Q for a
    Householder reflection times a diagonal Q (condition number below 3)."""
    while True:
        d = np.diag(np.random.uniform(-1.0, 1.0, n))
        v = np.random.uniform(-1.0, 1.0, n).reshape(n, 1)
        v = v / np.linalg.norm(v, axis=-2, keepdims=True)
        q = (np.eye(n) - 2 * v @ v.T) @ d
        if np.linalg.cond(q, 2) < 3:
            break
    return np.linalg.inv(q) @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_matrix_with_real_eigvals_nd(shape):
    """`new_matrix_with_real_eigvals_2d` for every leading index of `shape`."""
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(n)]).reshape(shape)


def new_orthonormal_matrix_2d(n):
    """An (n, n) orthonormal matrix (the Q of a QR decomposition)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    """A symmetric (n, n) matrix with eigenvalues uniform in [-10, 10]."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape):
    """`new_sym_matrix_with_real_eigvals_2d` for every leading index of `shape`."""
    n = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(n)]).reshape(shape)

