"""Symbol's and NDArray's fluent methods and operators against MXNet 1.9.1.

Golden values: tests/golden/fluent/fluent.npz, written by tests/golden/make_fluent_golden.py
under MXNet; the case tables and builders there run here with jbind. Every symbol case is
one output of a single group, bound once.
"""
import copy
import ctypes
import importlib.util
import json
import pathlib
import pickle

import numpy as np
import pytest

import jbind as mx
from jbind.base import NotImplementedForSymbol

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("make_fluent_golden", GOLDEN / "make_fluent_golden.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
REF = dict(np.load(GOLDEN / "fluent" / "fluent.npz"))
DATA = {k[3:]: v for k, v in REF.items() if k.startswith("in/")}

# MXNet's public names that jbind leaves out, and why.
SKIP_SYMBOL = {
    "handle",  # MXNet's C handle: jbind symbols are Python graphs
}
SKIP_NDARRAY: set = set()   # `handle` exists: a ctypes handle naming the live array


def _close(key, got):
    want = REF[key]
    assert got.shape == want.shape and got.dtype == want.dtype, (key, got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-6,
                               equal_nan=True, err_msg=key)


def _label(key):
    kind, i = key.split("/")[:2]
    return cases.DUNDERS[int(i)] if kind.endswith("op") else cases.CASES[int(i)][:2]


def _all_close(got: dict, prefixes: tuple):
    assert sorted(got) == sorted(k for k in REF if k.startswith(prefixes))
    for key, value in got.items():
        try:
            _close(key, value)
        except AssertionError as e:
            raise AssertionError(f"{_label(key)}: {e}") from None


def test_ndarray_methods_and_operators_match_mxnet():
    _all_close(cases.run_nd(mx, DATA), ("nd/", "ndop/"))


def test_symbol_methods_and_operators_match_mxnet():
    got, names = cases.run_sym(mx, DATA)
    assert names == json.loads(str(REF["sym_names"])), "node names differ from MXNet's"
    _all_close(got, ("sym/", "symop/"))


def test_every_mxnet_method_exists():
    for cls, ref, skip in [(mx.sym.Symbol, "symbol_methods", SKIP_SYMBOL),
                           (mx.nd.NDArray, "ndarray_methods", SKIP_NDARRAY)]:
        missing = sorted(n for n in REF[ref] if not hasattr(cls, str(n)) and n not in skip)
        assert not missing, f"{cls.__name__} lacks {missing}"
        assert not any(hasattr(cls, n) for n in skip), "a skipped name exists now: drop it from the skip list"


def test_debug_str_matches_mxnet():
    want = json.loads(str(REF["debug_str"]))
    got = {k: s.debug_str() for k, s in cases.debug_syms(mx).items()}
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == want[k], k


def test_split_v2_as_mxnets_python_function():
    """MXNet 1.9.1: an int splits into equal sections, a tuple at its points (0 prepended),
    anything else is a ValueError (the golden values of _split_v2: tests/golden/ops_shape/)."""
    a = mx.nd.array(np.arange(12).reshape(3, 4))
    assert [p.shape for p in a.split_v2(2, axis=1)] == [(3, 2), (3, 2)]
    parts = mx.nd.split_v2(a, (1, 3), axis=1)
    np.testing.assert_array_equal(parts[1].asnumpy(), np.arange(12).reshape(3, 4)[:, 1:3])
    s = mx.sym.split_v2(mx.sym.var("x"), (1,), axis=-1)
    assert s.infer_shape(x=(3, 4))[1] == [(3, 1), (3, 3)]
    assert mx.sym.var("x").split_v2(3, squeeze_axis=True).infer_shape(x=(3, 4))[1] == [(4,)] * 3
    for obj in (mx.sym.var("x"), a):
        with pytest.raises(ValueError, match="int or tuple"):
            obj.split_v2([1, 2])


def test_symbol_refuses_value_methods_and_truth():
    x = mx.sym.var("x")
    for method in ("asnumpy", "asscalar", "wait_to_read", "copy", "as_in_context", "detach", "backward"):
        with pytest.raises(NotImplementedForSymbol, match=f"Function {method} is not implemented for Symbol"):
            getattr(x, method)()
    with pytest.raises(NotImplementedForSymbol, match='operator "bool"'):
        bool(x)
    with pytest.raises(TypeError, match="not supported"):
        x == None  # noqa: E711  (as MXNet: a TypeError, not False)
    for call in (lambda: x.optimize_for("MKLDNN"), lambda: x.get_backend_symbol("MKLDNN"),
                 lambda: x.gradient(["x"]), x.as_np_ndarray):
        with pytest.raises(mx.base.MXNetError):
            call()
    assert x.as_nd_ndarray() is x
    assert {x: 1}[x] == 1, "jbind symbols stay hashable (MXNet's are not)"


def test_len_iter_and_eval():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    g = mx.sym.Group([a + b, a * b])
    assert len(g) == 2 and [s.list_outputs()[0] for s in g] == g.list_outputs()
    outs = g.eval(ctx=mx.cpu(), a=mx.nd.array([1, 2]), b=mx.nd.array([3, 4]))
    assert isinstance(outs, list) and len(outs) == 2
    np.testing.assert_array_equal(outs[0].asnumpy(), [4, 6])
    np.testing.assert_array_equal(outs[1].asnumpy(), [3, 8])
    assert len((a + 1).eval(a=mx.nd.ones(2))) == 1


def test_copy_is_a_new_graph_and_pickle_goes_through_json():
    x = mx.sym.var("x")
    net = mx.sym.FullyConnected(mx.sym.Activation(x, act_type="relu", name="r"), num_hidden=3, name="fc")
    for dup in (copy.copy(net), copy.deepcopy(net)):
        assert dup.fingerprint == net.fingerprint and dup.tojson() == net.tojson()
        dup._set_attr(mood="x")
        dup.get_internals()["r_output"]._set_attr(mood="y")
        assert net.attr("mood") is None and net.get_internals()["r_output"].attr("mood") is None
    assert net.__getstate__() == {"handle": net.tojson()}
    for protocol in (0, pickle.HIGHEST_PROTOCOL):
        again = pickle.loads(pickle.dumps(net, protocol))
        assert again.tojson() == net.tojson() and again.fingerprint == net.fingerprint


def test_ndarray_slice_assign_tostype_and_dlpack():
    x = mx.nd.zeros((2, 3, 2))
    same = x.slice_assign(mx.nd.ones((1, 2, 2)), (0, 1), (1, 3), (None, None))
    assert same is x and x.asnumpy().sum() == 4 and x.asnumpy()[0, 1:].sum() == 4
    x.slice_assign_scalar(7, (1, None, 1), (2, None, None), ())
    np.testing.assert_array_equal(x.asnumpy()[1, :, 1:], 7)
    x.slice_assign_scalar(-1, (None, -1), (None, None), (None, -2))  # negative steps as Python's
    np.testing.assert_array_equal(x.asnumpy()[:, ::-2], -1)
    with pytest.raises(mx.base.MXNetError, match=r"rhs has shape \(2, 2\)"):
        x.slice_assign(mx.nd.ones((2, 2)), (0,), (1,), (None,))
    y = x.tostype("default")
    assert y is not x and np.array_equal(y.asnumpy(), x.asnumpy())
    with pytest.raises(mx.base.MXNetError, match="csr storage needs a 2-D array"):
        x.tostype("csr")  # sparse storage types work (tests/test_sparse.py); csr is 2-D only
    assert x.tostype("row_sparse").stype == "row_sparse"
    assert x.writable and x.as_nd_ndarray() is x
    cap = x.to_dlpack_for_read()
    ctypes.pythonapi.PyCapsule_IsValid.restype = ctypes.c_int
    ctypes.pythonapi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
    assert ctypes.pythonapi.PyCapsule_IsValid(cap, b"dltensor")
    assert ctypes.pythonapi.PyCapsule_IsValid(x.to_dlpack_for_write(), b"dltensor")  # tests/test_ndarray_views.py
    with pytest.raises(mx.base.MXNetError, match=r"cannot broadcast .* \(2, 3, 2\) to \(3, 3, 2\)"):
        x.broadcast_to((3, 3, 2))
    assert mx.nd.ones((3,)).broadcast_to((2, 3)).shape == (2, 3), "axes prepended as MXNet"
    v = mx.nd.ones((3,))
    assert v.T is v


def test_bare_hidden_keys_are_stored_with_underscores():
    """As MXNet 1.9.1's SetAttr: `lr_mult` given to a variable (attr=, an AttrScope) or to
    `_set_attr` is stored as `__lr_mult__`, which the optimizer and tojson read."""
    with mx.AttrScope(lr_mult="0"):
        w = mx.sym.var("w", attr={"wd_mult": "2"})
    w._set_attr(ctx_group="g")
    assert json.loads(w.tojson())["nodes"][0]["attrs"] == {"__lr_mult__": "0", "__wd_mult__": "2",
                                                          "__ctx_group__": "g"}
    assert w.list_attr()["lr_mult"] == "0"
    with mx.AttrScope(lr_mult="0"):
        fc = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=2, name="fc")
    opt = mx.optimizer.SGD(sym=fc, param_idx2name={0: "fc_weight"})
    assert opt.lr_mult["fc_weight"] == 0.0
