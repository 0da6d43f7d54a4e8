"""Executor.get_optimized_symbol: common subexpression elimination as MXNet 1.9.1's."""
import json
import os
import sys

import numpy as np
import pytest

import jbind as mx

HERE = os.path.join(os.path.dirname(__file__), "golden")
sys.path.insert(0, HERE)
from cse_cases import cases  # noqa: E402

with open(os.path.join(HERE, "cse", "cases.json")) as f:
    GOLD = json.load(f)


def _bind(name, grad_req="write"):
    with mx.name.NameManager():
        s = cases(mx.sym)[name]()
    shapes = {n: (2, 3) for n in s.list_arguments() if n in ("a", "b", "c", "w")}
    return s, s.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)


@pytest.mark.parametrize("name", sorted(GOLD))
@pytest.mark.parametrize("flag", ["1", "0"])
def test_optimized_symbol_matches_mxnet(name, flag, monkeypatch):
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", flag)
    s, exe = _bind(name)
    assert s.get_internals().list_outputs() == GOLD[name]["internals"]
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "1" if flag == "0" else "0")  # read at bind, not now
    opt = exe.get_optimized_symbol()
    assert opt.get_internals().list_outputs() == GOLD[name]["cse_" + flag]["internals"]
    assert opt.list_outputs() == GOLD[name]["cse_" + flag]["outputs"]


def test_optimized_symbol_computes_what_the_original_does():
    rng = np.random.default_rng(0)
    for name in ("nested", "group_same_tail", "fc_shared_weight"):
        s, exe = _bind(name)
        opt = exe.get_optimized_symbol()
        args = {n: rng.normal(size=(2, 3)).astype(np.float32) for n in s.list_arguments()}
        shapes = {n: v.shape for n, v in args.items()}
        results = []
        for sym in (s, opt):
            e = sym.simple_bind(mx.cpu(), **shapes)
            outs = e.forward(is_train=True, **args)
            e.backward([mx.nd.ones(o.shape) for o in outs])
            results.append(([o.asnumpy() for o in outs], [e.grad_dict[n].asnumpy() for n in sorted(args)]))
        for got, want in zip(results[1][0] + results[1][1], results[0][0] + results[0][1]):
            np.testing.assert_allclose(got, want, rtol=1e-6)
        assert len(set(map(id, opt._heads))) == len(opt._heads) or len(opt._heads) == 1
