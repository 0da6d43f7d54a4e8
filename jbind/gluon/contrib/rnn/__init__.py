"""`mx.gluon.contrib.rnn`: convolutional recurrent cells (Conv{1,2,3}D{RNN,LSTM,GRU}Cell),
LSTMPCell (an LSTM with a projected output) and VariationalDropoutCell."""
from . import conv_rnn_cell, rnn_cell  # noqa: F401
from .conv_rnn_cell import *  # noqa: F401,F403
from .rnn_cell import *  # noqa: F401,F403

__all__ = conv_rnn_cell.__all__ + rnn_cell.__all__
