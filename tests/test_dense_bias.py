"""FullyConnected with the bias inside the product (ops/_dense.py): same values and
gradients as `x @ w.T + b`, and taken only for large float32 outputs on the CPU."""
import jax.numpy as jnp
import numpy as np

import jbind as mx
from jbind.ops import _dense


def test_values_and_gradients(monkeypatch):
    monkeypatch.setattr(_dense, "MIN_OUTPUTS", 1)  # fold this small layer too (shapes unique to this test)
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((7, 13)), rng.standard_normal((29, 13)), rng.standard_normal(29)
    head = rng.standard_normal((7, 29))
    arrs = [mx.nd.array(v) for v in (x, w, b)]
    for a in arrs:
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.FullyConnected(*arrs, num_hidden=29)
    y.backward(mx.nd.array(head))
    f32 = lambda v: v.astype(np.float32).astype(np.float64)
    x, w, b, head = map(f32, (x, w, b, head))
    np.testing.assert_allclose(y.asnumpy(), x @ w.T + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(arrs[0].grad.asnumpy(), head @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(arrs[1].grad.asnumpy(), head.T @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(arrs[2].grad.asnumpy(), head.sum(0), rtol=1e-5, atol=1e-5)


def test_taken_for_large_float32_outputs_only():
    big_x, w = jnp.zeros((128, 8), jnp.float32), jnp.zeros((8192, 8), jnp.float32)
    assert _dense.wants_fold(big_x, w)                        # 128 x 8192 = 2**20 outputs
    assert not _dense.wants_fold(big_x[:127], w)              # one row fewer
    assert not _dense.wants_fold(big_x.astype(jnp.float16), w.astype(jnp.float16))
    assert not _dense.wants_fold(jnp.zeros((2, 64, 8), jnp.float32), w)  # not 2-D (flatten=False)
