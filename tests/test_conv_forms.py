"""The convolution and pooling forms of jbind/ops/_conv_fast.py (taps, patches, pooling by
slices) against XLA's own convolution and reduce-window: forward and gradient at float32
tolerance, the routing rule, and the executor's backward through a routed Convolution."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jbind as mx
from jbind.ops import _conv_fast as cf
from test_ops_conv import np_conv

TOL = dict(rtol=1e-5, atol=1e-5)

# (N, C, F, groups, spatial, kernel, stride, dilate, pad)
SHAPES = [
    (2, 4, 6, 1, (5, 5), (3, 3), (1, 1), (1, 1), (1, 1)),      # dense, small output
    (1, 3, 5, 1, (2, 2), (3, 3), (1, 1), (1, 1), (1, 1)),      # the 2x2 cliff with padding 1
    (2, 4, 6, 2, (6, 7), (3, 2), (2, 1), (1, 2), (1, 0)),      # grouped, stride, dilation
    (1, 4, 4, 4, (7, 7), (3, 3), (2, 2), (2, 1), (1, 2)),      # depthwise, stride + dilation
    (2, 3, 6, 3, (6, 6), (3, 3), (1, 1), (1, 1), (0, 0)),      # depthwise, channel multiplier 2
    (2, 3, 4, 1, (9,), (3,), (2,), (1,), (2,)),                # 1-D
    (1, 2, 2, 1, (4, 4, 4), (2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1)),  # 3-D
    (2, 2, 3, 1, (6, 5), (4, 4), (2, 3), (1, 1), (1, 1)),      # more taps than output positions
    (2, 4, 4, 2, (8, 9), (3, 3), (1, 2), (3, 2), (0, 1)),      # the same, grouped and dilated
]


def _data(shape):
    n, c, f, g, sp, k, *_ = shape
    rng = np.random.default_rng(sum(sp) + c)
    x = jnp.asarray(rng.standard_normal((n, c, *sp)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((f, c // g, *k)), jnp.float32)
    return x, w


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"g{s[3]}-{'x'.join(map(str, s[4]))}")
def test_forms_match_native_forward_and_gradient(shape):
    x, w = _data(shape)
    g, stride, dilate, pad = shape[3], *shape[6:]
    native = lambda x, w: cf.conv_native(x, w, stride, dilate, pad, g)  # noqa: E731
    ref = native(x, w)
    np.testing.assert_allclose(ref, np_conv(np.asarray(x, np.float64), np.asarray(w, np.float64),
                                            stride, dilate, pad, g), rtol=1e-4, atol=1e-4)
    ref_grads = jax.grad(lambda x, w: jnp.sum(jnp.sin(native(x, w))), (0, 1))(x, w)
    forms = ["patches"] + (["taps"] if g == x.shape[1] else [])
    for form in forms:
        f = lambda x, w: cf.conv(x, w, stride, dilate, pad, g, form=form)  # noqa: E731
        np.testing.assert_allclose(f(x, w), ref, **TOL, err_msg=form)
        grads = jax.grad(lambda x, w: jnp.sum(jnp.sin(f(x, w))), (0, 1))(x, w)
        for got, want in zip(grads, ref_grads):
            np.testing.assert_allclose(got, want, **TOL, err_msg=form)


def test_image_sized_kernel_is_sliced_per_window():
    """A kernel as large as the image (one output position) is gathered as one window, not
    as one slice per tap: a 224x224 kernel traces in a handful of ops, not 50176 slices."""
    x = jnp.ones((2, 3, 224, 224), jnp.float32)
    w = jnp.ones((5, 3, 224, 224), jnp.float32)
    jaxpr = jax.make_jaxpr(lambda x, w: cf.conv(x, w, (1, 1), (1, 1), (0, 0), form="patches"))(x, w)
    assert sum(e.primitive.name == "slice" for e in jaxpr.eqns) == 1
    y = cf.conv(x, w, (1, 1), (1, 1), (0, 0))
    assert y.shape == (2, 5, 1, 1)
    np.testing.assert_allclose(y, 3 * 224 * 224, rtol=1e-5)


def test_rule():
    def pick(x, w, g, stride=(1, 1), pad=(1, 1)):
        return cf.choose(x, w, g, stride, (1, 1), pad)
    assert pick((1, 64, 56, 56), (64, 1, 3, 3), 64) == "taps"             # depthwise
    assert pick((1, 128, 28, 28), (128, 4, 3, 3), 32) == "patches"        # grouped (ResNeXt)
    assert pick((16, 512, 2, 2), (512, 512, 3, 3), 1) == "patches"        # the 2x2 cliff
    assert pick((32, 64, 2, 2), (64, 64, 3, 3), 1) == "patches"           # the cliff at any batch
    # more than 256 slices whichever way patches are gathered: XLA's convolution
    assert pick((1, 64, 64, 64), (64, 2, 17, 17), 32, pad=(8, 8)) == "native"
    assert pick((1, 512, 7, 7), (512, 512, 3, 3), 1) == "patches"         # 7x7, 512 channels
    assert pick((16, 256, 7, 7), (256, 256, 3, 3), 1) == "native"         # 7x7 at batch 16
    assert pick((1, 256, 14, 14), (256, 256, 3, 3), 1) == "patches"       # 14x14, wide
    assert pick((1, 64, 14, 14), (64, 64, 3, 3), 1) == "native"           # 14x14, narrow
    assert pick((1, 64, 7, 7), (64, 64, 3, 3), 1) == "native"             # 7x7, narrow
    assert pick((1, 128, 7, 7), (128, 128, 3, 3), 1) == "patches"         # 7x7, 128 channels
    assert pick((1, 64, 56, 56), (64, 64, 3, 3), 1) == "native"           # large output
    assert pick((1, 64, 56, 56), (64, 8, 1, 1), 8, pad=(0, 0)) == "patches"   # grouped 1x1
    assert pick((1, 512, 7, 7), (512, 512, 1, 1), 1, pad=(0, 0)) == "patches"  # 1x1: one dot_general
    assert pick((16, 64, 56, 56), (256, 64, 1, 1), 1, pad=(0, 0)) == "patches"
    assert pick((1, 256, 56, 56), (512, 256, 1, 1), 1, stride=(2, 2), pad=(0, 0)) == "patches"


def test_forced_form(monkeypatch):
    from jbind.compile import store
    before = store._environment()
    monkeypatch.setenv("JBIND_CONV_FORM", "native")
    assert cf.choose((1, 64, 56, 56), (64, 1, 3, 3), 64, (1, 1), (1, 1), (1, 1)) == "native"
    assert not cf.choose_pool()
    store._environment.cache_clear()
    try:  # the stored executables of one setting are not reused under another
        assert store._environment() != before
    finally:
        store._environment.cache_clear()


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_executor_backward_through_routed_convolutions(layout):
    """A depthwise then a dense small-output convolution, bound and run backward, against
    jax.grad of XLA's own convolution."""
    n, c, h = 2, 4, 5
    data = mx.sym.Variable("data")
    y = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, num_group=c, stride=(2, 2), pad=(1, 1),
                           dilate=(1, 1), layout=layout, name="dw")
    y = mx.sym.Convolution(y, kernel=(3, 3), num_filter=3, pad=(1, 1), dilate=(2, 2), layout=layout, name="pw")
    shape = (n, c, h, h) if layout == "NCHW" else (n, h, h, c)
    exe = y.simple_bind(mx.cpu(), data=shape)
    rng = np.random.default_rng(1)
    vals = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in exe.arg_dict.items()}
    for k, v in vals.items():
        exe.arg_dict[k][:] = v
    out = exe.forward(is_train=True)[0].asnumpy()
    head = rng.standard_normal(out.shape).astype(np.float32)
    exe.backward(mx.nd.array(head))

    def ref(d, w1, b1, w2, b2):
        to_nc = (lambda a: a) if layout == "NCHW" else (lambda a: jnp.moveaxis(a, -1, 1))
        t = cf.conv_native(to_nc(d), to_nc(w1), (2, 2), (1, 1), (1, 1), c) + b1[:, None, None]
        t = cf.conv_native(t, to_nc(w2), (1, 1), (2, 2), (1, 1), 1) + b2[:, None, None]
        return t if layout == "NCHW" else jnp.moveaxis(t, 1, -1)
    names = ["data", "dw_weight", "dw_bias", "pw_weight", "pw_bias"]
    args = [jnp.asarray(vals[k]) for k in names]
    np.testing.assert_allclose(out, ref(*args), **TOL)
    grads = jax.grad(lambda *a: jnp.sum(ref(*a) * head), tuple(range(5)))(*args)
    for k, gv in zip(names, grads):
        np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), gv, rtol=1e-5, atol=1e-4, err_msg=k)


def _reduce_window_max(x, k, s, pad):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, *k), (1, 1, *s), ((0, 0), (0, 0), *pad))


@pytest.mark.parametrize("k, s, pad", [((3, 3), (2, 2), ((1, 1), (1, 0))),   # overlapping windows
                                       ((2, 2), (2, 2), ((0, 1), (0, 0))),   # disjoint windows
                                       ((2, 3), (1, 3), ((0, 0), (1, 1)))])
def test_pool_taps_match_reduce_window_with_ties(k, s, pad):
    """Max pooling by slices gives its gradient to the first maximum of each window, as
    reduce-window does: post-ReLU zeros make ties common."""
    rng = np.random.default_rng(2)
    x = jnp.asarray(np.maximum(rng.integers(-2, 3, (2, 3, 7, 6)), 0), jnp.float32)
    out = [(n + lo + hi - kk) // ss + 1 for n, kk, ss, (lo, hi) in zip((7, 6), k, s, pad)]
    taps = lambda x: cf.pool_taps(x, "max", [2, 3], k, s, pad, out)  # noqa: E731
    np.testing.assert_array_equal(taps(x), _reduce_window_max(x, k, s, pad))
    head = jnp.asarray(rng.standard_normal((2, 3, *out)), jnp.float32)
    g1 = jax.grad(lambda x: jnp.sum(taps(x) * head))(x)
    g2 = jax.grad(lambda x: jnp.sum(_reduce_window_max(x, k, s, pad) * head))(x)
    np.testing.assert_allclose(g1, g2, **TOL)
    ssum = cf.pool_taps(x, "sum", [2, 3], k, s, pad, out)
    ref = lax.reduce_window(x, 0.0, lax.add, (1, 1, *k), (1, 1, *s), ((0, 0), (0, 0), *pad))
    np.testing.assert_allclose(ssum, ref, **TOL)


def test_small_pooling_lowers_without_reduce_window():
    """conv -> 2x2 pool -> FullyConnected -> FullyConnected (vgg's head) keeps the pool out
    of XLA's reduce-window, whose YNNPACK fusion with the two dots took seconds at batch 2."""
    data = mx.sym.Variable("data")
    y = mx.sym.Pooling(data, kernel=(2, 2), stride=(2, 2), pool_type="max")
    y = mx.sym.FullyConnected(mx.sym.Activation(mx.sym.FullyConnected(y, num_hidden=16, name="fc1"),
                                                act_type="relu"), num_hidden=16, name="fc2")
    exe = y.simple_bind(mx.cpu(), data=(2, 4, 6, 6), grad_req="null")
    x = np.random.default_rng(3).standard_normal((2, 4, 6, 6)).astype(np.float32)
    exe.arg_dict["data"][:] = x
    got = exe.forward()[0].asnumpy()
    w1, b1 = exe.arg_dict["fc1_weight"].asnumpy(), exe.arg_dict["fc1_bias"].asnumpy()
    w2, b2 = exe.arg_dict["fc2_weight"].asnumpy(), exe.arg_dict["fc2_bias"].asnumpy()
    pooled = x.reshape(2, 4, 3, 2, 3, 2).max(axis=(3, 5)).reshape(2, -1)
    np.testing.assert_allclose(got, np.maximum(pooled @ w1.T + b1, 0) @ w2.T + b2, rtol=1e-5, atol=1e-5)
    hlo = jax.jit(lambda v: cf.pool_taps(v, "max", [2, 3], (2, 2), (2, 2), ((0, 0), (0, 0)), (3, 3))) \
        .lower(jnp.asarray(x)).compile().as_text()
    assert "reduce-window" not in hlo
