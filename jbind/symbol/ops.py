"""Symbol constructors for registered operators (`mx.sym.FullyConnected`, ...)."""
from __future__ import annotations

import numpy as np

from .. import attribute, name as _name
from ..base import MXNetError, ParamError
from ..ops._base import ALIASES, REGISTRY, get_op, to_attr_string
from ._node import Node
from .symbol import Symbol, Variable


def make(op_name: str, args=(), kwargs=None, *, name=None, attr=None, hint=None) -> Symbol:
    """Build one op node from positional and keyword inputs and parameters."""
    cls = get_op(op_name)
    kwargs = dict(kwargs or {})
    params, inputs = {}, {}
    sym_kwargs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
    extra_attrs = {}
    for k, v in kwargs.items():
        if k in sym_kwargs:
            continue
        if k.startswith("__") and k.endswith("__"):
            extra_attrs[k] = str(v)  # MXNet keeps dunder keywords as attributes (__layout__)
        else:
            params[k] = v
    args = list(args)
    for a in args:
        if not isinstance(a, Symbol):
            raise TypeError(f"{cls.name}: positional arguments must be Symbols, got {type(a).__name__}; "
                            "pass parameters by keyword")
    if cls.variadic:
        if sym_kwargs:
            # MXNet accepts named inputs to variadic ops only as data/arg names; keep order given.
            args = args + list(sym_kwargs.values())
            sym_kwargs = {}
        params.setdefault(cls.variadic, len(args))
    params = {k: v for k, v in params.items() if v is not None or k in cls.param_names()}
    op = cls.from_attrs(params)
    arg_names = op.arguments()
    if len(args) > len(arg_names):
        raise MXNetError(f"{cls.name}: got {len(args)} positional inputs but the op takes "
                         f"{len(arg_names)} ({', '.join(arg_names)})")
    for n, a in zip(arg_names, args):
        inputs[n] = a
    for k, v in sym_kwargs.items():
        if k not in arg_names:
            raise MXNetError(f"{cls.name}: unknown input {k!r}; inputs are {', '.join(arg_names)}")
        if k in inputs:
            raise MXNetError(f"{cls.name}: input {k!r} given twice")
        inputs[k] = v
    node_name = _name.current().get(name, hint or cls.name.lower())
    attrs = attribute.current().get(attr)
    attrs.update(extra_attrs)
    attrs.update({k: to_attr_string(v) for k, v in params.items()})
    entries = []
    for n in arg_names:
        s = inputs.get(n)
        if s is None:
            # MXNet gives the variables it creates a copy of the op's attributes.
            s = Variable(f"{node_name}_{n}", attr=dict(attrs))
        if len(s._heads) != 1:
            raise MXNetError(f"{cls.name} {node_name!r}: input {n!r} must be a single-output symbol, "
                             f"got a group of {len(s._heads)}")
        entries.append(s._heads[0])
    for a in cls.aux_names:
        entries.append(Variable(f"{node_name}_{a}", attr={**attrs, **cls.input_var_attrs.get(a, {})})._heads[0])
    node = Node(op, node_name, attrs, tuple(entries))
    return Symbol([(node, i) for i in range(len(op.outputs()))])


def _constructor(op_name: str, hint: str | None = None):
    def f(*args, name=None, attr=None, **kwargs):
        return make(op_name, args, kwargs, name=name, attr=attr, hint=hint)
    cls = REGISTRY[ALIASES.get(op_name, op_name)]
    f.__name__ = op_name
    f.__qualname__ = op_name
    f.__doc__ = cls.__doc__
    return f


def constructors() -> dict:
    out = {n: _constructor(n) for n in REGISTRY}
    out.update({a: _constructor(a, hint=a.lower()) for a in ALIASES})
    return out
