"""mx.rnn graphs and the RNN operator against golden data from MXNet 1.9.1.

Golden files: tests/golden/rnn/, made by tests/golden/make_rnn_golden.py from the same
builders (tests/golden/rnn_cases.py).
"""
import json
import os
import sys
import warnings

import numpy as np
import pytest

import jbind as mx
from helpers import CTX

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
sys.path.insert(0, GOLDEN)
import rnn_cases as rc  # noqa: E402

with open(os.path.join(GOLDEN, "rnn", "graphs.json")) as _f:
    GRAPHS = json.load(_f)


def _flat(states):
    out = []
    for s in states:
        out.extend(_flat(s) if isinstance(s, list) else [s])
    return out


def _names(x):
    return [_names(s) for s in x] if isinstance(x, list) else x.list_outputs()


def _shapes(shapes):
    return None if shapes is None else [list(s) if s is not None else None for s in shapes]


@pytest.mark.parametrize("name", sorted(rc.GRAPHS))
def test_graph_names_attrs_and_shapes_match_mxnet(name):
    build, shapes = rc.GRAPHS[name]
    want = GRAPHS[name]
    with mx.name.NameManager(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs, states = build(mx)
    outs = outputs if isinstance(outputs, list) else [outputs]
    group = mx.sym.Group(outs + _flat(states))
    assert _names(outputs) == want["outputs"]
    assert _names(states) == want["states"]
    assert group.list_arguments() == want["arguments"]
    assert group.get_internals().list_outputs() == want["internals"]
    attrs = {n: {k: v for k, v in a.items() if k.startswith("__")} for n, a in group.attr_dict().items()}
    assert {n: a for n, a in attrs.items() if a} == want["attrs"]
    arg, out, _ = group.infer_shape_partial(**shapes)
    assert _shapes(arg) == want["arg_shapes"]
    assert _shapes(out) == want["out_shapes"]
    assert [str(w.message) for w in caught] == want["warnings"]


@pytest.mark.parametrize("name", sorted(n for n in GRAPHS if "json" in GRAPHS[n]))
def test_mxnet_json_of_fused_cells_loads(name):
    want = GRAPHS[name]
    sym = mx.sym.load_json(want["json"])
    assert sym.list_arguments() == want["arguments"]
    assert [[o] for o in sym.list_outputs()] == _names(list(sym))
    arg, out, _ = sym.infer_shape_partial(**rc.GRAPHS[name][1])
    assert _shapes(arg) == want["arg_shapes"] and _shapes(out) == want["out_shapes"]
    assert mx.sym.load_json(sym.tojson()).get_internals().list_outputs() == want["internals"]


def test_graphs_from_two_builds_share_one_key():
    """Unrolling the same cell twice gives structurally equal graphs (one compile-cache entry)."""
    build, _ = rc.GRAPHS["stack"]
    a, _ = build(mx)
    b, _ = build(mx)
    assert a.fingerprint == b.fingerprint


RNN_OP = np.load(os.path.join(GOLDEN, "rnn", "rnn_op.npz"))


@pytest.mark.parametrize("mode,layers,bidir", rc.RNN_OPS)
def test_rnn_op_matches_mxnet_forward_and_backward(mode, layers, bidir):
    key = "%s_%d_%s" % (mode, layers, "bi" if bidir else "uni")
    sym = rc.rnn_op_symbol(mx, mode, layers, bidir)
    exe = sym.simple_bind(CTX, data=(rc.RNN_T, rc.RNN_N, rc.RNN_I))
    for n in sym.list_arguments():
        exe.arg_dict[n][:] = RNN_OP[f"{key}/arg:{n}"]
    outs = exe.forward(is_train=True)
    exe.backward([mx.nd.array(RNN_OP[f"{key}/head:{i}"]) for i in range(len(outs))])
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), RNN_OP[f"{key}/out:{i}"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{key} output {i}")
    for n in sym.list_arguments():
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), RNN_OP[f"{key}/grad:{n}"],
                                   rtol=1e-4, atol=1e-5, err_msg=f"{key} gradient of {n}")
