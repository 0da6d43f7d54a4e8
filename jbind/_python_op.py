"""MXNet's deprecated Python operators, `mx.operator.PythonOp`, `NumpyOp` and `NDArrayOp`.

A script subclasses one of them (its `forward`, `backward`, `infer_shape`,
`list_arguments`, `list_outputs`) and calls `op.get_symbol(data, name=...)`. jbind runs
them as `Custom` ops: `get_symbol` registers, once per instance, a `CustomOpProp` that
speaks for the instance, and returns `mx.sym.Custom(..., op_type=that name)`.

`NumpyOp` gets float32 numpy arrays and writes its results into the ones it is given;
`NDArrayOp` gets NDArrays. Both warn, as MXNet does, that they are deprecated.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np

from .operator import CustomOp, CustomOpProp, register

__all__ = ["PythonOp", "NumpyOp", "NDArrayOp"]

_ids = itertools.count()


class PythonOp:
    """Base class of the deprecated Python operators; use `CustomOp` in new code.

    Defaults: one argument 'data', one output 'output' of its shape; forward copies the
    input, backward copies the head gradient.

    Args:
        need_top_grad: whether `backward` reads the head gradients; False makes the op a
            loss head.
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad
        self._op_type = None
        warnings.warn("PythonOp has been deprecated. Please use CustomOp", stacklevel=2)

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """A symbol applying this operator to `args` (symbols); `name=` names the node."""
        from . import symbol
        if self._op_type is None:
            self._op_type = f"_python_op{next(_ids)}_{type(self).__name__}"
            register(self._op_type)(_prop_class(self))
        return symbol.Custom(*args, op_type=self._op_type, **kwargs)

    def forward(self, in_data, out_data):
        """Write the outputs into `out_data` from `in_data`."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Write the argument gradients into `in_grad`."""
        in_grad[0][:] = out_grad[0]

    def infer_shape(self, in_shape):
        """-> (argument shapes, output shapes)."""
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        return ["output"]

    def list_arguments(self):
        return ["data"]

    def need_top_grad(self):
        return self.need_top_grad_

    def _wrap(self, arrays):
        return arrays  # NDArrays, as CustomOp gets them

    def _store(self, op, req, dst, src):
        pass  # results were written into the NDArrays themselves


class NumpyOp(PythonOp):
    """A deprecated Python operator on float32 numpy arrays: `forward` and `backward`
    write their results into the arrays they are given."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NumpyOp has been deprecated. Please use CustomOp", stacklevel=2)

    def _wrap(self, arrays):
        return [np.array(a.asnumpy(), dtype=np.float32) for a in arrays]

    def _store(self, op, req, dst, src):
        for r, d, s in zip(req, dst, src):
            op.assign(d, r, s)


class NDArrayOp(PythonOp):
    """A deprecated Python operator on NDArrays."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NDArrayOp has been deprecated. Please use CustomOp", stacklevel=2)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids (from the three lists) of the arrays `backward` reads."""
        deps = list(out_grad) if self.need_top_grad() else []
        return deps + list(in_data) + list(out_data)


def _prop_class(pyop: PythonOp) -> type:
    """A CustomOpProp class speaking for `pyop`."""

    class _Op(CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            outs = pyop._wrap(out_data)
            pyop.forward(in_data=pyop._wrap(in_data), out_data=outs)
            pyop._store(self, req, out_data, outs)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            grads = pyop._wrap(in_grad)
            pyop.backward(out_grad=pyop._wrap(out_grad), in_data=pyop._wrap(in_data),
                          out_data=pyop._wrap(out_data), in_grad=grads)
            pyop._store(self, req, in_grad, grads)

    class _Prop(CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=pyop.need_top_grad())

        def list_arguments(self):
            return list(pyop.list_arguments())

        def list_outputs(self):
            return list(pyop.list_outputs())

        def infer_shape(self, in_shape):
            ishape, oshape = pyop.infer_shape([list(s) for s in in_shape])
            return ishape, oshape, []

        def declare_backward_dependency(self, out_grad, in_data, out_data):
            if hasattr(pyop, "declare_backward_dependency"):
                return pyop.declare_backward_dependency(out_grad, in_data, out_data)
            return super().declare_backward_dependency(out_grad, in_data, out_data)

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return _Op()

    _Prop.__name__ = _Prop.__qualname__ = f"_PropOf{type(pyop).__name__}"
    return _Prop
