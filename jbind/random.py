"""`mx.random`: seeding, and MXNet's samplers (`mx.random.uniform` is `mx.nd.random.uniform`).

As in MXNet each device has its own generator, except that every CPU context shares one:
the generators are "cpu" and one per GPU. A draw (a sampling op called on NDArrays, or a
forward / training step that samples) takes the generator's key, folded with the
generator's counter, which then moves on: each call draws anew, and seeding starts the
same sequence again.

`seed(s)` (ctx='all') reseeds every generator from s and its device id, so two GPUs draw
different numbers; device 0's key is s's own. `seed(s, ctx=c)` reseeds the CPU generator
and, for a GPU c, c's generator from s alone, so GPUs seeded this way draw the same
numbers; other GPUs' generators go on undisturbed (MXNet 1.9.1's rules, src/resource.cc).
The CPU generator also drives the host sampler the initializers draw MXNet's own CPU
numbers from (`_mxrandom.Sampler`).
"""
from __future__ import annotations

import threading

import jax
import numpy as np

from ._mxrandom import Sampler
from .context import current_context, parse

_SAMPLERS = ("uniform", "normal", "randn", "exponential", "gamma", "poisson", "negative_binomial",
             "generalized_negative_binomial", "multinomial", "shuffle", "randint")

_lock = threading.Lock()
_all = {"seed": 0}   # the last seed(s) for every device: generators met later start from it
_gens: dict = {}     # "cpu" or ("gpu", i) -> _Generator


class _Generator:
    """One device's generator: the seed it was given, its key and how many draws it made."""
    __slots__ = ("seed", "key", "counter", "sampler")

    def __init__(self, seed: int, device_id: int):
        self.seed = seed
        k = key_data(seed)
        if device_id:
            k = np.asarray(jax.random.key_data(jax.random.fold_in(jax.random.wrap_key_data(k), device_id)))
        self.key = k
        self.counter = 0
        self.sampler = None


def seed(seed_state: int, ctx="all") -> None:
    """Seed the random number generators: every device's (`ctx='all'`) or `ctx`'s.

    Args:
        seed_state: an int; as in MXNet it is taken modulo 2**32 (-1 and 2**32 - 1 are one seed).
        ctx: 'all', or a Context: the CPU generator and, for a GPU, that GPU's are seeded
            with `seed_state` alone, the same for any device id.

    Raises:
        ValueError: `seed_state` is not an int (MXNet's error).
    """
    if isinstance(seed_state, bool) or not isinstance(seed_state, (int, np.integer)):
        raise ValueError("seed_state must be int")
    s = int(seed_state) & 0xFFFFFFFF
    with _lock:
        if isinstance(ctx, str) and ctx == "all":
            _all["seed"] = s
            _gens.clear()
            return
        from .context import Context
        c = Context(ctx)
        _gens["cpu"] = _Generator(s, 0)
        if c.device_type == "gpu":
            _gens[("gpu", c.device_id)] = _Generator(s, 0)


def _generator(ctx) -> _Generator:
    """The generator of `ctx` (a Context, a string such as 'gpu(1)', or None for the current
    context); call under _lock."""
    ctx = parse(ctx) or current_context()
    if ctx.device_type == "gpu":
        return _get(("gpu", ctx.device_id), ctx.device_id)
    return _get("cpu", 0)


def _get(name, device_id: int) -> _Generator:
    g = _gens.get(name)
    if g is None:
        g = _gens[name] = _Generator(_all["seed"], device_id)
    return g


def base_key(ctx=None) -> np.ndarray:
    """The key data (uint32[2]) of `ctx`'s generator (None: the current context's)."""
    with _lock:
        return _generator(ctx).key


def next_counter(ctx=None) -> np.uint32:
    """The number of `ctx`'s generator's next draw (None: the current context's); counts it."""
    with _lock:
        g = _generator(ctx)
        c = g.counter
        g.counter = c + 1
    return np.uint32(c & 0xFFFFFFFF)


def next_draw(ctx=None):
    """(key data, counter) for one draw on `ctx` (None: the current context): the
    generator's key and its next counter, which the draw folds together; counts it."""
    with _lock:
        g = _generator(ctx)
        c = g.counter
        g.counter = c + 1
        return g.key, np.uint32(c & 0xFFFFFFFF)


def key_data(seed: int) -> np.ndarray:
    """`jax.random.key_data(jax.random.key(seed))`, computed on the host where that is plain
    (threefry keys of seeds in [0, 2**32) are `[0, seed]`), so a first training step compiles
    nothing to make its key."""
    if 0 <= seed < 2 ** 32 and jax.config.jax_default_prng_impl == "threefry2x32":
        return np.array([0, seed], dtype=np.uint32)
    return np.asarray(jax.random.key_data(jax.random.key(seed)))


def host_sampler():
    """The host-side sampler initializers draw from: MXNet 1.x's CPU engines for the CPU
    generator's seed (`_mxrandom.Sampler`), so `mx.random.seed(s)` then an initializer gives
    MXNet's weights. Seeding restarts it."""
    with _lock:
        g = _get("cpu", 0)
        if g.sampler is None:
            g.sampler = Sampler(g.seed)
        return g.sampler


def __getattr__(name):
    # mx.random.uniform etc. are mx.nd.random's samplers; jbind.ndarray imports this module,
    # so they are looked up on first use
    if name in _SAMPLERS:
        from .ndarray import random as nd_random
        fn = getattr(nd_random, name)
        globals()[name] = fn
        return fn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SAMPLERS))
