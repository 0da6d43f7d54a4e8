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


def increment(n, lead=()) -> np.ndarray:
    """What one step adds to a `pack_rates` array: 1 to each update count (and `lead` to
    the leading numbers)."""
    return np.array([*lead, *([1] * n), *([0] * (2 * n))], np.uint32)


class Predicted:
    """The packed numbers the next step most likely takes (each count one further, the
    rest alike), as the program's own output, already on the device: a step whose host
    array turns out as predicted sends nothing (`pick`). The prediction is checked by
    value, so one may serve any program taking the same layout (every bucket of a
    module); it is one tuple, replaced whole, so threads never pair one step's bytes
    with another's array."""

    __slots__ = ("inc", "state")

    def __init__(self, inc: np.ndarray):
        self.inc, self.state = inc, (None, None)

    @property
    def dev(self):
        return self.state[1]

    def pick(self, buf: np.ndarray, sharding=None):
        """The device array if `buf` is what was predicted, else `buf`: as it is (for a
        compiled program, which places it), or put with `sharding` (for a `jax.jit`,
        which would compile anew for a host array after a device one)."""
        expect, dev = self.state
        if buf.tobytes() == expect:
            return dev
        return buf if sharding is None else jax.device_put(buf, sharding)

    def after(self, buf: np.ndarray, dev) -> None:
        """Record a step that took `buf` and returned `dev` (= `buf + inc`, on the device)."""
        self.state = ((buf + self.inc).tobytes(), dev)
