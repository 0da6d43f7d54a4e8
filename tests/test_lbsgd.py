"""mx.optimizer.LBSGD against MXNet 1.9.1 (tests/golden/lbsgd, made by make_lbsgd_golden.py)."""
import os
import sys

import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "golden"))
from lbsgd_cases import CASES, COMMON  # noqa: E402

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "golden", "lbsgd", "lbsgd.npz"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_seven_updates_match_mxnet(name):
    opt = mx.optimizer.create("lbsgd", **dict(COMMON, **CASES[name]))
    w = mx.nd.array(GOLDEN["w0"])
    state = opt.create_state(0, w)
    for g in GOLDEN["grads"]:
        opt.update(0, w, mx.nd.array(g), state)
    np.testing.assert_allclose(w.asnumpy(), GOLDEN[name], rtol=1e-5, atol=1e-6)


def test_only_every_batch_scale_th_call_moves_the_weight():
    opt = mx.optimizer.create("lbsgd", learning_rate=0.1, batch_scale=3, warmup_epochs=0)
    w = mx.nd.ones((2,))
    state = opt.create_state(0, w)
    seen = []
    for _ in range(6):
        opt.update(0, w, mx.nd.ones((2,)), state)
        seen.append(float(w.asnumpy()[0]))
    # after warmup the rate is lr * batch_scale, on the mean of the three gradients (1)
    np.testing.assert_allclose(seen, [1, 1, 0.7, 0.7, 0.7, 0.4], rtol=1e-6)


def test_bad_settings():
    with pytest.raises(MXNetError, match="warmup_strategy"):
        mx.optimizer.create("lbsgd", warmup_strategy="cosine")
    with pytest.raises(MXNetError, match="batch_scale"):
        mx.optimizer.create("lbsgd", batch_scale=0)
