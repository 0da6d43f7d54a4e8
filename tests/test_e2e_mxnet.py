"""MXNet 1.9.1 checkpoints in, jbind checkpoints out (issue #7), four trained models.

tests/golden/make_e2e_golden.py trained LeNet, an MLP with BatchNorm and Dropout,
ResNet-18 v1 and an LSTM language model in real MXNet and saved their checkpoints
(symbol, parameters, optimizer states) with its inference outputs and the parameters
after one more training step. Here jbind loads them, reproduces the outputs, takes the
same extra step, and saves a checkpoint that tests/golden/check_e2e_in_mxnet.py loads
back in MXNet (the committed tests/golden/e2e/jbind_out/ must be what jbind writes now).

Tolerances: outputs are softmax probabilities, compared to rtol 1e-5 with atol 1e-7,
the float32 rounding of a probability near 1 (a probability of 1e-9 has no meaningful
relative error). Parameters after the step: rtol 1e-5, atol 1e-6 (the largest gap seen
is under a tenth of that).
"""
import json
import os
import pathlib
import pickle
import sys

import numpy as np
import pytest

import jbind as mx
from jbind.ndarray.serialize import load_numpy
from jbind.optimizer import _states

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden"))
import e2e_cases as ec  # noqa: E402
from write_e2e_jbind import E2E_DIR, NAMES, batch, golden, load_module, write_model  # noqa: E402

OUT_DIR = pathlib.Path(E2E_DIR) / "jbind_out"
OUT_RTOL, OUT_ATOL = 1e-5, 1e-7
PARAM_RTOL, PARAM_ATOL = 1e-5, 1e-6


def _prefix(name):
    return os.path.join(E2E_DIR, name)


def _check_outputs(outputs, g, kind, what):
    assert len(outputs) == len([k for k in g if k.startswith(kind + "_out:")])
    for i, o in enumerate(outputs):
        np.testing.assert_allclose(o.asnumpy(), g[f"{kind}_out:{i}"], rtol=OUT_RTOL, atol=OUT_ATOL,
                                   err_msg=f"{what}: output {i}")


def test_golden_files_stay_small():
    files = [p for p in pathlib.Path(E2E_DIR).rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 3 * 1024 * 1024


@pytest.mark.parametrize("name", NAMES)
def test_jbind_builds_mxnets_graph(name):
    built = ec.cases(mx)[name]["sym"]
    loaded = mx.sym.load(_prefix(name) + "-symbol.json")
    assert built.fingerprint == loaded.fingerprint
    assert built.list_arguments() == loaded.list_arguments()
    assert built.list_auxiliary_states() == loaded.list_auxiliary_states()


@pytest.mark.parametrize("name", NAMES)
def test_module_load_reproduces_mxnet_inference(name):
    g = golden(name)
    mod = load_module(_prefix(name), g, for_training=False)
    mod.forward(batch(g, "infer"), is_train=False)
    _check_outputs(mod.get_outputs(), g, "infer", f"{name} via Module.load")


@pytest.mark.parametrize("name", NAMES)
def test_simple_bind_copy_params_reproduces_mxnet_inference(name):
    g = golden(name)
    sym, arg, aux = mx.model.load_checkpoint(_prefix(name), ec.EPOCH)
    exe = sym.simple_bind(mx.cpu(), grad_req="null", data=g["infer_data"].shape,
                          softmax_label=g["infer_label"].shape)
    exe.copy_params_from(arg, aux)
    exe.arg_dict["data"][:] = g["infer_data"]
    exe.arg_dict["softmax_label"][:] = g["infer_label"]
    _check_outputs(exe.forward(is_train=False), g, "infer", f"{name} via simple_bind")


def _close_params(got: dict, want: dict, what: str, rtol, atol):
    assert list(got) == list(want), f"{what}: names {list(got)} != {list(want)}"
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol, err_msg=f"{what}: {k}")


@pytest.mark.parametrize("name", NAMES)
def test_one_more_step_matches_mxnet_and_jbind_out(name, tmp_path):
    """jbind continues MXNet's checkpoint (with its momentum) one step; MXNet did the same."""
    mod, g = write_model(name, str(tmp_path))
    _check_outputs(mod.get_outputs(), g, "step", f"{name}: training forward")
    arg, aux = mod.get_params()
    got = {f"after:arg:{k}": v.asnumpy() for k, v in arg.items()}
    got.update({f"after:aux:{k}": v.asnumpy() for k, v in aux.items()})
    want = {k: g[k] for k in got}
    assert sorted(got) == sorted(k for k in g if k.startswith("after:"))
    _close_params(got, want, f"{name} after one step", PARAM_RTOL, PARAM_ATOL)

    # What jbind saved reloads in jbind, exactly.
    epoch = ec.EPOCH + 1
    prefix = str(tmp_path / name)
    sym, arg2, aux2 = mx.model.load_checkpoint(prefix, epoch)
    assert sym.fingerprint == mx.sym.load(_prefix(name) + "-symbol.json").fingerprint
    for a, b in ((arg, arg2), (aux, aux2)):
        assert sorted(a) == sorted(b) and all(np.array_equal(a[k].asnumpy(), b[k].asnumpy()) for k in a)
    again = load_module(prefix, g, for_training=True, epoch=epoch, load_optimizer_states=True)
    again.init_optimizer(optimizer="sgd", optimizer_params=dict(ec.OPTIMIZER_PARAMS))
    assert again._updater.states.keys() == mod._updater.states.keys()
    for i, s in mod._updater.states.items():
        np.testing.assert_array_equal(again._updater.states[i].asnumpy(), s.asnumpy())

    # The committed files that MXNet checked are what jbind writes today, to MXNet's tolerance:
    # they were written on another machine, whose kernels may sum in another order (an Intel
    # AVX-512 core differs from an AMD one by 2.4e-5 relative on a value of 2e-8).
    tol = (PARAM_RTOL, PARAM_ATOL)
    for fname in (f"{name}-symbol.json", f"{name}-%04d.params" % epoch):
        assert (tmp_path / fname).exists()
    assert (tmp_path / f"{name}-symbol.json").read_text() == (OUT_DIR / f"{name}-symbol.json").read_text()
    params = f"{name}-%04d.params" % epoch
    _close_params(load_numpy(str(tmp_path / params)), load_numpy(str(OUT_DIR / params)),
                  f"{name}: jbind_out/{params}", *tol)
    states = f"{name}-%04d.states" % epoch
    fresh, committed = (_states.loads((d / states).read_bytes()) for d in (tmp_path, OUT_DIR))
    _close_params({k: v.asnumpy() for k, v in fresh.items()}, {k: v.asnumpy() for k, v in committed.items()},
                  f"{name}: jbind_out/{states}", *tol)


def test_mxnet_states_file_loads_as_momentum():
    """MXNet's `.states` (a pickle of mxnet NDArrays) loads without MXNet installed."""
    u = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    u.set_states((pathlib.Path(E2E_DIR) / "lenet-0001.states").read_bytes())
    shapes = {k: v.shape for k, v in u.states.items()}
    arg = mx.model.load_params(_prefix("lenet"), ec.EPOCH)[0]
    assert list(shapes.values()) == [arg[n].shape for n in mx.sym.load(_prefix("lenet") + "-symbol.json")
                                     .list_arguments() if n not in ("data", "softmax_label")]
    assert all(np.abs(v.asnumpy()).max() > 0 for v in u.states.values())


def test_mxnet_optimizer_objects_in_states_are_refused():
    blob = pickle.PROTO + bytes([4]) + pickle.GLOBAL + b"mxnet.optimizer.optimizer\nSGD\n" + pickle.STOP
    with pytest.raises(mx.base.MXNetError, match=r"mxnet.optimizer.optimizer.SGD.*dump_optimizer=False"):
        mx.optimizer.get_updater(mx.optimizer.SGD()).set_states(blob)
    with pytest.raises(mx.base.MXNetError, match="cannot read optimizer states"):
        mx.optimizer.get_updater(mx.optimizer.SGD()).set_states(b"\x80\x04junk")


def test_optimizer_settings_are_recorded():
    for name in NAMES:
        assert json.loads(str(golden(name)["optimizer"])) == {"name": ec.OPTIMIZER, **ec.OPTIMIZER_PARAMS}
