"""Every registered operator has a forward-and-gradient sample in some CASES list
(the CASES of every tests/test_ops_*.py module, and of test_rnn_fused)."""
import importlib
import pathlib

import pytest

import jbind as mx
from helpers import ops_in
from jbind.ops import REGISTRY

HERE = pathlib.Path(__file__).resolve().parent
MODULES = sorted(p.stem for p in HERE.glob("test_ops_*.py")) + ["test_rnn_fused"]
SAMPLES = [case for name in MODULES for case in getattr(importlib.import_module(name), "CASES", [])]


def test_every_registered_op_has_a_sample():
    covered = set()
    for case in SAMPLES:
        covered |= ops_in(case.build())
    missing = sorted(set(REGISTRY) - covered)
    assert not missing, f"operators without a check_op sample: {missing}"


def test_the_sweep_reads_the_op_modules():
    assert {"test_ops_conv", "test_ops_math", "test_ops_nn", "test_ops_shape"} <= set(MODULES)


@pytest.mark.parametrize("case", SAMPLES, ids=lambda c: c.id)
def test_every_sample_survives_mxnet_json(case):
    """Parameters survive MXNet's string form: the same graph after tojson / load_json."""
    sym = case.build()
    again = mx.sym.load_json(sym.tojson(remove_amp_cast=False))
    assert again.fingerprint == sym.fingerprint
    assert again.infer_shape(**case.shapes) == sym.infer_shape(**case.shapes)
