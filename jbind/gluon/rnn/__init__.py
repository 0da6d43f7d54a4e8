"""`mx.gluon.rnn`: the fused RNN, LSTM and GRU layers and the recurrent cells."""
from ._cell_containers import (BidirectionalCell, DropoutCell, HybridSequentialRNNCell, ModifierCell,  # noqa: F401
                               ResidualCell, SequentialRNNCell, ZoneoutCell)
from .rnn_cell import GRUCell, HybridRecurrentCell, LSTMCell, RecurrentCell, RNNCell  # noqa: F401
from .rnn_layer import GRU, LSTM, RNN  # noqa: F401

__all__ = ["RNN", "LSTM", "GRU", "RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell",
           "SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell",
           "ResidualCell", "BidirectionalCell"]
