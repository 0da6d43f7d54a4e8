"""Gluon's private helpers: nested-argument flattening, hook handles, error classes."""
from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict

from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..symbol.symbol import Symbol


class GluonAssertionError(MXNetError, AssertionError):
    """A failed check that MXNet's Gluon reports with `assert`: catchable as either."""


class GluonValueError(MXNetError, ValueError):
    """Bad input that MXNet's Gluon reports as ValueError: catchable as either."""


class GluonTypeError(MXNetError, TypeError):
    """A wrong type that MXNet's Gluon reports as TypeError: catchable as either."""


def check(cond, msg: str) -> None:
    """Raise GluonAssertionError(msg) unless `cond` (MXNet's Gluon asserts these)."""
    if not cond:
        raise GluonAssertionError(msg)


def flatten(args, inout_str):
    """(flat list of NDArray / Symbol / None, format) of a nested argument structure.

    A format is an int per leaf (0 for an array or one-output symbol, the output count of a
    multi-output symbol, -1 for None) and a list per list or tuple, as MXNet encodes it."""
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        n = len(args.list_outputs())
        return [args], n if n > 1 else 0
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise GluonValueError(f"When hybridized, the input of HybridBlock {inout_str} must be (nested) list "
                              f"of Symbol or NDArray, but got {args!s} of type {type(args)!s}")
    flat, fmts = [], []
    for a in args:
        f, fmt = flatten(a, inout_str)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def regroup(args, fmt):
    """The nested structure `fmt` (from `flatten`) rebuilt from the flat list `args`."""
    def merge(args, fmt):
        if isinstance(fmt, int):
            if fmt < -1:
                raise GluonValueError(f"Unsupported encoded format {fmt}.")
            if fmt == 0 or fmt == -1:
                return args[0], args[1:]
            return args[:fmt], args[fmt:]
        ret = []
        for f in fmt:
            r, args = merge(args, f)
            ret.append(r)
        return ret, args
    return merge(args, fmt)[0]


def indent(s: str, num_spaces: int) -> str:
    """`s` with every line after the first indented by `num_spaces`."""
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * num_spaces + line for line in lines[1:])


def brief_print_list(lst, limit: int = 7) -> str:
    """At most `limit` quoted items of `lst`, with '...' in the middle if there are more."""
    lst = list(lst)
    if len(lst) > limit:
        return brief_print_list(lst[:limit // 2], limit) + ", ..., " + brief_print_list(lst[-limit // 2:], limit)
    return ", ".join(f"'{s!s}'" for s in lst)


class HookHandle:
    """Returned by `register_forward_hook` / `register_forward_pre_hook`; `detach()` removes
    the hook. Usable as a context manager that detaches on exit. Hooks are keyed by the
    hook object, as MXNet's: one hook registered twice runs once, and either handle
    detaches it."""

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict: OrderedDict, hook) -> None:
        if self._hooks_dict_ref is not None:
            raise GluonAssertionError("The same handle cannot be attached twice.")
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self) -> None:
        hooks = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks is not None and self._id in hooks:
            del hooks[self._id]

    def __getstate__(self):  # a weak reference does not pickle: the dict itself does
        return (self._hooks_dict_ref() if self._hooks_dict_ref is not None else None, self._id)

    def __setstate__(self, state):
        hooks, self._id = state
        self._hooks_dict_ref = weakref.ref(OrderedDict() if hooks is None else hooks)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


def shape_complete(shape) -> bool:
    """True when `shape` has no 0 or -1 dimension: how Parameters mark an unknown one,
    whatever `mx.util.np_shape` says (jbind's inference marks unknown dimensions with 0)."""
    return shape is not None and all(int(d) > 0 for d in shape)


def shape_is_known(shape) -> bool:
    """True when `shape` has no unknown dimension: 0 marks one (and `()` is unknown), or
    under `mx.util.np_shape` -1 does (and `()` is a scalar). A smaller dimension is an
    assertion error, as in MXNet."""
    from ..util import is_np_shape
    if shape is None:
        return False
    unknown = -1 if is_np_shape() else 0
    if len(shape) == 0:
        return unknown == -1
    for d in shape:
        if d == unknown:
            return False
        check(d > unknown, f"shape dimension size cannot be less than {unknown}, while received {d}")
    return True


def leaves(data):
    """The NDArrays and Symbols in a nested list / tuple (other values, e.g. numbers, skipped)."""
    if isinstance(data, (list, tuple)):
        return [x for d in data for x in leaves(d)]
    return [data] if isinstance(data, (NDArray, Symbol)) else []


def strip_none(fmt):
    """An argument format without trailing None arguments (f(x) and f(x, None) trace alike)."""
    if isinstance(fmt, list):
        fmt = list(fmt)
        while fmt and fmt[-1] == -1:
            fmt.pop()
    return fmt



def blocks_in(data) -> list:
    """The Blocks in a nested list / tuple / dict."""
    from .block import Block
    if isinstance(data, (list, tuple)):
        return [b for x in data for b in blocks_in(x)]
    if isinstance(data, dict):
        return [b for x in data.values() for b in blocks_in(x)]
    return [data] if isinstance(data, Block) else []


def warn_unregistered_containers(block) -> None:
    """MXNet's warning for a list / tuple / dict attribute holding Blocks none of which is a
    registered child (their parameters would not be collected)."""
    children = set(map(id, block._children.values()))
    for k, v in block.__dict__.items():
        if isinstance(v, (list, tuple, dict)) and not (k.startswith("__") or k == "_children"):
            found = blocks_in(v)
            if found and not any(id(c) in children for c in found):
                warnings.warn(f'"{block.name}" is an unregistered container with Blocks. Note that Blocks inside the '
                              "list, tuple or dict will not be registered automatically. Make sure to register them "
                              "using register_child() or switching to nn.Sequential/nn.HybridSequential instead. ",
                              stacklevel=4)
