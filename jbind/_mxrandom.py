"""MXNet 1.x's CPU random numbers, drawn on the host: initializers get MXNet's weights.

After `mx.random.seed(s)`, MXNet samples on CPU from 1024 mt19937 engines, engine i
seeded with `127 * s + i` (uint32). A draw of n numbers is cut into
`min(ceil(n / 64), 1024)` chunks of `ceil(n / chunks)` numbers; chunk i comes from engine
i, which continues where its previous draw stopped. Per number:

    uniform(a, b): a + (b - a) * u,  u = float32(x) / 2**32 (below 1), x a raw 32-bit draw
    normal(m, s):  m + s * y * sqrt(-2 log(r2) / r2), libstdc++'s polar method: pairs
                   (x, y) = 2u - 1 until 0 < r2 = x*x + y*y <= 1; one number per call

all in float32. numpy's legacy `RandomState(seed)` is the same mt19937 with the same
seeding, so its raw draws are the engines'. Uniform draws come out bit for bit; normal
ones to a float32 rounding of `log`. `integers` (the quantized initializer's single draw)
is not MXNet's stream.
"""
from __future__ import annotations

import numpy as np

ENGINES = 1024
PER_ENGINE = 64
MAGIC = 127
_BELOW_ONE = np.nextafter(np.float32(1), np.float32(0))


class Sampler:
    """The engines of one seed. Each engine's raw draws are kept from its start (a
    RandomState cannot be resumed cheaply, so a longer need redraws from the seed)."""

    def __init__(self, seed: int):
        self._base = (int(seed) * MAGIC) & 0xFFFFFFFF
        self._rs = np.random.RandomState(0)
        self._raw_drawn = [np.empty(0, np.uint32)] * ENGINES
        self._used = [0] * ENGINES
        self._ints = np.random.default_rng(int(seed) & 0xFFFFFFFFFFFFFFFF)

    def _raw(self, i: int, n: int, consume: bool = True) -> np.ndarray:
        """The next n raw draws of engine i (a view; `consume=False` looks ahead)."""
        start = self._used[i]
        end = start + n
        buf = self._raw_drawn[i]
        if len(buf) < end:  # (re)draw from the seed, ahead: an initializer draws several arrays
            self._rs.seed((self._base + i) & 0xFFFFFFFF)
            size = max(end, 2 * len(buf), 4096)
            buf = self._raw_drawn[i] = self._rs.randint(0, 2 ** 32, size=size, dtype=np.uint32)
        if consume:
            self._used[i] = end
        return buf[start:end]

    def _consume(self, i: int, n: int) -> None:
        self._used[i] += n

    @staticmethod
    def _chunks(n: int):
        count = min((n + PER_ENGINE - 1) // PER_ENGINE, ENGINES)
        step = (n + count - 1) // count if count else 0
        return [(i, i * step, min((i + 1) * step, n)) for i in range(count) if i * step < n]

    @staticmethod
    def _unit(raw: np.ndarray, out=None) -> np.ndarray:
        u = np.multiply(raw, np.float32(2.0 ** -32), out=out, dtype=np.float32)  # exact: a power of two
        return np.minimum(u, _BELOW_ONE, out=u)

    def uniform(self, low, high, size) -> np.ndarray:
        shape = tuple(np.atleast_1d(size)) if size is not None else ()
        n = int(np.prod(shape))
        u = np.empty(n, np.float32)
        for i, a, b in self._chunks(n):
            self._unit(self._raw(i, b - a), out=u[a:b])
        lo, hi = np.float32(low), np.float32(high)
        u *= hi - lo
        u += lo
        return u.reshape(shape)

    def normal(self, loc, scale, size) -> np.ndarray:
        shape = tuple(np.atleast_1d(size)) if size is not None else ()
        n = int(np.prod(shape))
        out = np.empty(n, np.float32)
        for i, a, b in self._chunks(n):
            out[a:b] = self._polar(i, b - a)
        return (np.float32(loc) + np.float32(scale) * out).reshape(shape)

    def _polar(self, i: int, n: int) -> np.ndarray:
        got = []
        while n:
            pairs = n + n // 3 + 8  # acceptance is pi / 4
            u = self._unit(self._raw(i, 2 * pairs, consume=False)).reshape(pairs, 2)
            x = np.float32(2) * u[:, 0] - np.float32(1)
            y = np.float32(2) * u[:, 1] - np.float32(1)
            r2 = x * x + y * y
            ok = np.flatnonzero((r2 <= 1) & (r2 != 0))[:n]
            used = int(ok[-1]) + 1 if len(ok) == n else pairs
            self._consume(i, 2 * used)
            r2 = r2[ok]
            got.append(y[ok] * np.sqrt(np.float32(-2) * np.log(r2) / r2))
            n -= len(ok)
        return np.concatenate(got) if got else np.empty(0, np.float32)

    def integers(self, low, high):
        return self._ints.integers(low, high)
