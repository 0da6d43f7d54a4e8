"""Convolutional recurrent cells: ConvRNNCell, ConvLSTMCell, ConvGRUCell (MXNet 1.x's
`mx.rnn` graphs and names). The gates come from two convolutions, input-to-state (any
kernel, stride, pad, dilation) and state-to-state (an odd kernel padded to keep the
state's spatial size, stride 1); the state's shape is what the input-to-state
convolution makes of one step's `input_shape`."""
from __future__ import annotations

import functools

from .. import symbol
from ._base import BaseRNNCell, RNNError, RNNParams


def _leaky(inputs, **kwargs):
    return symbol.LeakyReLU(inputs, act_type="leaky", slope=0.2, **kwargs)


class BaseConvRNNCell(BaseRNNCell):
    """Shared parts of the convolutional cells (see the module docstring).

    Args:
        input_shape: one step's input shape, batch first (its batch size is ignored).
        num_hidden: channels of the state.
        h2h_kernel, h2h_dilate: the state-to-state convolution (odd kernel dims).
        i2h_kernel, i2h_stride, i2h_pad, i2h_dilate: the input-to-state convolution.
        i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
            h2h_bias_initializer: initialisers (or their names) of the four parameters.
        activation: an `Activation` act_type, or a callable `f(symbol, name=...)`
            (default: leaky ReLU with slope 0.2).
        prefix: name prefix; params: shared `RNNParams`, or None.
        conv_layout: 'NCHW' (or another layout the convolution takes).
    """

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1), i2h_kernel=(3, 3),
                 i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1), i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 activation=_leaky, prefix="", params: RNNParams | None = None, conv_layout="NCHW"):
        super().__init__(prefix=prefix, params=params)
        if any(k % 2 == 0 for k in h2h_kernel):
            raise RNNError(f"h2h_kernel must have odd dims, got {tuple(h2h_kernel)}")
        self._h2h = dict(kernel=tuple(h2h_kernel), dilate=tuple(h2h_dilate), stride=(1,) * len(h2h_kernel),
                         pad=tuple(d * (k - 1) // 2 for k, d in zip(h2h_kernel, h2h_dilate)))
        self._i2h = dict(kernel=tuple(i2h_kernel), stride=tuple(i2h_stride), pad=tuple(i2h_pad),
                         dilate=tuple(i2h_dilate))
        self._num_hidden = num_hidden
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        probe = symbol.Convolution(symbol.Variable("data"), num_filter=num_hidden, layout=conv_layout,
                                   **self._i2h)
        out = probe.infer_shape(data=self._input_shape)[1][0]
        self._state_shape = (0,) + tuple(out[1:])
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    def _state(self):
        return {"shape": self._state_shape, "__layout__": self._conv_layout}

    @property
    def state_info(self):
        return [self._state(), self._state()]

    def _conv_forward(self, inputs, states, name):
        n = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(data=inputs, weight=self._iW, bias=self._iB, num_filter=n,
                                 layout=self._conv_layout, name=f"{name}i2h", **self._i2h)
        h2h = symbol.Convolution(data=states[0], weight=self._hW, bias=self._hB, num_filter=n,
                                 layout=self._conv_layout, name=f"{name}h2h", **self._h2h)
        return i2h, h2h

    def _step_name(self):
        self._counter += 1
        return "%st%d_" % (self._prefix, self._counter)

    def __call__(self, inputs, states):
        raise NotImplementedError("BaseConvRNNCell is abstract: use ConvRNNCell, ConvLSTMCell or ConvGRUCell")


class ConvRNNCell(BaseConvRNNCell):
    """out = activation(conv_i2h(x) + conv_h2h(h)); one state. See BaseConvRNNCell."""

    __init__ = functools.partialmethod(BaseConvRNNCell.__init__, prefix="ConvRNN_")

    @property
    def _gate_names(self):
        return ("",)

    @property
    def state_info(self):
        return [self._state()]

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM (Shi et al., NIPS 2015): gates i, f, c, o from the two
    convolutions; the activation replaces tanh on the candidate and the output state."""

    __init__ = functools.partialmethod(BaseConvRNNCell.__init__, prefix="ConvLSTM_")

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, axis=self._conv_layout.find("C"),
                                    name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        candidate = self._get_activation(gates[2], self._activation, name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._plus(forget_gate * states[1], in_gate * candidate, name=f"{name}state")
        next_h = symbol._mul(out_gate, self._get_activation(next_c, self._activation), name=f"{name}out")
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU: reset and update gates from the two convolutions, the candidate
    activation(i2h_n + r * h2h_n), out = (1 - z) * candidate + z * h."""

    __init__ = functools.partialmethod(BaseConvRNNCell.__init__, prefix="ConvGRU_")

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    @property
    def state_info(self):
        return [self._state()]

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = self._get_activation(i2h + reset_gate * h2h, self._activation, name=f"{name}_h_act")
        next_h = symbol._plus((1. - update_gate) * candidate, update_gate * states[0], name=f"{name}out")
        return next_h, [next_h]
