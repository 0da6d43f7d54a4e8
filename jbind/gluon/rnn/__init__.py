"""`mx.gluon.rnn`: the fused RNN, LSTM and GRU layers."""
