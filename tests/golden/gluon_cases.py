"""Gluon models for the MXNet 1.9.1 goldens in gluon/ (make_gluon_golden.py writes them,
tests/test_gluon_golden.py reads them). `build(mx, name)` makes the block with the given
library (MXNet or jbind), so both build the same architecture with the same names."""

CASES = {
    # name: input shape, input kind ("float" or "int" with its bound)
    "mlp_bn": {"shape": (4, 10), "kind": "float"},
    "convnet": {"shape": (2, 3, 12, 12), "kind": "float"},
    "lstm_lm": {"shape": (2, 7), "kind": ("int", 20)},
    "gru_bi": {"shape": (5, 2, 4), "kind": "float"},
}
ZOO = {"mobilenet0.25": {"shape": (1, 3, 32, 32), "kind": "float", "classes": 10}}


def build(mx, name):
    """The block for case `name`, made inside a fresh name manager (prefixes from 0)."""
    nn, rnn = mx.gluon.nn, mx.gluon.rnn
    with mx.name.NameManager():
        if name == "mlp_bn":
            net = nn.HybridSequential()
            with net.name_scope():
                net.add(nn.Dense(16, activation="relu"), nn.BatchNorm(), nn.Dropout(0.5), nn.Dense(5))
        elif name == "convnet":
            net = nn.HybridSequential()
            with net.name_scope():
                net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(),
                        nn.Conv2D(8, 3, groups=2), nn.LeakyReLU(0.1), nn.GlobalAvgPool2D(), nn.Flatten(),
                        nn.Dense(6))
        elif name == "lstm_lm":
            net = nn.HybridSequential()
            with net.name_scope():
                net.add(nn.Embedding(20, 8), rnn.LSTM(12, num_layers=2, layout="NTC"),
                        nn.Dense(20, flatten=False))
        elif name == "gru_bi":
            net = rnn.GRU(6, bidirectional=True)
        else:
            raise KeyError(name)
    return net
