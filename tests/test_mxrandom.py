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
