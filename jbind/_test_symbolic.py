"""mx.test_utils' symbolic checks: forward, backward, numeric gradient, consistency (see test_utils.py)."""
from __future__ import annotations

import traceback

import numpy as np

from . import _test_numeric
from .base import MXNetError
from .compile._options import with_short_pipeline
from .ndarray import NDArray, array, zeros
from .symbol import Symbol, Variable, make_loss
from ._test_arrays import (_host, assert_almost_equal, default_context, default_numeric_eps,
                           get_tolerance, get_tols)


@with_short_pipeline
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


@with_short_pipeline
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
        if v.size >= _test_numeric.MIN_ELEMENTS and not aux_states:
            # many elements: the forward alone, vmapped over batches of perturbed copies
            grads[k] = _test_numeric.central_differences(executor, k, v, eps, use_forward_train).astype(dtype)
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


@with_short_pipeline
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
    # grad_stype_dict: executors hold dense gradients (README, sparse storage); values compare the same.

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


@with_short_pipeline
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


@with_short_pipeline
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
    # grad_stypes: executors hold dense gradients (README, sparse storage); values compare the same.
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


@with_short_pipeline
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
