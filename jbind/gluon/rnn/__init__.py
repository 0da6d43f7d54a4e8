"""`mx.gluon.rnn`: the fused RNN, LSTM and GRU layers (the cells are not here yet)."""
from .rnn_layer import GRU, LSTM, RNN  # noqa: F401

__all__ = ["RNN", "LSTM", "GRU"]
