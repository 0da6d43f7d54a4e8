"""Checkpoints trained in real MXNet 1.9.1, for jbind to load and continue (issue #7).

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/make_e2e_golden.py

For each model in e2e_cases.py (LeNet, an MLP with BatchNorm and Dropout, ResNet-18 v1,
an LSTM language model; narrow versions, see there) it:

1. builds the symbol with MXNet's API, binds an `mx.mod.Module`, initializes it
   (Xavier), and trains TRAIN_STEPS steps of SGD with momentum on seeded random data;
2. writes `e2e/<name>-symbol.json`, `e2e/<name>-0001.params` and `e2e/<name>-0001.states`
   with `Module.save_checkpoint(..., save_optimizer_states=True)`;
3. loads that checkpoint with `Module.load`, binds for inference and records the
   outputs for a fresh batch ("infer_data", "infer_label" -> "infer_out:<i>");
4. loads it again with `Module.load(..., load_optimizer_states=True)` and trains one
   more step on a fresh batch ("step_data", "step_label"), recording the training
   outputs ("step_out:<i>") and the parameters after the update ("after:arg:<name>",
   "after:aux:<name>"). For the MLP this step runs the checkpoint's symbol with
   Dropout's p set to 0 (`e2e_cases.step_symbol_json`; stored as "step_symbol_json"),
   because jbind cannot draw MXNet's random masks.

All of it goes to `e2e/<name>.npz` with the optimizer settings ("optimizer", JSON).
Deterministic: seeded (numpy and mx.random) from the model's name; running it twice
gives the same bytes. CI never runs MXNet: tests/test_e2e_mxnet.py reads these files.
"""
import json
import os
import shutil
import sys
import tempfile
import zlib

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_cases as ec  # noqa: E402
from make_golden import save_npz  # noqa: E402

E2E_DIR = os.path.join(HERE, "e2e")


def _seed(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def _module(sym, case, for_training, **kw):
    mod = mx.mod.Module(sym, data_names=("data",), label_names=("softmax_label",), context=mx.cpu(), **kw)
    mod.bind(data_shapes=[("data", case["data_shape"])], label_shapes=[("softmax_label", case["label_shape"])],
             for_training=for_training)
    return mod


def _batch(data, label):
    return mx.io.DataBatch(data=[mx.nd.array(data)], label=[mx.nd.array(label)])


def _loaded(prefix, case, for_training, **kw):
    mod = mx.mod.Module.load(prefix, ec.EPOCH, data_names=("data",), label_names=("softmax_label",),
                             context=mx.cpu(), **kw)
    mod.bind(data_shapes=[("data", case["data_shape"])], label_shapes=[("softmax_label", case["label_shape"])],
             for_training=for_training)
    return mod


def run_model(name, case):
    rng = np.random.RandomState(_seed(name))
    mx.random.seed(_seed(name))
    prefix = os.path.join(E2E_DIR, name)

    mod = _module(case["sym"], case, True)
    mod.init_params(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2))
    mod.init_optimizer(optimizer=ec.OPTIMIZER, optimizer_params=dict(ec.OPTIMIZER_PARAMS))
    for _ in range(ec.TRAIN_STEPS):
        mod.forward_backward(_batch(*case["batch"](rng)))
        mod.update()
    mod.save_checkpoint(prefix, ec.EPOCH, save_optimizer_states=True)

    rec = {"optimizer": np.array(json.dumps({"name": ec.OPTIMIZER, **ec.OPTIMIZER_PARAMS}, sort_keys=True)),
           "data_shape": np.array(case["data_shape"], dtype=np.int64),
           "label_shape": np.array(case["label_shape"], dtype=np.int64)}

    infer = _loaded(prefix, case, False)
    rec["infer_data"], rec["infer_label"] = case["batch"](rng)
    infer.forward(_batch(rec["infer_data"], rec["infer_label"]), is_train=False)
    for i, o in enumerate(infer.get_outputs()):
        rec["infer_out:%d" % i] = o.asnumpy()

    sym_json = case["sym"].tojson()
    step_json = ec.step_symbol_json(name, sym_json)
    tmp = tempfile.mkdtemp()
    try:
        step_prefix = prefix
        if step_json != sym_json:
            rec["step_symbol_json"] = np.array(step_json)
            step_prefix = os.path.join(tmp, name)
            with open(step_prefix + "-symbol.json", "w") as f:
                f.write(step_json)
            for ext in ("params", "states"):
                shutil.copy("%s-%04d.%s" % (prefix, ec.EPOCH, ext), "%s-%04d.%s" % (step_prefix, ec.EPOCH, ext))
        step = _loaded(step_prefix, case, True, load_optimizer_states=True)
        step.init_optimizer(optimizer=ec.OPTIMIZER, optimizer_params=dict(ec.OPTIMIZER_PARAMS))
    finally:
        shutil.rmtree(tmp)
    rec["step_data"], rec["step_label"] = case["batch"](rng)
    step.forward_backward(_batch(rec["step_data"], rec["step_label"]))
    for i, o in enumerate(step.get_outputs()):
        rec["step_out:%d" % i] = o.asnumpy()
    step.update()
    arg, aux = step.get_params()
    for k, v in arg.items():
        rec["after:arg:" + k] = v.asnumpy()
    for k, v in aux.items():
        rec["after:aux:" + k] = v.asnumpy()
    for k, v in rec.items():
        if v.dtype.kind == "f" and not np.all(np.isfinite(v)):
            raise SystemExit("%s: %s has non-finite values" % (name, k))
    save_npz(prefix + ".npz", rec)
    return sum(os.path.getsize(os.path.join(E2E_DIR, f)) for f in os.listdir(E2E_DIR) if f.startswith(name))


def main():
    os.makedirs(E2E_DIR, exist_ok=True)
    total = 0
    for name, case in ec.cases(mx).items():
        size = run_model(name, case)
        total += size
        print("%-16s %7d B" % (name, size))
    print("\n%.1f KB total (without jbind_out/)" % (total / 1024.0))


if __name__ == "__main__":
    main()
