"""take(mode='raise'): indices outside 0 .. n-1 are an error, reported as MXNet reports it."""
import numpy as np
import pytest

import jbind as mx


def _executor():
    a, i = mx.sym.Variable("a"), mx.sym.BlockGrad(mx.sym.Variable("i"))
    exe = mx.sym.take(a, i, axis=1, mode="raise").simple_bind(mx.cpu(), a=(2, 3), i=(2,))
    exe.arg_dict["a"][:] = np.arange(6.0).reshape(2, 3)
    return exe


def test_indices_in_range_gather_as_numpy():
    exe = _executor()
    exe.arg_dict["i"][:] = np.array([2, 0])
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.take(np.arange(6.0).reshape(2, 3), [2, 0], axis=1))


@pytest.mark.parametrize("bad", [3, -1])   # MXNet's raise mode takes no negative index either
def test_an_index_out_of_range_fails_when_the_output_is_read(bad):
    exe = _executor()
    exe.arg_dict["i"][:] = np.array([0, bad])
    outs = exe.forward(is_train=False)     # as MXNet: the forward returns, reading the result raises
    with pytest.raises(mx.base.MXNetError, match=f"out of bound: {bad} is not in \\[0, 2\\]"):
        outs[0].asnumpy()
    exe.arg_dict["i"][:] = np.array([1, 1])   # the next forward with good indices works again
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [[1, 1], [4, 4]])


def test_an_eager_take_out_of_range_raises():
    with pytest.raises(mx.base.MXNetError, match="out of bound"):
        mx.nd.take(mx.nd.array([1, 2, 3]), mx.nd.array([5]), mode="raise").asnumpy()
    np.testing.assert_array_equal(mx.nd.take(mx.nd.array([1, 2, 3]), mx.nd.array([2, 0]), mode="raise").asnumpy(), [3, 1])


def test_numeric_gradient_of_a_large_input_runs_the_check_batched():
    # 80 elements: check_numeric_gradient perturbs them in vmapped batches
    a, i = mx.sym.Variable("a"), mx.sym.Variable("i")
    sym = mx.sym.take(a, mx.sym.BlockGrad(i), axis=0, mode="raise")
    mx.test_utils.check_numeric_gradient(sym, {"a": np.random.rand(8, 10), "i": np.array([7.0, 0.0, 7.0])},
                                         grad_nodes=["a"], numeric_eps=1e-2, rtol=1e-2, atol=1e-3)
