"""mx.autograd: recording NDArray programs and differentiating them (the API surface)."""
import threading

import numpy as np
import pytest

import jbind as mx
from jbind import autograd as ag
from jbind.autograd import _backward
from jbind.base import MXNetError

RNG = np.random.default_rng(0)


def nd(a, dtype=np.float32):
    return mx.nd.array(np.asarray(a, dtype=dtype), dtype=dtype)


def rand(*shape):
    return nd(RNG.uniform(0.5, 1.5, shape))


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.asnumpy() if hasattr(a, "asnumpy") else a,
                               b.asnumpy() if hasattr(b, "asnumpy") else b, rtol=tol, atol=tol)


# --- state and scopes ----------------------------------------------------------------
def test_scopes_set_and_restore_recording_and_training():
    assert not ag.is_recording() and not ag.is_training()
    with ag.record():
        assert ag.is_recording() and ag.is_training()
        with ag.pause():
            assert not ag.is_recording() and not ag.is_training()
            with ag.train_mode():
                assert not ag.is_recording() and ag.is_training()
        with ag.predict_mode():
            assert ag.is_recording() and not ag.is_training()
    with ag.record(train_mode=False):
        assert ag.is_recording() and not ag.is_training()
        with ag.pause(train_mode=True):
            assert not ag.is_recording() and ag.is_training()
    assert not ag.is_recording() and not ag.is_training()


def test_set_recording_and_set_training_return_the_previous_state():
    assert ag.set_recording(True) is False
    assert ag.set_recording(False) is True
    assert ag.set_training(True) is False
    assert ag.set_training(False) is True


def test_state_is_per_thread():
    seen = {}
    with ag.record():
        t = threading.Thread(target=lambda: seen.update(rec=ag.is_recording(), train=ag.is_training()))
        t.start()
        t.join()
        assert ag.is_recording()
    assert seen == {"rec": False, "train": False}


# --- backward, attach_grad, grad_req --------------------------------------------------
def test_backward_of_a_polynomial_writes_the_attached_gradient():
    x = rand(3, 4)
    x.attach_grad()
    assert x.grad is not None and (x.grad.asnumpy() == 0).all()
    with ag.record():
        y = x * x + 2 * x - 1 / x
    y.backward()
    close(x.grad, 2 * x.asnumpy() + 2 + 1 / x.asnumpy() ** 2)
    assert x._fresh_grad


def test_binary_ops_with_arrays_and_scalars_on_either_side():
    x, y = rand(2, 3), rand(2, 3)
    x.attach_grad()
    y.attach_grad()
    with ag.record():
        z = (3 - x) * y + x / y + 2 / x + x ** 2 + 2 ** y - (-x) + abs(x - 5) + x % 7
    z.backward()
    xv, yv = x.asnumpy(), y.asnumpy()
    close(x.grad, -yv + 1 / yv - 2 / xv ** 2 + 2 * xv + 1 - 1 + 1, 1e-4)
    close(y.grad, (3 - xv) - xv / yv ** 2 + np.log(2) * 2 ** yv, 1e-4)


def test_broadcasting_and_mixed_dtypes_under_record():
    x, b = rand(2, 3), rand(1, 3)
    h = mx.nd.array(np.ones((1, 3)), dtype=np.float16)
    x.attach_grad()
    b.attach_grad()
    with ag.record():
        y = h + x * b
    assert y.dtype == (h + x).dtype == np.float32  # promoted as outside record()
    y.backward()
    close(b.grad, x.asnumpy().sum(axis=0, keepdims=True))
    close(x.grad, np.broadcast_to(b.asnumpy(), (2, 3)))


def test_head_gradients_and_none_entries():
    x = nd(np.ones((3, 5)))
    dx = mx.nd.zeros_like(x)
    ag.mark_variables([x], [dx])
    with ag.record():
        a, b, c = mx.nd.split(x, axis=0, num_outputs=3, squeeze_axis=True)
    ag.backward([a, b, c], [None, nd([1, 2, 3, 4, 5]), nd([5, 4, 3, 2, 1])])
    np.testing.assert_array_equal(dx.asnumpy(), [[1] * 5, [1, 2, 3, 4, 5], [5, 4, 3, 2, 1]])


def test_ndarray_backward_takes_out_grad():
    x = rand(4)
    x.attach_grad()
    with ag.record():
        y = x * 3
    y.backward(out_grad=nd([1, 0, 2, 0]))
    close(x.grad, [3, 0, 6, 0])


def test_grad_req_add_accumulates_and_null_leaves_the_buffer():
    x, w = rand(3), rand(3)
    x.attach_grad(grad_req="add")
    w.attach_grad(grad_req="null")
    for _ in range(3):
        with ag.record():
            y = x * w
        y.backward()
    close(x.grad, 3 * w.asnumpy())
    assert (w.grad.asnumpy() == 0).all()


def test_mark_variables_with_several_grad_reqs():
    x, y = rand(2), rand(2)
    gx, gy = mx.nd.ones((2,)), mx.nd.ones((2,))
    ag.mark_variables([x, y], [gx, gy], grad_reqs=["add", "write"])
    with ag.record():
        z = x * y
    z.backward()
    close(gx, 1 + y.asnumpy())
    close(gy, x.asnumpy())


def test_retain_graph_allows_a_second_backward_and_its_absence_refuses_one():
    x = rand(2, 2)
    x.attach_grad(grad_req="add")
    with ag.record():
        y = x * 2
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, np.full((2, 2), 4.0))
    with pytest.raises(MXNetError, match="retain_graph=True"):
        y.backward()


def test_outputs_of_a_freed_graph_are_constants_in_a_new_one():
    """After a backward without retain_graph, the graph's outputs are still arrays: a new
    recording takes them as constants (no gradient flows back through them), as MXNet."""
    x = rand(2, 2)
    x.attach_grad()
    with ag.record():
        y = x * 3
        (y * 2).backward()
    close(x.grad, np.full((2, 2), 6.0))
    with ag.record():
        z = y * x
    z.backward()
    close(x.grad, y.asnumpy())  # y is a constant: d(y * x)/dx = y, not y + 3x
    with ag.record():
        y[:] = x * 5  # writing into it is allowed again: it is no longer in a graph
    with pytest.raises(MXNetError, match="retain_graph=True"):
        z.backward()


def test_detach_cuts_the_graph():
    x, y = rand(2, 2), rand(2, 2)
    x.attach_grad()
    y.attach_grad()
    with ag.record():
        z = (x + 2).detach() * y
    z.backward()
    assert (x.grad.asnumpy() == 0).all() and not x._fresh_grad
    close(y.grad, x.asnumpy() + 2)
    assert y._fresh_grad


def test_ops_inside_pause_are_constants():
    x = rand(3)
    x.attach_grad()
    with ag.record():
        y = x * 2
        with ag.pause():
            c = x * 10
        z = y + c * x
    z.backward()
    close(x.grad, 2 + 10 * x.asnumpy())  # c is a constant: no 20x term


def test_unmarked_inputs_get_no_gradient_and_marked_ones_do():
    x, const = rand(3), rand(3)
    x.attach_grad()
    with ag.record():
        y = mx.nd.elemwise_mul(x, const)
    y.backward()
    close(x.grad, const)
    assert const.grad is None


# --- grad and higher orders -------------------------------------------------------------
def test_grad_returns_new_arrays_and_leaves_attached_buffers():
    x = rand(3)
    x.attach_grad()
    with ag.record():
        y = mx.nd.exp(x)
    out = ag.grad(y, x)
    assert isinstance(out, list) and len(out) == 1   # a list also for one variable, as MXNet
    g = out[0]
    assert isinstance(g, mx.nd.NDArray)
    close(g, np.exp(x.asnumpy()))
    assert (x.grad.asnumpy() == 0).all()


def test_second_order_gradient_of_sin():
    x = rand(4)
    x.attach_grad()
    with ag.record():
        y = mx.nd.sin(x)
    dy, = ag.grad(y, [x], create_graph=True)
    close(dy, np.cos(x.asnumpy()))
    dy.backward()
    close(x.grad, -np.sin(x.asnumpy()))


def test_third_order_gradient_of_a_cube():
    x = rand(3)
    x.attach_grad()
    with ag.record():
        y = x * x * x
        d1 = ag.grad(y, x, create_graph=True)[0]
        d2 = ag.grad(d1, x, create_graph=True)[0]
    close(d1, 3 * x.asnumpy() ** 2, 1e-4)
    close(d2, 6 * x.asnumpy(), 1e-4)
    d2.backward()
    close(x.grad, np.full(3, 6.0))


def test_gradient_with_respect_to_two_variables_mixed_second_order():
    x, y = rand(2), rand(2)
    x.attach_grad()
    y.attach_grad()
    with ag.record():
        z = x * x * y
    dx, = ag.grad(z, x, create_graph=True)  # 2xy
    dx.backward()
    close(x.grad, 2 * y.asnumpy())
    close(y.grad, 2 * x.asnumpy())


# --- Function -------------------------------------------------------------------------------
class _DivMul(ag.Function):
    def forward(self, x, y):
        self.save_for_backward(x, y)
        return x / y, x * y

    def backward(self, dm, dn):
        x, y = self.saved_tensors
        return dm / y + dn * y, dn * x - dm * x / y / y


def test_function_backward_matches_the_recorded_math():
    x, y = rand(5), rand(5)
    x.attach_grad()
    y.attach_grad()
    with ag.record():
        m, n = _DivMul()(x, y)
        loss = m * 2 + n
    loss.backward()
    gx, gy = x.grad.asnumpy(), y.grad.asnumpy()
    with ag.record():
        loss = x / y * 2 + x * y
    loss.backward()
    close(gx, x.grad)
    close(gy, y.grad)


def test_function_outside_record_and_on_unmarked_inputs():
    class AddOne(ag.Function):
        def forward(self, a):
            return a + 1

        def backward(self, da):
            return da

    close(AddOne()(mx.nd.zeros((2,))), [1, 1])
    with ag.record():
        z = mx.nd.zeros((3, 4))
        for _ in range(3):
            z = AddOne()(z)
    close(z, np.full((3, 4), 3.0))
    f = AddOne()
    f(z)
    with pytest.raises(MXNetError, match="only be called once"):
        f(z)


# --- train / predict mode --------------------------------------------------------------------
def test_dropout_follows_train_mode_and_backward_uses_the_same_mask():
    x = mx.nd.ones((20, 20))
    x.attach_grad()
    with ag.record():
        y = mx.nd.Dropout(x, p=0.5)
        assert set(np.unique(y.asnumpy())) == {0.0, 2.0}
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), y.asnumpy())  # mask / (1 - p), the forward's draw
    with ag.record(train_mode=False):
        y = mx.nd.Dropout(x, p=0.5)
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), 1)
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=0.5).asnumpy(), 1)  # predict outside record
    with ag.train_mode():
        assert set(np.unique(mx.nd.Dropout(x, p=0.5).asnumpy())) == {0.0, 2.0}


def test_batchnorm_uses_batch_statistics_when_training_and_moving_ones_in_predict():
    x = nd(RNG.normal(3, 2, (8, 3)))
    gamma, beta = mx.nd.ones((3,)), mx.nd.zeros((3,))
    mean, var = mx.nd.zeros((3,)), mx.nd.ones((3,))
    x.attach_grad()
    with ag.record():
        y = mx.nd.BatchNorm(x, gamma, beta, mean, var, fix_gamma=False, momentum=0.5)
    close(y.asnumpy().mean(axis=0), np.zeros(3), 1e-4)
    close(mean, 0.5 * x.asnumpy().mean(axis=0), 1e-4)  # the moving mean moved once
    y.backward(nd(RNG.normal(size=(8, 3))))
    close(mean, 0.5 * x.asnumpy().mean(axis=0), 1e-4)  # and backward did not move it again
    with ag.record(train_mode=False):
        y = mx.nd.BatchNorm(x, gamma, beta, mean, var, fix_gamma=False)
    close(y, (x.asnumpy() - mean.asnumpy()) / np.sqrt(var.asnumpy() + 1e-3), 1e-4)


def test_function_forward_is_not_recorded_and_keeps_the_training_mode():
    seen = {}

    class Probe(ag.Function):
        def forward(self, a):
            seen.update(rec=ag.is_recording(), train=ag.is_training())
            return a * 2

        def backward(self, da):
            return da * 2

    x = mx.nd.ones((2,))
    x.attach_grad()
    with ag.record():
        y = Probe()(x)
    assert seen == {"rec": False, "train": True}
    y.backward()
    close(x.grad, [2, 2])


def test_star_import_hands_over_the_array_classes_as_mxnet_does():
    """MXNet's autograd has no __all__: `import *` from it also gives NDArray, Symbol, array."""
    ns = {}
    exec("from jbind.autograd import *", ns)  # noqa: S102 - a fixed import statement
    assert ns["NDArray"] is mx.nd.NDArray and ns["Symbol"] is mx.sym.Symbol
    assert isinstance(ns["array"]([1.0, 2.0]), mx.nd.NDArray)
    assert callable(ns["record"]) and callable(ns["mark_variables"])
