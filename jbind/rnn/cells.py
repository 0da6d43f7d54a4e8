"""The step cells: RNNCell, LSTMCell, GRUCell (MXNet 1.x's graphs and names, node for node)."""
from __future__ import annotations

import json

from .. import symbol
from ._base import BaseRNNCell, RNNParams


def lstm_bias_init(forget_bias) -> str:
    """`mx.init.LSTMBias(forget_bias).dumps()`: the i2h bias initialiser LSTMCell attaches."""
    return json.dumps(["lstmbias", {"forget_bias": forget_bias}])


class RNNCell(BaseRNNCell):
    """Simple recurrent cell: out = activation(W x + b + U h + c).

    Args:
        num_hidden: number of units.
        activation: 'tanh', 'relu', ... or a callable `f(symbol, name=...)`.
        prefix: name prefix (default 'rnn_').
        params: shared `RNNParams`, or None.
    """

    def __init__(self, num_hidden: int, activation="tanh", prefix: str = "rnn_",
                 params: RNNParams | None = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._activation = activation
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias")
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        self._counter += 1
        name = "%st%d_" % (self._prefix, self._counter)
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden, name="%si2h" % name)
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden, name="%sh2h" % name)
        output = self._get_activation(i2h + h2h, self._activation, name="%sout" % name)
        return output, [output]


class LSTMCell(BaseRNNCell):
    """Long short-term memory cell; gates i, f, c, o in that order of the fused weights.

    Args:
        num_hidden: number of units.
        prefix: name prefix (default 'lstm_').
        params: shared `RNNParams`, or None.
        forget_bias: the forget gate's part of i2h_bias starts at this value (through the
            variable's `__init__` attribute, `mx.init.LSTMBias`).
    """

    def __init__(self, num_hidden: int, prefix: str = "lstm_", params: RNNParams | None = None,
                 forget_bias: float = 1.0):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._hW = self.params.get("h2h_weight")
        self._iB = self.params.get("i2h_bias", init=lstm_bias_init(forget_bias))
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"},
                {"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        self._counter += 1
        name = "%st%d_" % (self._prefix, self._counter)
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden * 4, name="%si2h" % name)
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden * 4, name="%sh2h" % name)
        gates = i2h + h2h
        slice_gates = symbol.SliceChannel(gates, num_outputs=4, name="%sslice" % name)
        in_gate = symbol.Activation(slice_gates[0], act_type="sigmoid", name="%si" % name)
        forget_gate = symbol.Activation(slice_gates[1], act_type="sigmoid", name="%sf" % name)
        in_transform = symbol.Activation(slice_gates[2], act_type="tanh", name="%sc" % name)
        out_gate = symbol.Activation(slice_gates[3], act_type="sigmoid", name="%so" % name)
        next_c = symbol._plus(forget_gate * states[1], in_gate * in_transform, name="%sstate" % name)
        next_h = symbol._mul(out_gate, symbol.Activation(next_c, act_type="tanh"), name="%sout" % name)
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """Gated recurrent unit, cuDNN's variant: n = tanh(W_n x + b_n + r * (U_n h + c_n)).

    Args:
        num_hidden: number of units.
        prefix: name prefix (default 'gru_').
        params: shared `RNNParams`, or None.
    """

    def __init__(self, num_hidden: int, prefix: str = "gru_", params: RNNParams | None = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias")
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    def __call__(self, inputs, states):
        self._counter += 1
        # MXNet's names here have a doubled underscore: `gru_t0__i2h`.
        name = "%st%d_" % (self._prefix, self._counter)
        prev_state_h = states[0]
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden * 3, name="%s_i2h" % name)
        h2h = symbol.FullyConnected(data=prev_state_h, weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden * 3, name="%s_h2h" % name)
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name="%s_i2h_slice" % name)
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name="%s_h2h_slice" % name)
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name="%s_r_act" % name)
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name="%s_z_act" % name)
        next_h_tmp = symbol.Activation(i2h + reset_gate * h2h, act_type="tanh", name="%s_h_act" % name)
        next_h = symbol._plus((1. - update_gate) * next_h_tmp, update_gate * prev_state_h,
                              name="%sout" % name)
        return next_h, [next_h]
