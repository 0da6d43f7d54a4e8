"""Call plans of imperative op calls (jbind/ndarray/_plan.py): a plan is reused only for
the same op, parameters and array positions, and a planned call gives what the unplanned
path gives (values, shape checks, errors, recorded gradients)."""
import numpy as np
import pytest

import jbind as mx
from jbind import autograd
from jbind.base import MXNetError
from jbind.ndarray import _plan, imperative


def _a(*shape, seed=0, dtype=np.float32):
    return mx.nd.array(np.random.default_rng(seed).standard_normal(shape).astype(dtype), dtype=dtype)


def _unplanned(monkeypatch):
    monkeypatch.setattr(_plan, "call_key", lambda *a, **k: None)


def test_value_keys_tell_apart_values_that_compare_equal():
    keys = [_plan._value_key(v) for v in (0.0, -0.0, 1, 1.0, True, np.float32(1.0), "1", (1, 2), [1, 2], (1.0, 2))]
    assert None not in keys and len(set(keys)) == len(keys)
    assert _plan._value_key(float("nan")) == _plan._value_key(float("nan"))  # one plan, not one per call
    assert _plan._value_key(np.zeros(2)) is None and _plan._value_key(object()) is None
    assert _plan._value_key((1, object())) is None


def test_planned_calls_match_the_unplanned_path_for_new_arrays_and_parameters(monkeypatch):
    x, w, b = _a(5, 6), _a(3, 6, seed=1), _a(3, seed=2)
    calls = [lambda: mx.nd.FullyConnected(x, w, b, num_hidden=3),
             lambda: mx.nd.FullyConnected(data=x, bias=b, weight=w, num_hidden=3),
             lambda: mx.nd.clip(x, -0.5, 0.5), lambda: mx.nd.clip(x, -0.25, 0.75),
             lambda: mx.nd.softmax(x, axis=0), lambda: mx.nd.softmax(x, axis=1),
             lambda: mx.nd.concat(x, x, dim=1), lambda: x * -0.0 + 1]
    [c() for c in calls]
    plans = len(_plan._PLANS)
    got = [c().asnumpy() for c in calls]  # runs on the plans the first round made
    assert len(_plan._PLANS) == plans
    assert not np.allclose(got[2], got[3]) and not np.allclose(got[4], got[5])
    _unplanned(monkeypatch)
    for g, c in zip(got, calls):
        np.testing.assert_array_equal(g, c().asnumpy())
    x._data = _a(5, 6, seed=9)._data  # same pattern, other values: the plan holds positions, not arrays
    monkeypatch.undo()
    np.testing.assert_array_equal(mx.nd.clip(x, -0.5, 0.5).asnumpy(), np.clip(x.asnumpy(), -0.5, 0.5))


def test_a_plan_still_checks_each_new_shape_and_dtype():
    x, w = _a(4, 6), _a(3, 6, seed=1)
    mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=3)
    with pytest.raises(MXNetError, match="FullyConnected"):
        mx.nd.FullyConnected(_a(4, 5), w, no_bias=True, num_hidden=3)   # same plan, inconsistent shapes
    y = mx.nd.FullyConnected(_a(2, 6, dtype=np.float64), _a(3, 6, dtype=np.float64), no_bias=True, num_hidden=3)
    assert y.shape == (2, 3) and y.dtype == np.float64


def test_bad_calls_fail_alike_every_time(monkeypatch):
    x = _a(3, 4)
    errors = []
    for _ in range(2):
        with pytest.raises(MXNetError) as e:
            mx.nd.softmax(x, axis=1, no_such_param=2)
        errors.append(str(e.value))
        with pytest.raises(MXNetError) as e:
            mx.nd.FullyConnected(x, num_hidden=3)
        errors.append(str(e.value))
    _unplanned(monkeypatch)
    with pytest.raises(MXNetError) as e:
        mx.nd.softmax(x, axis=1, no_such_param=2)
    assert errors[0] == errors[2] == str(e.value) and errors[1] == errors[3]


def test_planned_recorded_ops_give_the_unplanned_gradients(monkeypatch):
    def grads():
        x, w = _a(4, 5), _a(3, 5, seed=1)
        for v in (x, w):
            v.attach_grad()
        with autograd.record():
            loss = -mx.nd.pick(mx.nd.log_softmax(mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=3)),
                               mx.nd.array([0, 1, 2, 0]), axis=-1).mean()
        loss.backward()
        return x.grad.asnumpy(), w.grad.asnumpy()
    first, planned = grads(), grads()
    _unplanned(monkeypatch)
    for a, b, c in zip(first, planned, grads()):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(b, c)


def test_invoke_without_a_key_still_runs():
    x = mx.nd.array([[1.0, -2.0]])
    out = imperative.invoke("reshape", (x,), {"shape": np.array([2, 1])})  # an array parameter: unplanned
    assert out.shape == (2, 1)
