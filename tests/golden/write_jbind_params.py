"""Write NDArray files with jbind, for `check_jbind_params.py` to read back with MXNet.

Run from the repository root with jbind's venv; JAX_ENABLE_X64=1 adds the float64 and
int64 files (without it jbind holds them as 32-bit arrays and they are skipped):

    JAX_ENABLE_X64=1 /work/venv/bin/python tests/golden/write_jbind_params.py /tmp/jb
    MXNET_SUBGRAPH_BACKEND=NONE /work/mxvenv/bin/python tests/golden/check_jbind_params.py /tmp/jb

For every golden file in tests/golden/params (but the sparse one) it makes NDArrays of
the expected values and writes `jb_<file>` with `mx.nd.save`, in the same list or dict
form; 0-d arrays are expected back with shape (1,). It loads the golden MLP checkpoint
and writes it again with `mx.model.save_checkpoint` as `jb_mlp` epoch 3. The folder's
`expected.json` says what MXNet must read. `tests/test_params_io.py` runs this too.
"""
import os
import sys

import jax
import jax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import params_manifest as pm  # noqa: E402

import jbind as mx  # noqa: E402
from jbind.ndarray.serialize import load_numpy  # noqa: E402

GOLDEN = os.path.join(HERE, "params")
WIDE = ("float64", "int64")


def as_ndarray(entry: dict):
    a = pm.to_array(entry)
    if entry["dtype"] == "bfloat16":
        a = a.view(jnp.bfloat16)
    return mx.nd.array(a, dtype=a.dtype)


def expected_entry(fentry: dict) -> dict:
    """What MXNet should read from jbind's file: the same arrays, 0-d as (1,), context cpu(0)."""
    out = {"form": fentry["form"], "entries": []}
    for e in fentry["entries"]:
        out["entries"].append({**e, "shape": e["shape"] or [1], "ctx": [1, 0]})
    return out


def write_jbind_files(out_dir: str) -> list:
    """Write the files and `expected.json` into `out_dir`; returns jbind's own read-back errors."""
    include_wide = bool(jax.config.jax_enable_x64)
    golden = pm.read(GOLDEN)
    files, errors = {}, []
    for fname, fentry in golden["files"].items():
        if fname.startswith("mlp-") or (not include_wide and any(e["dtype"] in WIDE for e in fentry["entries"])):
            continue
        values = [as_ndarray(e) for e in fentry["entries"]]
        data = dict(zip([e["name"] for e in fentry["entries"]], values)) if fentry["form"] == "dict" else values
        mx.nd.save(os.path.join(out_dir, "jb_" + fname), data)
        files["jb_" + fname] = expected_entry(fentry)

    sym, arg, aux = mx.model.load_checkpoint(os.path.join(GOLDEN, "mlp"), 7)
    mx.model.save_checkpoint(os.path.join(out_dir, "jb_mlp"), 3, sym, arg, aux)
    files["jb_mlp-0003.params"] = expected_entry(golden["files"]["mlp-0007.params"])
    ckpt = {**golden["checkpoints"][0], "prefix": "jb_mlp", "epoch": 3}

    for fname, fentry in files.items():
        errors += pm.check_loaded(fentry, load_numpy(os.path.join(out_dir, fname)), fname)
    doc = {"files": files, "checkpoints": [ckpt], "extra": golden["extra"]}
    with open(os.path.join(out_dir, pm.MANIFEST), "w", encoding="utf-8") as f:
        f.write(pm.dumps(doc))
    return errors


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    problems = write_jbind_files(sys.argv[1])
    print("\n".join(problems) or f"wrote {len(os.listdir(sys.argv[1]))} files to {sys.argv[1]}"
          + ("" if jax.config.jax_enable_x64 else " (float64/int64 skipped: JAX_ENABLE_X64 is off)"))
    sys.exit(1 if problems else 0)
