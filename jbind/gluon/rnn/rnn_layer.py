"""Gluon's fused recurrent layers RNN, LSTM and GRU: one `RNN` op over the parameters
flattened and joined by `_rnn_param_concat`, as MXNet 1.9.1 builds them (so a model
exported by MXNet and one exported by jbind have the same graph and names).

Parameters are '{l|r}{layer}_{i2h|h2h}_{weight|bias}' (plus '_h2r_weight' with an LSTM
projection); `save_parameters` writes them under MXNet's '_unfused.*' names."""
from __future__ import annotations

import re

from ... import ndarray, symbol
from ...ndarray.ndarray import NDArray
from .._util import GluonValueError, check
from ..block import HybridBlock

__all__ = ["RNN", "LSTM", "GRU"]

_PARAM = re.compile(r"(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z")


class _RNNLayer(HybridBlock):
    """What RNN, LSTM and GRU share: parameters, begin states, the fused call."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                 mode, projection_size, h2r_weight_initializer, lstm_state_clip_min, lstm_state_clip_max,
                 lstm_state_clip_nan, dtype, use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        check(layout in ("TNC", "NTC"), f"Invalid layout {layout}; must be one of ['TNC' or 'NTC']")
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self._inits = {"i2h_weight_initializer": i2h_weight_initializer,
                       "h2h_weight_initializer": h2h_weight_initializer,
                       "i2h_bias_initializer": i2h_bias_initializer, "h2h_bias_initializer": h2h_bias_initializer}
        self.skip_states = None
        self._gates = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}[mode]
        ng, ni, nh, npj = self._gates, input_size, hidden_size, self._projection_size
        for i in range(num_layers):
            for d in ["l", "r"][:self._dir]:
                self._register_param(f"{d}{i}_i2h_weight", (ng * nh, ni), i2h_weight_initializer, dtype)
                self._register_param(f"{d}{i}_h2h_weight", (ng * nh, npj or nh), h2h_weight_initializer, dtype)
                self._register_param(f"{d}{i}_i2h_bias", (ng * nh,), i2h_bias_initializer, dtype)
                self._register_param(f"{d}{i}_h2h_bias", (ng * nh,), h2h_bias_initializer, dtype)
                if npj:
                    self._register_param(f"{d}{i}_h2r_weight", (npj, nh), h2r_weight_initializer, dtype)
            ni = (npj or nh) * self._dir

    def _register_param(self, name, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self):
        s = f"{self.__class__.__name__}("
        shape = self.l0_i2h_weight.shape
        s += f"{shape[1] if shape[1] else None} -> {shape[0] // self._gates}, {self._layout}"
        if self._num_layers != 1:
            s += f", num_layers={self._num_layers}"
        if self._dropout != 0:
            s += f", dropout={self._dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        return s + ")"

    def _collect_params_with_prefix(self, prefix=""):
        """MXNet's file names for these parameters: '_unfused.{layer}.{gate}_{kind}' (and
        '_unfused.{layer}.{l|r}_cell.{gate}_{kind}' when bidirectional)."""
        if prefix:
            prefix += "."
        bidirectional = any(_PARAM.match(k).group(1) == "r" for k in self._reg_params)

        def convert(key):
            d, layer, g, t = _PARAM.match(key).groups()
            return f"_unfused.{layer}.{d}_cell.{g}_{t}" if bidirectional else f"_unfused.{layer}.{g}_{t}"
        ret = {prefix + convert(k): v for k, v in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size=0):
        raise NotImplementedError

    def _unfuse(self):
        """The same network as a HybridSequentialRNNCell of cells ('l{i}_' / 'r{i}_', a
        BidirectionalCell per layer when bidirectional, a DropoutCell between layers) that
        shares this layer's Parameters."""
        check(not self._projection_size, "_unfuse does not support projection layer yet!")
        check(self._lstm_state_clip_min is None and self._lstm_state_clip_max is None,
              "_unfuse does not support state clipping yet!")
        from . import _cell_containers as cc, rnn_cell

        def make(prefix, input_size):
            if self._mode.startswith("rnn_"):
                return rnn_cell.RNNCell(self._hidden_size, activation=self._mode[4:], input_size=input_size,
                                        prefix=prefix, **self._inits)
            cls = rnn_cell.LSTMCell if self._mode == "lstm" else rnn_cell.GRUCell
            return cls(self._hidden_size, input_size=input_size, prefix=prefix, **self._inits)

        stack = cc.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                if self._dir == 2:
                    stack.add(cc.BidirectionalCell(make(f"l{i}_", ni), make(f"r{i}_", ni)))
                else:
                    stack.add(make(f"l{i}_", ni))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(cc.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial states (zeros by default), one per `state_info` entry."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info = dict(info or {})
            info.update(kwargs)
            if func is symbol.zeros:  # layout hints are attributes in MXNet; jbind's creators take none
                info = {k: v for k, v in info.items() if not k.startswith("__")}
            states.append(func(name=f"{self.prefix}h0_{i}", **info))
        return states

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, NDArray):
                batch = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=symbol.zeros)
        if isinstance(states, NDArray):
            states = [states]
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        if F is ndarray:
            batch = inputs.shape[self._layout.find("N")]
            for state, info in zip(states, self.state_info(batch)):
                if state.shape != info["shape"]:
                    raise GluonValueError(f"Invalid recurrent state shape. Expecting {info['shape']!s}, got "
                                          f"{state.shape!s}.")
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        return out[0] if self.skip_states else out

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        gates = ["i2h", "h2h", "h2r"] if self._projection_size else ["i2h", "h2h"]
        params = [kwargs[f"{d}{layer}_{g}_{t}"].reshape(-1)
                  for t in ["weight", "bias"] for layer in range(self._num_layers)
                  for d in ["l", "r"][:self._dir] for g in gates if g != "h2r" or t != "bias"]
        params = F._rnn_param_concat(*params, dim=0)
        rnn_args = list(states) + ([sequence_length] if self._use_sequence_length else [])
        extra = {}
        if self._projection_size is not None:
            extra["projection_size"] = self._projection_size
        if self._lstm_state_clip_min is not None:
            extra["lstm_state_clip_min"] = self._lstm_state_clip_min
        if self._lstm_state_clip_max is not None:
            extra["lstm_state_clip_max"] = self._lstm_state_clip_max
        rnn = F.RNN(inputs, params, *rnn_args, use_sequence_length=self._use_sequence_length,
                    state_size=self._hidden_size, num_layers=self._num_layers, bidirectional=self._dir == 2,
                    p=self._dropout, state_outputs=True, mode=self._mode,
                    lstm_state_clip_nan=self._lstm_state_clip_nan, **extra)
        outputs, states = (rnn[0], [rnn[1], rnn[2]]) if self._mode == "lstm" else (rnn[0], [rnn[1]])
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs, states


def _state(layer, batch_size, size):
    return {"shape": (layer._num_layers * layer._dir, batch_size, size), "__layout__": "LNC",
            "dtype": layer._dtype}


class RNN(_RNNLayer):
    """Elman RNN with `activation` 'relu' or 'tanh' (the fused `RNN` op, mode 'rnn_<act>')."""

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0, bidirectional=False,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                         "rnn_" + activation, None, None, None, None, False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [_state(self, batch_size, self._hidden_size)]


class LSTM(_RNNLayer):
    """Long short-term memory (the fused `RNN` op, mode 'lstm'); states [h, c]."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False, input_size=0,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", projection_size=None, h2r_weight_initializer=None,
                 state_clip_min=None, state_clip_max=None, state_clip_nan=False, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                         "lstm", projection_size, h2r_weight_initializer, state_clip_min, state_clip_max,
                         state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size=0):
        h = self._projection_size or self._hidden_size
        return [_state(self, batch_size, h), _state(self, batch_size, self._hidden_size)]


class GRU(_RNNLayer):
    """Gated recurrent unit (the fused `RNN` op, mode 'gru')."""

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False, input_size=0,
                 i2h_weight_initializer=None, h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                         "gru", None, None, None, None, False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [_state(self, batch_size, self._hidden_size)]
