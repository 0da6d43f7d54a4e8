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
