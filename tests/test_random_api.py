"""mx.sym.random / mx.nd.random (MXNet's Python samplers) and when sampling ops draw anew."""
import numpy as np
import pytest

import jbind as mx


def test_number_parameters_use_the_random_ops_and_arrays_the_sample_ops():
    """As MXNet's _random_helper: numbers -> `_random_X` (mx.nd draws shape (1,) by default),
    NDArrays / Symbols -> `_sample_X` (one set of draws per parameter element)."""
    assert mx.nd.random.uniform(0, 1).shape == (1,)
    assert mx.nd.random.uniform(-1, 1, shape=(2,)).shape == (2,)
    low, high = mx.nd.array([1, 2, 3]), mx.nd.array([2, 3, 4])
    draws = mx.nd.random.uniform(low, high, shape=2).asnumpy()
    assert draws.shape == (3, 2) and np.all((draws >= low.asnumpy()[:, None]) & (draws < high.asnumpy()[:, None]))
    assert mx.nd.random.randn(2, 3, loc=5).shape == (2, 3)
    sym = mx.sym.random.normal(mx.sym.Variable("m"), mx.sym.Variable("s"), shape=4)
    assert sym.list_arguments() == ["m", "s"] and sym.infer_shape(m=(3,), s=(3,))[1] == [(3, 4)]
    assert mx.sym.random.uniform(0, 1, shape=(2, 3)).infer_shape()[1] == [(2, 3)]
    assert len(mx.sym.random.multinomial(mx.sym.Variable("p")).list_outputs()) == 2  # get_prob: True in sym
    assert isinstance(mx.nd.random.multinomial(mx.nd.array([[0.5, 0.5]])), mx.nd.NDArray)  # False in nd
    np.testing.assert_array_equal(np.sort(mx.nd.random.shuffle(mx.nd.arange(0, 5)).asnumpy()), np.arange(5))
    assert mx.nd.random.randint(0, 5, shape=(4,)).dtype == np.int32


def test_exponential_takes_a_scale_as_mxnet():
    mx.random.seed(1)
    assert abs(float(mx.nd.random.exponential(2.0, shape=(20000,)).asnumpy().mean()) - 2.0) < 0.1
    assert abs(float(mx.nd.random.exponential(scale=0.5, shape=(20000,)).asnumpy().mean()) - 0.5) < 0.03


def test_mixed_or_unknown_parameter_types_are_errors():
    with pytest.raises(ValueError, match="must all be NDArrays"):
        mx.nd.random.uniform(mx.nd.array([0.0]), 1)
    with pytest.raises(ValueError, match="either NDArray or numbers"):
        mx.nd.random.uniform("a")
    with pytest.raises(ValueError, match="either Symbol or numbers"):
        mx.sym.random.normal(mx.nd.array([0.0]), mx.nd.array([1.0]))


def test_each_call_and_each_forward_draws_anew_and_the_seed_repeats_them():
    """mx.nd samplers and inference forwards of a sampling graph draw anew every time, as
    MXNet's global generator; mx.random.seed starts the same sequence again. A graph that
    samples only in training (Dropout) leaves inference on the fixed counter 0."""
    mx.random.seed(3)
    a, b = (mx.nd.random_uniform(shape=(3,)).asnumpy() for _ in range(2))
    mx.random.seed(3)
    assert np.array_equal(mx.nd.random_uniform(shape=(3,)).asnumpy(), a) and not np.array_equal(a, b)
    exe = (mx.sym.random_normal(shape=(4,), name="r") + mx.sym.Variable("x")).simple_bind(
        mx.cpu(), x=(4,), grad_req="null")
    mx.random.seed(5)
    first, second = (exe.forward()[0].asnumpy() for _ in range(2))
    assert not np.array_equal(first, second)
    mx.random.seed(5)
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), first)
    drop = mx.sym.Dropout(mx.sym.Variable("x"), p=0.5).simple_bind(mx.cpu(), x=(8,), grad_req="null")
    assert drop._draws_at_inference() is False and exe._draws_at_inference() is True


def test_mx_random_holds_mxnets_samplers():
    for name in ("uniform", "normal", "randn", "exponential", "gamma", "poisson", "negative_binomial",
                 "generalized_negative_binomial", "multinomial", "shuffle", "randint"):
        assert getattr(mx.random, name) is getattr(mx.nd.random, name), name
    assert mx.random.uniform(shape=(2,)).shape == (2,)


def test_shape_dtype_ctx_and_out_are_positional_after_the_parameters():
    """MXNet's order: the distribution's parameters, then shape, dtype, ctx, out (mx.nd)."""
    assert mx.nd.random.uniform(-1, 1, (2, 3)).shape == (2, 3)
    assert mx.nd.random.normal(0, 1, (4,), "float16").dtype == np.float16
    assert mx.nd.random.uniform(0, 1, (2,), None, mx.cpu(1)).context == mx.cpu(1)
    assert mx.nd.random.randint(0, 5, (3,), "int32", mx.cpu(1)).context == mx.cpu(1)
    with pytest.raises(TypeError, match="multiple values"):
        mx.nd.random.uniform(0, 1, (2,), shape=(3,))
    out = mx.nd.zeros((50,), dtype="float16")
    got = mx.nd.random.uniform(2, 3, out=out)  # shape and dtype come from `out`
    values = out.asnumpy()
    assert got is out and values.dtype == np.float16 and len(np.unique(values)) > 10
    assert np.all((values >= 2) & (values <= 3))
    low = mx.nd.array([0.0, 10.0])
    rows = mx.nd.zeros((2, 5))
    mx.nd.random.uniform(low, low + 1, out=rows)  # per-parameter samples: (2,) + (5,)
    r = rows.asnumpy()
    assert np.all((r[0] < 1) & (r[1] >= 10))
    assert mx.sym.random.uniform(0, 1, (2, 3)).infer_shape()[1] == [(2, 3)]
    m, s = mx.sym.Variable("m"), mx.sym.Variable("s")
    assert mx.sym.random.randn(2, 3, loc=m, scale=s).infer_shape(m=(4,), s=(4,))[1] == [(4, 2, 3)]
    # MXNet composes keyword Symbols only into ops with inputs: `_random_normal` has none
    assert mx.sym.random.randn(loc=1.0, data=mx.sym.ones((2,))).list_arguments() == []


def test_one_generator_per_device_and_mxnets_seeding_rules():
    """All CPU contexts share one generator; each GPU has its own. seed(s) gives each device
    a key from s and its id (device 0's is s's own); seed(s, ctx) reseeds the CPU generator
    and that GPU's from s alone, leaving other GPUs where they were."""
    from jbind import random as r
    mx.random.seed(7)
    a = mx.nd.random.uniform(shape=(4,), ctx=mx.cpu(0)).asnumpy()
    b = mx.nd.random.uniform(shape=(4,), ctx=mx.cpu(1)).asnumpy()
    assert not np.array_equal(a, b)  # cpu(1) continues cpu(0)'s stream
    mx.random.seed(7)
    np.testing.assert_array_equal(mx.nd.random.uniform(shape=(4,), ctx=mx.cpu(1)).asnumpy(), a)
    mx.random.seed(7)
    assert np.array_equal(r.base_key(mx.gpu(0)), r.base_key(mx.cpu(0)))
    assert not np.array_equal(r.base_key(mx.gpu(1)), r.base_key(mx.gpu(0)))
    r.next_draw(mx.gpu(0)), r.next_draw(mx.gpu(0))
    mx.random.seed(9, ctx=mx.gpu(1))
    assert np.array_equal(r.base_key(mx.gpu(1)), r.key_data(9)) and np.array_equal(r.base_key(mx.cpu()), r.key_data(9))
    assert r.next_draw(mx.gpu(1))[1] == 0 and r.next_draw(mx.cpu())[1] == 0
    assert r.next_draw(mx.gpu(0))[1] == 2  # not reseeded: goes on
    assert np.array_equal(r.base_key(mx.gpu(0)), r.key_data(7))
    mx.random.seed(3, ctx=mx.cpu())
    first = mx.nd.random.normal(shape=(3,)).asnumpy()
    mx.random.seed(3, ctx=mx.cpu())
    np.testing.assert_array_equal(mx.nd.random.normal(shape=(3,)).asnumpy(), first)


def test_seeds_are_ints_taken_modulo_two_to_the_32():
    with pytest.raises(ValueError, match="must be int"):
        mx.random.seed(1.5)
    mx.random.seed(-1)
    a = mx.nd.random.uniform(shape=(3,)).asnumpy()
    mx.random.seed(2 ** 32 - 1)
    np.testing.assert_array_equal(mx.nd.random.uniform(shape=(3,)).asnumpy(), a)


@pytest.mark.parametrize("alpha,beta", [(0.3, 1.0), (1.0, 5.0), (7.5, 0.5)])
def test_gamma_follows_its_law(alpha, beta):
    """Kolmogorov-Smirnov against scipy's gamma (shape alpha, scale beta), number and array parameters."""
    import scipy.stats as stats  # scipy comes with jax
    mx.random.seed(11)
    draws = mx.nd.random.gamma(alpha, beta, shape=(20000,)).asnumpy()
    assert stats.kstest(draws, "gamma", args=(alpha, 0, beta)).pvalue > 1e-3
    per = mx.nd.random.gamma(mx.nd.array([alpha]), mx.nd.array([beta]), shape=(20000,)).asnumpy()[0]
    assert stats.kstest(per, "gamma", args=(alpha, 0, beta)).pvalue > 1e-3
    assert np.all(mx.nd.sample_gamma(mx.nd.array([0.0]), mx.nd.array([1.0]), shape=(5,)).asnumpy() == 0)


def test_rand_zipfian_draws_log_uniform_classes_and_their_expected_counts():
    """contrib.rand_zipfian: classes in [0, range_max), expected count of class c in n draws
    n * log((c + 2) / (c + 1)) / log(range_max + 1); mx.sym's gives the same three outputs."""
    mx.random.seed(4)
    true = mx.nd.array([0, 3, 9], dtype="int32")
    sampled, count_true, count_sampled = mx.nd.contrib.rand_zipfian(true, 2000, 10)
    classes = sampled.asnumpy()
    law = lambda c: np.log((c + 2.0) / (c + 1.0)) / np.log(11.0)  # noqa: E731
    assert classes.min() >= 0 and classes.max() < 10
    np.testing.assert_allclose(count_true.asnumpy(), 2000 * law(np.array([0.0, 3.0, 9.0])), rtol=1e-5)
    np.testing.assert_allclose(count_sampled.asnumpy(), 2000 * law(classes.astype(np.float64)), rtol=1e-5)
    freq = np.bincount(classes.astype(np.int64), minlength=10) / 2000.0
    np.testing.assert_allclose(freq, law(np.arange(10.0)), atol=0.04)
    outs = mx.sym.Group(list(mx.sym.contrib.rand_zipfian(mx.sym.Variable("t"), 50, 10)))
    exe = outs.bind(mx.cpu(), {"t": true})
    s, t, c = (o.asnumpy() for o in exe.forward())
    assert s.shape == (50,) and np.all((s >= 0) & (s < 10))
    np.testing.assert_allclose(t, 50 * law(np.array([0.0, 3.0, 9.0])), rtol=1e-5)
    np.testing.assert_allclose(c, 50 * law(s.astype(np.float64)), rtol=1e-5)
