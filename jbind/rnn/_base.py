"""RNNParams, BaseRNNCell and the helpers every cell shares (MXNet 1.x `mx.rnn.rnn_cell`).

Cells are small mutable builders, as in MXNet; the symbols they build are immutable.
Node names come from the cell's prefix and the step index: `lstm_t3_i2h` is step 3 of
an unroll (or the fourth call of the cell since its last `reset()`), as MXNet names it.
Nodes MXNet leaves unnamed (`_plus0`, `activation0`) take the current NameManager's names.
"""
from __future__ import annotations

import numpy as np

from .. import symbol
from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray import concat as _nd_concat


class RNNError(MXNetError, AssertionError):
    """Misuse MXNet's mx.rnn refuses with an assert: an AssertionError too, so either except works."""


def _check(cond: bool, msg: str):
    if not cond:
        raise RNNError(msg)


def _cells_state_info(cells):
    return sum([c.state_info for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _cells_unpack_weights(cells, args):
    for cell in cells:
        args = cell.unpack_weights(args)
    return args


def _cells_pack_weights(cells, args):
    for cell in cells:
        args = cell.pack_weights(args)
    return args


def _concat_arrays(arrays):
    """Concatenate NDArrays (-> NDArray) or numpy arrays (-> numpy) along axis 0."""
    if all(isinstance(a, NDArray) for a in arrays):
        return _nd_concat(*arrays, dim=0)
    return np.concatenate([np.asarray(a) for a in arrays], axis=0)


def _normalize_sequence(length, inputs, layout, merge, in_layout=None):
    """Split a sequence symbol into steps (merge=False) or join steps into one (merge=True)."""
    _check(inputs is not None, "unroll(inputs=None) has been deprecated. "
                               "Please create input variables outside unroll.")
    axis = layout.find("T")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            _check(len(inputs.list_outputs()) == 1,
                   "unroll doesn't allow grouped symbol as input. Please convert "
                   "to list with list(inputs) first or let unroll handle splitting.")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    else:
        _check(length is None or len(inputs) == length,
               f"unroll: {len(inputs)} inputs given for length {length}")
        if merge is True:
            inputs = [symbol.expand_dims(i, axis=axis) for i in inputs]
            inputs = symbol.Concat(*inputs, dim=axis)
            in_axis = axis
    if isinstance(inputs, symbol.Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim0=axis, dim1=in_axis)
    return inputs, axis


class RNNParams:
    """Container of the variables of one or several cells, for sharing weights.

    Args:
        prefix: prepended to the name of every variable this container creates.
    """

    def __init__(self, prefix: str = ""):
        self._prefix = prefix
        self._params: dict = {}

    def get(self, name: str, **kwargs) -> symbol.Symbol:
        """The variable `prefix + name`, created (with `Variable(**kwargs)`) on first use."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """Abstract base class of RNN cells.

    Args:
        prefix: prefix of the names of the cell's nodes (and of its weights when `params`
            is None).
        params: an `RNNParams` to share weights with other cells; a new one if None.
    """

    def __init__(self, prefix: str = "", params: RNNParams | None = None):
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self):
        """Restart step and begin-state numbering before building another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs, states):
        """One step: -> (output, new states)."""
        raise NotImplementedError()

    @property
    def params(self) -> RNNParams:
        """The cell's parameter container."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list:
        """Shape and layout of each state: [{'shape': (0, H), '__layout__': 'NC'}, ...]."""
        raise NotImplementedError()

    @property
    def state_shape(self) -> list:
        return [ele["shape"] for ele in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def begin_state(self, func=symbol.zeros, **kwargs) -> list:
        """Initial states, `func(name=prefix + 'begin_state_%d', shape=..., __layout__=..., **kwargs)`.

        `func` defaults to `mx.sym.zeros`, whose unknown batch dimension is inferred;
        `mx.sym.Variable` makes the states inputs.
        """
        _check(not self._modified, "After applying modifier cells (e.g. DropoutCell) the base "
                                   "cell cannot be called directly. Call the modifier cell instead.")
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)
            states.append(func(name="%sbegin_state_%d" % (self._prefix, self._init_counter), **kwargs))
        return states

    def unpack_weights(self, args: dict) -> dict:
        """Split each fused i2h/h2h weight and bias into one array per gate (`lstm_i2h_f_weight`)."""
        args = args.copy()
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group_name in ["i2h", "h2h"]:
            weight = args.pop("%s%s_weight" % (self._prefix, group_name))
            bias = args.pop("%s%s_bias" % (self._prefix, group_name))
            for j, gate in enumerate(self._gate_names):
                args["%s%s%s_weight" % (self._prefix, group_name, gate)] = weight[j * h:(j + 1) * h].copy()
                args["%s%s%s_bias" % (self._prefix, group_name, gate)] = bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args: dict) -> dict:
        """The inverse of `unpack_weights`."""
        args = args.copy()
        if not self._gate_names:
            return args
        for group_name in ["i2h", "h2h"]:
            weight, bias = [], []
            for gate in self._gate_names:
                weight.append(args.pop("%s%s%s_weight" % (self._prefix, group_name, gate)))
                bias.append(args.pop("%s%s%s_bias" % (self._prefix, group_name, gate)))
            args["%s%s_weight" % (self._prefix, group_name)] = _concat_arrays(weight)
            args["%s%s_bias" % (self._prefix, group_name)] = _concat_arrays(bias)
        return args

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC", merge_outputs=None):
        """Unroll `length` steps.

        Args:
            length: number of steps.
            inputs: one symbol of shape (N, T, ...) ('NTC') or (T, N, ...) ('TNC'), or a list
                of `length` symbols of shape (N, ...).
            begin_state: states from `begin_state()` or another cell; `begin_state()` if None.
            layout: 'NTC' or 'TNC'.
            merge_outputs: True: one symbol in `layout`; False: a list of steps; None: whichever
                the cell makes naturally.

        Returns:
            (outputs, states)
        """
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = self.begin_state()
        states = begin_state
        outputs = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)
