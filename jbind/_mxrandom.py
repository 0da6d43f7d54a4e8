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


def lookahead(n: int) -> int:
    """Pairs to draw ahead for n polar normals (acceptance is pi / 4); more rounds follow if short."""
    return n + n // 3 + 8


class Sampler:
    """The engines of one seed, stepped together (see `_Engines`)."""

    def __init__(self, seed: int):
        self._engines = _Engines((int(seed) * MAGIC) & 0xFFFFFFFF)
        self._ints = np.random.default_rng(int(seed) & 0xFFFFFFFFFFFFFFFF)

    @staticmethod
    def _chunks(n: int):
        count = min((n + PER_ENGINE - 1) // PER_ENGINE, ENGINES)
        step = (n + count - 1) // count if count else 0
        return [(i, i * step, min((i + 1) * step, n)) for i in range(count) if i * step < n]

    @staticmethod
    def _unit(raw: np.ndarray) -> np.ndarray:
        u = np.multiply(raw, np.float32(2.0 ** -32), dtype=np.float32)  # exact: a power of two
        return np.minimum(u, _BELOW_ONE, out=u)

    def uniform(self, low, high, size) -> np.ndarray:
        shape = tuple(np.atleast_1d(size)) if size is not None else ()
        n = int(np.prod(shape))
        u = self._unit(self._engines.take(self._chunks(n)))
        lo, hi = np.float32(low), np.float32(high)
        u *= hi - lo
        u += lo
        return u.reshape(shape)

    def normal(self, loc, scale, size) -> np.ndarray:
        shape = tuple(np.atleast_1d(size)) if size is not None else ()
        out = self._polar(self._chunks(int(np.prod(shape))))
        return (np.float32(loc) + np.float32(scale) * out).reshape(shape)

    def _polar(self, chunks) -> np.ndarray:
        """libstdc++'s polar method, for every chunk's engine at once: each engine keeps
        drawing pairs until it has accepted its chunk's count, and consumes only those."""
        eng = self._engines
        out = np.empty(chunks[-1][2] if chunks else 0, np.float32)
        rows = np.arange(len(chunks))
        at = np.array([a for _, a, _ in chunks], np.int64)      # where each chunk goes on
        need = np.array([b - a for _, a, b in chunks], np.int64)
        while len(rows):
            pairs = lookahead(int(need.max()))
            u = self._unit(eng.peek(rows, 2 * pairs)).reshape(len(rows), pairs, 2)
            x = np.float32(2) * u[..., 0] - np.float32(1)
            y = np.float32(2) * u[..., 1] - np.float32(1)
            r2 = x * x + y * y
            ok = (r2 <= 1) & (r2 != 0)
            rank = np.cumsum(ok, axis=1)
            take = ok & (rank <= need[:, None])
            done = rank[:, -1] >= need
            # pairs consumed: up to the chunk's last accepted one where it is complete, else all
            eng.consume(rows, 2 * np.where(done, np.argmax(rank >= need[:, None], axis=1) + 1, pairs))
            r2 = r2[take]
            count = take.sum(axis=1)
            first = np.cumsum(count) - count
            dest = np.repeat(at - first, count) + np.arange(len(r2))
            out[dest] = y[take] * np.sqrt(np.float32(-2) * np.log(r2) / r2)
            at, need = at + count, need - count
            rows, at, need = rows[~done], at[~done], need[~done]
        return out

    def integers(self, low, high):
        return self._ints.integers(low, high)


_N, _M = 624, 397
_UPPER, _LOWER, _MATRIX = np.uint32(0x80000000), np.uint32(0x7FFFFFFF), np.uint32(0x9908B0DF)


class _Engines:
    """ENGINES mt19937 generators (std::mt19937 and numpy's legacy RandomState alike), seeded
    `base + i`, their states the rows of one (ENGINES x 624) array: seeding, the twist and the
    tempering run across all engines at once. Outputs generated and not yet consumed are
    kept; engines consume at their own pace."""

    def __init__(self, base: int):
        x = ((base + np.arange(ENGINES, dtype=np.uint64)) & 0xFFFFFFFF).astype(np.uint32)
        mt = np.empty((_N, ENGINES), np.uint32)
        mt[0] = x
        for i in range(1, _N):  # init_genrand, in uint32 arithmetic
            x = np.uint32(1812433253) * (x ^ (x >> np.uint32(30))) + np.uint32(i)
            mt[i] = x
        self._mt = np.ascontiguousarray(mt.T)
        self._buf = np.empty((ENGINES, 0), np.uint32)  # outputs lo .. lo + width of each engine
        self._lo = 0
        self._used = np.zeros(ENGINES, np.int64)       # outputs consumed, per engine

    def _twist(self) -> np.ndarray:
        """The next 624 outputs of every engine: (ENGINES, 624)."""
        mt, old = self._mt, self._mt.copy()
        one = np.uint32(1)

        def step(lo, hi, far):
            y = (old[:, lo:hi] & _UPPER) | (old[:, lo + 1:hi + 1] & _LOWER)
            far = far ^ (y >> one)
            np.bitwise_and(y, one, out=y)
            np.negative(y, out=y)                        # 0 or all ones
            np.bitwise_and(y, _MATRIX, out=y)
            np.bitwise_xor(far, y, out=mt[:, lo:hi])

        a = _N - _M                                      # 227
        step(0, a, old[:, _M:_N])                        # reads the old state only
        step(a, 2 * a, mt[:, 0:a])                       # reads outputs of the block before
        step(2 * a, _N - 1, mt[:, a:_N - 1 - a])
        y = (old[:, _N - 1] & _UPPER) | (mt[:, 0] & _LOWER)
        mt[:, _N - 1] = mt[:, _M - 1] ^ (y >> one) ^ (np.negative(y & one) & _MATRIX)
        y = mt.copy()
        y ^= y >> np.uint32(11)
        y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
        y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
        y ^= y >> np.uint32(18)
        return y

    def _ensure(self, end: int) -> None:
        """Generate until every engine has its outputs up to `end` (absolute count)."""
        have = self._lo + self._buf.shape[1]
        if end <= have:
            return
        lo = int(self._used.min())
        parts = [self._buf[:, lo - self._lo:]]
        while have < end:
            parts.append(self._twist())
            have += _N
        self._buf, self._lo = np.concatenate(parts, axis=1), lo

    def peek(self, rows: np.ndarray, n: int) -> np.ndarray:
        """The next n outputs of each engine in `rows`, not consumed: (len(rows), n)."""
        used = self._used[rows]
        self._ensure(int(used.max()) + n if len(rows) else 0)
        cols = (used - self._lo)[:, None] + np.arange(n)
        return self._buf[rows[:, None], cols]

    def consume(self, rows: np.ndarray, counts: np.ndarray) -> None:
        self._used[rows] += counts

    def take(self, chunks) -> np.ndarray:
        """Chunk (i, a, b) of a draw: the next b - a outputs of engine i; concatenated."""
        n = chunks[-1][2] if chunks else 0
        out = np.empty(n, np.uint32)
        if not n:
            return out
        rows = np.arange(len(chunks))
        lens = np.array([b - a for _, a, b in chunks], np.int64)
        used = self._used[rows]
        self._ensure(int((used + lens).max()))
        # runs of engines at the same position drawing the same count: one 2-D slice each
        cut = np.flatnonzero((np.diff(used) != 0) | (np.diff(lens) != 0)) + 1
        for r0, r1 in zip(np.r_[0, cut], np.r_[cut, len(chunks)]):
            c0, k = int(used[r0]) - self._lo, int(lens[r0])
            a = chunks[r0][1]
            out[a:a + (r1 - r0) * k] = self._buf[r0:r1, c0:c0 + k].ravel()
        self._used[rows] += lens
        return out
