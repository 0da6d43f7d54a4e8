"""Imperative samplers without inputs draw at a power-of-two length on the CPU.

`mx.nd.random.uniform(shape=s)` compiles one program per shape, and a sampler's program
is not cheap to compile (threefry's rounds: ~0.3-0.4 s for uniform, 1-2 s for gamma or
negative_binomial on one core), so code that draws at many shapes (data augmentation,
noise of the current batch's shape, MXNet's tests) spent its time in XLA. A `_random_*`
op called eagerly on the CPU with at most `executor._flat.MAX_ELEMENTS` samples instead draws
`bucket(n)` samples, the program of that length shared by every shape that rounds to it,
and keeps the first n in the shape asked for (a host copy of at most 256 KB). The samples
are i.i.d., so which n of them are kept does not change the distribution; the call
consumes one draw of the generator, as before.
"""
from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from .._memo import Memo

_OPS = Memo(256)   # (op class, parameters) -> (the op at its bucket length, shape, n), or False where it keeps its shape


def _imports():
    from ..executor._flat import MAX_ELEMENTS, bucket  # the executors' flat runs use the same lengths
    from ..ops.sampling import _Random
    return _Random, MAX_ELEMENTS, bucket


def plan(op, datas, device):
    """(op drawing at the bucket length, the shape asked for, n) for a sampler without inputs
    run eagerly on a CPU `device`, or None where the op runs as it is."""
    if datas or not getattr(op, "random", False) or device is None or device.platform != "cpu":
        return None
    key = (type(op), op.hash_key())
    got = _OPS.get(key)
    if got is None:
        got = False
        random_op, max_elements, bucket = _imports()
        if isinstance(op, random_op):
            shape = tuple(op.shape)
            n = math.prod(shape) if shape and all(d > 0 for d in shape) else 0
            if 0 < n <= max_elements and shape != (bucket(n),):
                got = (dataclasses.replace(op, shape=(bucket(n),)), shape, n)
        _OPS.put(key, got)
    return got or None


def unpad(out, shape, n, device):
    """The first n samples of a bucket-length draw `out`, shaped `shape`, on `device`."""
    return jax.device_put(np.asarray(out)[:n].reshape(shape), device)
