"""Global random state for ops that draw numbers (Dropout), as `mx.random.seed`."""
from __future__ import annotations

import threading

import jax
import numpy as np

from ._mxrandom import Sampler

_lock = threading.Lock()
_state = {"seed": 0, "key": None, "counter": 0, "sampler": None}


def seed(seed_state: int, ctx="all") -> None:
    """Seed the generator; later training steps draw from `fold_in(key(seed), step)`."""
    with _lock:
        _state["seed"] = int(seed_state)
        _state["key"] = None
        _state["counter"] = 0
        _state["sampler"] = None


def base_key():
    k = _state["key"]
    if k is None:
        k = _state["key"] = key_data(_state["seed"])
    return k


def key_data(seed: int) -> np.ndarray:
    """`jax.random.key_data(jax.random.key(seed))`, computed on the host where that is plain
    (threefry keys of small seeds are `[0, seed]`), so a first training step compiles
    nothing to make its key."""
    if 0 <= seed < 2 ** 31 and jax.config.jax_default_prng_impl == "threefry2x32":
        return np.array([0, seed], dtype=np.uint32)
    return np.asarray(jax.random.key_data(jax.random.key(seed)))


def next_counter() -> np.uint32:
    with _lock:
        c = _state["counter"]
        _state["counter"] = c + 1
    return np.uint32(c & 0xFFFFFFFF)


def host_sampler():
    """The host-side sampler initializers draw from: MXNet 1.x's CPU engines for the
    current seed (`_mxrandom.Sampler`), so `mx.random.seed(s)` then an initializer gives
    MXNet's weights. `seed` restarts it."""
    with _lock:
        g = _state["sampler"]
        if g is None:
            g = _state["sampler"] = Sampler(_state["seed"])
        return g
