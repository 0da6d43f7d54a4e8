"""Gluon's recurrent cells (one step each, `unroll` for a sequence): RNNCell, LSTMCell,
GRUCell, and the containers and modifiers in `_cell_containers`. Node names follow
MXNet's (`t{step}_i2h`, ...), so an unrolled cell is what jbind's loop lowering expects."""
from __future__ import annotations

from ... import ndarray, symbol
from ...ndarray.ndarray import NDArray
from ...symbol.symbol import Symbol
from .._util import check
from ..block import Block, HybridBlock
from ..nn import LeakyReLU

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell"]


def _as_list(x):
    return x if isinstance(x, list) else [x]


def cells_state_info(cells, batch_size):
    return sum([c.state_info(batch_size) for c in cells], [])


def cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def get_begin_state(cell, F, begin_state, inputs, batch_size):
    """`begin_state`, or the cell's zero states for `inputs` (on their context)."""
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        ctx = inputs.context if isinstance(inputs, NDArray) else inputs[0].context
        with ctx:
            return cell.begin_state(func=F.zeros, batch_size=batch_size)
    return cell.begin_state(func=F.zeros, batch_size=batch_size)


def format_sequence(length, inputs, layout, merge, in_layout=None):
    """(inputs as one array if `merge` else a list of steps, time axis, F, batch size)."""
    check(inputs is not None, "unroll(inputs=None) has been deprecated. Please create input variables outside "
          "unroll.")
    axis, batch_axis = layout.find("T"), layout.find("N")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    batch_size = 0
    if isinstance(inputs, Symbol):
        F = symbol
        if merge is False:
            check(len(inputs.list_outputs()) == 1, "unroll doesn't allow grouped symbol as input. Please convert "
                  "to list with list(inputs) first or let unroll handle splitting.")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    elif isinstance(inputs, NDArray):
        F = ndarray
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            check(length is None or length == inputs.shape[in_axis], f"unroll: length {length} but the inputs "
                  f"have {inputs.shape[in_axis]} steps")
            inputs = _as_list(ndarray.split(inputs, axis=in_axis, num_outputs=inputs.shape[in_axis],
                                            squeeze_axis=1))
    else:
        check(length is None or len(inputs) == length, f"unroll: length {length} but {len(inputs)} inputs")
        if isinstance(inputs[0], Symbol):
            F = symbol
        else:
            F = ndarray
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, (NDArray, Symbol)) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    """Zero the steps past each sequence's `valid_length`."""
    if not isinstance(data, (NDArray, Symbol)):
        data = F.stack(*data, axis=time_axis)
    out = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True, axis=time_axis)
    return out if merge else _as_list(F.split(out, num_outputs=length, axis=time_axis, squeeze_axis=True))


def reverse_sequences(sequences, unroll_step, valid_length=None):
    """The steps in reverse order (each sequence's first `valid_length` steps reversed)."""
    F = symbol if isinstance(sequences[0], Symbol) else ndarray
    if valid_length is None:
        return list(reversed(sequences))
    rev = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length, use_sequence_length=True)
    if unroll_step > 1 or F is symbol:
        return list(F.split(rev, axis=0, num_outputs=unroll_step, squeeze_axis=True))  # a Symbol's outputs
    return [rev[0]]


class RecurrentCell(Block):
    """Base of the cells: `state_info`, `begin_state`, `unroll`, a step counter."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Restart step numbering (before unrolling a new sequence)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        raise NotImplementedError()

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial states made by `func` (default zeros), named '{prefix}begin_state_{i}'."""
        check(not self._modified, "After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be "
              "called directly. Call the modifier cell instead.")
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info or {})
            info.update(kwargs)
            info = {k: v for k, v in info.items() if not k.startswith("__")}  # layout hints
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Run `length` steps over `inputs` (an array with layout `layout`, or a list of
        steps); returns (outputs, last states). With `valid_length`, outputs past each
        sequence's length are zero and its states are those of its last valid step."""
        self.reset()
        inputs, axis, F, batch_size = format_sequence(length, inputs, layout, False)
        states = get_begin_state(self, F, begin_state, inputs, batch_size)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*steps, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True, axis=0) for steps in zip(*all_states)]
            outputs = mask_sequence_variable_length(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        func = {"tanh": F.tanh, "relu": F.relu, "sigmoid": F.sigmoid, "softsign": F.softsign}.get(activation)
        if func:
            return func(inputs, **kwargs)
        if isinstance(activation, str):
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type="leaky", slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A cell whose step is a `hybrid_forward`."""

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class _GatedCell(HybridRecurrentCell):
    """Parameters 'i2h_weight', 'h2h_weight', 'i2h_bias', 'h2h_bias' for `gates` gates."""

    def __init__(self, hidden_size, gates, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        n = gates * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(n, input_size), init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(n, hidden_size), init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(n,), init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(n,), init=h2h_bias_initializer, allow_deferred_init=True)

    def _projections(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias, n, prefix):
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=n, name=prefix + "i2h")
        h2h = F.FullyConnected(data=h, weight=h2h_weight, bias=h2h_bias, num_hidden=n, name=prefix + "h2h")
        return i2h, h2h

    def __repr__(self):
        shape = self.i2h_weight.shape
        act = f", {self._activation}" if isinstance(self, RNNCell) else ""
        return f"{self.__class__.__name__}({shape[1] if shape[1] else None} -> {shape[0]}{act})"

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]


class RNNCell(_GatedCell):
    """Elman cell: h' = activation(W_i x + b_i + W_h h + b_h)."""

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None,
                 params=None):
        super().__init__(hidden_size, 1, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def _alias(self):
        return "rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        p = f"t{self._counter}_"
        i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias,
                                     self._hidden_size, p)
        out = self._get_activation(F, F.elemwise_add(i2h, h2h, name=p + "plus0"), self._activation, name=p + "out")
        return out, [out]


class LSTMCell(_GatedCell):
    """LSTM cell; gates in MXNet's order (input, forget, cell, output); states [h, c]."""

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None,
                 activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, 4, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"} for _ in range(2)]

    def _alias(self):
        return "lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        p = f"t{self._counter}_"
        i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias, h2h_bias,
                                     4 * self._hidden_size, p)
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h, name=p + "plus0"), num_outputs=4, name=p + "slice")
        rec, act = self._recurrent_activation, self._activation
        in_gate = self._get_activation(F, gates[0], rec, name=p + "i")
        forget_gate = self._get_activation(F, gates[1], rec, name=p + "f")
        in_transform = self._get_activation(F, gates[2], act, name=p + "c")
        out_gate = self._get_activation(F, gates[3], rec, name=p + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=p + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=p + "mul1"), name=p + "state")
        next_h = F.elemwise_mul(out_gate, F.Activation(next_c, act_type=act, name=p + "activation0"),
                                name=p + "out")
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """GRU cell (MXNet's variant: the reset gate scales the hidden projection)."""

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, 3, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, input_size, prefix, params)

    def _alias(self):
        return "gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        p = f"t{self._counter}_"
        h = states[0]
        i2h, h2h = self._projections(F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias,
                                     3 * self._hidden_size, p)
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=p + "i2h_slice")
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=p + "h2h_slice")
        reset = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=p + "plus0"), act_type="sigmoid", name=p + "r_act")
        update = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=p + "plus1"), act_type="sigmoid", name=p + "z_act")
        cand = F.Activation(F.elemwise_add(i2h, F.elemwise_mul(reset, h2h, name=p + "mul0"), name=p + "plus2"),
                            act_type="tanh", name=p + "h_act")
        ones = F.ones_like(update, name=p + "ones_like0")
        next_h = F.elemwise_add(F.elemwise_mul(F.elemwise_sub(ones, update, name=p + "minus0"), cand,
                                               name=p + "mul1"),
                                F.elemwise_mul(update, h, name=p + "mul20"), name=p + "out")
        return next_h, [next_h]
