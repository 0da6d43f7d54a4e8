"""`mx.test_utils`: the helpers MXNet users' unit tests call to check their symbols and ops.

Signatures and semantics are MXNet 1.9.1's (python/mxnet/test_utils.py): the default
tolerances per dtype, `assert_almost_equal`'s report of the worst mismatches (printed, and
the largest in the AssertionError, in MXNet's words), and numpy's global random stream
drawn in MXNet's order, so a test seeded with `np.random.seed` sees the same data. The
symbolic checks (`check_symbolic_forward` / `_backward`, `check_numeric_gradient`,
`check_consistency`) bind the symbol as MXNet's do.

Differences from MXNet: arrays are dense only (a sparse `stype` is an MXNetError); float32
keeps float32's tolerances on GPUs (jbind computes float32 in full precision, MXNet on
A100-class GPUs loosens them to float16's for TF32); a failing `assert_almost_equal`
leaves numpy's print options as they were (MXNet sets threshold=4 for the process);
`assert_exception` fails when `f` raises nothing even if the expected type is
AssertionError; the downloaders (`download`, `get_mnist`, ...) raise MXNetError; a
function decorated with `use_np` raises MXNetError when called (jbind has no `mx.np`);
`chi_square_check` computes its p-value as the scipy of MXNet's day did, without newer
scipy's refusal of expected counts that do not sum to the observed total.

`from mxnet.test_utils import *` hands over what MXNet's does (it has no `__all__`): its
functions and the modules it imports (`np`, `rnd` = numpy.random, `npt`, `os`, `sys`,
`json`, `ss` = scipy.stats, `mx`, ...), and nothing else.
"""
from __future__ import annotations

# MXNet's module has no __all__: `from mxnet.test_utils import *` hands over every public
# name, the modules it imported included (tests use `np`, `os`, `rnd`, ... through it).
# These are those imports; __all__ below lists exactly MXNet's public names jbind has.
import bz2
import errno
import gzip
import json
import logging
import numbers
import os
import platform
import struct
import sys
import time
import traceback
import zipfile
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

import jbind as mx
from .base import MXNetError
from .context import Context, current_context
from .ndarray import array, waitall
from .runtime import Features
from .symbol import Symbol
from ._test_arrays import (default_context, set_default_context, default_dtype, list_gpus, default_rtols,
    default_atols, default_numeric_eps, effective_dtype, get_tolerance, get_tols, get_rtol, get_atol,
    get_etol, random_arrays, random_uniform_arrays, random_sample, rand_shape_2d, rand_shape_3d,
    rand_shape_nd, rand_ndarray, rand_sparse_ndarray, create_sparse_array, create_sparse_array_zd, same, same_array, almost_equal,
    assert_almost_equal, assert_almost_equal_with_err, assert_allclose, assert_almost_equal_ignore_nan,
    assert_exception, retry)
from ._test_misc import (np_reduce, collapse_sum_like, assign_each, assign_each2, rand_coord_2d,
    create_2d_tensor, create_vector, get_identity_mat, get_identity_mat_batch, compare_ndarray_tuple,
    compare_optimizer, same_symbol_structure, DummyIter, getenv, setenv, is_cd_run, is_aarch64_run,
    has_tvm_ops, is_op_runnable, use_np, new_matrix_with_real_eigvals_2d, new_matrix_with_real_eigvals_nd,
    new_orthonormal_matrix_2d, new_sym_matrix_with_real_eigvals_2d, new_sym_matrix_with_real_eigvals_nd)
from ._test_stats import gen_buckets_probs_with_ppf, mean_check, var_check, chi_square_check, verify_generator
from ._test_symbolic import (simple_forward, numeric_grad, check_numeric_gradient, check_symbolic_forward,
    check_symbolic_backward, check_consistency)

__all__ = [
    # the modules and names MXNet's test_utils imports (`ss` is scipy.stats, or None without scipy)
    "time", "gzip", "struct", "traceback", "numbers", "sys", "os", "platform", "errno", "logging", "bz2",
    "zipfile", "json", "contextmanager", "OrderedDict", "np", "npt", "rnd", "ss", "mx", "Context",
    "current_context", "array", "Symbol", "use_np", "getenv", "setenv", "Features",
    # its functions and classes
    "default_context", "set_default_context", "default_dtype", "list_gpus", "default_rtols",
    "default_atols", "default_numeric_eps", "effective_dtype", "get_tolerance", "get_tols",
    "get_rtol", "get_atol", "get_etol", "random_arrays", "random_uniform_arrays", "random_sample",
    "rand_shape_2d", "rand_shape_3d", "rand_shape_nd", "rand_coord_2d", "rand_ndarray", "rand_sparse_ndarray",
    "create_sparse_array", "create_sparse_array_zd", "assign_each", "assign_each2", "create_2d_tensor", "create_vector",
    "get_identity_mat", "get_identity_mat_batch", "np_reduce", "collapse_sum_like", "same", "same_array",
    "almost_equal", "assert_almost_equal", "assert_almost_equal_with_err", "assert_allclose",
    "assert_almost_equal_ignore_nan", "assert_exception", "retry", "simple_forward", "numeric_grad",
    "check_numeric_gradient", "check_symbolic_forward", "check_symbolic_backward", "check_consistency",
    "compare_ndarray_tuple", "compare_optimizer", "same_symbol_structure", "discard_stderr", "DummyIter",
    "gen_buckets_probs_with_ppf", "mean_check", "var_check", "chi_square_check", "verify_generator",
    "environment", "is_cd_run", "is_aarch64_run", "has_tvm_ops", "is_op_runnable",
    "new_matrix_with_real_eigvals_2d", "new_matrix_with_real_eigvals_nd", "new_orthonormal_matrix_2d",
    "new_sym_matrix_with_real_eigvals_2d", "new_sym_matrix_with_real_eigvals_nd",
    "download", "download_model", "get_mnist", "get_mnist_pkl", "get_mnist_ubyte",
    "get_cifar10", "get_mnist_iterator", "get_zip_data", "get_bz2_data"]


def __getattr__(name):
    # scipy.stats takes a while to import: load it when first asked for, as `ss` (None
    # where scipy is not installed, as in MXNet)
    if name == "ss":
        try:
            import scipy.stats as stats
        except ImportError:
            stats = None
        globals()["ss"] = stats
        return stats
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- process helpers ------------------------------------------------------------------------------


@contextmanager
def discard_stderr():
    """Send file descriptor 2 to /dev/null inside the block (C-level writes included)."""
    fd = 2  # the descriptor itself, as C code writes to it, even where sys.stderr is replaced
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as sink:
            _flush(sys.stderr)
            os.dup2(sink.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


@contextmanager
def environment(*args):
    """Set environment variables inside the block: `environment(name, value)` or
    `environment({name: value})`; None unsets. jbind reads most of its variables at import,
    so only those read later (JBIND_HEAD_FUSION, ...) change what the block does."""
    if len(args) == 1 and isinstance(args[0], dict):
        changes = dict(args[0])
    elif len(args) == 2:
        changes = {args[0]: args[1]}
    else:
        raise ValueError("environment() takes one dict or a name and a value")
    saved = {k: os.environ.get(k) for k in changes}

    def apply(values):
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    apply(changes)
    try:
        yield
    finally:
        waitall()
        apply(saved)


def _flush(stream):
    try:
        stream.flush()
    except (AttributeError, OSError, ValueError):
        pass


def _no_download(name):
    def refuse(*args, **kwargs):
        raise MXNetError(f"mx.test_utils.{name}: jbind does not download data sets or models; fetch the files "
                         "yourself and read them with mx.io / mx.nd.load")
    refuse.__name__ = refuse.__qualname__ = name
    return refuse


download = _no_download("download")
download_model = _no_download("download_model")
get_mnist = _no_download("get_mnist")
get_mnist_pkl = _no_download("get_mnist_pkl")
get_mnist_ubyte = _no_download("get_mnist_ubyte")
get_cifar10 = _no_download("get_cifar10")
get_mnist_iterator = _no_download("get_mnist_iterator")
get_zip_data = _no_download("get_zip_data")
get_bz2_data = _no_download("get_bz2_data")
