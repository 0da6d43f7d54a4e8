"""Call plans for imperative op calls (`mx.nd.<op>(...)`, NDArray methods under `record()`).

What `imperative.invoke` works out from how an op is called before it can run it (the
registered class, its parameters parsed into an `Op`, which positional values are
parameters, which array fills which input slot) depends only on the op's name, the
non-array arguments and where the arrays sit, never on the arrays' values. A training
loop calls the same ops the same way every step, so that work is done once per call
pattern and kept as a `Plan`; a step then pays for looking up a small key.

The key holds the non-array arguments by type and value (floats by `repr`, so 0.0 and
-0.0, or 1 and 1.0 and True, are different patterns, as they may be different ops);
an argument of any other type (an object, a NumPy array given as a parameter) makes the
call take the unplanned path, which does the same work every call. Errors are those of
the unplanned path: a plan is built by that same code, on placeholders for the arrays.
"""
from __future__ import annotations

import numpy as np

from .._memo import Memo
from ..base import MXNetError
from ..ops._base import Op, get_op, inputs_by_name, split_positional

_ARRAY = ("array",)          # an array argument's place in a key
_PLANS = Memo(2048)           # call pattern -> Plan
_SCALARS = (bool, int, str, type(None), np.integer, np.bool_)
_FLOATS = (float, np.floating)


class _Slot:
    """Stands for an array argument while a plan is worked out: where it came from."""
    __slots__ = ("src",)

    def __init__(self, src):
        self.src = src


def _value_key(v):
    """A hashable, type-exact key of a parameter value, or None where it has none."""
    t = type(v)
    if t in (int, str, bool, type(None)) or isinstance(v, _SCALARS):
        return (t, v)
    if isinstance(v, _FLOATS):
        return (t, repr(v))
    if t in (tuple, list):
        parts = tuple(_value_key(e) for e in v)
        return None if any(p is None for p in parts) else (t, parts)
    if isinstance(v, (type, np.dtype)):
        return (t, v)
    return None


def call_key(op_name, args, kwargs, is_array, is_ndarray):
    """The plan key of a call (`kwargs` without 'name' and 'out'), or None: unplanned."""
    parts = [op_name]
    for a in args:
        if is_array(a):
            parts.append(_ARRAY)
        else:
            k = _value_key(a)
            if k is None:
                return None
            parts.append(k)
    parts.append(None)  # positional | keyword
    for name, v in kwargs.items():
        if is_ndarray(v):
            parts.append((name, _ARRAY))
        else:
            k = _value_key(v)
            if k is None:
                return None
            parts.append((name, k))
    return tuple(parts)


class Plan:
    """One call pattern of one op: `op` (parsed parameters), `params` (as given), `slots`
    (input names, arguments then aux states), `nargs`, and `sources[i]`: where slot i's
    array comes from, ("p", position) or ("k", keyword)."""
    __slots__ = ("op_name", "cls", "op", "params", "slots", "nargs", "sources", "checked", "check_eager",
                 "fns")

    def __init__(self, op_name, cls, op, params, slots, nargs, sources):
        self.op_name, self.cls, self.op, self.params = op_name, cls, op, params
        self.slots, self.nargs, self.sources = slots, nargs, sources
        self.checked: dict = {}   # (shapes, dtypes) whose shape and dtype rules passed
        self.check_eager = type(op).check_eager is not Op.check_eager
        self.fns: dict = {}       # is_train -> the tape's pure function of the op

    def inputs(self, args, kwargs) -> list:
        """The arrays of one call, in slot order."""
        return [args[i] if kind == "p" else kwargs[i] for kind, i in self.sources]


def resolve(op_name, args, kwargs, is_array, is_ndarray):
    """The unplanned path's first half: (class, op, params, slots, nargs, inputs by slot)."""
    cls = get_op(op_name, private=True)
    arrays = {k: v for k, v in kwargs.items() if is_ndarray(v)}
    params = {k: v for k, v in kwargs.items() if k not in arrays}
    args = split_positional(cls, args, is_array, params)
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
    return cls, op, params, slots, nargs, inputs


def plan_for(key, op_name, args, kwargs, is_array, is_ndarray) -> Plan:
    """The plan of call pattern `key`, worked out (on placeholders) on its first call."""
    plan = _PLANS.get(key)
    if plan is None:
        pos = [_Slot(("p", i)) if is_array(a) else a for i, a in enumerate(args)]
        kw = {k: _Slot(("k", k)) if is_ndarray(v) else v for k, v in kwargs.items()}
        cls, op, params, slots, nargs, inputs = resolve(op_name, pos, kw, lambda a: isinstance(a, _Slot),
                                                        lambda a: isinstance(a, _Slot))
        plan = _PLANS.put(key, Plan(op_name, cls, op, params, slots, nargs, [inputs[s].src for s in slots]))
    return plan


def clear() -> None:
    """Forget every plan (the next call of each pattern works it out again)."""
    _PLANS._data.clear()
