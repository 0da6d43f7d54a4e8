"""Layer ops and small model-zoo symbols against MXNet 1.9.1 (tests/golden/zoo/), and the
further operator groups of tests/golden/ops_<g>_cases.py (tests/golden/ops_<g>/).

Each file holds MXNet's symbol JSON, inputs, aux states, inference outputs and, for
training cases, training outputs, gradients and aux states after backward; see
tests/golden/make_zoo_golden.py. jbind loads the JSON, binds, and must agree to 1e-4.
"""
import functools
import importlib.util
import pathlib

import numpy as np
import pytest

import jbind as mx
from helpers import CTX

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
RTOL, ATOL = 1e-4, 1e-5


def _module(path):
    spec = importlib.util.spec_from_file_location("jbind_golden_" + path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# group -> cases module: the zoo, and each ops_<g>_cases.py (golden files in ops_<g>/)
GROUPS = {"zoo": _module(GOLDEN / "zoo_cases.py")}
GROUPS.update({p.stem[:-len("_cases")]: _module(p) for p in sorted(GOLDEN.glob("ops_*_cases.py"))})
NAMES = [f"{group}/{p.stem}" for group in GROUPS for p in sorted((GOLDEN / group).glob("*.npz"))]


@functools.lru_cache(maxsize=None)
def _cases(group="zoo"):
    return {c["name"]: c for c in GROUPS[group].all_cases(mx)}


def _load(name):
    with np.load(GOLDEN / (name + ".npz"), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _close(actual, expected, what):
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != MXNet {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=what)


def _outputs(exe):
    return [o.asnumpy() for o in exe.outputs]


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_every_case_has_a_golden_file(group):
    files = sorted(p.stem for p in (GOLDEN / group).glob("*.npz"))
    assert files and sorted(_cases(group)) == files


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_golden_files_stay_small(group):
    assert sum(p.stat().st_size for p in (GOLDEN / group).glob("*.npz")) < 300 * 1024


@pytest.mark.parametrize("name", NAMES)
def test_zoo_golden(name):
    g = _load(name)
    sym = mx.sym.load_json(str(g["symbol_json"]))
    args, auxs = sym.list_arguments(), sym.list_auxiliary_states()
    assert args == list(g["list_arguments"])
    assert sym.list_outputs() == list(g["list_outputs"])
    assert auxs == list(g["list_auxiliary_states"])
    shapes = {k[len("shape:"):]: tuple(int(d) for d in v) for k, v in g.items() if k.startswith("shape:")}
    is_train = bool(g["is_train"])
    req = {a: "write" if "grad:" + a in g else "null" for a in args}
    exe = sym.simple_bind(CTX, grad_req=req if is_train else "null", **shapes)
    for a in args:
        exe.arg_dict[a][:] = g["arg:" + a]
    for a in auxs:
        exe.aux_dict[a][:] = g["aux:" + a]

    if auxs or not is_train:  # otherwise the training outputs are the inference outputs (checked below)
        exe.forward(is_train=False)
        for i, o in enumerate(_outputs(exe)):
            _close(o, g["infer:%d" % i], f"{name}: inference output {i}")
    if not is_train:
        return
    exe.forward(is_train=True)
    outs = _outputs(exe)
    for i, o in enumerate(outs):
        _close(o, g["out:%d" % i], f"{name}: training output {i}")
        if not auxs:
            _close(o, g["infer:%d" % i], f"{name}: output {i} (MXNet's inference forward)")
    if "head:0" in g:
        exe.backward([mx.nd.array(g["head:%d" % i]) for i in range(len(outs))])
    else:
        exe.backward()
    for a in args:
        if req[a] == "write":
            _close(exe.grad_dict[a].asnumpy(), g["grad:" + a], f"{name}: gradient of {a}")
    for a in auxs:
        _close(exe.aux_dict[a].asnumpy(), g["auxafter:" + a], f"{name}: aux state {a} after backward")


@pytest.mark.parametrize("name", NAMES)
def test_built_symbol_matches_mxnet_json(name):
    """The same case built with jbind has MXNet's names and shapes."""
    g = _load(name)
    group, case = name.split("/")
    built = _cases(group)[case]["sym"]
    loaded = mx.sym.load_json(str(g["symbol_json"]))
    assert built.list_arguments() == loaded.list_arguments()
    assert built.list_outputs() == loaded.list_outputs()
    assert built.list_auxiliary_states() == loaded.list_auxiliary_states()
    shapes = _cases(group)[case]["shapes"]
    assert built.infer_shape(**shapes) == loaded.infer_shape(**shapes)
    for a, s in zip(loaded.list_arguments(), loaded.infer_shape(**shapes)[0]):
        assert s == g["arg:" + a].shape, a
