"""Gluon's cell containers and modifiers: SequentialRNNCell, HybridSequentialRNNCell,
DropoutCell, ModifierCell, ZoneoutCell, ResidualCell, BidirectionalCell."""
from __future__ import annotations

import numbers

from ... import symbol
from ...ndarray.ndarray import NDArray
from ...symbol.symbol import Symbol
from .._util import check, indent
from .rnn_cell import (HybridRecurrentCell, RecurrentCell, cells_begin_state, cells_state_info, format_sequence,
                       get_begin_state, mask_sequence_variable_length, reverse_sequences)

__all__ = ["SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell",
           "ResidualCell", "BidirectionalCell"]

_MODIFIED = ("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be called directly. Call the "
             "modifier cell instead.")


class _Stacked:
    """What the sequential cells share: cells run one after another, states concatenated."""

    def __repr__(self):
        mods = "\n".join(f"({i}): {indent(repr(m), 2)}" for i, m in self._children.items())
        return f"{self.__class__.__name__}(\n{mods}\n)"

    def add(self, cell):
        """Append a cell."""
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        check(not self._modified, _MODIFIED)
        return cells_begin_state(self._children.values(), **kwargs)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, p = [], 0
        for cell in self._children.values():
            check(not isinstance(cell, BidirectionalCell), "a BidirectionalCell cannot be stepped; use unroll")
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.append(state)
        return inputs, sum(next_states, [])

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        self.reset()
        inputs, _, F, batch_size = format_sequence(length, inputs, layout, None)
        begin_state = get_begin_state(self, F, begin_state, inputs, batch_size)
        cells = list(self._children.values())
        next_states, p = [], 0
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n], layout=layout,
                                         merge_outputs=None if i < len(cells) - 1 else merge_outputs,
                                         valid_length=valid_length)
            p += n
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)


class SequentialRNNCell(_Stacked, RecurrentCell):
    """Stacks cells (any Blocks)."""

    def hybrid_forward(self, *args, **kwargs):
        raise NotImplementedError


class HybridSequentialRNNCell(_Stacked, HybridRecurrentCell):
    """Stacks hybrid cells."""

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Dropout on the inputs at each step (no states)."""

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        check(isinstance(rate, numbers.Number), "rate must be a number")
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return f"{self.__class__.__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return "dropout"

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes, name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        self.reset()
        inputs, _, F, _ = format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, (NDArray, Symbol)):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """Wraps `base_cell` (which may then be used only through this cell)."""

    def __init__(self, base_cell):
        check(not base_cell._modified, f"Cell {base_cell.name} is already modified. One cell cannot be modified "
              "twice")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=symbol.zeros, **kwargs):
        check(not self._modified, _MODIFIED)
        self.base_cell._modified = False
        begin = self.base_cell.begin_state(func=func, **kwargs)
        self.base_cell._modified = True
        return begin

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_cell})"


class ZoneoutCell(ModifierCell):
    """Keeps each output / state unit from the previous step with probability
    `zoneout_outputs` / `zoneout_states` (in training; the new value otherwise)."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        check(not isinstance(base_cell, BidirectionalCell), "BidirectionalCell doesn't support zoneout since it "
              "doesn't support step. Please add ZoneoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return (f"{self.__class__.__name__}(p_out={self.zoneout_outputs}, p_state={self.zoneout_states}, "
                f"{self.base_cell})")

    def _alias(self):
        return "zoneout"

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        p_out, p_state = self.zoneout_outputs, self.zoneout_states
        next_output, next_states = self.base_cell(inputs, states)

        def mask(p, like):
            return F.Dropout(F.ones_like(like), p=p)
        prev = self._prev_output if self._prev_output is not None else F.zeros_like(next_output)
        output = F.where(mask(p_out, next_output), next_output, prev) if p_out != 0. else next_output
        if p_state != 0.:
            next_states = [F.where(mask(p_state, new), new, old) for new, old in zip(next_states, states)]
        self._prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Adds the step's input to the base cell's output."""

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        return F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd"), states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        self.reset()
        self.base_cell._modified = False
        outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state, layout=layout,
                                                merge_outputs=merge_outputs, valid_length=valid_length)
        self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, (NDArray, Symbol))
        inputs, axis, F, _ = format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = mask_sequence_variable_length(F, inputs, length, valid_length, axis, merge_outputs)
        if merge_outputs:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(i, j) for i, j in zip(outputs, inputs)], states


class BidirectionalCell(HybridRecurrentCell):
    """Runs `l_cell` forward and `r_cell` backward in time; outputs concatenated."""

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def __repr__(self):
        return (f"{self.__class__.__name__}(forward={self._children['l_cell']}, "
                f"backward={self._children['r_cell']})")

    def state_info(self, batch_size=0):
        return cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        check(not self._modified, _MODIFIED)
        return cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None, valid_length=None):
        self.reset()
        inputs, axis, F, batch_size = format_sequence(length, inputs, layout, False)
        reversed_inputs = list(reverse_sequences(inputs, length, valid_length))
        states = get_begin_state(self, F, begin_state, inputs, batch_size)
        l_cell, r_cell = self._children.values()
        n_l = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_l], layout=layout,
                                            merge_outputs=merge_outputs, valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs, begin_state=states[n_l:],
                                            layout=layout, merge_outputs=False, valid_length=valid_length)
        reversed_r = reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, (NDArray, Symbol))
            l_outputs, _, _, _ = format_sequence(None, l_outputs, layout, merge_outputs)
            reversed_r, _, _, _ = format_sequence(None, reversed_r, layout, merge_outputs)
        if merge_outputs:
            reversed_r = F.stack(*reversed_r, axis=axis) if isinstance(reversed_r, list) else reversed_r
            outputs = F.Concat(l_outputs, reversed_r, dim=2, name=f"{self._output_prefix}out")
        else:
            outputs = [F.Concat(lo, ro, dim=1, name=f"{self._output_prefix}t{i}")
                       for i, (lo, ro) in enumerate(zip(l_outputs, reversed_r))]
        if valid_length is not None:
            outputs = mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, l_states + r_states
