"""`mx.rnn`: recurrent cells that build unrolled symbolic graphs, and bucketing sentence data."""
from ._base import BaseRNNCell, RNNError, RNNParams
from .cells import GRUCell, LSTMCell, RNNCell
from .conv_cells import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from .compose import (BidirectionalCell, DropoutCell, ModifierCell, ResidualCell, SequentialRNNCell,
                      ZoneoutCell)
from .fused import FusedRNNCell
from .io import BucketSentenceIter, encode_sentences
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, rnn_unroll, save_rnn_checkpoint

__all__ = ["BaseConvRNNCell", "BaseRNNCell", "BidirectionalCell", "ConvGRUCell", "ConvLSTMCell", "ConvRNNCell", "BucketSentenceIter", "RNNError", "DropoutCell",
           "FusedRNNCell", "GRUCell", "LSTMCell", "ModifierCell", "RNNCell", "RNNParams", "ResidualCell",
           "SequentialRNNCell", "ZoneoutCell", "do_rnn_checkpoint", "encode_sentences", "load_rnn_checkpoint",
           "rnn_unroll", "save_rnn_checkpoint"]
