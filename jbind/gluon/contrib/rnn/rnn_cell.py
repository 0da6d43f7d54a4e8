"""`gluon.contrib.rnn`'s LSTMPCell and VariationalDropoutCell, as MXNet 1.9.1's."""
from __future__ import annotations

from ....ndarray.ndarray import NDArray
from ....symbol.symbol import Symbol
from ..._util import check
from ...rnn._cell_containers import BidirectionalCell, ModifierCell, SequentialRNNCell
from ...rnn.rnn_cell import (HybridRecurrentCell, format_sequence, get_begin_state,
                             mask_sequence_variable_length)

__all__ = ["VariationalDropoutCell", "LSTMPCell"]


class VariationalDropoutCell(ModifierCell):
    """Dropout on `base_cell`'s inputs, first state and outputs with one mask per sequence
    (drawn at the first step after `reset`, reused at every step), as in Gal & Ghahramani."""

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        check(not drop_states or not isinstance(base_cell, BidirectionalCell),
              "BidirectionalCell doesn't support variational state dropout. Please add VariationalDropoutCell to "
              "the cells underneath instead.")
        check(not drop_states or not isinstance(base_cell, SequentialRNNCell)
              or not any(isinstance(c, BidirectionalCell) for c in base_cell._children.values()),
              "Bidirectional SequentialRNNCell doesn't support variational state dropout. Please add "
              "VariationalDropoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.drop_inputs, self.drop_states, self.drop_outputs = drop_inputs, drop_states, drop_outputs
        self._masks = {}

    def _alias(self):
        return "vardrop"

    def reset(self):
        super().reset()
        self._masks = {}

    def _mask(self, F, which, p, like):
        if which not in self._masks:
            self._masks[which] = F.Dropout(F.ones_like(like), p=p)
        return self._masks[which]

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states:
            states = [states[0] * self._mask(F, "states", self.drop_states, states[0])] + list(states[1:])
        if self.drop_inputs:
            inputs = inputs * self._mask(F, "inputs", self.drop_inputs, inputs)
        output, next_states = self.base_cell(inputs, states)
        if self.drop_outputs:
            output = output * self._mask(F, "outputs", self.drop_outputs, output)
        return output, next_states

    def __repr__(self):
        return f"{self.__class__.__name__}(p_out = {self.drop_outputs}, p_state = {self.drop_states})"

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        """Without state dropout, the base cell unrolls the whole sequence at once, with
        input and output masks shared along the time axis."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs, valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = format_sequence(length, inputs, layout, True)
        states = get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs, states, layout, merge_outputs=True,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, (NDArray, Symbol))
        outputs, _, _, _ = format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    """LSTM cell whose output (and recurrent state h) is the hidden vector projected to
    `projection_size` by 'h2r_weight' (no bias); states [r, c]."""

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 h2r_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 input_size=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size, self._input_size, self._projection_size = hidden_size, input_size, projection_size
        n = 4 * hidden_size
        get = self.params.get
        self.i2h_weight = get("i2h_weight", shape=(n, input_size), init=i2h_weight_initializer,
                              allow_deferred_init=True)
        self.h2h_weight = get("h2h_weight", shape=(n, projection_size), init=h2h_weight_initializer,
                              allow_deferred_init=True)
        self.h2r_weight = get("h2r_weight", shape=(projection_size, hidden_size), init=h2r_weight_initializer,
                              allow_deferred_init=True)
        self.i2h_bias = get("i2h_bias", shape=(n,), init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = get("h2h_bias", shape=(n,), init=h2h_bias_initializer, allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstmp"

    def __repr__(self):
        shape = self.i2h_weight.shape
        return (f"{self.__class__.__name__}({shape[1] if shape[1] else None} -> {shape[0]} -> "
                f"{self.h2r_weight.shape[0]})")

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias, h2h_bias):
        p = f"t{self._counter}_"
        n = 4 * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=n, name=p + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=n, name=p + "h2h")
        g = F.SliceChannel(F.elemwise_add(i2h, h2h, name=p + "plus0"), num_outputs=4, name=p + "slice")
        in_gate = F.Activation(g[0], act_type="sigmoid", name=p + "i")
        forget_gate = F.Activation(g[1], act_type="sigmoid", name=p + "f")
        in_transform = F.Activation(g[2], act_type="tanh", name=p + "c")
        out_gate = F.Activation(g[3], act_type="sigmoid", name=p + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=p + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=p + "mul1"), name=p + "state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh", name=p + "activation0"),
                                name=p + "hidden")
        next_r = F.FullyConnected(data=hidden, weight=h2r_weight, num_hidden=self._projection_size, no_bias=True,
                                  name=p + "out")
        return next_r, [next_r, next_c]


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout="TNC", valid_length=None):
    """Run `cell` over the time axis of `inputs` with `F.contrib.foreach` (one loop in the
    graph rather than one copy of the cell per step), as MXNet 1.9.1's.

    `inputs` is (length, batch, ...) for layout 'TNC' or (batch, length, ...) for 'NTC';
    `valid_length` (batch,), if given, keeps each sequence's state from its last valid
    step and zeroes the outputs past it. Returns (outputs in `layout`, final states).
    """
    inputs, axis, F, _ = format_sequence(0, inputs, layout, True)
    axes = None
    if axis != 0:  # foreach walks axis 0
        axes = list(range(len(layout)))
        axes[0], axes[axis] = axes[axis], axes[0]
        inputs = F.transpose(inputs, axes=axes)
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(axis,))
    states = begin_state
    if valid_length is None:
        def step(x, states):
            return cell(x, states)
    else:
        states = list(states) + [F.zeros((1,))]  # the step number rides along as a last state

        def step(x, states):
            *cell_states, t = states
            out, new = cell(x, cell_states)
            alive = F.broadcast_greater(valid_length, t)
            new = [F.where(alive, n, s) for n, s in zip(new, cell_states)]
            return out, new + [t + 1]
    outputs, states = F.contrib.foreach(step, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(axis,))
    if axes is not None:
        outputs = F.transpose(outputs, axes=axes)
    if valid_length is None:
        return outputs, states
    outputs = F.SequenceMask(outputs, sequence_length=valid_length, use_sequence_length=True, axis=axis)
    return outputs, states[:-1]
