"""MXNet's deprecated class-level scope properties and the NumPy-array scope.

`Context.default_ctx` and `AttrScope.current` read and set this thread's current context
and attribute scope (with a DeprecationWarning, as MXNet 1.9.1); `mx.np_array(False)` is a
scope, `mx.np_array(True)` an error (jbind has no mx.np arrays).
"""
import threading

import pytest

import jbind as mx
from jbind.util import _NumpyArrayScope


def test_default_ctx_reads_and_sets_this_threads_context():
    with pytest.warns(DeprecationWarning):
        assert mx.Context.default_ctx == mx.cpu(0)
    seen = []

    def other():
        with pytest.warns(DeprecationWarning):
            mx.Context.default_ctx = mx.cpu(3)
        seen.append(mx.current_context())
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [mx.cpu(3)]
    assert mx.current_context() == mx.cpu(0)     # per thread
    with mx.cpu(2):
        with pytest.warns(DeprecationWarning):
            assert mx.Context.default_ctx == mx.cpu(2)


def test_default_ctx_refuses_a_non_context():
    with pytest.warns(DeprecationWarning), pytest.raises(mx.MXNetError, match="Context"):
        mx.Context.default_ctx = "cpu(0)"


def test_attrscope_current_is_the_threads_scope():
    try:
        with pytest.warns(DeprecationWarning):
            mx.AttrScope.current = mx.AttrScope(group="a")
        assert mx.sym.Variable("v").attr("group") == "a"
        with mx.AttrScope(stage="1"):
            with pytest.warns(DeprecationWarning):
                assert mx.AttrScope.current._attr == {"group": "a", "stage": "1"}
        seen = []

        def other():
            with pytest.warns(DeprecationWarning):
                seen.append(dict(mx.AttrScope.current._attr))
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == [{}]
    finally:
        with pytest.warns(DeprecationWarning):
            mx.AttrScope.current = mx.AttrScope()


def test_np_array_scope_is_inactive_only():
    assert not mx.is_np_array()
    with mx.np_array(False) as scope:
        assert isinstance(scope, _NumpyArrayScope) and not scope._is_np_array
        assert _NumpyArrayScope._current.value is scope
        assert not mx.is_np_array()
    with pytest.raises(mx.MXNetError, match="mx.np"):
        mx.np_array(True)
