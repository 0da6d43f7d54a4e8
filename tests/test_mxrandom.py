"""Initializers draw MXNet 1.9.1's CPU random numbers after mx.random.seed (jbind/_mxrandom.py)."""
import pathlib
import sys

import numpy as np
import pytest

import jbind as mx
from jbind._mxrandom import Sampler

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))
import random_cases as rc  # noqa: E402

WANT = dict(np.load(GOLDEN / "random" / "init_streams.npz"))


@pytest.mark.parametrize("stream", sorted(rc.STREAMS))
def test_initializers_draw_mxnets_numbers(stream):
    got = rc.run(mx, stream)
    assert sorted(got) == sorted(k for k in WANT if k.startswith(stream + "/"))
    for key, arr in got.items():
        if "uniform" in key or "xavier_in" in key:  # bit for bit
            np.testing.assert_array_equal(arr, WANT[key], err_msg=key)
        else:  # normal: log and sqrt round alike to a float32 ulp or so
            np.testing.assert_allclose(arr, WANT[key], rtol=2e-6, atol=1e-6, err_msg=key)


def test_engines_continue_and_reseeding_restarts():
    a = Sampler(9)
    first = a.uniform(0, 1, (200,))
    second = a.uniform(0, 1, (200,))
    b = Sampler(9)
    both = b.uniform(0, 1, (200,)), b.uniform(0, 1, (200,))
    np.testing.assert_array_equal(both[0], first)
    np.testing.assert_array_equal(both[1], second)
    assert not np.array_equal(first, second)
    # 200 numbers are 4 chunks of 50 from engines 0..3: engine 0 seeded 127 * 9.
    raw = np.random.RandomState(127 * 9).randint(0, 2 ** 32, size=100, dtype=np.uint64)
    unit = np.minimum(raw.astype(np.float32) / np.float32(2 ** 32), np.nextafter(np.float32(1), np.float32(0)))
    np.testing.assert_array_equal(first[:50], unit[:50])
    np.testing.assert_array_equal(second[:50], unit[50:])
    n = Sampler(4).normal(1.0, 2.0, (1000, 70))
    assert n.dtype == np.float32 and abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 2.0) < 0.02


def test_seed_resets_the_initializer_stream():
    mx.random.seed(11)
    arr = mx.nd.zeros((30, 30))
    mx.init.Uniform(1.0)(mx.init.InitDesc("w_weight"), arr)
    np.testing.assert_array_equal(arr.asnumpy(), Sampler(11).uniform(-1.0, 1.0, (30, 30)))


def test_engines_match_numpys_mt19937_across_twists():
    # The engines are generated together (a vectorized twist); each must still be
    # RandomState(127 * seed + i)'s stream, continued across draws and 624-number twists.
    s = Sampler(3)
    sizes = [70_000, 1, 130, 2_000_000, 65, 700_000]
    got = [s._engines.take(n) for n in sizes]
    for i in (0, 1, 511, 1023):
        want = np.random.RandomState(127 * 3 + i).randint(0, 2 ** 32, size=5000, dtype=np.uint32)
        mine = np.concatenate([g[a:b] for g, n in zip(got, sizes) for j, a, b in Sampler._chunks(n) if j == i])
        np.testing.assert_array_equal(mine, want[:len(mine)], err_msg=f"engine {i}")
    # consumed outputs are dropped: what is kept is about one draw's look-ahead
    assert s._engines._buf.nbytes < 16 * 1024 * 624 * 4


def _polar_reference(seed, sizes):
    """libstdc++'s polar method one engine at a time, from numpy's RandomState streams."""
    raws = {}
    pos = {}
    out = []
    for n in sizes:
        for i, a, b in Sampler._chunks(n):
            raw = raws.setdefault(i, np.random.RandomState(127 * seed + i).randint(
                0, 2 ** 32, size=20_000, dtype=np.uint32))
            u = np.minimum(raw.astype(np.float32) * np.float32(2.0 ** -32), np.nextafter(np.float32(1), np.float32(0)))
            k = pos.get(i, 0)
            for _ in range(b - a):
                y, k = _polar_one(u, k)
                out.append(y)
            pos[i] = k
    return np.array(out, np.float32)


def _polar_one(u, k):
    """One libstdc++ polar normal from unit draws u[k], u[k + 1], ...: (value, next k)."""
    while True:
        x, y = np.float32(2) * u[k] - np.float32(1), np.float32(2) * u[k + 1] - np.float32(1)
        k += 2
        r2 = x * x + y * y
        if r2 <= 1 and r2 != 0:
            return y * np.sqrt(np.float32(-2) * np.log(r2) / r2), k


@pytest.mark.parametrize("ahead", ["default", "short"])
def test_polar_normals_consume_as_one_engine_would(monkeypatch, ahead):
    # "short": no look-ahead slack, so most engines need further rounds of pairs
    if ahead == "short":
        monkeypatch.setattr("jbind._mxrandom.lookahead", lambda n: max(n // 2, 1))
    sizes = [1, 300, 64 * 1024 + 5, 17, 3000]
    s = Sampler(5)
    got = np.concatenate([s.normal(0, 1, (n,)) for n in sizes])
    np.testing.assert_allclose(got, _polar_reference(5, sizes), rtol=2e-6, atol=1e-6)


def _unit_reference(raw):
    return np.minimum(raw.astype(np.float32) * np.float32(2.0 ** -32), np.nextafter(np.float32(1), np.float32(0)))


def test_uniform_scales_as_mxnet_at_the_edges(monkeypatch):
    # uniform scales the engines' outputs in one rounding where d * 2**-32 is exact, and
    # clamps after it; that must equal MXNet's lo + d * min(u, 1 - 2**-24) bit for bit,
    # at the outputs that round up to 2**32 (clamped) and for every sign and size of d.
    raw = np.concatenate([
        np.array([0, 1, 2 ** 31, 0xFFFFFEFF, 0xFFFFFF00, 0xFFFFFF7F, 0xFFFFFF80, 0xFFFFFFFF], np.uint32),
        np.random.RandomState(0).randint(0, 2 ** 32, size=4000, dtype=np.uint32)])
    cases = [(-0.1, 0.1), (0, 1), (3, -2), (5, 5), (-0.0, 0.0), (0.0, -0.0), (-7.5, 1e30),
             (1e-38, 3e-38), (1.0, 1.0 + 1e-7), (0, 2.0 ** -130), (-3e38, 3e38), (1, float("nan"))]
    for low, high in cases:
        s = Sampler(1)
        monkeypatch.setattr(s._engines, "runs", lambda n: [(0, raw[None, :n])])
        monkeypatch.setattr(s._engines, "take", lambda n: raw[:n].copy())
        with np.errstate(all="ignore"):
            got = s.uniform(low, high, (len(raw),))
            lo, hi = np.float32(low), np.float32(high)
            want = lo + (hi - lo) * _unit_reference(raw)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{low}, {high}")


def _draws_reference(seed, draws):
    """Uniform and polar-normal draws one engine at a time from numpy's RandomState streams
    (numpy's C mt19937), with every engine's position after each draw."""
    raws, pos, out = {}, np.zeros(1024, np.int64), []
    for kind, n, p0, p1 in draws:
        got = []
        for i, a, b in Sampler._chunks(n):
            if i not in raws:
                raws[i] = _unit_reference(np.random.RandomState(127 * seed + i).randint(
                    0, 2 ** 32, size=6000, dtype=np.uint32))
            u, k = raws[i], int(pos[i])
            if kind == "uniform":
                got.append(np.float32(p0) + (np.float32(p1) - np.float32(p0)) * u[k:k + b - a])
                k += b - a
            else:
                for _ in range(b - a):
                    y, k = _polar_one(u, k)
                    got.append([np.float32(p0) + np.float32(p1) * y])
            pos[i] = k
        out.append((np.concatenate(got).astype(np.float32) if got else np.zeros(0, np.float32), pos.copy()))
    return out


def test_mixed_draws_continue_every_engines_stream():
    # Odd sizes, uniform and normal mixed, so that engines stand at different positions and
    # draws straddle twists and the kept outputs: each engine must go on with its own stream.
    draws = [("uniform", 1, -1, 1), ("normal", 3, 0, 1), ("uniform", 65, 0, 1),
             ("uniform", 64 * 1024 + 1, -0.25, 0.5), ("normal", 777, 1, 2), ("uniform", 5000, 2, -3),
             ("normal", 1, 0, 1), ("uniform", 1_300_001, -0.1, 0.1), ("normal", 2049, 0, 3),
             ("uniform", 0, 0, 1), ("uniform", 3, 0, 1), ("uniform", 1024 * 700 + 13, 0, 1e-3)]
    s = Sampler(6)
    for (kind, n, p0, p1), (want, pos) in zip(draws, _draws_reference(6, draws)):
        got = getattr(s, kind)(p0, p1, (n,))
        if kind == "uniform":
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{kind} {n}")
        else:
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=f"{kind} {n}")
        np.testing.assert_array_equal(s._engines._used, pos, err_msg=f"positions after {kind} {n}")
