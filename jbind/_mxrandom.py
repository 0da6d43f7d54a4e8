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


def _layout(n: int):
    """A draw of n: (step, chunks); chunk i is numbers i * step .. min((i + 1) * step, n)."""
    count = min((n + PER_ENGINE - 1) // PER_ENGINE, ENGINES)
    if not count:
        return 0, 0
    step = (n + count - 1) // count
    return step, (n + step - 1) // step


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
        step, count = _layout(n)
        return [(i, i * step, min((i + 1) * step, n)) for i in range(count)]

    @staticmethod
    def _unit(raw: np.ndarray) -> np.ndarray:
        u = np.multiply(raw, np.float32(2.0 ** -32), dtype=np.float32)  # exact: a power of two
        return np.minimum(u, _BELOW_ONE, out=u)

    def uniform(self, low, high, size) -> np.ndarray:
        shape = tuple(np.atleast_1d(size)) if size is not None else ()
        n = int(np.prod(shape))
        lo, hi = np.float32(low), np.float32(high)
        d = hi - lo
        c = d * np.float32(2.0 ** -32)
        if not (np.isfinite(c) and c * np.float32(2.0 ** 32) == d):  # 2**-32 * d inexact
            u = self._unit(self._engines.take(n))
            u *= d
            u += lo
            return u.reshape(shape)
        # d * (x * 2**-32) == (d * 2**-32) * x exactly, so one rounding: round(x * c). The
        # clamp below one commutes with that monotonic rounding: it becomes a clamp at
        # round(top * c) (a max where c < 0). One pass from the engines' outputs, no copies.
        u = np.empty(n, np.float32)
        for a, block in self._engines.runs(n):
            np.multiply(block, c, out=u[a:a + block.size].reshape(block.shape), dtype=np.float32)
        top = _BELOW_ONE * np.float32(2.0 ** 32) * c
        if c > 0:
            np.minimum(u, top, out=u)
        elif c < 0:
            np.maximum(u, top, out=u)
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
    kept; engines consume at their own pace.

    (A numpy C MT19937 per engine would be slower: setting one's `state` costs ~65 us, ~65 ms
    for 1024, more than seeding and a warm start's draws here together, and its random_raw
    makes outputs no faster per number than `_twist` does.)"""

    def __init__(self, base: int):
        x = ((base + np.arange(ENGINES, dtype=np.uint64)) & 0xFFFFFFFF).astype(np.uint32)
        self._mt = mt = np.empty((ENGINES, _N), np.uint32)
        mt[:, 0] = x
        t, mul = np.empty_like(x), np.uint32(1812433253)
        for i in range(1, _N):  # init_genrand, in uint32 arithmetic, into columns: no transpose
            np.right_shift(x, 30, out=t)
            np.bitwise_xor(x, t, out=x)
            np.multiply(x, mul, out=x)
            np.add(x, i, out=x)
            mt[:, i] = x
        self._buf = np.empty((ENGINES, 0), np.uint32)  # outputs lo .. lo + width of each engine
        self._lo = 0
        self._used = np.zeros(ENGINES, np.int64)       # outputs consumed, per engine

    def _twist(self) -> np.ndarray:
        """Twist every engine's state: their next 624 outputs, tempered: (ENGINES, 624)."""
        mt, one = self._mt, np.uint32(1)

        def step(lo, hi, far):
            # mt[k] = mt[k + 397] ^ (y >> 1) ^ (MATRIX if y odd), y: mt[k]'s top bit and
            # mt[k + 1]'s others, mt[k + 1] still the old one (the blocks go in order)
            y = (mt[:, lo:hi] & _UPPER) | (mt[:, lo + 1:hi + 1] & _LOWER)
            far = far ^ (y >> one)
            np.bitwise_and(y, one, out=y)
            np.negative(y, out=y)                        # 0 or all ones
            np.bitwise_and(y, _MATRIX, out=y)
            np.bitwise_xor(far, y, out=mt[:, lo:hi])

        a = _N - _M                                      # 227
        step(0, a, mt[:, _M:_N])                         # reads the old state only
        step(a, 2 * a, mt[:, 0:a])                       # reads outputs of the block before
        step(2 * a, _N - 1, mt[:, a:_N - 1 - a])
        y = (mt[:, _N - 1] & _UPPER) | (mt[:, 0] & _LOWER)
        mt[:, _N - 1] = mt[:, _M - 1] ^ (y >> one) ^ (np.negative(y & one) & _MATRIX)
        y = mt.copy()                                    # tempering
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

    def runs(self, n: int):
        """Consume a draw of n (see `_layout`): [(a, outputs)], numbers a .. a + outputs.size
        of the draw, as the 2-D (engines, count) view of the buffer of a run of engines at
        the same position drawing the same count. Valid until the next draw."""
        step, count = _layout(n)
        if not count:
            return []
        used = self._used[:count]
        lens = np.full(count, step, np.int64)
        lens[-1] = n - (count - 1) * step
        self._ensure(int((used + lens).max()))
        cut = (np.flatnonzero((np.diff(used) != 0) | (np.diff(lens) != 0)) + 1).tolist()
        runs = []
        for r0, r1 in zip([0] + cut, cut + [count]):
            c0 = int(used[r0]) - self._lo
            runs.append((r0 * step, self._buf[r0:r1, c0:c0 + int(lens[r0])]))
        used += lens
        return runs

    def take(self, n: int) -> np.ndarray:
        """The raw outputs of a draw of n (see `_layout`): chunk i from engine i."""
        out = np.empty(n, np.uint32)
        for a, block in self.runs(n):
            out[a:a + block.size].reshape(block.shape)[...] = block
        return out
