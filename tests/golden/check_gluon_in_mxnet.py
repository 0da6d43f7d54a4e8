"""jbind's Gluon files, loaded back in MXNet 1.9.1 (issue #21): `export` output through
SymbolBlock.imports and `save_parameters` output through load_parameters must give the
outputs in gluon/<name>.npz (MXNet's own).

    /work/main/.venv/bin/python tests/golden/check_gluon_in_mxnet.py write /tmp/jg   # jbind side
    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/check_gluon_in_mxnet.py check /tmp/jg

`write` builds each case of gluon_cases.py with jbind, loads MXNet's save_parameters file,
runs it hybridized once and writes `<name>-symbol.json`, `<name>-0000.params` (export) and
`<name>.params` (save_parameters) into the folder; `check` loads them with MXNet.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gluon_cases as gc  # noqa: E402

GOLDEN = os.path.join(HERE, "gluon")


def _golden(name):
    g = np.load(os.path.join(GOLDEN, name + ".npz"))
    return g["data"], g["out"]


def write(folder):
    sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
    import jbind as mx
    os.makedirs(folder, exist_ok=True)
    for name in gc.CASES:
        data, _ = _golden(name)
        net = gc.build(mx, name)
        net.load_parameters(os.path.join(GOLDEN, name + ".params"))
        net.hybridize()
        net(mx.nd.array(data))
        net.export(os.path.join(folder, name))
        net.save_parameters(os.path.join(folder, name + ".params"))
        print("wrote", name)


def check(folder):
    os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
    import mxnet as mx
    for name in gc.CASES:
        data, out = _golden(name)
        sym = mx.sym.load(os.path.join(folder, name + "-symbol.json"))
        names = [n for n in sym.list_inputs() if n.startswith("data")]
        block = mx.gluon.SymbolBlock.imports(os.path.join(folder, name + "-symbol.json"), names,
                                             os.path.join(folder, name + "-0000.params"))
        shapes = dict(zip(sym.list_arguments(), sym.infer_shape_partial(**{names[0]: data.shape})[0]))
        got = block(mx.nd.array(data), *[mx.nd.zeros(shapes[n]) for n in names[1:]])
        got = got[0] if isinstance(got, (list, tuple)) else got
        np.testing.assert_allclose(got.asnumpy(), out, rtol=1e-4, atol=1e-5)
        net = gc.build(mx, name)
        net.load_parameters(os.path.join(folder, name + ".params"))
        np.testing.assert_allclose(net(mx.nd.array(data)).asnumpy(), out, rtol=1e-4, atol=1e-5)
        print("ok", name)


if __name__ == "__main__":
    {"write": write, "check": check}[sys.argv[1]](sys.argv[2])
