"""`_sample_unique_zipfian`: classes drawn without replacement from the log-uniform
(Zipfian) distribution, as candidate sampling for a sampled softmax uses them."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Op, register


@register
class _sample_unique_zipfian(Op):
    __doc__ = ("`shape` = (batch_size, num_sampled): per row, `num_sampled` distinct classes in "
               "[0, range_max) drawn from P(k) = log((k + 2) / (k + 1)) / log(range_max + 1), repeated "
               "draws discarded; and per row the number of draws it took (both int64). Values come from "
               "jax.random (MXNet's stream cannot be reproduced), drawn from the same distribution.")
    range_max: int
    shape: tuple[int, ...] = ()
    random = True

    def __post_init__(self):
        if len(self.shape) != 2 or not all(d > 0 for d in self.shape):
            raise ValueError(f"shape must be (batch_size, num_sampled), both positive; got {tuple(self.shape)}")
        if self.shape[1] > self.range_max:
            raise ValueError(f"num_sampled ({self.shape[1]}) cannot exceed range_max ({self.range_max}): "
                             "the samples are distinct")

    def arguments(self):
        return ()

    def outputs(self):
        return ("output0", "output1")

    def infer_shape(self, ins, outs):
        return [], [tuple(self.shape), (self.shape[0],)], []

    def infer_type(self, ins, outs):
        return [], [np.dtype(np.int64), np.dtype(np.int64)], []

    def lower(self, ins, aux, is_train, key):
        b, n = self.shape
        m = self.range_max
        idt = jax.dtypes.canonicalize_dtype(np.int64)   # int32 under JBIND_X64=0
        log_range = math.log(m + 1.0)
        rows = jnp.arange(b)

        # One draw per unfinished row per round; every update is a scatter whose finished
        # rows write out of bounds (dropped), so a round costs O(batch), not O(range_max).
        def body(s):
            k, seen, out, count, trials = s
            k, sub = jax.random.split(k)
            u = jax.random.uniform(sub, (b,), jnp.float32)  # float32, as jbind's other draws
            v = jnp.clip(jnp.floor(jnp.exp(u * log_range)).astype(idt) - 1, 0, m - 1)
            active = count < n
            new = active & ~seen[rows, v]
            out = out.at[rows, jnp.where(new, count, n)].set(v, mode="drop")
            seen = seen.at[rows, jnp.where(new, v, m)].set(True, mode="drop")
            return k, seen, out, count + new.astype(idt), trials + active.astype(idt)

        init = (key, jnp.zeros((b, m), bool), jnp.zeros((b, n), idt), jnp.zeros((b,), idt), jnp.zeros((b,), idt))
        _, _, out, _, trials = jax.lax.while_loop(lambda s: jnp.any(s[3] < n), body, init)
        return [out, trials], aux
