"""Check jbind against golden data recorded from real MXNet 1.9.1.

The golden files under tests/golden/ were produced by
tests/golden/make_golden.py (run with MXNet).  This test only needs jbind:
the same case definitions (tests/golden/cases.py) are built with jbind and the
results are compared with the stored MXNet results.
"""
import functools
import importlib.util
import json
import pathlib

import numpy as np
import pytest

import jbind as mx
from helpers import CTX

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
OPS_DIR = GOLDEN / "ops"
GRAPHS_DIR = GOLDEN / "graphs"

_spec = importlib.util.spec_from_file_location("jbind_golden_cases", GOLDEN / "cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

OP_NAMES = sorted(p.stem for p in OPS_DIR.glob("*.npz"))
GRAPH_NAMES = sorted(p.stem for p in GRAPHS_DIR.glob("*.json") if p.stem != "errors")

DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-5


@functools.lru_cache(maxsize=None)
def _op_cases():
    return {c["name"]: c for c in cases.op_cases(mx)}


@functools.lru_cache(maxsize=None)
def _graph_cases():
    return cases.graph_cases(mx)


def _load_npz(name):
    with np.load(OPS_DIR / (name + ".npz"), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _nodes(sym):
    from jbind.symbol._node import topo_order
    return topo_order(sym._heads)


def _full_grad_req(case, arg_names):
    req = case.get("grad_req", "write")
    if isinstance(req, str):
        return {a: req for a in arg_names}
    return {a: req.get(a, "write") for a in arg_names}


def _close(actual, expected, what, rtol, atol):
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, "%s: shape %s != MXNet %s" % (
        what, actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, "%s: dtype %s != MXNet %s" % (
        what, actual.dtype, expected.dtype)
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               rtol=rtol, atol=atol, err_msg=what)


def test_golden_files_present():
    assert OP_NAMES, "no golden op files; run tests/golden/make_golden.py with MXNet"
    assert GRAPH_NAMES


def test_op_case_names_match_golden_files():
    assert sorted(_op_cases()) == OP_NAMES


def test_graph_case_names_match_golden_files():
    assert sorted(_graph_cases()) == GRAPH_NAMES


# ==================================================================== op cases

@pytest.mark.parametrize("source", ["built", "json"])
@pytest.mark.parametrize("name", OP_NAMES)
def test_op_golden(name, source):
    case = _op_cases()[name]
    g = _load_npz(name)
    rtol = case.get("rtol", DEFAULT_RTOL)
    atol = case.get("atol", DEFAULT_ATOL)

    if source == "built":
        sym = case["sym"]
    else:
        sym = mx.sym.load_json(str(g["symbol_json"]))

    arg_names = sym.list_arguments()
    aux_names = sym.list_auxiliary_states()
    assert arg_names == [str(a) for a in g["list_arguments"]]
    assert aux_names == [str(a) for a in g["list_auxiliary_states"]]
    assert sym.list_outputs() == [str(a) for a in g["list_outputs"]]
    if source == "built":
        # the MXNet JSON loaded by jbind must agree too
        loaded = mx.sym.load_json(str(g["symbol_json"]))
        assert loaded.list_arguments() == arg_names

    req = _full_grad_req(case, arg_names)
    exe = sym.simple_bind(CTX, grad_req=req, **case["shapes"])
    for a in arg_names:
        exe.arg_dict[a][:] = g["arg:" + a]
    for a in aux_names:
        exe.aux_dict[a][:] = g["aux:" + a]

    is_train = bool(g["is_train"])
    assert is_train == bool(case.get("is_train", True))
    exe.forward(is_train=is_train)

    n_out = len([k for k in g if k.startswith("out:")])
    assert len(exe.outputs) == n_out
    for i in range(n_out):
        _close(exe.outputs[i].asnumpy(), g["out:%d" % i], "out:%d" % i, rtol, atol)
    # MXNet 1.x updates BatchNorm moving stats in backward, not in forward
    for a in aux_names:
        _close(exe.aux_dict[a].asnumpy(), g["auxfwd:" + a], "aux after forward:" + a,
               rtol, atol)

    did_backward = any(k.startswith("grad:") for k in g)
    if did_backward:
        if "head:0" in g:
            heads = [g["head:%d" % i] for i in range(n_out)]
            exe.backward(out_grads=[mx.nd.array(h, dtype=h.dtype) for h in heads])
        else:
            exe.backward()
        for a in arg_names:
            if req[a] == "null":
                assert "grad:" + a not in g
                continue
            _close(exe.grad_dict[a].asnumpy(), g["grad:" + a], "grad:" + a, rtol, atol)

    for a in aux_names:
        _close(exe.aux_dict[a].asnumpy(), g["auxafter:" + a], "auxafter:" + a,
               rtol, atol)
    # MXNet writes 1 into BatchNorm's gamma when fix_gamma=True; jbind leaves the argument
    # alone (a deliberate difference, tests/test_differences.py), the outputs are the same.
    fixed_gamma = {n.name + "_gamma" for n in _nodes(sym) if n.op is not None and n.op.name == "BatchNorm"
                   and n.op.fix_gamma}
    for a in arg_names:
        if "argafter:" + a in g and a not in fixed_gamma:
            _close(exe.arg_dict[a].asnumpy(), g["argafter:" + a], "argafter:" + a,
                   rtol, atol)


# ==================================================================== graph cases

def _load_graph(name):
    with open(GRAPHS_DIR / (name + ".json")) as f:
        return json.load(f)


def _shapes(shapes):
    return [None if s is None else [int(d) for d in s] for s in shapes]


def _types(types):
    return [None if t is None else np.dtype(t).name for t in types]


@pytest.mark.parametrize("source", ["built", "json"])
@pytest.mark.parametrize("name", GRAPH_NAMES)
def test_graph_golden(name, source):
    g = _load_graph(name)
    if source == "built":
        sym = _graph_cases()[name]
    else:
        sym = mx.sym.load_json(g["json"])

    assert sym.list_arguments() == g["list_arguments"]
    assert sym.list_outputs() == g["list_outputs"]
    assert sym.list_auxiliary_states() == g["list_auxiliary_states"]
    assert sym.list_inputs() == g["list_inputs"]
    assert sym.get_internals().list_outputs() == g["internals_list_outputs"]
    if g.get("name") is not None:
        assert sym.name == g["name"]

    if "infer_shape" in g:
        kw = {k: tuple(v) for k, v in g["infer_shape_kwargs"].items()}
        arg, out, aux = sym.infer_shape(**kw)
        assert _shapes(arg) == g["infer_shape"]["arg"]
        assert _shapes(out) == g["infer_shape"]["out"]
        assert _shapes(aux) == g["infer_shape"]["aux"]
    if "infer_type" in g:
        kw = {k: np.dtype(v).type for k, v in g["infer_type_kwargs"].items()}
        arg, out, aux = sym.infer_type(**kw)
        assert _types(arg) == g["infer_type"]["arg"]
        assert _types(out) == g["infer_type"]["out"]
        assert _types(aux) == g["infer_type"]["aux"]


@pytest.mark.parametrize("name", GRAPH_NAMES)
def test_graph_attr_dict_golden(name):
    """attr_dict() as MXNet reports it (all values are strings; note that MXNet
    copies an op's parameters onto the weight/bias variables it creates)."""
    g = _load_graph(name)
    assert _graph_cases()[name].attr_dict() == g["attr_dict"]


# ==================================================================== error cases

def _error_records():
    with open(GRAPHS_DIR / "errors.json") as f:
        return json.load(f)


@pytest.mark.parametrize("name", sorted(_error_records()))
def test_error_golden(name):
    rec = _error_records()[name]
    fn = cases.error_cases(mx)[name]
    with pytest.raises(Exception) as ei:
        fn()
    # jbind raises subclasses of MXNetError (ShapeError, ParamError); `except MXNetError` still works
    mro = [c.__name__ for c in type(ei.value).__mro__]
    assert rec["class"] in mro, "MXNet raised %s: %s" % (rec["class"], rec["first_line"])
    for base in rec["mro"]:
        assert base in mro
