"""`mx.autograd.Function`: an operation with a forward and a backward written in Python."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ._state import STATE, _RecordingStateScope, pause
from ._tape import Node, ref_of


class Function:
    """A differentiable operation defined by `forward` and `backward` on NDArrays.

    Subclass it, define `forward(*inputs)` returning an NDArray or a tuple of them and
    `backward(*output_grads)` returning one gradient per input; `save_for_backward(*arrays)`
    in the forward keeps arrays for the backward as `self.saved_tensors`. Call an instance
    (once) on NDArrays inside `record()`::

        class Sigmoid(mx.autograd.Function):
            def forward(self, x):
                y = 1 / (1 + mx.nd.exp(-x))
                self.save_for_backward(y)
                return y

            def backward(self, dy):
                y, = self.saved_tensors
                return dy * y * (1 - y)

    The forward runs with recording off (as in MXNet); its outputs are the recorded
    values, so the backward replay does not run it again.
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        """Keep `args` (NDArrays or anything else) for `backward` as `self.saved_tensors`."""
        self.saved_tensors = args

    def forward(self, *inputs):
        """The outputs of the operation on `inputs`."""
        raise NotImplementedError

    def backward(self, *output_grads):
        """The gradients of the inputs, given the gradients of the outputs."""
        raise NotImplementedError

    def __call__(self, *inputs):
        from ..ndarray import ndarray as _ndm
        if self._used:
            raise MXNetError(f"{type(self).__name__}: each Function instance can only be called once; "
                             "create a new instance for each call")
        self._used = True
        for k, x in enumerate(inputs):
            if not isinstance(x, _ndm.NDArray):
                raise MXNetError(f"{type(self).__name__}: input {k} is a {type(x).__name__}; a Function "
                                 "takes NDArrays")
        recording = STATE.recording
        with _RecordingStateScope(False, None):  # not recorded; training mode as it is (MXNet's)
            outputs = self.forward(*inputs)
        single = isinstance(outputs, _ndm.NDArray)
        outs = (outputs,) if single else tuple(outputs)
        for k, o in enumerate(outs):
            if not isinstance(o, _ndm.NDArray):
                raise MXNetError(f"{type(self).__name__}.forward: output {k} is a {type(o).__name__}, not an NDArray")
        if recording:
            # outputs that are inputs returned as they are would make a cycle: record copies
            outs = tuple(_ndm.NDArray(o._data) if any(o is x for x in inputs) else o for o in outs)
            node = Node(self._replay_fn(inputs, outs), None, [ref_of(x, x._data) for x in inputs], len(outs),
                        kind=f"Function {type(self).__name__}", vals=[x._data for x in inputs],
                        outs=[o._data for o in outs])
            for k, o in enumerate(outs):
                o._ag = (node, k)
        return outs[0] if single else outs

    def _replay_fn(self, inputs, outs):
        """A pure function of the inputs' values giving the recorded outputs, whose
        gradient calls `backward` on the host."""
        in_specs = [jax.ShapeDtypeStruct(x.shape, x._data.dtype) for x in inputs]
        out_vals = tuple(o._data for o in outs)
        name = type(self).__name__

        def host_backward(*cts):
            from ..ndarray import ndarray as _ndm
            with pause():
                grads = self.backward(*[_ndm.NDArray(jnp.asarray(c)) for c in cts])
            grads = (grads,) if isinstance(grads, _ndm.NDArray) else tuple(grads)
            if len(grads) != len(in_specs):
                raise MXNetError(f"{name}.backward returned {len(grads)} gradients for {len(in_specs)} inputs")
            res = []
            for k, (g, s) in enumerate(zip(grads, in_specs)):
                a = np.asarray(getattr(g, "_data", g), dtype=s.dtype)
                if a.shape != tuple(s.shape):
                    raise MXNetError(f"{name}.backward: gradient {k} has shape {a.shape}, input {k} {tuple(s.shape)}")
                res.append(a)
            return tuple(res)

        @jax.custom_vjp
        def run(xs):
            return out_vals

        def fwd(xs):
            return out_vals, None

        def bwd(_, cts):
            cts = [jnp.zeros(o.shape, o.dtype) if c.dtype == jax.dtypes.float0 else c.astype(o.dtype)
                   for c, o in zip(cts, out_vals)]
            grads = jax.pure_callback(host_backward, tuple(in_specs), *cts, vmap_method="sequential")
            return (tuple(g if jnp.issubdtype(s.dtype, jnp.inexact) else np.zeros(s.shape, jax.dtypes.float0)
                          for g, s in zip(grads, in_specs)),)

        run.defvjp(fwd, bwd)
        return lambda ins: list(run(tuple(ins)))
