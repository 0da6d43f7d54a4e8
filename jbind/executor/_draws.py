"""An executor's random key and draw counter as its training program takes them, without
a host-to-device transfer a step: the key is copied to the device once per seed, and the
training program returns its counter + 1, which the next training run on that device
takes when that is the counter it drew (a transfer costs about what a small model's
whole step runs)."""
from __future__ import annotations

import jax

# device -> (number, the same number as a device scalar): what the last training run there
# returned, its draw counter + 1 (one tuple, replaced whole, so threads never mix two)
NEXT_COUNTER: dict = {}


def device_key(exe, key):
    """The generator's key data `key` (a host array, the same object until reseeded) on
    `exe`'s device, copied once per seed."""
    host, dev = exe._dkey
    if host is not key:
        dev = jax.device_put(key, exe._device)
        exe._dkey = (key, dev)
    return dev


def device_counter(device, counter):
    """`counter` as a training program on `device` takes it: the device scalar the last
    training run there returned when it holds `counter`, else the host number."""
    host, dev = NEXT_COUNTER.get(device, (None, None))
    return dev if host == counter else counter


def ran(device, drawn, nxt) -> None:
    """Record a training run on `device` that drew `drawn` and returned `nxt` (= drawn + 1)."""
    NEXT_COUNTER[device] = ((int(drawn) + 1) & 0xFFFFFFFF, nxt)
