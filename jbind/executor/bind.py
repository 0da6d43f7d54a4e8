"""simple_bind and bind: one path that ends in `Executor(...)`.

simple_bind infers shapes and dtypes and makes handles (new buffers cost nothing: they
all start as one shared immutable zeros array); bind takes the caller's handles as
they are. Both then build the same Executor.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _limits
from .._memo import Memo
from ..base import MXNetError, fmt_shape, np_dtype
from ..context import Context, check_group2ctx, current_context
from ..ndarray.ndarray import NDArray, _placed, cached_zeros
from ..symbol.graph import graph_of
from ..symbol.infer import SHAPE, DTYPE, complete, infer
from .executor import Executor
from .plan import Plan, make_plan

_REQS = ("write", "add", "null", "inplace")


def normalize_grad_req(grad_req, arg_names) -> tuple:
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(arg_names)
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise MXNetError(f"grad_req has {len(grad_req)} entries for {len(arg_names)} arguments")
        reqs = list(grad_req)
    elif isinstance(grad_req, dict):
        # as MXNet, names that are no argument are ignored (grad_req={'b': ...} without a bias)
        reqs = [grad_req.get(n, "null") for n in arg_names]
    else:
        raise MXNetError(f"grad_req must be a string, list or dict, not {type(grad_req).__name__}")
    for r in reqs:
        if r not in _REQS:
            raise MXNetError(f"grad_req {r!r} is not one of write, add, null")
    return tuple("write" if r == "inplace" else r for r in reqs)


def _ctx(ctx) -> Context:
    if isinstance(ctx, (list, tuple)):
        if len(ctx) != 1:
            raise MXNetError("an executor runs on one context; use DataParallelExecutorGroup for several")
        ctx = ctx[0]
    return ctx if ctx is not None else current_context()


_REQUESTS = Memo(4096)


def _request_key(sym, shapes, type_dict, grad_req):
    try:
        return (sym.fingerprint, tuple(sorted((k, tuple(v)) for k, v in shapes.items())),
                None if type_dict is None else tuple(sorted((k, np_dtype(v).name) for k, v in type_dict.items())),
                grad_req if isinstance(grad_req, str) else
                tuple(sorted(grad_req.items())) if isinstance(grad_req, dict) else tuple(grad_req))
    except TypeError:
        return None  # unhashable or malformed input: take the slow path, which explains the error


def _simple_plan(sym, shapes, type_dict, grad_req) -> Plan:
    """Infer shapes and dtypes for simple_bind; memoized by the request."""
    key = _request_key(sym, shapes, type_dict, grad_req)
    plan = _REQUESTS.get(key) if key is not None else None
    if plan is not None:
        return plan
    g = graph_of(sym)
    arg_s, _, aux_s = infer(sym, SHAPE, (), shapes)
    missing = [f"{n} (known so far: {fmt_shape(s)})" if s is not None else n
               for n, s in zip(g.arg_names + g.aux_names, arg_s + aux_s) if not complete(s)]
    if missing:
        raise MXNetError("simple_bind: cannot infer the shapes of " + ", ".join(missing)
                         + "; give their shapes as keyword arguments, e.g. simple_bind(ctx, data=(32, 100))")
    if type_dict is None:  # MXNet: every argument without a __dtype__ attribute is float32
        types = {g.nodes[vi].name: np.dtype(np.float32) for vi in g.arg_index
                 if "__dtype__" not in g.nodes[vi].attrs}
    else:
        types = {n: np_dtype(t) for n, t in type_dict.items()}
    arg_t, _, aux_t = infer(sym, DTYPE, (), {k: v for k, v in types.items() if k in g.input_names})
    untyped = [n for n, t in zip(g.arg_names + g.aux_names, arg_t + aux_t) if t is None]
    if untyped:
        raise MXNetError(f"simple_bind: cannot infer the dtypes of {', '.join(untyped)}; give them in type_dict")
    reqs = normalize_grad_req(grad_req, g.arg_names)
    plan = make_plan(sym, tuple(tuple(s) for s in arg_s + aux_s),
                     tuple(np.dtype(t).name for t in arg_t + aux_t), reqs)
    return plan if key is None else _REQUESTS.put(key, plan)


def simple_bind(sym, ctx, grad_req="write", type_dict=None, group2ctx=None, shared_arg_names=None,
                shared_exec=None, shared_buffer=None, shapes=None) -> Executor:
    ctx = _ctx(ctx)
    check_group2ctx(group2ctx, ctx)
    g = graph_of(sym)
    # as MXNet, keywords that are no input's shape (simple_bind(..., axis=-1)) are ignored
    shapes = {k: v for k, v in (shapes or {}).items() if k in g.input_names or isinstance(v, (tuple, list))}
    plan = _simple_plan(sym, shapes, type_dict, grad_req)
    dev = ctx.jax_device
    n = len(g.arg_names)
    shared_names = set(shared_arg_names or ())
    s_args = shared_exec.arg_dict if shared_exec is not None else {}
    s_grads = shared_exec.grad_dict if shared_exec is not None else {}
    s_aux = shared_exec.aux_dict if shared_exec is not None else {}
    new_bytes = plan.state_bytes + plan.out_bytes
    if shared_exec is not None and new_bytes >= _limits.SMALL:  # what the shared executor holds is not new
        for (name, shape), dt, req in zip(plan.shapes, plan.np_dtypes, plan.grad_req + (None,) * len(g.aux_names)):
            size = math.prod(shape) * dt.itemsize
            if req is None:
                new_bytes -= size if name in s_aux else 0
            elif name in shared_names and name in s_args:
                new_bytes -= size * (1 + (req != "null" and s_grads.get(name) is not None))
    _limits.check_fits(f"simple_bind of {sym.name or 'a group'!r} on {ctx}", new_bytes, dev)
    args, grads, aux = [], [], []
    for (name, shape), dt, req in zip(plan.shapes[:n], plan.np_dtypes[:n], plan.grad_req):
        if name in shared_names and name in s_args:
            h = s_args[name]
            _check_shared(name, h, shape, dt)
            args.append(h)
            gh = s_grads.get(name) if req != "null" else None
            grads.append(gh if gh is not None or req == "null" else _placed(cached_zeros(shape, dt, dev), ctx))
        else:
            args.append(_placed(cached_zeros(shape, dt, dev), ctx))
            grads.append(_placed(cached_zeros(shape, dt, dev), ctx) if req != "null" else None)
    for (name, shape), dt in zip(plan.shapes[n:], plan.np_dtypes[n:]):
        h = s_aux.get(name)
        if h is not None:
            _check_shared(name, h, shape, dt)
            aux.append(h)
        else:
            aux.append(_placed(cached_zeros(shape, dt, dev), ctx))
    return Executor(sym, ctx, args, grads, aux, plan)


def _check_shared(name, h, shape, dt):
    d = h._data
    if d.shape != shape or d.dtype != dt:
        raise MXNetError(f"shared array {name!r} has shape {h.shape} {np.dtype(h.dtype).name} but this "
                         f"executor needs {tuple(shape)} {np.dtype(dt).name}")


def _as_list(what, given, names, allow_missing):
    if given is None:
        return [None] * len(names)
    if isinstance(given, dict):
        unknown = {k for k in set(given) - set(names) if given[k] is not None}  # None: not given, as MXNet
        if unknown and what == "args":
            raise MXNetError(f"bind: {what} names unknown inputs {sorted(unknown)}; expected {list(names)}")
        out = [given.get(n) for n in names]
    else:
        out = list(given)
        if len(out) != len(names):
            raise MXNetError(f"bind: {len(out)} {what} given for {len(names)} {list(names)}")
    for n, a in zip(names, out):
        if a is None and not allow_missing:
            raise MXNetError(f"bind: no array given for {what[:-1]} {n!r}")
        if a is not None and not isinstance(a, NDArray):
            raise MXNetError(f"bind: {what[:-1]} {n!r} must be an NDArray, got {type(a).__name__}")
    return out


def bind(sym, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
         shared_exec=None) -> Executor:
    ctx = _ctx(ctx)
    check_group2ctx(group2ctx, ctx)
    g = graph_of(sym)
    arg_list = _as_list("args", args, g.arg_names, False)
    aux_list = _as_list("aux_states", aux_states, g.aux_names, not g.aux_names)
    grad_list = _as_list("args_grad", args_grad, g.arg_names, True)
    reqs = normalize_grad_req(grad_req, g.arg_names)
    reqs = tuple(r if gr is not None else "null" for r, gr in zip(reqs, grad_list))
    shapes = {n: a.shape for n, a in zip(g.arg_names, arg_list)}
    arg_s, _, aux_s = infer(sym, SHAPE, (), shapes)
    for n, a, s in zip(g.aux_names, aux_list, aux_s):
        if a is not None and tuple(a.shape) != tuple(s):
            raise MXNetError(f"bind: aux state {n!r} has shape {a.shape} but the graph infers {tuple(s)}")
    for n, a in zip(g.aux_names, aux_list):
        if a is None:
            raise MXNetError(f"bind: no array given for aux state {n!r}")
    for n, a, gr in zip(g.arg_names, arg_list, grad_list):
        if gr is not None and gr.shape != a.shape:
            raise MXNetError(f"bind: gradient array for {n!r} has shape {gr.shape}, argument has {a.shape}")
    plan = make_plan(sym, tuple(a.shape for a in arg_list + aux_list),
                     tuple(np.dtype(a.dtype).name for a in arg_list + aux_list), reqs)
    _limits.check_fits(f"bind of {sym.name or 'a group'!r} on {ctx}", plan.out_bytes, ctx.jax_device)
    return Executor(sym, ctx, arg_list, grad_list, aux_list, plan)
