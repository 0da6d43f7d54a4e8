"""FusedRNNCell: every layer and direction in one `RNN` operator, with MXNet's packed weights."""
from __future__ import annotations

import json
import warnings

import numpy as np

from .. import symbol
from ..ndarray import NDArray
from ._base import BaseRNNCell, RNNParams, _check, _concat_arrays, _normalize_sequence


def fused_rnn_init(num_hidden, num_layers, mode, bidirectional, forget_bias) -> str:
    """`mx.init.FusedRNN(None, ...).dumps()`: the initialiser FusedRNNCell attaches to its parameters."""
    return json.dumps(["fusedrnn", {"init": None, "num_hidden": num_hidden, "num_layers": num_layers,
                                    "mode": mode, "bidirectional": bidirectional,
                                    "forget_bias": forget_bias}])


class FusedRNNCell(BaseRNNCell):
    """Several recurrent layers fused into one `RNN` op (cuDNN's kernel in MXNet; `lax.scan` here).

    Args:
        num_hidden: units per layer and direction.
        num_layers: number of stacked layers.
        mode: 'rnn_relu', 'rnn_tanh', 'lstm' or 'gru'.
        bidirectional: run a reverse layer too; outputs have 2 * num_hidden features.
        dropout: dropout between layers, in training.
        get_next_state: also return the final states.
        forget_bias: initial forget-gate bias (lstm).
        prefix: name prefix; default `mode + '_'`.
        params: shared `RNNParams`, or None.
    """

    def __init__(self, num_hidden: int, num_layers: int = 1, mode: str = "lstm", bidirectional: bool = False,
                 dropout: float = 0., get_next_state: bool = False, forget_bias: float = 1.0,
                 prefix: str | None = None, params: RNNParams | None = None):
        if prefix is None:
            prefix = "%s_" % mode
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        init = fused_rnn_init(num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get("parameters", init=init)

    @property
    def state_info(self):
        b = self._bidirectional + 1
        n = (self._mode == "lstm") + 1
        return [{"shape": (b * self._num_layers, 0, self._num_hidden), "__layout__": "LNC"}
                for _ in range(n)]

    @property
    def _gate_names(self):
        return {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
                "gru": ["_r", "_z", "_o"]}[self._mode]

    @property
    def _num_gates(self):
        return len(self._gate_names)

    def _piece(self, direction, layer, group, gate, kind):
        return "%s%s%d_%s%s_%s" % (self._prefix, direction, layer, group, gate, kind)

    def _layout(self, li, lh):
        """[(name, offset, shape)] of every per-gate piece of the packed vector, in order."""
        out, p, b = [], 0, len(self._directions)
        for layer in range(self._num_layers):
            for direction in self._directions:
                for group, shape in (("i2h", (lh, li) if layer == 0 else (lh, b * lh)), ("h2h", (lh, lh))):
                    for gate in self._gate_names:
                        out.append((self._piece(direction, layer, group, gate, "weight"), p, shape))
                        p += shape[0] * shape[1]
        for layer in range(self._num_layers):
            for direction in self._directions:
                for group in ("i2h", "h2h"):
                    for gate in self._gate_names:
                        out.append((self._piece(direction, layer, group, gate, "bias"), p, (lh,)))
                        p += lh
        return out, p

    def unpack_weights(self, args: dict) -> dict:
        """Split the packed `parameters` vector into one weight and bias per layer, direction and gate."""
        args = args.copy()
        arr = args.pop(self._parameter.name)
        b = len(self._directions)
        m = self._num_gates
        h = self._num_hidden
        num_input = arr.size // b // h // m - (self._num_layers - 1) * (h + b * h + 2) - h - 2
        pieces, total = self._layout(num_input, h)
        _check(total == arr.size, "Invalid parameters size for FusedRNNCell")
        for name, p, shape in pieces:
            size = int(np.prod(shape))
            args[name] = arr[p:p + size].reshape(shape).copy()
        return args

    def pack_weights(self, args: dict) -> dict:
        """The inverse of `unpack_weights` (NDArrays in, an NDArray out; numpy in, numpy out)."""
        args = args.copy()
        h = self._num_hidden
        w0 = args["%sl0_i2h%s_weight" % (self._prefix, self._gate_names[0])]
        pieces, _ = self._layout(w0.shape[1], h)
        flat = [args.pop(name).reshape((-1,)) for name, _, _ in pieces]
        if isinstance(w0, NDArray):
            flat = [f.astype(w0.dtype) for f in flat]
        args[self._parameter.name] = _concat_arrays(flat)
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped. Please use unroll")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("NTC layout detected. Consider using TNC for FusedRNNCell for faster speed")
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        else:
            _check(axis == 0, "Unsupported layout %s" % layout)
        if begin_state is None:
            begin_state = self.begin_state()
        states = begin_state
        if self._mode == "lstm":
            states = {"state": states[0], "state_cell": states[1]}
        else:
            states = {"state": states[0]}
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional, p=self._dropout,
                         state_outputs=self._get_next_state, mode=self._mode, name=self._prefix + "rnn",
                         **states)
        attr = {"__layout__": "LNC"}
        if not self._get_next_state:
            outputs, states = rnn, []
        elif self._mode == "lstm":
            rnn[1]._set_attr(**attr)
            rnn[2]._set_attr(**attr)
            outputs, states = rnn[0], [rnn[1], rnn[2]]
        else:
            rnn[1]._set_attr(**attr)
            outputs, states = rnn[0], [rnn[1]]
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a SequentialRNNCell of step cells (names as `unpack_weights` gives)."""
        from .cells import GRUCell, LSTMCell, RNNCell
        from .compose import BidirectionalCell, DropoutCell, SequentialRNNCell
        stack = SequentialRNNCell()
        get_cell = {"rnn_relu": lambda p: RNNCell(self._num_hidden, activation="relu", prefix=p),
                    "rnn_tanh": lambda p: RNNCell(self._num_hidden, activation="tanh", prefix=p),
                    "lstm": lambda p: LSTMCell(self._num_hidden, prefix=p),
                    "gru": lambda p: GRUCell(self._num_hidden, prefix=p)}[self._mode]
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(get_cell("%sl%d_" % (self._prefix, i)),
                                            get_cell("%sr%d_" % (self._prefix, i)),
                                            output_prefix="%sbi_l%d_" % (self._prefix, i)))
            else:
                stack.add(get_cell("%sl%d_" % (self._prefix, i)))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix="%s_dropout%d_" % (self._prefix, i)))
        return stack
