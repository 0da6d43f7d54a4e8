"""Arrays stay on the context they were made for, whatever JAX's default device is.

On a GPU machine JAX's default device is the GPU while MXNet's default context is cpu(0);
here cpu(1) plays the GPU's part (`jax.default_device`), so a computation that forgets its
context shows up as an array on cpu(1).
"""
import jax
import numpy as np
import pytest

import jbind as mx

CPU0, CPU1 = jax.devices("cpu")[:2]
HOME = {str(CPU0)}


def devices(*arrays):
    return {str(d) for a in arrays for d in a._data.devices()}


@pytest.fixture
def other_default():
    with jax.default_device(CPU1):
        yield


def test_module_fit_save_and_reload_stay_on_the_bound_context(other_default, tmp_path):
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc"),
                               name="softmax")
    rng = np.random.default_rng(0)
    it = mx.io.NDArrayIter(rng.random((32, 5)).astype(np.float32), rng.integers(0, 3, 32).astype(np.float32),
                           batch_size=16)
    mod = mx.mod.Module(net, context=mx.cpu(0))
    mod.fit(it, num_epoch=1, optimizer="adam")
    arg, _ = mod.get_params()
    assert devices(*arg.values(), *mod.get_outputs()) == HOME
    prefix = str(tmp_path / "m")
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    again = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=mx.cpu(0))
    again.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    again.init_optimizer(optimizer="adam")
    it.reset()
    again.forward_backward(next(iter(it)))
    again.update()
    arg, _ = again.get_params()
    assert devices(*arg.values(), *again.get_outputs()) == HOME


def test_ops_without_inputs_follow_ctx_or_the_current_context(other_default):
    assert devices(mx.nd.random.uniform(shape=(2,)), mx.nd._random_normal(shape=(2,)),
                   mx.nd._zeros(shape=(2,)), mx.nd.zeros((2,))) == HOME
    assert mx.nd.random.uniform(shape=(2,), ctx=mx.cpu(1)).context == mx.cpu(1)
    assert mx.nd._random_normal(shape=(2,), ctx="cpu(1)").context == mx.cpu(1)
    with mx.cpu(1):
        assert mx.nd.random.normal(shape=(2,)).context == mx.cpu(1)
    with mx.cpu(0):
        assert mx.nd.random.normal(shape=(2,)).context == mx.cpu(0)


def test_a_bad_ctx_string_is_an_error_naming_it():
    with pytest.raises(mx.base.MXNetError, match="tpu"):
        mx.nd._random_normal(shape=(2,), ctx="tpu(0)")
