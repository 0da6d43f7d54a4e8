"""Registered operators called on NDArrays (`mx.nd.softmax(x)`), evaluated eagerly."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._memo import Memo
from ..autograd import _tape
from ..autograd._state import STATE as _AG
from ..base import MXNetError
from ..context import context_of_device, current_context, is_alias, parse
from ..ops.custom import host_error
from ..ops._base import ALIASES, REGISTRY, get_op, inputs_by_name, split_positional
from ..symbol.lower import matmul_precision
from . import _dispatch
from .ndarray import NDArray, _dev


def invoke(op_name: str, args, kwargs):
    cls = get_op(op_name)
    kwargs = dict(kwargs)
    kwargs.pop("name", None)
    out = kwargs.pop("out", None)
    arrays = {k: v for k, v in kwargs.items() if isinstance(v, NDArray)}
    params = {k: v for k, v in kwargs.items() if k not in arrays}
    args = split_positional(cls, args, _is_array, params)
    if cls.variadic:
        params.setdefault(cls.variadic, len(args) + len(arrays))
    op = cls.from_attrs(params)
    nargs = len(op.arguments())
    slots = list(op.arguments()) + list(op.aux_names)
    if cls.variadic:  # inputs in the order given, keyword ones after the positional ones
        inputs = dict(zip(slots, list(args) + list(arrays.values())))
    else:
        inputs = inputs_by_name(cls.name, slots, args, arrays)  # aux states after the arguments
    if len(inputs) != len(slots):
        given = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise MXNetError(f"{cls.name}({given}): expected {len(slots)} input arrays {tuple(slots)}, got "
                         f"{len(inputs)}; none given for {[a for a in slots if a not in inputs]}")
    datas = [_array(inputs[a]) for a in slots]
    _check(op_name, op, params, slots, nargs, datas)
    recording, is_train = _AG.recording, _AG.training
    if recording and out is not None:
        _tape.check_not_in_graph(out)
    try:
        with jax.default_matmul_precision(matmul_precision()):
            # a sampling op draws from the generator of the context it runs on, as MXNet's
            ctx = _context_of(datas[0]) if datas else parse(params.get("ctx"))
            # recording: the compiled call also keeps its pullback's residuals for backward
            diff = _tape.recorded_inputs([inputs[a] for a in slots], datas) if recording else ()
            outs, new_aux, key, saved = _dispatch.call_vjp(op, datas, nargs, is_train, None if datas else _dev(ctx),
                                                           ctx, diff)
    except jax.errors.JaxRuntimeError as e:  # a custom op's Python failed: its error, not XLA's
        raise host_error(e) from None
    try:
        op.check_eager(outs)
    except ValueError as e:
        raise MXNetError(f"{cls.name}: {e}") from None
    for a, new in zip(slots[nargs:], new_aux):  # aux states an op writes change in place, as in MXNet
        held = inputs[a]
        if isinstance(held, NDArray) and new is not None:
            held._data = new
    res = [NDArray(o) for o in outs]
    label = getattr(next(iter(inputs.values()), None), "_ctx", None) if datas else \
        (lambda c: c if is_alias(c) else None)(ctx if ctx is not None else current_context())
    if label is not None:  # outputs on an input's `cpu(i)` label (one sharing another's device)
        for r in res:
            r._ctx = label
    if recording:  # the op joins the tape (autograd); its aux updates above are not replayed
        _tape.record_op(op, [inputs[a] for a in slots], datas, nargs, is_train, key, res, saved, diff)
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
    sym = make(op_name, [Variable(a) for a in slots[:nargs]], params, name=op.name.lower())
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
