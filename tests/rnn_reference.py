"""numpy (float64) references for the RNN cells and the fused RNN operator."""
import numpy as np

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def step(mode, x, states, wi, bi, wh, bh):
    """One step of `mode` -> (output, new states); weights fused by gate, as MXNet packs them."""
    h = states[0]
    xi, hh = x @ wi.T + bi, h @ wh.T + bh
    if mode == "lstm":
        i, f, c, o = np.split(xi + hh, 4, axis=1)
        cell = sigmoid(f) * states[1] + sigmoid(i) * np.tanh(c)
        new = sigmoid(o) * np.tanh(cell)
        return new, [new, cell]
    if mode == "gru":
        n = h.shape[1]
        r = sigmoid(xi[:, :n] + hh[:, :n])
        z = sigmoid(xi[:, n:2 * n] + hh[:, n:2 * n])
        cand = np.tanh(xi[:, 2 * n:] + r * hh[:, 2 * n:])
        new = (1 - z) * cand + z * h
        return new, [new]
    pre = xi + hh
    new = np.maximum(pre, 0) if mode == "rnn_relu" else np.tanh(pre)
    return new, [new]


def run(mode, xs, states, p, prefix):
    """Unroll over the list `xs` with weights `p[prefix + 'i2h_weight']`, ... -> (outputs, states)."""
    w = [p[prefix + k] for k in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias")]
    outs = []
    for x in xs:
        o, states = step(mode, x, states, *w)
        outs.append(o)
    return outs, states


def zeros_states(mode, batch, hidden):
    return [np.zeros((batch, hidden)) for _ in range(2 if mode == "lstm" else 1)]


def unpack(mode, layers, bidir, flat, input_size, hidden):
    """MXNet's packed vector -> {(layer, direction): (wi, bi, wh, bh)}."""
    g, d = GATES[mode], 2 if bidir else 1
    pos, out, ws = 0, {}, []
    for layer in range(layers):
        width = input_size if layer == 0 else d * hidden
        for k in range(d):
            wi = flat[pos:pos + g * hidden * width].reshape(g * hidden, width)
            pos += wi.size
            wh = flat[pos:pos + g * hidden * hidden].reshape(g * hidden, hidden)
            pos += wh.size
            ws.append((layer, k, wi, wh))
    for layer, k, wi, wh in ws:
        bi, bh = flat[pos:pos + g * hidden], flat[pos + g * hidden:pos + 2 * g * hidden]
        pos += 2 * g * hidden
        out[(layer, k)] = (wi, bi, wh, bh)
    assert pos == flat.size
    return out


def fused(mode, layers, bidir, data, flat, state, state_cell=None):
    """The RNN operator (no dropout): data (T, N, I) -> [output, final h, (final c)]."""
    hidden = state.shape[2]
    d = 2 if bidir else 1
    w = unpack(mode, layers, bidir, flat, data.shape[2], hidden)
    xs = list(data)
    finals = [[], []]
    for layer in range(layers):
        outs = []
        for k in range(d):
            idx = layer * d + k
            st = [state[idx]] + ([state_cell[idx]] if mode == "lstm" else [])
            seq = xs if k == 0 else xs[::-1]
            ys = []
            for x in seq:
                y, st = step(mode, x, st, *w[(layer, k)])
                ys.append(y)
            outs.append(ys if k == 0 else ys[::-1])
            for f, s in zip(finals, st):
                f.append(s)
        xs = [np.concatenate(parts, axis=1) for parts in zip(*outs)]
    res = [np.stack(xs), np.stack(finals[0])]
    return res + ([np.stack(finals[1])] if mode == "lstm" else [])
