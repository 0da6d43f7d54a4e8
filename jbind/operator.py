"""`mx.operator`: operators written in Python, as MXNet 1.x's `CustomOp` / `CustomOpProp`.

A script subclasses `CustomOpProp` (the op's inputs, outputs, aux states and shape and
dtype rules) and `CustomOp` (its forward and backward on NDArrays), registers the Prop
under a name and uses it as `mx.sym.Custom(..., op_type=name)` or `mx.nd.Custom(...)`;
the op `Custom` (`jbind/ops/custom.py`) runs it.

Differences from MXNet: the Python code runs on the host through JAX callbacks, so the
arrays it gets are on cpu(0) (`create_operator` is given cpu(0) whatever the executor's
context), and `create_operator` is called once per node each time jbind compiles a graph
holding the op, not once per bind (binds that find a compiled graph share its operator).
"""
from __future__ import annotations

import ctypes
import itertools
import logging
import threading

from ._op_info import OperatorArguments, get_all_registered_operators, get_operator_arguments
from .base import MXNetError, NDArrayHandle, py_str

# MXNet's module has no __all__: `from mxnet.operator import *` also hands over what it
# imports, which tests use (`ctypes.cast(arr, NDArrayHandle)` in a monitor callback).
__all__ = ["CustomOp", "CustomOpProp", "OperatorArguments", "get_all_registered_operators",
           "get_operator_arguments", "register", "PythonOp", "NumpyOp", "NDArrayOp",
           "ctypes", "NDArrayHandle", "NDArray", "py_str"]


def __getattr__(name):
    if name == "NDArray":  # imported when asked for: jbind.ndarray loads after the ops, which use this module
        from .ndarray import NDArray
        return NDArray
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_log = logging.getLogger(__name__)


class CustomOp:
    """An operator's computation: `forward` and `backward` write their results into the
    arrays they are given (`out_data`, `in_grad`), usually through `assign`."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute `out_data` from `in_data` (and read or update `aux`).

        Args:
            is_train: whether this is a training forward.
            req: per output, how to write it: 'null', 'write', 'inplace' or 'add'.
            in_data, out_data, aux: lists of NDArrays, in `list_arguments()`,
                `list_outputs()` and `list_auxiliary_states()` order.
        """

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute `in_grad` (one per argument) from the head gradients `out_grad`.

        `req[i]` is 'null' for an argument whose gradient nobody asked for (a label):
        `assign` then leaves `in_grad[i]` at zero.
        """

    def assign(self, dst, req, src):
        """Write `src` into the NDArray `dst` as `req` says ('null' writes nothing)."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise MXNetError(f"CustomOp.assign: req must be 'null', 'write', 'inplace' or 'add', got {req!r}")


class CustomOpProp:
    """An operator's description: its inputs, outputs, aux states and shape and dtype rules.

    The keyword arguments given to `mx.sym.Custom` (besides `op_type`) reach `__init__`
    as strings, as MXNet stores them.

    Args:
        need_top_grad: whether `backward` reads the head gradients. False makes the op
            a loss head: `Executor.backward()` needs no head gradients for it.
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def list_arguments(self):
        return ["data"]

    def list_outputs(self):
        return ["output"]

    def list_auxiliary_states(self):
        return []

    def infer_shape(self, in_shape):
        """-> (argument shapes, output shapes[, aux shapes]); an unknown shape is `[]`.

        Default: every output has the first argument's shape."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """-> (argument dtypes, output dtypes[, aux dtypes]); an unknown dtype is None.

        Default: outputs and aux states take the first argument's dtype."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        """Only dense ('default') storage exists in jbind."""
        for i, stype in enumerate(in_stype):
            if stype != "default":
                raise MXNetError(f"infer_storage_type: input {i} has storage type {stype!r}; "
                                 "jbind has dense ('default') arrays only")
        return (in_stype, ["default"] * len(self.list_outputs()),
                ["default"] * len(self.list_auxiliary_states()))

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype, aux_stype):
        """Only dense ('default') storage exists in jbind."""
        lists = [ograd_stype, in_stype, out_stype, igrad_stype, aux_stype]
        return tuple(["default"] * len(x) for x in lists)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids (from the three lists) of the arrays `backward` reads. Without the
        head gradients' ids the op is a loss head."""
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The `CustomOp` that computes; `in_shapes` and `in_dtypes` (MXNet's type codes)
        list the arguments then the aux states."""
        return CustomOp()


_lock = threading.Lock()
_REGISTRY: dict[str, tuple[type, int]] = {}   # op_type -> (Prop class, registration serial)
_serial = itertools.count(1)


def register(reg_name: str):
    """Decorator registering a `CustomOpProp` subclass under `reg_name` (the `op_type`).

    Registering a name again replaces the class (MXNet logs a warning, so does jbind) for
    every symbol built afterwards and for graphs compiled afterwards.
    """
    def do_register(prop_cls):
        if not isinstance(prop_cls, type):
            raise TypeError(f"mx.operator.register({reg_name!r}) decorates a CustomOpProp class, "
                            f"got {type(prop_cls).__name__}")
        with _lock:
            if reg_name in _REGISTRY and _REGISTRY[reg_name][0] is not prop_cls:
                _log.warning("New registration is overriding existing custom operator %s", reg_name)
            _REGISTRY[reg_name] = (prop_cls, next(_serial))
        return prop_cls
    return do_register


def registration(op_type: str) -> tuple[type, int]:
    """(Prop class, serial) of `op_type`; an MXNetError naming the registered ones if none."""
    got = _REGISTRY.get(op_type)
    if got is None:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise MXNetError(f"Cannot find custom operator {op_type!r}: register its CustomOpProp with "
                         f"@mx.operator.register({op_type!r}) first (registered: {known})")
    return got


register("custom_op")(CustomOpProp)  # as MXNet: a do-nothing op under this name

from ._python_op import NDArrayOp, NumpyOp, PythonOp  # noqa: E402  (they build on the classes above)
