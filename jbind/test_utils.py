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
AssertionError; the downloaders (`download`, `get_mnist`, ...) raise MXNetError.
"""
from __future__ import annotations

import contextlib
import functools
import numbers
import os
import sys
import traceback

import numpy as np

from . import context as _context
from .base import MXNetError
from .context import Context, current_context, num_gpus
from .ndarray import NDArray, array, waitall, zeros
from .symbol import Symbol, Variable, make_loss

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
    """A standard-normal NDArray (`random_arrays(shape)`, then cast to `dtype`, float32 by default)."""
    if stype != "default":
        _no_sparse("rand_ndarray", stype)
    return array(random_arrays(shape), ctx=ctx or default_context(), dtype=dtype)


def rand_sparse_ndarray(shape, stype, *args, **kwargs):
    _no_sparse("rand_sparse_ndarray", stype)


def create_sparse_array(shape, stype, *args, **kwargs):
    _no_sparse("create_sparse_array", stype)


def _no_sparse(fn, stype):
    raise MXNetError(f"{fn}(stype={stype!r}): jbind has dense ('default') arrays only, no sparse storage")


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


# --- symbolic checks ----------------------------------------------------------------------------


def simple_forward(sym: Symbol, ctx=None, is_train=False, **inputs):
    """Bind `sym` to the numpy inputs (by name), run forward; the output(s) as numpy."""
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: array(v, ctx=ctx) for k, v in inputs.items()})
    outs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    return outs[0] if len(outs) == 1 else outs


def _check_dtype(dtype, asnumpy_ok=True):
    if not ((asnumpy_ok and isinstance(dtype, str) and dtype == "asnumpy")
            or dtype in (np.float16, np.float32, np.float64)):
        raise ValueError(f"dtype must be np.float16, np.float32, np.float64{' or asnumpy' if asnumpy_ok else ''}, "
                         f"not {dtype!r}")


def _as_nd(v, ctx, dtype):
    return array(v, ctx=ctx, dtype=v.dtype if isinstance(dtype, str) else dtype)


def _parse_location(sym, location, ctx, dtype=np.float32) -> dict:
    """{argument name: NDArray} sorted by name, from a list in list_arguments() order or a dict."""
    names = sym.list_arguments()
    if isinstance(location, dict):
        if set(location) != set(names):
            raise ValueError(f"Symbol arguments and keys of the given location do not match. symbol args: "
                             f"{sorted(names)}, location keys: {sorted(location)}")
    elif isinstance(location, (list, tuple)):
        if len(location) != len(names):
            raise ValueError(f"location has {len(location)} arrays for the {len(names)} arguments {names}")
        location = dict(zip(names, location))
    else:
        raise TypeError(f"location must be a list or dict of arrays, not {type(location).__name__}")
    return {k: _as_nd(v, ctx, dtype) if isinstance(v, np.ndarray) else v for k, v in sorted(location.items())}


def _parse_aux_states(sym, aux_states, ctx, dtype=np.float32):
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states) != set(names):
            raise ValueError(f"Symbol aux_states names and given aux_states do not match. symbol aux names: "
                             f"{sorted(names)}, aux_states keys: {sorted(aux_states)}")
    else:
        aux_states = dict(zip(names, aux_states))
    return {k: _as_nd(_host(v), ctx, dtype) for k, v in aux_states.items()}


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True, dtype=np.float32) -> dict:
    """Central differences of sum(executor.outputs[0]) for each float argument in `location`
    ({name: numpy array}); `aux_states` are written back before every forward."""
    _check_dtype(dtype, asnumpy_ok=False)
    grads = {k: np.zeros(np.shape(v), dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        location[k] = np.array(v, order="C")  # a writable copy, perturbed one element at a time
        executor.arg_dict[k][:] = location[k].astype(dtype)

    def total():
        for name, value in (aux_states or {}).items():
            executor.aux_dict[name][:] = np.asarray(value).astype(dtype)
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy()

    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        flat, old, arg = v.reshape(-1), v.copy(), executor.arg_dict[k]
        for i in range(flat.size):
            flat[i] += eps / 2.0
            arg[:] = v.astype(dtype)
            up = total()
            flat[i] -= eps
            arg[:] = v.astype(dtype)
            down = total()
            grads[k].reshape(-1)[i] = (up - down).sum() / eps
            flat[i] = old.reshape(-1)[i]
        arg[:] = old.astype(dtype)
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None, atol=None,
                           grad_nodes=None, use_forward_train=True, ctx=None, grad_stype_dict=None,
                           dtype=np.float32):
    """Compare the backward pass of `sym` with central finite differences.

    The output is projected on random weights (`sum(sym * proj)`), so one scalar covers every
    output element. `grad_nodes`: the arguments to check (all by default), or a dict of
    their grad_req ('write', 'add': checked net of the buffer's old value, 'null': the buffer
    must stay as it was).
    """
    _check_dtype(dtype, asnumpy_ok=False)
    ctx = ctx or default_context()
    if len(sym.list_outputs()) != 1:
        raise MXNetError(f"check_numeric_gradient needs a single-output symbol; {sym.name!r} has outputs "
                         f"{sym.list_outputs()}")
    location = _parse_location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_npy = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
    if isinstance(grad_nodes, (list, tuple)):
        grad_req = {k: "write" for k in grad_nodes}
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
    else:
        raise ValueError(f"grad_nodes must be None, a list of argument names or a dict of grad_req, not "
                         f"{type(grad_nodes).__name__}")
    nodes = list(grad_req)
    for k, stype in (grad_stype_dict or {}).items():
        if stype != "default":
            _no_sparse("check_numeric_gradient(grad_stype_dict)", stype)

    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    proj_shape = out_shapes[0]
    location["__random_proj"] = array(np.random.rand(*proj_shape) + 0.1, ctx=ctx, dtype=dtype)
    grads_before = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in nodes}
    grads_before["__random_proj"] = np.random.normal(0, 0.01, size=proj_shape)
    args_grad = {k: array(v, ctx=ctx, dtype=dtype) for k, v in grads_before.items()}
    loss = make_loss(sym * Variable("__random_proj"))
    exe = loss.bind(ctx, args=location, args_grad=args_grad, grad_req=grad_req, aux_states=aux)
    exe.forward(is_train=True)
    eps = get_tolerance(exe.outputs[0], numeric_eps, default_numeric_eps())
    if dtype in (np.float32, np.float16) and eps < 1e-5:
        raise AssertionError(f"numeric_eps={eps} is too small for finite differences in {np.dtype(dtype).name}")
    exe.backward()
    backward = {k: exe.grad_dict[k].asnumpy() for k in nodes}
    numeric = numeric_grad(exe, {k: location_npy[k] for k in nodes}, aux_npy, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype)
    for name in nodes:
        names = (f"NUMERICAL_{name}", f"BACKWARD_{name}")
        req = grad_req[name]
        if req == "write":
            assert_almost_equal(numeric[name], backward[name], rtol, atol, names)
        elif req == "add":
            assert_almost_equal(numeric[name], backward[name] - grads_before[name], rtol, atol, names)
        elif req == "null":
            assert_almost_equal(grads_before[name], backward[name], rtol, atol, names)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None, ctx=None,
                           equal_nan=False, dtype=np.float32) -> list:
    """Run forward (inference) at `location`; compare each output with `expected` (a list in
    output order or a dict by output name). Returns the output NDArrays."""
    _check_dtype(dtype)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    grads = {k: zeros(v.shape, ctx=ctx, dtype=v.dtype if isinstance(dtype, str) else dtype)
             for k, v in location.items()}
    exe = sym.bind(ctx, args=location, args_grad=grads, aux_states=aux)
    outputs = exe.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), expected, outputs):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"), equal_nan=equal_nan)
    return exe.outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None, aux_states=None,
                            grad_req="write", ctx=None, grad_stypes=None, equal_nan=False, dtype=np.float32) -> dict:
    """Run forward (training) and backward(out_grads); compare the gradients with `expected`
    (a list in argument order or a dict by name). Gradient buffers start as random values,
    so 'add' is checked net of them and 'null' must leave them. Returns {name: gradient}."""
    _check_dtype(dtype)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    args = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(args, expected))
    before = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    for k, stype in (grad_stypes or {}).items():
        if stype not in (None, "default"):
            _no_sparse("check_symbolic_backward(grad_stypes)", stype)
    grads = {k: array(v, ctx=ctx, dtype=expected[k].dtype if isinstance(dtype, str) else dtype)
             for k, v in before.items()}
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in args}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(args, grad_req))
    exe = sym.bind(ctx, args=location, args_grad=grads, aux_states=aux, grad_req=grad_req)
    exe.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads.get(k) for k in sym.list_outputs()]
    if isinstance(out_grads, (np.ndarray, NDArray)):
        out_grads = [out_grads]
    if out_grads is not None:
        out_grads = [_as_nd(g, ctx, dtype) if isinstance(g, np.ndarray) else g for g in out_grads]
    exe.backward(out_grads)
    for name in expected:
        names = (f"EXPECTED_{name}", f"BACKWARD_{name}")
        req = grad_req[name]
        if req == "write":
            assert_almost_equal(expected[name], grads[name], rtol, atol, names, equal_nan=equal_nan)
        elif req == "add":
            assert_almost_equal(expected[name], grads[name].asnumpy() - before[name], rtol, atol, names,
                                equal_nan=equal_nan)
        elif req == "null":
            assert_almost_equal(before[name], grads[name], rtol, atol, names, equal_nan=equal_nan)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")
    return grads


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None, aux_params=None, rtol=None,
                      atol=None, raise_on_err=True, ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64) -> dict:
    """Run `sym` (or one symbol per entry) under each entry of `ctx_list` (simple_bind's
    keywords: {'ctx': mx.cpu(1), 'data': (2, 3), 'type_dict': {...}}) on the same random
    inputs; compare outputs and gradients with the most precise run (or `ground_truth`).
    Returns the reference {output or argument name: NDArray}."""
    if len(ctx_list) < 2:
        raise ValueError("check_consistency needs at least two entries in ctx_list")
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    if len(syms) != len(ctx_list):
        raise ValueError(f"check_consistency: {len(syms)} symbols for {len(ctx_list)} contexts")
    out_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    exes = []
    for s, spec in zip(syms, ctx_list):
        if s.list_arguments() != arg_names or s.list_outputs() != out_names:
            raise ValueError("check_consistency: every symbol must have the same arguments and outputs")
        exes.append(s.simple_bind(grad_req=grad_req, **spec))
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for name, arr in sorted(exes[0].arg_dict.items()):  # sorted: the same draws in every run
        if name not in arg_params:
            draw = (np.random.uniform(-0.92 * scale, 0.92 * scale, size=arr.shape) if use_uniform
                    else np.random.normal(size=arr.shape, scale=scale))
            arg_params[name] = draw.astype(rand_type)
    for name in exes[0].aux_dict:
        aux_params.setdefault(name, 0)
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0
    # outputs are not computed yet: their dtypes come from type inference
    dtypes = [np.dtype(s.infer_type(**{k: a.dtype for k, a in e.arg_dict.items()})[1][0]) for s, e in zip(syms, exes)]
    gt_idx = max(range(len(exes)), key=lambda i: dtypes[i].itemsize)  # the first of the most precise
    gt = ground_truth
    if gt is None:  # the reference run's handles: they show its values after the runs below
        gt = dict(zip(out_names, exes[gt_idx].outputs))
        if grad_req != "null":
            gt.update(zip(arg_names, exes[gt_idx].grad_arrays))

    def compare(kind, i, name, arr, want, rt, at):
        try:
            assert_almost_equal(arr, want, rtol=rt, atol=at, equal_nan=equal_nan)
        except AssertionError as e:
            print(f"{kind} Err: ctx {i} vs ctx {gt_idx} at {name}")
            traceback.print_exc()
            if raise_on_err:
                raise
            print(str(e))

    for exe in exes:
        exe.forward(is_train=False)
    for i, exe in enumerate(exes):
        if i != gt_idx:
            for name, arr in zip(out_names, exe.outputs):
                compare("Predict", i, name, arr, gt[name], rtol, atol)
    if grad_req == "null":
        return gt
    for exe in exes:
        exe.forward(is_train=True)
    # every run gets the first run's outputs, in the least precise dtype, as head gradients
    least = [min((e.outputs[k].dtype for e in exes), key=lambda t: np.dtype(t).itemsize) for k in range(len(out_names))]
    heads = [o.asnumpy().astype(t) for o, t in zip(exes[0].outputs, least)]
    for exe in exes:
        exe.backward([array(h, ctx=exe._ctx, dtype=o.dtype) for h, o in zip(heads, exe.outputs)])
    for i, exe in enumerate(exes):
        if i == gt_idx:
            continue
        for name, arr in zip(out_names + arg_names, exe.outputs + exe.grad_arrays):
            want = gt[name]
            if want is None:
                if arr is not None:
                    raise AssertionError(f"check_consistency: ctx {i} has a gradient for {name}, ctx {gt_idx} none")
                continue
            rt, at = rtol, atol
            # a float32 gradient (BatchNorm's gamma) of a float16 run takes float16's tolerances
            small, small_gt = _smaller(arr.dtype, dtypes[i]), _smaller(want.dtype, dtypes[gt_idx])
            if np.dtype(small) != np.dtype(arr.dtype) or np.dtype(small_gt) != np.dtype(want.dtype):
                rt, at = get_tols(np.zeros(0, small), np.zeros(0, small_gt), rtol, atol)
            compare("Train", i, name, arr, want, rt, at)
    return gt


def _smaller(dt1, dt2):
    """The less precise of two dtypes."""
    return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2


# --- process helpers ------------------------------------------------------------------------------


@contextlib.contextmanager
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


@contextlib.contextmanager
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
