"""Hand-written JAX baselines: the LSTM language model jbind-bench measures, without jbind.

The model is the one of `models.py` (the seed model written with ops) and of `mx.rnn`
LSTM cells unrolled over an embedding (`examples/bucketing_rnn.py`, `bind_bench.py`):
Embedding, `num_layers` LSTM layers, FullyConnected to the vocabulary, SoftmaxOutput.
Parameters are a dict keyed by jbind's names (`embed_weight`, `lstm_l{k}_i2h_weight`,
`lstm_l{k}_i2h_bias`, `lstm_l{k}_h2h_weight`, `lstm_l{k}_h2h_bias`, `pred_weight`,
`pred_bias`) with MXNet's layouts: FullyConnected weights are (out, in), and the four
LSTM gates are stacked i, f, c (transform), o along the output axis.

Each layer is one `lax.scan` over time, with the input projection of every step done
before the scan. The loss head is SoftmaxOutput's: its gradient with respect to the logits
is `softmax - onehot(label)` at every position (no normalization), which is the gradient
of the summed cross-entropy (`loss`); `softmax_output` gives it directly (a custom_vjp), as
jbind's op does, rather than differentiating log_softmax. The SGD step is jbind's (MXNet's) `sgd_update`
with momentum 0: `w -= lr * (rescale_grad * grad + wd * w)`, where `wd` applies only to
parameters whose names end in `_weight`.
"""
from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_LAYER = re.compile(r"lstm_l(\d+)_i2h_weight")


def param_shapes(num_layers: int, num_hidden: int, num_embed: int, vocab: int) -> dict:
    """Shapes of the model's parameters by jbind name."""
    shapes = {"embed_weight": (vocab, num_embed)}
    for k in range(num_layers):
        p, n_in = f"lstm_l{k}_", num_embed if k == 0 else num_hidden
        shapes.update({p + "i2h_weight": (4 * num_hidden, n_in), p + "i2h_bias": (4 * num_hidden,),
                       p + "h2h_weight": (4 * num_hidden, num_hidden), p + "h2h_bias": (4 * num_hidden,)})
    shapes.update({"pred_weight": (vocab, num_hidden), "pred_bias": (vocab,)})
    return shapes


def init_params(num_layers: int, num_hidden: int, num_embed: int, vocab: int, seed: int = 0,
                scale: float = 0.1) -> dict:
    """Uniform(-scale, scale) float32 parameters (numpy arrays) by jbind name."""
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-scale, scale, shape).astype(np.float32)
            for name, shape in param_shapes(num_layers, num_hidden, num_embed, vocab).items()}


def num_layers_of(params) -> int:
    return sum(1 for name in params if _LAYER.fullmatch(name))


def _lstm_layer(xs, w_i2h, b_i2h, w_h2h, b_h2h):
    """xs: (T, N, I) -> hidden states (T, N, H); zero initial states."""
    hidden = w_h2h.shape[1]
    gx = xs @ w_i2h.T + b_i2h                     # every step's input projection at once

    def step(carry, g):
        h, c = carry
        g = g + h @ w_h2h.T + b_h2h
        i, f, z, o = jnp.split(g, 4, axis=-1)      # MXNet's gate order: i, f, c, o
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(z)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((xs.shape[1], hidden), xs.dtype)
    _, hs = lax.scan(step, (zeros, zeros), gx)
    return hs


def logits(params, data):
    """data: (N, T) token ids (any dtype) -> logits (N*T, vocab), rows in (n, t) order."""
    x = jnp.take(params["embed_weight"], data.astype(jnp.int32), axis=0)    # (N, T, E)
    x = jnp.swapaxes(x, 0, 1)                                              # time-major for scan
    for k in range(num_layers_of(params)):
        p = f"lstm_l{k}_"
        x = _lstm_layer(x, params[p + "i2h_weight"], params[p + "i2h_bias"], params[p + "h2h_weight"],
                        params[p + "h2h_bias"])
    hid = jnp.swapaxes(x, 0, 1).reshape(-1, x.shape[-1])
    return hid @ params["pred_weight"].T + params["pred_bias"]


def forward(params, data):
    """Softmax probabilities (N*T, vocab): what jbind's `softmax` output holds."""
    return jax.nn.softmax(logits(params, data), axis=-1)


def loss(params, data, label):
    """Summed cross-entropy; its gradient is the gradient jbind's SoftmaxOutput produces."""
    logp = jax.nn.log_softmax(logits(params, data), axis=-1)
    idx = label.reshape(-1).astype(jnp.int32)
    return -jnp.take_along_axis(logp, idx[:, None], axis=1).sum()


@jax.custom_vjp
def softmax_output(lg, idx):
    """SoftmaxOutput as a loss head: softmax forward; backward `softmax - onehot(idx)`, whatever
    the head gradient (the gradient of `loss`, without differentiating log_softmax)."""
    return jax.nn.softmax(lg, axis=-1)


def _softmax_output_fwd(lg, idx):
    p = jax.nn.softmax(lg, axis=-1)
    return p, (p, idx)


def _softmax_output_bwd(res, g):
    p, idx = res
    return p - jax.nn.one_hot(idx, p.shape[-1], dtype=p.dtype), None


softmax_output.defvjp(_softmax_output_fwd, _softmax_output_bwd)


def loss_and_grads(params, data, label):
    """(probabilities, gradients by parameter name), as jbind's forward(is_train=True) + backward()."""
    idx = label.reshape(-1).astype(jnp.int32)
    probs, vjp = jax.vjp(lambda p: softmax_output(logits(p, data), idx), params)
    (grads,) = vjp(jnp.ones_like(probs))
    return probs, grads


def sgd_step(params, data, label, lr, wd, rescale_grad):
    """One training step: (new params, probabilities). SGD without momentum, as jbind's."""
    probs, grads = loss_and_grads(params, data, label)
    new = {name: w - lr * (rescale_grad * grads[name] + (wd if name.endswith("_weight") else 0.0) * w)
           for name, w in params.items()}
    return new, probs


def make_train_step(lr: float = 0.01, wd: float = 0.0, rescale_grad: float = 1.0, donate: bool = True):
    """A jitted `step(params, data, label) -> (params, probs)`; params are donated."""
    fn = functools.partial(sgd_step, lr=lr, wd=wd, rescale_grad=rescale_grad)
    return jax.jit(fn, donate_argnums=(0,) if donate else ())


def make_forward():
    """A jitted `forward(params, data) -> probs` (the dispatch baseline of `jbind-bench bind`)."""
    return jax.jit(forward)


def make_grad():
    """A jitted `(params, data, label) -> (probs, grads)` (forward + backward, no update)."""
    return jax.jit(loss_and_grads)


def perplexity_terms(probs, label, ignore_label=None):
    """(sum of -log p(label), count) on the host, as mx.metric.Perplexity accumulates them."""
    probs, label = np.asarray(probs), np.asarray(label).reshape(-1)
    picked = probs[np.arange(label.size), np.clip(label.astype(np.int64), 0, probs.shape[1] - 1)]
    num = label.size
    if ignore_label is not None:
        ignore = (label == ignore_label).astype(picked.dtype)
        num -= int(ignore.sum())
        picked = picked * (1 - ignore) + ignore
    return -float(np.log(np.maximum(np.float32(1e-10), picked)).sum(dtype=np.float32)), num
