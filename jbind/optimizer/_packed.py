"""The per-step numbers of a compiled update (update counts, learning rates, decays),
packed into one uint32 array: one host-to-device transfer a step instead of one per
array (each costs tens of microseconds, about what a small model's whole update runs)."""
from __future__ import annotations

import jax
import numpy as np


def pack_rates(lrs, wds, ts, lead=()) -> np.ndarray:
    """`[*lead, ts (n), lrs (n, float32 bits), wds (n, float32 bits)]` as a uint32 array;
    `lead`: other uint32 numbers the program takes (a random key, a counter)."""
    n, m = len(ts), len(lead)
    buf = np.empty(m + 3 * n, np.uint32)
    buf[:m] = lead
    buf[m:m + n] = ts
    buf[m + n:].view(np.float32)[:] = (*lrs, *wds)
    return buf


def unpack_rates(packed, n, start=0) -> tuple:
    """`pack_rates`' fields from `start` on, traced: per parameter `(lrs, wds, ts)` tuples
    of scalars (float32, float32, int32)."""
    ts = jax.lax.bitcast_convert_type(packed[start:start + n], np.int32)
    f = jax.lax.bitcast_convert_type(packed[start + n:start + 3 * n], np.float32)
    return tuple(f[i] for i in range(n)), tuple(f[n + i] for i in range(n)), tuple(ts[i] for i in range(n))


def rates_spec(n, lead=0, sharding=None) -> jax.ShapeDtypeStruct:
    """The abstract value of a `pack_rates` array with `lead` leading numbers."""
    return jax.ShapeDtypeStruct((lead + 3 * n,), np.uint32, sharding=sharding)
