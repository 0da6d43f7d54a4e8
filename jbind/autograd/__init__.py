"""`mx.autograd`: record NDArray operations and differentiate them.

Not a second engine: while `record()` is on, every registered op an NDArray program
runs (through `mx.nd.*`, NDArray arithmetic, indexing and fluent methods) is put on a
tape with its `Op`, and its compiled call also keeps the residuals of its lowering's
`jax.vjp`. `backward` and `grad` apply those pullbacks from the heads back, as one
jitted function per tape structure (`_pullback.py`), so each op's gradient (loss
heads' MXNet gradients included) is the one the symbolic executor uses and the forward
is not run again; `grad(create_graph=True)` replays the tape inside `jax.vjp` instead,
since its result must be differentiable again (`_backward.py`).

Differences from MXNet: each recorded op is differentiated in the mode it was recorded
in (the `train_mode` argument of `backward` / `grad` changes nothing), and `get_symbol`
cannot express `Function` or `grad(create_graph=True)` nodes.
"""
from ._backward import backward, grad
from ._function import Function
from ._state import (is_recording, is_training, pause, predict_mode, record, set_recording, set_training,
                     train_mode)
from ._tape import get_symbol, mark_variables
# MXNet's autograd has no __all__, so `from mxnet.autograd import *` also hands over the
# classes it imports; upstream tests rely on getting NDArray, Symbol and array that way.
from ..ndarray import NDArray, array
from ..symbol import Symbol

__all__ = ["NDArray", "Symbol", "array", "Function", "backward", "get_symbol", "grad", "is_recording", "is_training", "mark_variables", "pause",
           "predict_mode", "record", "set_recording", "set_training", "train_mode"]
