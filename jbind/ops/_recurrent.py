"""LSTM and GRU layers over time with their backward written out (`jax.custom_vjp`).

JAX's automatic transpose of a layer's `lax.scan` accumulates the recurrent weight's
gradient inside the backward loop, one (gates x N) @ (N x H) product per step, and keeps
each step's intermediate values as separate residuals. Written out, the backward loop only
carries the state gradients and emits each step's gate gradients; the weight gradient is
then one GEMM over all steps, `dW = sum_t dgates_t^T @ h_(t-1)`, as cuDNN and PyTorch do it.
The forward multiplies by the transposed recurrent weight, made once before the loop (a
`[N, H] @ [H, 4H]` product runs faster on XLA:CPU than one contracting both operands'
last axes). Gates are MXNet's order: i, f, c, o (LSTM; both biases already in `proj`) and
r, z, n (GRU; the input bias in `proj`, the recurrent one apart, as n needs it inside r *).

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


def _gru_forward(proj, h0, wh, bh, keep=True):
    """-> ys (T, N, H) and (with `keep`) activations (T, N, 4H): r, z, n and h @ U_n.T + b_hn."""
    wt = wh.T

    def step(h, x):
        xr, xz, xn = jnp.split(x, 3, axis=-1)
        hr, hz, hn = jnp.split(h @ wt + bh, 3, axis=-1)
        r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
        n = jnp.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
        return h, ((h, jnp.concatenate([r, z, n, hn], axis=-1)) if keep else h)

    _, out = lax.scan(step, h0, proj)
    return out if keep else (out, None)


@jax.custom_vjp
def gru_layer(proj, h0, wh, bh):
    """cuDNN's GRU (MXNet's): proj (T, N, 3H) = x @ Wi.T + bi; h0 (N, H); wh (3H, H); bh (3H,)
    -> (ys, h_T). n = tanh(x_n + r * (h @ U_n.T + b_hn)), h' = (1 - z) * n + z * h."""
    ys, _ = _gru_forward(proj, h0, wh, bh, keep=False)
    return ys, ys[-1]


def _gru_fwd(proj, h0, wh, bh):
    ys, acts = _gru_forward(proj, h0, wh, bh)
    return (ys, ys[-1]), (h0, wh, ys, acts)


def _gru_bwd(res, grads):
    h0, wh, ys, acts = res
    dys, dh_last = grads
    prev_h = jnp.concatenate([h0[None], ys[:-1]], axis=0)

    def step(dh, xs):
        dy, h_prev, a = xs
        r, z, n, hn = jnp.split(a, 4, axis=-1)
        dh = dh + dy
        dn = dh * (1 - z) * (1 - n * n)
        dr = dn * hn * r * (1 - r)
        dz = dh * (h_prev - n) * z * (1 - z)
        dhh = jnp.concatenate([dr, dz, dn * r], axis=-1)  # gradient of h @ U.T + b_h
        return dh * z + dhh @ wh, (jnp.concatenate([dr, dz, dn], axis=-1), dhh)

    dh0, (dproj, dhh) = lax.scan(step, dh_last, (dys, prev_h, acts), reverse=True)
    return dproj, dh0, jnp.einsum("tng,tnh->gh", dhh, prev_h), jnp.sum(dhh, axis=(0, 1))


gru_layer.defvjp(_gru_fwd, _gru_bwd)
