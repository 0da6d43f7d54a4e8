"""Read files written by jbind with real MXNet 1.9.1 and assert they are bit-exact.

Manual check (CI never runs MXNet). From the repository root:

    JAX_ENABLE_X64=1 /work/venv/bin/python tests/golden/write_jbind_params.py /tmp/jb
    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/check_jbind_params.py /tmp/jb

For each file in the folder's expected.json: `mx.nd.load` must return the same form
(list or dict, same names in order), dtypes, shapes and raw bytes. For each checkpoint:
`mx.model.load_checkpoint` must return the symbol's argument and auxiliary names and
the parameters, and the bound symbol must reproduce MXNet's own golden MLP output.
Prints one line per problem and exits 1 if there is any.
"""
import os
import sys

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import params_manifest as pm  # noqa: E402


def as_numpy(loaded):
    if isinstance(loaded, dict):
        return {k: v.asnumpy() for k, v in loaded.items()}
    return [v.asnumpy() for v in loaded]


def check_checkpoint(folder, ckpt, extra, problems):
    prefix = os.path.join(folder, ckpt["prefix"])
    sym, arg, aux = mx.model.load_checkpoint(prefix, ckpt["epoch"])
    if sym.list_arguments() != ckpt["arguments"] or sym.list_auxiliary_states() != ckpt["auxiliary_states"]:
        problems.append(f"{ckpt['prefix']}: symbol names {sym.list_arguments()} / "
                        f"{sym.list_auxiliary_states()} differ from {ckpt['arguments']} / {ckpt['auxiliary_states']}")
    x = pm.to_array(extra["mlp_input"])
    exe = sym.bind(mx.cpu(), {"data": mx.nd.array(x), "softmax_label": mx.nd.zeros((x.shape[0],)), **arg},
                   aux_states=aux, grad_req="null")
    y = exe.forward(is_train=False)[0].asnumpy()
    want = pm.to_array(extra["mlp_output"])
    if not np.allclose(y, want, rtol=1e-6, atol=1e-7):
        problems.append(f"{ckpt['prefix']}: forward output differs by {np.abs(y - want).max()}")


def main(folder):
    doc = pm.read(folder)
    problems = []
    for fname, fentry in sorted(doc["files"].items()):
        try:
            loaded = as_numpy(mx.nd.load(os.path.join(folder, fname)))
        except mx.base.MXNetError as e:
            problems.append(f"{fname}: MXNet cannot load it: {str(e).strip().splitlines()[-1]}")
            continue
        problems += pm.check_loaded(fentry, loaded, fname)
    for ckpt in doc["checkpoints"]:
        check_checkpoint(folder, ckpt, doc["extra"], problems)
    print("\n".join(problems) or f"ok: MXNet {mx.__version__} read {len(doc['files'])} files and "
          f"{len(doc['checkpoints'])} checkpoint(s) bit-exactly")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
