"""The seed model: an LSTM language model written out by hand with MXNet ops.

`sym_gen(seq_len)` is what MXNet's bucketing benchmark built before `mx.rnn` existed:
Embedding, `num_layers` LSTM layers unrolled `seq_len` steps with FullyConnected /
SliceChannel / Activation / elementwise ops (one weight set per layer, shared by every
step), Reshape, FullyConnected and SoftmaxOutput. Each layer starts from zero states
whose batch dimension is inferred (`zeros(shape=(0, H))`), as mx.rnn's begin_state. Names depend only on the layer and step, never on a counter.
`numpy_forward` evaluates the same function in float64 numpy.
"""
from __future__ import annotations

import numpy as np


def sym_gen_factory(mx, num_layers=5, num_hidden=200, num_embed=200, vocab=50):
    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data=data, input_dim=vocab, output_dim=num_embed, name="embed")
        steps = mx.sym.SliceChannel(embed, num_outputs=seq_len, axis=1, squeeze_axis=True, name="slice")
        inputs = [steps[t] for t in range(seq_len)]
        for layer in range(num_layers):
            p = f"lstm_l{layer}_"
            w = {k: mx.sym.Variable(p + k) for k in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias")}
            # Zero begin states with an unknown batch dimension, as mx.rnn makes them.
            h = mx.sym.zeros(shape=(0, num_hidden), name=f"{p}begin_h")
            c = mx.sym.zeros(shape=(0, num_hidden), name=f"{p}begin_c")
            outputs = []
            for t, x in enumerate(inputs):
                i2h = mx.sym.FullyConnected(x, weight=w["i2h_weight"], bias=w["i2h_bias"],
                                            num_hidden=4 * num_hidden, name=f"{p}t{t}_i2h")
                h2h = mx.sym.FullyConnected(h, weight=w["h2h_weight"], bias=w["h2h_bias"],
                                            num_hidden=4 * num_hidden, name=f"{p}t{t}_h2h")
                g = mx.sym.SliceChannel(i2h + h2h, num_outputs=4, name=f"{p}t{t}_slice")
                i = mx.sym.Activation(g[0], act_type="sigmoid", name=f"{p}t{t}_i")
                f = mx.sym.Activation(g[1], act_type="sigmoid", name=f"{p}t{t}_f")
                z = mx.sym.Activation(g[2], act_type="tanh", name=f"{p}t{t}_c")
                o = mx.sym.Activation(g[3], act_type="sigmoid", name=f"{p}t{t}_o")
                c = f * c + i * z
                h = o * mx.sym.Activation(c, act_type="tanh", name=f"{p}t{t}_state")
                outputs.append(h)
            inputs = outputs
        merged = mx.sym.Concat(*[mx.sym.expand_dims(h, axis=1) for h in inputs], dim=1, name="concat")
        pred = mx.sym.Reshape(merged, shape=(-1, num_hidden), name="reshape")
        pred = mx.sym.FullyConnected(pred, num_hidden=vocab, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,), name="label_reshape")
        return mx.sym.SoftmaxOutput(pred, label=label, name="softmax")
    return sym_gen


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def numpy_forward(params, data, num_layers, num_hidden):
    """Softmax probabilities of the seed model, (batch*seq_len, vocab), in float64."""
    x = params["embed_weight"][data.astype(int)]            # (N, T, E)
    seq = [x[:, t] for t in range(x.shape[1])]
    for layer in range(num_layers):
        p = f"lstm_l{layer}_"
        h = c = np.zeros((data.shape[0], num_hidden))
        out = []
        for t, xt in enumerate(seq):
            gates = xt @ params[p + "i2h_weight"].T + params[p + "i2h_bias"]
            gates = gates + h @ params[p + "h2h_weight"].T + params[p + "h2h_bias"]
            i, f, z, o = np.split(gates, 4, axis=1)
            i, f, z, o = _sigmoid(i), _sigmoid(f), np.tanh(z), _sigmoid(o)
            c = f * c + i * z
            h = o * np.tanh(c)
            out.append(h)
        seq = out
    hid = np.stack(seq, axis=1).reshape(-1, num_hidden)
    logits = hid @ params["pred_weight"].T + params["pred_bias"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
