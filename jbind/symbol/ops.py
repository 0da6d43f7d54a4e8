"""Symbol constructors for registered operators (`mx.sym.FullyConnected`, ...)."""
from __future__ import annotations

from .. import attribute, name as _name
from .._memo import Memo
from ..base import MXNetError
from ..ops._base import ALIASES, REGISTRY, get_op, inputs_by_name, split_positional, to_attr_string
from ._node import Node
from .symbol import Symbol, Variable


_OPS = Memo(65536)  # (class, typed parameter items) -> (op, attribute strings, arguments, #outputs)
_PARAMS: dict = {}   # class -> its parameter names


def _op_for(cls, params: dict):
    """Parse parameters into an op once per distinct parameter set (graph building is hot)."""
    try:
        key = (cls, tuple((k, type(v), v) for k, v in params.items()))
        hit = _OPS.get(key)
    except TypeError:  # an unhashable value (a list): parse every time
        key, hit = None, None
    if hit is None:
        op = cls.from_attrs(params)
        fmt = str if cls.open_params else to_attr_string
        hit = (op, {k: fmt(v) for k, v in params.items()}, op.arguments(), len(op.outputs()))
        if key is not None:
            _OPS.put(key, hit)
    return hit


def make(op_name: str, args=(), kwargs=None, *, name=None, attr=None, hint=None, private=False) -> Symbol:
    """Build one op node from positional and keyword inputs and parameters (`private`: also
    jbind's own ops, for the eager shape check's throwaway node)."""
    cls = get_op(op_name, private=private)
    known = _PARAMS.get(cls)
    if known is None:
        known = _PARAMS[cls] = frozenset(cls.param_names())
    params, sym_kwargs, extra_attrs = {}, {}, None
    if kwargs:
        for k, v in kwargs.items():
            if isinstance(v, Symbol):
                sym_kwargs[k] = v
            elif k.startswith("__") and k.endswith("__"):
                extra_attrs = extra_attrs or {}
                extra_attrs[k] = str(v)  # MXNet keeps dunder keywords as attributes (__layout__)
            elif k in attribute.HIDDEN_KEYS and k not in known and v is not None:
                # MXNet: `lr_mult=2` on an op is the attribute __lr_mult__, which the variables
                # the op creates inherit (as every op attribute).
                extra_attrs = extra_attrs or {}
                extra_attrs[f"__{k}__"] = str(v)
            elif k not in known and any(k.endswith("_" + h) for h in attribute.HIDDEN_KEYS):
                h = next(h for h in attribute.HIDDEN_KEYS if k.endswith("_" + h))
                raise MXNetError(f"{cls.name}: setting variable attributes with {k} is deprecated. please "
                                 f"instead use\nw = Variable({h}=...)\nsym = {cls.name}({k[:-len(h) - 1]}=w)")
            elif v is not None or k in known or cls.open_params:
                params[k] = v
    args = split_positional(cls, args, lambda a: a is None or isinstance(a, Symbol), params)
    for a in args:
        if a is not None and not isinstance(a, Symbol):  # None: an input MXNet makes a variable for
            raise TypeError(f"{cls.name}: inputs must be Symbols, got {type(a).__name__}")
    if cls.variadic:
        if sym_kwargs:
            # MXNet accepts named inputs to variadic ops only as data/arg names; keep order given.
            args = tuple(args) + tuple(sym_kwargs.values())
            sym_kwargs = {}
        params.setdefault(cls.variadic, len(args))
    try:
        op, param_attrs, arg_names, n_out = _op_for(cls, params)
    except MXNetError as e:
        if name is None or repr(name) in str(e):
            raise
        raise type(e)(f"{cls.name} {name!r}: {e}") from None
    aux_names = tuple(op.aux_names)  # (Custom's depend on its op_type)
    inputs = inputs_by_name(cls.name, tuple(arg_names) + aux_names, args, sym_kwargs)
    node_name = _name.current().get(name, hint or cls.name.lower())
    attrs = attribute.hide(attribute.current().get(attr))
    if extra_attrs:
        attrs.update(extra_attrs)
    attrs.update(param_attrs)
    entries = []
    for n in arg_names:
        s = inputs.get(n)
        if s is None:
            # MXNet gives the variables it creates a copy of the op's attributes (and the
            # op's own, such as PReLU's initial slope).
            s = Variable(f"{node_name}_{n}", attr={**attrs, **cls.input_var_attrs.get(n, {})})
        if len(s._heads) != 1:
            raise MXNetError(f"{cls.name} {node_name!r}: input {n!r} must be a single-output symbol, "
                             f"got a group of {len(s._heads)}")
        entries.append(s._heads[0])
    for a in aux_names:  # given by name or after the arguments, else a new variable
        s = inputs.get(a)
        if s is None:
            s = Variable(f"{node_name}_{a}", attr={**attrs, **cls.input_var_attrs.get(a, {})})
        if len(s._heads) != 1:
            raise MXNetError(f"{cls.name} {node_name!r}: aux state {a!r} must be a single-output symbol, "
                             f"got a group of {len(s._heads)}")
        entries.append(s._heads[0])
    node = Node(op, node_name, attrs, tuple(entries))
    return Symbol([(node, 0)] if n_out == 1 else [(node, i) for i in range(n_out)])


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
