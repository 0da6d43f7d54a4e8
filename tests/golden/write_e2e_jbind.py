"""Continue MXNet's e2e checkpoints in jbind and save them, for MXNet to load back.

Run from the repository root with jbind's venv, then check with MXNet:

    /work/venv/bin/python tests/golden/write_e2e_jbind.py tests/golden/e2e/jbind_out
    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/check_e2e_in_mxnet.py

For each model of e2e_cases.py it loads MXNet's checkpoint `e2e/<name>-0001` with
`mx.mod.Module.load(..., load_optimizer_states=True)`, trains one step on the batch MXNet
used for its own extra step (`e2e/<name>.npz`, same optimizer settings), and writes
`<name>-symbol.json`, `<name>-0002.params` and `<name>-0002.states` with jbind. The
MLP's step runs with Dropout's p set to 0, as MXNet's did (see e2e_cases.py); its saved
symbol is the checkpoint's own. tests/test_e2e_mxnet.py reruns this into a temporary
folder and compares with the committed jbind_out/, so the MXNet check cannot go stale.
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_cases as ec  # noqa: E402

import jbind as mx  # noqa: E402

E2E_DIR = os.path.join(HERE, "e2e")
NAMES = ("lenet", "mlp_bn_dropout", "resnet18_v1", "lstm_lm")


def golden(name: str) -> dict:
    with np.load(os.path.join(E2E_DIR, name + ".npz"), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def optimizer_params(g: dict) -> tuple:
    params = json.loads(str(g["optimizer"]))
    return params.pop("name"), params


def batch(g: dict, kind: str):
    return mx.io.DataBatch([mx.nd.array(g[kind + "_data"])], [mx.nd.array(g[kind + "_label"])])


def load_module(prefix: str, g: dict, for_training: bool, epoch: int = ec.EPOCH, **kw):
    """`Module.load(prefix, epoch)` bound to the model's shapes."""
    mod = mx.mod.Module.load(prefix, epoch, data_names=("data",), label_names=("softmax_label",),
                             context=mx.Context(os.environ.get("JBIND_TEST_DEVICE", "cpu")), **kw)
    mod.bind(data_shapes=[("data", tuple(int(d) for d in g["data_shape"]))],
             label_shapes=[("softmax_label", tuple(int(d) for d in g["label_shape"]))],
             for_training=for_training)
    return mod


def step_module(name: str, g: dict, work_dir: str):
    """MXNet's checkpoint, loaded with its optimizer states, after one jbind training step."""
    prefix = os.path.join(E2E_DIR, name)
    if "step_symbol_json" in g:  # the MLP: the same checkpoint under the p=0 symbol
        step_prefix = os.path.join(work_dir, name + "-step")
        with open(step_prefix + "-symbol.json", "w", encoding="utf-8") as f:
            f.write(str(g["step_symbol_json"]))
        for ext in ("params", "states"):
            shutil.copy("%s-%04d.%s" % (prefix, ec.EPOCH, ext), "%s-%04d.%s" % (step_prefix, ec.EPOCH, ext))
        prefix = step_prefix
    mod = load_module(prefix, g, True, load_optimizer_states=True)
    opt, params = optimizer_params(g)
    mod.init_optimizer(optimizer=opt, optimizer_params=params)
    mod.forward_backward(batch(g, "step"))
    mod.update()
    return mod


def write_model(name: str, out_dir: str):
    """Take jbind's step for `name` and save it as checkpoint `out_dir/<name>`, epoch EPOCH + 1."""
    g = golden(name)
    out = os.path.join(out_dir, name)
    work = tempfile.mkdtemp()
    try:
        mod = step_module(name, g, work)
    finally:
        shutil.rmtree(work)
    if "step_symbol_json" in g:
        sym = mx.sym.load(os.path.join(E2E_DIR, name + "-symbol.json"))
        mx.model.save_checkpoint(out, ec.EPOCH + 1, sym, *mod.get_params())
        mod.save_optimizer_states("%s-%04d.states" % (out, ec.EPOCH + 1))
    else:
        mod.save_checkpoint(out, ec.EPOCH + 1, save_optimizer_states=True)
    return mod, g


def main(out_dir: str):
    os.makedirs(out_dir, exist_ok=True)
    for name in NAMES:
        write_model(name, out_dir)
    print(f"wrote {len(os.listdir(out_dir))} files to {out_dir}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
