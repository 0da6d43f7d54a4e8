"""One LSTM layer over time with its backward written out (a `jax.custom_vjp`).

JAX's automatic transpose of the layer's `lax.scan` accumulates the recurrent weight's
gradient inside the backward loop, one (gates x N) @ (N x H) product per step, and keeps
each step's intermediate values as separate residuals. Written out, the backward loop only
carries the state gradients and emits each step's gate gradients; the weight gradient is
then one GEMM over all steps, `dW = sum_t dgates_t^T @ h_(t-1)`, as cuDNN and PyTorch do it.
The forward multiplies by the transposed recurrent weight, made once before the loop (a
`[N, H] @ [H, 4H]` product runs faster on XLA:CPU than one contracting both operands'
last axes). Gates are MXNet's order i, f, c, o; the biases are already in `proj`.

On a 2 x 200 LSTM (T 35, batch 20, one core) forward + backward went from 40 to 29 ms.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def _forward(proj, h0, c0, wh, keep=True):
    """-> ys (T, N, H), cells (T, N, H), activations (T, N, 4H): i, f, tanh(c~), o (with
    `keep`; else the last cell only, and no activations)."""
    wt = wh.T

    def step(carry, x):
        h, c = carry
        i, f, g, o = jnp.split(x + h @ wt, 4, axis=-1)
        i, f, g, o = jax.nn.sigmoid(i), jax.nn.sigmoid(f), jnp.tanh(g), jax.nn.sigmoid(o)
        c = f * c + i * g
        h = o * jnp.tanh(c)
        return (h, c), ((h, c, jnp.concatenate([i, f, g, o], axis=-1)) if keep else h)

    if not keep:
        (_, c_last), ys = lax.scan(step, (h0, c0), proj)
        return ys, c_last[None], None
    _, (ys, cells, acts) = lax.scan(step, (h0, c0), proj)
    return ys, cells, acts


@jax.custom_vjp
def lstm_layer(proj, h0, c0, wh):
    """proj (T, N, 4H) = x @ Wi.T + bi + bh; h0, c0 (N, H); wh (4H, H) -> (ys, h_T, c_T)."""
    ys, cells, _ = _forward(proj, h0, c0, wh, keep=False)
    return ys, ys[-1], cells[-1]


def _fwd(proj, h0, c0, wh):
    ys, cells, acts = _forward(proj, h0, c0, wh)
    return (ys, ys[-1], cells[-1]), (h0, c0, wh, ys, cells, acts)


def _bwd(res, grads):
    h0, c0, wh, ys, cells, acts = res
    dys, dh_last, dc_last = grads
    prev_cells = jnp.concatenate([c0[None], cells[:-1]], axis=0)

    def step(carry, xs):
        dh, dc = carry
        dy, c, c_prev, a = xs
        i, f, g, o = jnp.split(a, 4, axis=-1)
        dh = dh + dy
        tc = jnp.tanh(c)
        dc = dc + dh * o * (1 - tc * tc)
        dgates = jnp.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                                  dc * i * (1 - g * g), dh * tc * o * (1 - o)], axis=-1)
        return (dgates @ wh, dc * f), dgates

    (dh0, dc0), dgates = lax.scan(step, (dh_last, dc_last), (dys, cells, prev_cells, acts), reverse=True)
    prev_h = jnp.concatenate([h0[None], ys[:-1]], axis=0)
    dwh = jnp.einsum("tng,tnh->gh", dgates, prev_h)
    return dgates, dh0, dc0, dwh


lstm_layer.defvjp(_fwd, _bwd)
