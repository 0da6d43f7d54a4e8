"""Gluon models exported and saved by MXNet 1.9.1 (tests/golden/gluon/, made by
tests/golden/make_gluon_golden.py) load in jbind and give MXNet's outputs: through
SymbolBlock.imports, through load_checkpoint + Module, and (save_parameters files) into
the same architecture built with jbind's gluon."""
import os
import sys

import numpy as np
import pytest

import jbind as mx

HERE = os.path.join(os.path.dirname(__file__), "golden")
sys.path.insert(0, HERE)
import gluon_cases as gc  # noqa: E402

GOLDEN = os.path.join(HERE, "gluon")
ALL = list(gc.CASES) + list(gc.ZOO)


def _golden(name):
    g = np.load(os.path.join(GOLDEN, name + ".npz"))
    return g["data"], g["out"]


def _input_names(name):
    sym = mx.sym.load(os.path.join(GOLDEN, name + "-symbol.json"))
    return [n for n in sym.list_inputs() if n.startswith("data")], sym


@pytest.mark.parametrize("name", ALL)
def test_symbolblock_imports_mxnet_export(name):
    data, out = _golden(name)
    names, sym = _input_names(name)
    block = mx.gluon.SymbolBlock.imports(os.path.join(GOLDEN, name + "-symbol.json"), names,
                                         os.path.join(GOLDEN, name + "-0000.params"))
    # an RNN layer called without states was traced with its zero begin states as inputs
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(**{names[0]: data.shape})[0]))
    extra = [mx.nd.zeros(shapes[n]) for n in names[1:]]
    got = block(mx.nd.array(data), *extra)
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(got.asnumpy(), out, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp_bn", "lstm_lm", "mobilenet0.25"])
def test_load_checkpoint_module_runs_mxnet_export(name):
    data, out = _golden(name)
    sym, args, aux = mx.model.load_checkpoint(os.path.join(GOLDEN, name), 0)
    mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", data.shape)], for_training=False)
    mod.set_params(args, aux)
    mod.forward(mx.io.DataBatch([mx.nd.array(data)]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), out, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(gc.CASES))
def test_load_parameters_from_mxnet_into_jbind_blocks(name, tmp_path):
    data, out = _golden(name)
    net = gc.build(mx, name)
    net.load_parameters(os.path.join(GOLDEN, name + ".params"))
    got = net(mx.nd.array(data))
    np.testing.assert_allclose(got.asnumpy(), out, rtol=1e-4, atol=1e-5)
    net.hybridize()
    np.testing.assert_allclose(net(mx.nd.array(data)).asnumpy(), out, rtol=1e-4, atol=1e-5)
    # jbind's export of the same block: the same graph and parameter names as MXNet's
    net.export(str(tmp_path / name))
    mine = mx.sym.load(str(tmp_path / (name + "-symbol.json")))
    theirs = mx.sym.load(os.path.join(GOLDEN, name + "-symbol.json"))
    assert mine.list_arguments() == theirs.list_arguments()
    assert mine.list_auxiliary_states() == theirs.list_auxiliary_states()
    assert mine.list_outputs() == theirs.list_outputs()
    assert sorted(mx.nd.load(str(tmp_path / (name + "-0000.params")))) == \
        sorted(mx.nd.load(os.path.join(GOLDEN, name + "-0000.params")))
