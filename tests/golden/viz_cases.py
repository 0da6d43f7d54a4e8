"""`mx.viz` golden cases shared by MXNet 1.9.1 (make_viz_golden.py) and jbind (tests/test_viz.py).

`CASES` maps a case name to (builder, summaries, plots): the builder takes the library
module `mx` and returns a Symbol (call it through `build`, which gives it fresh automatic
names: `_plus0`, `split0`, whatever was built before); each summary is the keywords of one `print_summary`
call and each plot those of one `plot_network` call (dtypes as names, so the file needs
neither library). Imports nothing but the standard library (and custom_cases.py, beside
it, for the Custom op).
"""


def build(mx, name):
    """The Symbol of case `name`, built with `mx` under a fresh mx.name.NameManager."""
    with mx.name.NameManager():
        return CASES[name][0](mx)


def mlp(mx):
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(net, num_hidden=128, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=64, name="fc2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.FullyConnected(net, num_hidden=10, no_bias=True, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def lenet(mx):
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
    b1 = mx.sym.BatchNorm(c1, fix_gamma=False, name="bn1")
    a1 = mx.sym.Activation(b1, act_type="tanh", name="tanh1")
    p1 = mx.sym.Pooling(a1, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    c2 = mx.sym.Convolution(p1, kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=40,
                            num_group=2, no_bias=True, name="conv2")
    a2 = mx.sym.LeakyReLU(c2, name="lrelu")
    p2 = mx.sym.Pooling(a2, pool_type="avg", global_pool=True, name="gpool")
    f = mx.sym.Flatten(p2, name="flatten")
    fc1 = mx.sym.FullyConnected(f, num_hidden=50, name="fc1")
    a3 = mx.sym.LeakyReLU(fc1, act_type="elu", name="elu")
    d = mx.sym.Dropout(a3, p=0.5, name="drop")
    fc2 = mx.sym.FullyConnected(d, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def _lstm_stack(mx, length=2):
    data = mx.sym.Variable("data")
    embed = mx.sym.Embedding(data, input_dim=30, output_dim=8, name="embed")
    stack = mx.rnn.SequentialRNNCell()
    for i in range(2):
        stack.add(mx.rnn.LSTMCell(num_hidden=16, prefix="lstm_l%d_" % i))
    outputs, _ = stack.unroll(length, inputs=embed, merge_outputs=True)
    return outputs


def lstm_lm(mx):
    """A small LSTM LM: Embedding, two LSTM layers unrolled 2 steps, a per-step softmax."""
    pred = mx.sym.FullyConnected(_lstm_stack(mx), num_hidden=30, flatten=False, name="pred")
    return mx.sym.SoftmaxOutput(pred, mx.sym.Variable("softmax_label"), preserve_shape=True,
                                name="softmax")


def lstm_lm_flat_label(mx):
    """The bucketing example's head: the label reshaped to 1-D feeds SoftmaxOutput. MXNet
    1.9.1's print_summary fails on it with shapes (IndexError reading the 1-D shape's
    channels); jbind counts no channels for a 1-D input."""
    pred = mx.sym.Reshape(_lstm_stack(mx), shape=(-1, 16))
    pred = mx.sym.FullyConnected(pred, num_hidden=30, name="pred")
    label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name="softmax")


def group(mx):
    """Two heads over one trunk, a SliceChannel, a Concat, and a bare variable output."""
    data = mx.sym.Variable("data")
    trunk = mx.sym.FullyConnected(data, num_hidden=12, name="trunk")
    parts = mx.sym.SliceChannel(trunk, num_outputs=3, axis=1, name="slice")
    cat = mx.sym.Concat(parts[0], parts[2], dim=1, name="cat")
    head1 = mx.sym.FullyConnected(cat, num_hidden=4, name="head1")
    out1 = mx.sym.SoftmaxOutput(head1, name="sm1")
    head2 = mx.sym.FullyConnected(parts[1], num_hidden=2, name="head2")
    out2 = mx.sym.LinearRegressionOutput(head2, name="reg")
    return mx.sym.Group([out1, out2, trunk, mx.sym.Variable("extra")])


def embed_conv(mx):
    """A first node that is not `data`, an Embedding feeding Reshape and a 1-D Convolution."""
    tokens = mx.sym.Variable("tokens")
    emb = mx.sym.Embedding(tokens, input_dim=100, output_dim=6, name="emb")
    x = mx.sym.transpose(emb, axes=(0, 2, 1), name="tr")
    x = mx.sym.Convolution(x, kernel=(3,), num_filter=5, name="conv")
    x = mx.sym.BatchNorm(x, name="bn")
    x = mx.sym.Reshape(x, shape=(0, -1), name="flat")
    w = mx.sym.Variable("w_weight")
    return mx.sym.FullyConnected(x, weight=w, num_hidden=3, name="out")


def custom_topk(mx):
    """A Custom op (drawn with its op_type) and topk with two outputs, then their sum."""
    import custom_cases  # tests/golden/custom_cases.py: registers golden_scaled_square
    custom_cases.define(mx)
    x = mx.sym.Custom(mx.sym.Variable("data"), op_type="golden_scaled_square", scale=2.0, name="sq")
    tk = mx.sym.topk(x, k=2, axis=1, ret_typ="both", name="tk")
    return mx.sym.FullyConnected(tk[0] + tk[1], num_hidden=3, name="fc")


def pool_default(mx):
    """A Pooling without pool_type (MXNet's default, max)."""
    x = mx.sym.Pooling(mx.sym.Variable("data"), kernel=(2, 2), stride=(2, 2), name="pool")
    return mx.sym.FullyConnected(mx.sym.Flatten(x, name="flat"), num_hidden=3, name="fc")


# Calls that fail in MXNet 1.9.1, by case: (function, keywords). The golden file records
# MXNet's error for each; tests/test_viz.py checks what jbind does instead.
MXNET_FAILS = {
    "lstm_lm_flat_label": [("print_summary", {"shape": {"data": (2, 2), "softmax_label": (2, 2)}})],
    "custom_topk": [("plot_network", {"shape": {"data": (3, 5)}})],
    "pool_default": [("plot_network", {})],
}

CASES = {
    "mlp": (mlp, [
        {"shape": {"data": (1, 100)}},
        {"shape": None},
        {"shape": {"data": (4, 100)}, "line_length": 80, "positions": [30, 50, 60, 80]},
    ], [
        {},
        {"shape": {"data": (4, 100)}, "title": "mlp", "save_format": "png"},
        {"shape": {"data": (4, 100)}, "dtype": {"data": "float32"}, "hide_weights": False,
         "node_attrs": {"shape": "oval", "fixedsize": "false", "fillcolor": "red"}},
    ]),
    "lenet": (lenet, [
        {"shape": {"data": (1, 1, 28, 28)}},
        {"shape": None, "line_length": 100},
    ], [
        {"shape": {"data": (2, 1, 28, 28)}},
        {"dtype": {"data": "float16"}},
    ]),
    "lstm_lm": (lstm_lm, [
        {"shape": {"data": (2, 2), "softmax_label": (2, 2)}},
        {"shape": None, "line_length": 140, "positions": [.5, .7, .8, 1.]},
    ], [
        {"shape": {"data": (2, 2), "softmax_label": (2, 2)}},
    ]),
    "lstm_lm_flat_label": (lstm_lm_flat_label, [
        {"shape": None},
    ], []),
    "custom_topk": (custom_topk, [
        {"shape": {"data": (3, 5)}},
    ], [
        {},
    ]),
    "pool_default": (pool_default, [
        {"shape": {"data": (1, 2, 6, 6)}},
    ], []),
    "group": (group, [
        {"shape": {"data": (3, 7), "extra": (3, 2)}},
        {"shape": None},
    ], [
        {"shape": {"data": (3, 7), "extra": (3, 2)}, "dtype": {"data": "float64", "extra": "float64"}},
    ]),
    "embed_conv": (embed_conv, [
        {"shape": {"tokens": (2, 9)}},
    ], [
        {"shape": {"tokens": (2, 9)}, "hide_weights": False},
    ]),
}
