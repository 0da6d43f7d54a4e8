"""Convolutional recurrent cells, as MXNet 1.9.1's `gluon.contrib.rnn`: the i2h and h2h
projections of RNN / LSTM / GRU cells are convolutions over 1, 2 or 3 spatial axes.

`input_shape` is one step's shape without the batch axis, in `conv_layout` (e.g. (C, W) for
'NCW'); a channel count of 0 is inferred at the first call. The h2h kernel must be odd: it is
padded so the state keeps its spatial size, which is the i2h convolution's output size."""
from __future__ import annotations

import numbers

from ..._util import check
from ...rnn.rnn_cell import HybridRecurrentCell

__all__ = [f"Conv{d}D{kind}Cell" for kind in ("RNN", "LSTM", "GRU") for d in (1, 2, 3)]


def _tuple(v, dims, what):
    if isinstance(v, numbers.Integral):
        return (int(v),) * dims
    check(len(v) == dims, f"For {dims}D convolution, the convolution settings can only be either int or "
          f"list/tuple of length {dims}; {what} is {v!r}")
    return tuple(int(x) for x in v)


_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


class _ConvCell(HybridRecurrentCell):
    """What the convolutional cells share: shapes, parameters, the two convolutions.
    Paddings default to 0, dilations to 1 and the layout to channels first."""
    _gates = 1
    _states = 1
    _dims = 0

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad=0, i2h_dilate=1,
                 h2h_dilate=1, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", conv_layout=None, activation="tanh",
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        dims = self._dims
        conv_layout = conv_layout or _LAYOUTS[dims]
        self._hidden_channels, self._conv_layout, self._activation = hidden_channels, conv_layout, activation
        self._i2h_kernel = _tuple(i2h_kernel, dims, "i2h_kernel")
        self._i2h_pad = _tuple(i2h_pad, dims, "i2h_pad")
        self._i2h_dilate = _tuple(i2h_dilate, dims, "i2h_dilate")
        self._h2h_kernel = _tuple(h2h_kernel, dims, "h2h_kernel")
        self._h2h_dilate = _tuple(h2h_dilate, dims, "h2h_dilate")
        check(all(k % 2 == 1 for k in self._h2h_kernel), f"Only support odd number, get h2h_kernel= {h2h_kernel}")
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate, self._h2h_kernel))
        self._stride = (1,) * dims
        check(len(input_shape) == dims + 1, f"input_shape {tuple(input_shape)} must have {dims + 1} entries "
              f"(channels and {dims} spatial sizes) in layout {conv_layout}")
        self._channel_axis = conv_layout.find("C")
        first = self._channel_axis == 1
        in_channels = input_shape[0] if first else input_shape[-1]
        space = input_shape[1:] if first else input_shape[:-1]
        out_space = tuple((x + 2 * p - d * (k - 1) - 1) + 1 if x else 0 for x, k, p, d in
                          zip(space, self._i2h_kernel, self._i2h_pad, self._i2h_dilate))
        total = hidden_channels * self._gates
        if first:
            i2h_shape = (total, in_channels) + self._i2h_kernel
            h2h_shape = (total, hidden_channels) + self._h2h_kernel
            self._state_shape = (hidden_channels,) + out_space
        else:
            i2h_shape = (total,) + self._i2h_kernel + (in_channels,)
            h2h_shape = (total,) + self._h2h_kernel + (hidden_channels,)
            self._state_shape = out_space + (hidden_channels,)
        self.i2h_weight = self.params.get("i2h_weight", shape=i2h_shape, init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=h2h_shape, init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(total,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(total,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def __repr__(self):
        shape = self.i2h_weight.shape
        cin = shape[1 if self._channel_axis == 1 else -1]
        return (f"{self.__class__.__name__}({cin if cin else None} -> {shape[0]}, {self._activation}, "
                f"{self._conv_layout})")

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size,) + self._state_shape, "__layout__": self._conv_layout}
                for _ in range(self._states)]

    def _convs(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias, p):
        n = self._hidden_channels * self._gates
        i2h = F.Convolution(data=inputs, weight=i2h_weight, bias=i2h_bias, num_filter=n, kernel=self._i2h_kernel,
                            stride=self._stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                            layout=self._conv_layout, name=p + "i2h")
        h2h = F.Convolution(data=h, weight=h2h_weight, bias=h2h_bias, num_filter=n, kernel=self._h2h_kernel,
                            stride=self._stride, pad=self._h2h_pad, dilate=self._h2h_dilate,
                            layout=self._conv_layout, name=p + "h2h")
        return i2h, h2h

    def _split(self, F, x, name):
        return F.SliceChannel(x, num_outputs=self._gates, axis=self._channel_axis, name=name)


class _ConvRNN(_ConvCell):
    def _alias(self):
        return "conv_rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        p = f"t{self._counter}_"
        i2h, h2h = self._convs(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias, p)
        out = self._get_activation(F, F.elemwise_add(i2h, h2h, name=p + "plus0"), self._activation, name=p + "out")
        return out, [out]


class _ConvLSTM(_ConvCell):
    _gates = 4
    _states = 2

    def _alias(self):
        return "conv_lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        p = f"t{self._counter}_"
        i2h, h2h = self._convs(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias, p)
        g = self._split(F, F.elemwise_add(i2h, h2h, name=p + "plus0"), p + "slice")
        in_gate = F.Activation(g[0], act_type="sigmoid", name=p + "i")
        forget_gate = F.Activation(g[1], act_type="sigmoid", name=p + "f")
        in_transform = self._get_activation(F, g[2], self._activation, name=p + "c")
        out_gate = F.Activation(g[3], act_type="sigmoid", name=p + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=p + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=p + "mul1"), name=p + "state")
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation, name=p + "act0"),
                                name=p + "out")
        return next_h, [next_h, next_c]


class _ConvGRU(_ConvCell):
    _gates = 3

    def _alias(self):
        return "conv_gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        p = f"t{self._counter}_"
        h = states[0]
        i2h, h2h = self._convs(F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias, p)
        i2h_r, i2h_z, i2h = self._split(F, i2h, p + "i2h_slice")
        h2h_r, h2h_z, h2h = self._split(F, h2h, p + "h2h_slice")
        reset = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=p + "plus0"), act_type="sigmoid", name=p + "r_act")
        update = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=p + "plus1"), act_type="sigmoid", name=p + "z_act")
        cand = self._get_activation(F, F.elemwise_add(i2h, F.elemwise_mul(reset, h2h, name=p + "mul0"),
                                                      name=p + "plus2"), self._activation, name=p + "h_act")
        keep = F.elemwise_sub(F.ones_like(update, name=p + "ones_like0"), update, name=p + "minus0")
        next_h = F.elemwise_add(F.elemwise_mul(keep, cand, name=p + "mul1"),
                                F.elemwise_mul(update, h, name=p + "mul2"), name=p + "out")
        return next_h, [next_h]


_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _cell(base, kind: str, dims: int):
    """MXNet's `Conv{dims}D{kind}Cell`: `base` at `dims` spatial dimensions."""
    name = f"Conv{dims}D{kind}Cell"
    doc = (f"{dims}D convolutional {kind} cell; `input_shape` is one step's shape in `conv_layout` "
           f"('{_LAYOUTS[dims]}' by default).")
    return type(name, (base,), {"_dims": dims, "__doc__": doc, "__module__": __name__, "__qualname__": name})


Conv1DRNNCell, Conv2DRNNCell, Conv3DRNNCell = (_cell(_ConvRNN, "RNN", d) for d in (1, 2, 3))
Conv1DLSTMCell, Conv2DLSTMCell, Conv3DLSTMCell = (_cell(_ConvLSTM, "LSTM", d) for d in (1, 2, 3))
Conv1DGRUCell, Conv2DGRUCell, Conv3DGRUCell = (_cell(_ConvGRU, "GRU", d) for d in (1, 2, 3))
