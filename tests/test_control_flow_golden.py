"""Control flow against MXNet 1.9.1 (tests/golden/control_flow, make_control_flow_golden.py):
the JSON MXNet saves loads and saves again byte for byte, the same program built with
jbind's API saves MXNet's bytes, and both compute MXNet's outputs and gradients."""
import collections
import os
import sys

import numpy as np
import pytest

import jbind as mx

HERE = os.path.join(os.path.dirname(__file__), "golden")
sys.path.insert(0, HERE)
from control_flow_cases import cases  # noqa: E402

CASES = cases(mx)


def _gold(name):
    with open(os.path.join(HERE, "control_flow", name + ".json")) as f:
        text = f.read()
    return text, dict(np.load(os.path.join(HERE, "control_flow", name + ".npz")))


def _built(name):
    mx.attribute.AttrScope._subgraph_names = collections.defaultdict(int)
    with mx.name.NameManager():
        return CASES[name][0]()


def _check_values(sym, gold):
    args = {k[3:]: mx.nd.array(v) for k, v in gold.items() if k.startswith("in_")}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = exe.forward(is_train=True)
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), gold[f"out_{i}"], rtol=1e-5, atol=1e-6, err_msg=f"output {i}")
    exe.backward([mx.nd.array(gold[f"head_{i}"]) for i in range(len(outs))])
    for k, g in exe.grad_dict.items():
        np.testing.assert_allclose(g.asnumpy(), gold[f"grad_{k}"], rtol=1e-4, atol=1e-5, err_msg=f"gradient of {k}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_mxnet_json_loads_and_saves_the_same_bytes(name):
    text, _ = _gold(name)
    assert mx.sym.load_json(text).tojson() == text


@pytest.mark.parametrize("name", sorted(CASES))
def test_jbind_builds_the_json_mxnet_builds(name):
    text, _ = _gold(name)
    assert _built(name).tojson() == text


@pytest.mark.parametrize("name", sorted(CASES))
def test_loaded_mxnet_graph_computes_mxnets_values(name):
    text, gold = _gold(name)
    _check_values(mx.sym.load_json(text), gold)


def test_built_graph_computes_mxnets_values():
    _, gold = _gold("foreach_rnn")
    _check_values(_built("foreach_rnn"), gold)
