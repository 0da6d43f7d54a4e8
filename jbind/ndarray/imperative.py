"""Registered operators called on NDArrays (`mx.nd.softmax(x)`), evaluated eagerly."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._memo import Memo
from ..autograd import _tape
from ..autograd._state import STATE as _AG
from ..compile._options import sharding_key
from ..base import MXNetError
from ..context import context_of_device, current_context, is_alias, parse
from ..ops.custom import host_error
from ..ops._base import ALIASES, REGISTRY, get_op
from ..symbol.lower import matmul_precision
from . import _dispatch, _flat_draw, _plan
from .ndarray import NDArray, _dev


def invoke(op_name: str, args, kwargs):
    kwargs = dict(kwargs)
    kwargs.pop("name", None)
    out = kwargs.pop("out", None)
    key = _plan.call_key(op_name, args, kwargs, _is_array, _is_ndarray)
    if key is not None:
        plan = _plan.plan_for(key, op_name, args, kwargs, _is_array, _is_ndarray)
        given = plan.inputs(args, kwargs)
        return _run(plan.op_name, plan.cls, plan.op, plan.params, plan.slots, plan.nargs, given, out, plan)
    cls, op, params, slots, nargs, inputs = _plan.resolve(op_name, args, kwargs, _is_array, _is_ndarray)
    return _run(op_name, cls, op, params, slots, nargs, [inputs[a] for a in slots], out, None)


def _run(op_name, cls, op, params, slots, nargs, given, out, plan):
    """Run `op` on the arrays `given` (in slot order), record it if recording, write `out`."""
    datas = [a._data if isinstance(a, NDArray) else jnp.asarray(a) for a in given]
    sig = tuple((d.shape, d.dtype, sharding_key(getattr(d, "sharding", None)), getattr(d, "weak_type", False))
                for d in datas)
    checked = plan.checked if plan is not None else None
    if checked is None or sig not in checked:
        _check(op_name, op, params, slots, nargs, datas)
        if checked is not None:
            if len(checked) > 256:
                checked.clear()
            checked[sig] = True
    recording, is_train = _AG.recording, _AG.training
    if recording and out is not None:
        _tape.check_not_in_graph(out)
    # a sampling op draws from the generator of the context it runs on, as MXNet's
    ctx = (_context_of(datas[0]) if datas else parse(params.get("ctx"))) if op.random or not datas else None
    # recording: the compiled call also keeps its pullback's residuals for backward
    diff = _tape.recorded_inputs(given, datas) if recording else ()
    device = None if datas else _dev(ctx)
    flat = _flat_draw.plan(op, datas, device)  # a sampler on the CPU: drawn at a shared length
    try:
        outs, new_aux, key, saved = _dispatch.call_vjp(flat[0] if flat else op, datas, nargs, is_train, device,
                                                       ctx, diff, sig=sig, precision=matmul_precision())
    except jax.errors.JaxRuntimeError as e:  # a custom op's Python failed: its error, not XLA's
        raise host_error(e) from None
    if flat:
        outs = [_flat_draw.unpad(outs[0], flat[1], flat[2], device)]
    if plan is None or plan.check_eager:
        try:
            op.check_eager(outs)
        except ValueError as e:
            raise MXNetError(f"{cls.name}: {e}") from None
    for held, new in zip(given[nargs:], new_aux):  # aux states an op writes change in place, as in MXNet
        if isinstance(held, NDArray) and new is not None:
            held._data = new
    res = [NDArray(o) for o in outs]
    label = getattr(given[0], "_ctx", None) if datas else \
        (lambda c: c if is_alias(c) else None)(ctx if ctx is not None else current_context())
    if label is not None:  # outputs on an input's `cpu(i)` label (one sharing another's device)
        for r in res:
            r._ctx = label
    if recording:  # the op joins the tape (autograd); its aux updates above are not replayed
        fn = None
        if plan is not None:
            fn = plan.fns.get(bool(is_train))
            if fn is None:
                fn = plan.fns[bool(is_train)] = _tape.op_fn(op, nargs, is_train)
        _tape.record_op(op, given, datas, nargs, is_train, key, res, saved, diff, fn=fn)
    if out is not None:
        out[:] = res[0]
        return out
    return res[0] if len(res) == 1 else res


def _context_of(data):
    try:
        return context_of_device(next(iter(data.devices())))
    except (AttributeError, StopIteration):  # a tracer or a host value: the current context
        return None


def _is_array(a) -> bool:
    return isinstance(a, (NDArray, np.ndarray, jax.Array))


def _is_ndarray(a) -> bool:
    return isinstance(a, NDArray)


def _array(a):
    return a._data if isinstance(a, NDArray) else jnp.asarray(a)


_CHECKED = Memo(4096)


def _check(op_name, op, params, slots, nargs, datas) -> None:
    """Run the op's shape and dtype rules on the inputs, as binding a symbol would: bad
    input is a ShapeError / DTypeError naming the op and every input, not a JAX error."""
    shapes = tuple(tuple(d.shape) for d in datas)
    dtypes = tuple(np.dtype(d.dtype).name for d in datas)
    key = (op_name, op.hash_key(), shapes, dtypes)
    if _CHECKED.get(key) is not None:
        return
    from ..symbol.infer import DTYPE, SHAPE, infer
    from ..symbol.ops import make
    from ..symbol.symbol import Variable
    # every parameter as given: an explicit None (topk's axis=None) is not the default
    sym = make(op_name, [Variable(a) for a in slots[:nargs]], params, name=op.name.lower(), private=True)
    aux = [f"{op.name.lower()}_{a}" for a in slots[nargs:]]
    names = slots[:nargs] + aux
    # The rules themselves, not `infer_shape`: an imperative array's 0 is a real size
    # (one_hot with depth 0), never an unknown dimension to warn about.
    infer(sym, SHAPE, (), dict(zip(names, shapes)))
    infer(sym, DTYPE, (), dict(zip(names, dtypes)))
    _CHECKED.put(key, True)


def _fn(op_name):
    def f(*args, **kwargs):
        return invoke(op_name, args, kwargs)
    f.__name__ = op_name
    f.__doc__ = get_op(op_name).__doc__
    return f


def imperative_functions() -> dict:
    return {n: _fn(n) for n in list(REGISTRY) + list(ALIASES)}
