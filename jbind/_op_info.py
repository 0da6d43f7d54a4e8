"""`mx.operator.get_all_registered_operators` / `get_operator_arguments`: the operator
registry described as MXNet's C API describes it (names, inputs then parameters, and a
type string per entry in MXNet's wording)."""
from __future__ import annotations

import dataclasses
import typing
from collections import namedtuple
from typing import Literal

from .ops._base import ALIASES, REGISTRY, _hints, fields, get_op, made

OperatorArguments = namedtuple("OperatorArguments", ["narg", "names", "types"])

_PLACEHOLDER = {int: 1, float: 1.0, bool: False, str: ""}


def _strip_optional(t):
    if typing.get_origin(t) is typing.Union:
        inner = [a for a in typing.get_args(t) if a is not type(None)]
        if len(inner) == 1:
            return inner[0], True
    return t, False


def _type_string(t, default) -> str:
    t, optional = _strip_optional(t)
    origin = typing.get_origin(t)
    if origin is Literal:
        choices = ", ".join(repr(c) for c in sorted(typing.get_args(t), key=str))
        if optional:
            choices = "None, " + choices
        if default is dataclasses.MISSING:
            return "{" + choices + "}, required"
        return "{" + choices + "},optional, default=" + repr(str(default))
    base = {int: "int", float: "float", bool: "boolean", str: "string"}.get(t)
    if base is None:
        base = "Shape(tuple)" if (origin is tuple or t is tuple) else getattr(t, "__name__", str(t))
    if optional:
        base += " or None"
    if default is dataclasses.MISSING:
        return base + ", required"
    shown = int(default) if isinstance(default, bool) else ("[]" if default == () else default)
    return f"{base}, optional, default={shown}"


def _inputs(cls) -> tuple:
    """The op's inputs with every parameter at its default (a required one at a placeholder)."""
    made(cls)
    op = object.__new__(cls)
    hints = _hints(cls)
    for f in fields(cls):
        if f.default is not dataclasses.MISSING:
            v = f.default
        elif f.default_factory is not dataclasses.MISSING:
            v = f.default_factory()
        else:
            t, _ = _strip_optional(hints[f.name])
            v = typing.get_args(t)[0] if typing.get_origin(t) is Literal else _PLACEHOLDER.get(t, ())
        object.__setattr__(op, f.name, v)
    try:
        return tuple(op.arguments()) + tuple(op.aux_names)
    except Exception:  # an op whose inputs depend on a parameter with no usable placeholder
        return ("data",)


def get_all_registered_operators() -> list:
    """The names of every registered operator and alias, sorted."""
    return sorted(set(REGISTRY) | set(ALIASES))


def get_operator_arguments(op_name: str) -> OperatorArguments:
    """(narg, names, types) of an operator: its inputs ('NDArray-or-Symbol', or
    'NDArray-or-Symbol[]' for a variadic op's one list of inputs), then its parameters with
    their types and defaults, in MXNet's order."""
    cls = get_op(op_name)
    names, types = [], []
    if cls.variadic:
        names, types = ["data"], ["NDArray-or-Symbol[]"]
    else:
        for a in _inputs(cls):
            names.append(a)
            types.append("NDArray-or-Symbol")
    known = {f.name: f for f in fields(cls)}
    hints = _hints(cls)
    for p in cls.declared_params():
        f = known[p]
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        names.append(p)
        types.append(_type_string(hints[p], default))
    return OperatorArguments(len(names), names, types)
