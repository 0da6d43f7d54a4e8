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
    got = [s._engines.take(Sampler._chunks(n)) for n in sizes]
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
                while True:
                    x, y = np.float32(2) * u[k] - np.float32(1), np.float32(2) * u[k + 1] - np.float32(1)
                    k += 2
                    r2 = x * x + y * y
                    if r2 <= 1 and r2 != 0:
                        out.append(y * np.sqrt(np.float32(-2) * np.log(r2) / r2))
                        break
            pos[i] = k
    return np.array(out, np.float32)


@pytest.mark.parametrize("ahead", ["default", "short"])
def test_polar_normals_consume_as_one_engine_would(monkeypatch, ahead):
    # "short": no look-ahead slack, so most engines need further rounds of pairs
    if ahead == "short":
        monkeypatch.setattr("jbind._mxrandom.lookahead", lambda n: max(n // 2, 1))
    sizes = [1, 300, 64 * 1024 + 5, 17, 3000]
    s = Sampler(5)
    got = np.concatenate([s.normal(0, 1, (n,)) for n in sizes])
    np.testing.assert_allclose(got, _polar_reference(5, sizes), rtol=2e-6, atol=1e-6)
