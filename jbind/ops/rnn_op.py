"""The fused recurrent operator `RNN`: rnn_relu, rnn_tanh, lstm and gru layers over a sequence.

Data is time-major (T, N, I). `parameters` is MXNet's packed vector: first the weights
of every layer and direction (for each: i2h (gates*H, in), then h2h (gates*H, H)), then
their biases in the same order (i2h (gates*H,), then h2h (gates*H,)). An LSTM with
`projection_size` P has h2h (4H, P) followed by h2r (P, H) per layer and direction: its
output and recurrent state are r = h @ h2r.T, of width P. Gates are ordered
i, f, c, o for lstm and r, z, n for gru (cuDNN's GRU: n = tanh(Wx + b + r * (Uh + c))).
Each layer is one `lax.scan` over time (both directions together); the input projection of
all steps is one matmul.
"""
from __future__ import annotations

from typing import Literal, Optional

import jax
import jax.numpy as jnp
from jax import lax

from . import _rand
from ._base import Op, register
from ._recurrent import gru_layer, lstm_layer

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def param_size(mode: str, num_layers: int, bidirectional: bool, input_size: int, state_size: int,
               projection_size: Optional[int] = None) -> int:
    """Length of the packed parameter vector (MXNet's GetRnnParamSize)."""
    d, g, h = 2 if bidirectional else 1, _GATES[mode], state_size
    r = projection_size or h  # the recurrent width
    first = (input_size + r + 2) * g * h
    rest = (d * r + r + 2) * g * h
    extra = projection_size * h * num_layers * d if projection_size else 0
    return d * first + (num_layers - 1) * d * rest + extra


@register
class RNN(Op):
    """Multi-layer (optionally bidirectional) recurrent layers over time-major data, as MXNet's RNN.

    `p` drops the outputs of every layer but the last, in training only. `lstm_state_clip_min/max`
    clip the cell state as cuDNN does (MXNet's CPU kernel ignores them); with `lstm_state_clip_nan`
    a NaN cell state becomes `lstm_state_clip_min`. `projection_size` (lstm only) projects each
    step's hidden vector to that width. Not supported: `use_sequence_length`.
    """
    mxnet_order = ('state_size', 'num_layers', 'bidirectional', 'mode', 'p', 'state_outputs', 'projection_size',
                   'lstm_state_clip_min', 'lstm_state_clip_max', 'lstm_state_clip_nan', 'use_sequence_length')
    state_size: int
    num_layers: int
    mode: Literal["rnn_relu", "rnn_tanh", "lstm", "gru"]
    bidirectional: bool = False
    p: float = 0.0
    state_outputs: bool = False
    projection_size: Optional[int] = None
    lstm_state_clip_min: Optional[float] = None
    lstm_state_clip_max: Optional[float] = None
    lstm_state_clip_nan: bool = False
    use_sequence_length: bool = False
    random = True

    def __post_init__(self):
        if self.state_size < 1 or self.num_layers < 1:
            raise ValueError(f"state_size and num_layers must be positive, got state_size={self.state_size}, "
                             f"num_layers={self.num_layers}")
        if not 0.0 <= self.p < 1.0:
            raise ValueError(f"dropout p must be in [0, 1), got {self.p}")
        if self.projection_size is not None and (self.mode != "lstm" or not 0 < self.projection_size
                                                 <= self.state_size):
            raise ValueError(f"projection_size needs mode lstm and 0 < projection_size <= state_size "
                             f"(State size must be larger than projection size), got mode {self.mode}, "
                             f"projection_size {self.projection_size}, state_size {self.state_size}")
        if self.use_sequence_length:
            raise ValueError("use_sequence_length=True is not supported by jbind's RNN; mask the outputs "
                             "with SequenceMask instead")
        if (self.lstm_state_clip_min is None) != (self.lstm_state_clip_max is None):
            raise ValueError("lstm_state_clip_min and lstm_state_clip_max must be given together")

    @property
    def _dirs(self) -> int:
        return 2 if self.bidirectional else 1

    def arguments(self):
        return ("data", "parameters", "state", "state_cell") if self.mode == "lstm" else \
            ("data", "parameters", "state")

    def outputs(self):
        if not self.state_outputs:
            return ("output",)
        return ("output", "state_output", "statecell_output") if self.mode == "lstm" else \
            ("output", "state_output")

    def infer_shape(self, ins, outs):
        data, states = ins[0], ins[2:]
        nstate = len(self.arguments()) - 2
        if data is None:
            return list(ins), [None] * len(outs), []
        if len(data) != 3:
            raise ValueError(f"data must be 3-D (seq_len, batch, input_size), got {tuple(data)}")
        steps, batch, width = data
        for s in states:  # a batch size the data does not know yet may come from a given state
            if not batch and s is not None and len(s) == 3:
                batch = s[1]
        h, lay, r = self.state_size, self._dirs * self.num_layers, self.projection_size or self.state_size
        st = [(lay, batch, r), (lay, batch, h)][:nstate]
        params = (param_size(self.mode, self.num_layers, self.bidirectional, width, h, self.projection_size),) \
            if width else None
        out = (steps, batch, self._dirs * r)
        return [(steps, batch, width), params] + st, [out] + st[:len(outs) - 1], []

    # --- lowering ------------------------------------------------------------------------
    def _unpack(self, flat, input_size):
        """-> [(w_i2h, w_h2h, b_i2h, b_h2h, w_h2r or None)] for each (layer, direction), layer-major.

        One `jnp.split` of the vector: its gradient is one concatenation, where a slice per
        piece would have each piece's gradient padded to the vector's length and summed."""
        g, h, d = _GATES[self.mode], self.state_size, self._dirs
        p = self.projection_size
        r = p or h
        shapes = []
        for layer in range(self.num_layers):
            width = input_size if layer == 0 else d * r
            shapes += [[(g * h, width), (g * h, r)] + ([(p, h)] if p else []) for _ in range(d)]
        biases = [[(g * h,), (g * h,)] for _ in shapes]
        sizes = [a * b for ws in shapes for a, b in ws] + [g * h] * (2 * len(shapes))
        bounds = [sum(sizes[:k + 1]) for k in range(len(sizes))]
        pieces = iter(jnp.split(flat[:bounds[-1]], bounds[:-1]))
        weights = [[next(pieces).reshape(s) for s in ws] for ws in shapes]
        bias = [[next(pieces) for _ in bs] for bs in biases]
        return [(ws[0], ws[1], b[0], b[1], ws[2] if p else None) for ws, b in zip(weights, bias)]

    def _cell(self, wh, bh, wr):
        """The step over both directions at once: carry (D, N, H) (h, or r = h @ wr.T of width P
        with a projection), x_proj (D, N, gates*H)."""
        mode = self.mode
        lo, hi = self.lstm_state_clip_min, self.lstm_state_clip_max

        def step(carry, x_proj):
            hprev = carry[0]
            hh = jnp.einsum("dnh,dgh->dng", hprev, wh) + bh[:, None, :]
            if mode == "lstm":
                gates = x_proj + hh
                i, f, c, o = jnp.split(gates, 4, axis=-1)  # a split's gradient is one concatenate
                cell = jax.nn.sigmoid(f) * carry[1] + jax.nn.sigmoid(i) * jnp.tanh(c)
                if lo is not None:
                    cell = jnp.fmin(jnp.fmax(cell, lo), hi) if self.lstm_state_clip_nan else \
                        jnp.clip(cell, lo, hi)
                new = jax.nn.sigmoid(o) * jnp.tanh(cell)
                if wr is not None:
                    new = jnp.einsum("dnh,dph->dnp", new, wr)
                return (new, cell), new
            if mode == "gru":
                xr, xz, xn = jnp.split(x_proj, 3, axis=-1)
                hr, hz, hn = jnp.split(hh, 3, axis=-1)
                r = jax.nn.sigmoid(xr + hr)
                z = jax.nn.sigmoid(xz + hz)
                n = jnp.tanh(xn + r * hn)
                new = (1 - z) * n + z * hprev
                return (new,), new
            pre = x_proj + hh
            new = jax.nn.relu(pre) if mode == "rnn_relu" else jnp.tanh(pre)
            return (new,), new

        return step

    def _written_out(self, wr) -> bool:
        """LSTM layers without projection or state clipping run `_recurrent.lstm_layer`, GRU
        layers `_recurrent.gru_layer`."""
        if self.mode == "gru":
            return True
        return self.mode == "lstm" and wr is None and self.lstm_state_clip_min is None

    def lower(self, ins, aux, is_train, key):
        data, flat = ins[0], ins[1]
        init = ins[2:]
        weights = self._unpack(flat, data.shape[2])
        d = self._dirs
        x, finals = data, [[] for _ in init]
        starts = [jnp.split(s, self.num_layers) for s in init]  # (D, N, width) per layer: one split, not slices
        for layer in range(self.num_layers):
            mine = weights[layer * d:(layer + 1) * d]
            start = tuple(s[layer] for s in starts)
            if self._written_out(mine[0][4]):  # each direction its own loop, the backward written out
                carry, x = _directions(self.mode, x, mine, start)
            else:
                # both directions of a layer run in one scan: direction 1 reads the sequence reversed
                wi, wh, bi, bh, wr = (None if w[0] is None else jnp.stack(w) for w in zip(*mine))
                seq = jnp.stack([x, jnp.flip(x, 0)][:d], axis=1)                      # (T, D, N, in)
                proj = jnp.einsum("tdni,dgi->tdng", seq, wi) + bi[None, :, None, :]  # (T, D, N, gates*H)
                carry, ys = lax.scan(self._cell(wh, bh, wr), start, proj)         # ys (T, D, N, H or P)
                dirs = jnp.unstack(ys, axis=1)
                x = dirs[0] if d == 1 else jnp.concatenate([dirs[0], jnp.flip(dirs[1], 0)], axis=-1)
            for f, c in zip(finals, carry):
                f.append(c)
            if is_train and self.p > 0 and layer < self.num_layers - 1:
                keep = _rand.bernoulli(jax.random.fold_in(key, layer), jnp.float32(1.0 - self.p), x.shape)
                x = jnp.where(keep, x / (1.0 - self.p), jnp.zeros((), x.dtype))
        if not self.state_outputs:
            return [x], aux
        return [x] + [jnp.concatenate(f, axis=0) for f in finals], aux


def _directions(mode, x, weights, start):
    """`lstm_layer` or `gru_layer` for each direction of a layer (direction 1 reads the
    sequence reversed), with 2-D products (faster on XLA:CPU than ones batched over a
    direction axis). x (T, N, I); weights [(wi, wh, bi, bh, None)] per direction; start
    ((D, N, H) h[, c]) -> ((h_T[, c_T]) each (D, N, H), the outputs (T, N, D * H))."""
    steps, batch, width = x.shape
    outs, finals = [], [[] for _ in start]
    states = [jnp.unstack(s) for s in start]  # per direction (an unstack's gradient is one stack)
    for k, (wi, wh, bi, bh, _) in enumerate(weights):
        seq = x if k == 0 else jnp.flip(x, 0)
        if mode == "lstm":
            proj = (seq.reshape(steps * batch, width) @ wi.T + (bi + bh)).reshape(steps, batch, -1)
            ys, *last = lstm_layer(proj, states[0][k], states[1][k], wh)
        else:
            proj = (seq.reshape(steps * batch, width) @ wi.T + bi).reshape(steps, batch, -1)
            ys, *last = gru_layer(proj, states[0][k], wh, bh)
        outs.append(ys if k == 0 else jnp.flip(ys, 0))
        for f, v in zip(finals, last):
            f.append(v)
    out = outs[0] if len(outs) == 1 else jnp.concatenate(outs, axis=-1)
    return tuple(jnp.stack(f) for f in finals), out
