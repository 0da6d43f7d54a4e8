"""Load jbind's continued checkpoints (tests/golden/e2e/jbind_out/) in real MXNet 1.9.1.

Manual check (CI never runs MXNet). From the repository root:

    /work/venv/bin/python tests/golden/write_e2e_jbind.py tests/golden/e2e/jbind_out
    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/check_e2e_in_mxnet.py [folder]

(folder defaults to tests/golden/e2e/jbind_out). For each model, with the checkpoint
jbind wrote after its extra training step:

1. `mx.model.load_checkpoint` returns the symbol's argument and auxiliary names and
   parameters equal to MXNet's own after its extra step ("after:*" in e2e/<name>.npz),
   to rtol 1e-5 / atol 1e-6;
2. `mx.mod.Module.load(..., load_optimizer_states=True)` binds for training, reads
   jbind's `.states`, and its momentum equals MXNet's own after the same step (MXNet's
   step is rerun here from e2e/<name>-0001);
3. inference on the npz's inference batch runs and matches MXNet's own after-step
   parameters' outputs to rtol 1e-5 / atol 1e-7, and one more training step runs.

Prints one line per model and per problem; exits 1 if there is any problem.
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_cases as ec  # noqa: E402

E2E_DIR = os.path.join(HERE, "e2e")
OUT_DIR = os.path.join(E2E_DIR, "jbind_out")
NAMES = ("lenet", "mlp_bn_dropout", "resnet18_v1", "lstm_lm")


def close(a, b, rtol, atol):
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)


def module(prefix, epoch, g, for_training, symbol_json=None, **kw):
    if symbol_json is None:
        mod = mx.mod.Module.load(prefix, epoch, data_names=("data",), label_names=("softmax_label",),
                                 context=mx.cpu(), **kw)
    else:  # the MLP's step symbol (Dropout p=0) with the checkpoint's parameters and states
        mod = mx.mod.Module(mx.sym.load_json(symbol_json), data_names=("data",), label_names=("softmax_label",),
                            context=mx.cpu())
        mod._arg_params, mod._aux_params = mx.model.load_params(prefix, epoch)
        mod.params_initialized = True
        mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
    mod.bind(data_shapes=[("data", tuple(g["data_shape"]))],
             label_shapes=[("softmax_label", tuple(g["label_shape"]))], for_training=for_training)
    if for_training:
        params = json.loads(str(g["optimizer"]))
        mod.init_optimizer(optimizer=params.pop("name"), optimizer_params=params)
    return mod


def batch(g, kind):
    return mx.io.DataBatch([mx.nd.array(g[kind + "_data"])], [mx.nd.array(g[kind + "_label"])])


def check(name, problems, out_dir=OUT_DIR):
    with np.load(os.path.join(E2E_DIR, name + ".npz")) as z:
        g = {k: z[k] for k in z.files}
    jb_prefix, mx_prefix, epoch = os.path.join(out_dir, name), os.path.join(E2E_DIR, name), ec.EPOCH + 1
    step_json = str(g["step_symbol_json"]) if "step_symbol_json" in g else None

    sym, arg, aux = mx.model.load_checkpoint(jb_prefix, epoch)
    want = {k: v for k, v in g.items() if k.startswith("after:")}
    got = {"after:arg:" + k: v.asnumpy() for k, v in arg.items()}
    got.update({"after:aux:" + k: v.asnumpy() for k, v in aux.items()})
    if sorted(got) != sorted(want):
        problems.append(f"{name}: parameter names {sorted(got)} differ from MXNet's {sorted(want)}")
    params = [k for k in want if k in got and not close(got[k], want[k], 1e-5, 1e-6)]
    problems += [f"{name}: {k} differs by {np.abs(got[k] - want[k]).max():.3g}" for k in params]
    if sorted(arg) != sorted(set(sym.list_arguments()) - {"data", "softmax_label"}) or \
            list(aux) != sym.list_auxiliary_states():
        problems.append(f"{name}: the parameters do not match the symbol's arguments and auxiliary states")

    # MXNet's own extra step, for the states and the after-step outputs.
    own = module(mx_prefix, ec.EPOCH, g, True, symbol_json=step_json, load_optimizer_states=True)
    own.forward_backward(batch(g, "step"))
    own.update()
    theirs = module(jb_prefix, epoch, g, True, symbol_json=step_json, load_optimizer_states=True)
    # Module.load defers reading .states to init_optimizer, which ran in module(): compare now.
    s_own, s_jb = own._updater.states, theirs._updater.states
    if sorted(s_own) != sorted(s_jb):
        problems.append(f"{name}: optimizer state indices {sorted(s_jb)} differ from MXNet's {sorted(s_own)}")
    bad = [i for i in s_own if i in s_jb and not close(s_jb[i].asnumpy(), s_own[i].asnumpy(), 1e-5, 1e-6)]
    problems += [f"{name}: momentum of parameter {i} differs" for i in bad]

    infer_own = module(mx_prefix, ec.EPOCH, g, False)
    infer_own.set_params(*own.get_params())
    infer_own.forward(batch(g, "infer"), is_train=False)
    infer_jb = module(jb_prefix, epoch, g, False)
    infer_jb.forward(batch(g, "infer"), is_train=False)
    for i, (a, b) in enumerate(zip(infer_jb.get_outputs(), infer_own.get_outputs())):
        if not close(a.asnumpy(), b.asnumpy(), 1e-5, 1e-7):
            gap = np.abs(a.asnumpy() - b.asnumpy()).max()
            problems.append(f"{name}: inference output {i} differs by {gap:.3g}")
    theirs.forward_backward(batch(g, "step"))
    theirs.update()
    if not all(np.all(np.isfinite(v.asnumpy())) for v in theirs.get_params()[0].values()):
        problems.append(f"{name}: a further MXNet step from jbind's checkpoint is not finite")
    worst = max(float(np.max(np.abs(got[k] - want[k]) / (1e-6 + 1e-5 * np.abs(want[k]))))
                for k in want if k in got)
    print(f"{name}: {len(got)} parameters, {len(s_jb)} optimizer states; worst parameter error "
          f"{worst:.3f} of the tolerance")


def main(out_dir=OUT_DIR):
    problems = []
    for name in NAMES:
        check(name, problems, out_dir)
    print("\n".join(problems) or f"ok: MXNet {mx.__version__} loaded jbind's {len(NAMES)} checkpoints "
          "(symbol, parameters, optimizer states) and they match its own")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) > 2:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
