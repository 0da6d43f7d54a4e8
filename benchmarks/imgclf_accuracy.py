"""Accuracies MXNet 1.9.1's own example/image-classification scripts log, run by MXNet 1.9.1 and
by jbind on the same data with the same seed (issue 22).

    taskset -c 1 /work/main/.venv/bin/python benchmarks/imgclf_accuracy.py \
        --python-mxnet /tmp/mxvenv/bin/python [--json acc.json]

The scripts come from `--examples` (default ~/.cache/jbind-mxnet-examples, as
benchmarks/image_classification.py finds them); the data from benchmarks/make_image_data.py
(`--seed-data`), written into a temporary folder (`--keep DIR` keeps it). Each case runs: MXNet
with seed `--seed`, jbind with `--seed`, and two yardstick runs of MXNet: seed `--seed` + 1, and
seed `--seed` on MXNet's native CPU kernels (MXNET_MKLDNN_ENABLED=0; its default runs
convolution, BatchNorm, pooling, ... through MKL-DNN). A run is this file's `child` mode: it seeds
`mx.random`, `np.random` and `random`, then runs the unchanged script with `runpy` (`import
mxnet` is jbind through benchmarks/_common.write_alias's package). On this 2-core machine, shared,
the whole set took 21 minutes, most of it MXNet's native-kernel resnet runs.

The cases (small): train_mnist.py (mlp, lenet; --lr 0.002 so that the easy synthetic digits do
not saturate at 1.0 in the first interval), train_cifar10.py (resnet-20, --top-k 3),
train_imagenet.py --benchmark 1 (resnet-18, synthetic data) and on the made imagenet .rec
(resnet-18 at 3x32x32, --lr 0.02, saving a checkpoint), fine-tune.py and score.py on the
checkpoint MXNet saved (both libraries read that same file). Every accuracy logged is parsed:
Speedometer lines, `Train-`, `Validation-` and score.py's `('accuracy', x)` lines.

Differences from the scripts as shipped, the same for both libraries: ImageRecordIter's
`shuffle` is forced off (common/data.py hard-codes shuffle=True; MXNet's C++ shuffle order is
not jbind's), so both read the records in file order (random augmentation is off by the scripts'
defaults); score.py finds its `--model` under `model/` next to it, so the scripts are copied into
the work folder with MXNet's checkpoint placed there under a model-zoo name; a `requests` stub
stands in where the package is absent and np.fromstring(bytes) is np.frombuffer under numpy 2
(train_mnist.py reads its files with it).

The verdict: the largest |jbind - MXNet| over one case's accuracies against the tolerance,
MXNet's own spread: the largest |MXNet(seed) - yardstick| over the same lines and both
yardsticks (score.py draws no random numbers: only the kernel yardstick). Networks with
BatchNorm and ReLU are sensitive to rounding: a BatchNorm output within 1e-6 of 0 falls on
either side of the ReLU depending on the kernels, so MXNet's two kernel sets already give
gradients a few per cent apart after one step, and the runs drift apart from there.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

COMMON = ["--kv-store", "local", "--gpus", ""]
REC = ["--data-train", "{data}/imagenet_train.rec", "--data-val", "{data}/imagenet_val.rec", "--image-shape",
       "3,32,32", "--num-classes", "10", "--num-examples", "256", "--batch-size", "32", "--disp-batches", "2"]
CKPT = "{work}/{run}/resnet18"
# name, script, argv ({data}, {work}, {run}: this run's folder, {seed0}: --seed filled in), whether the seed is in play
CASES = [
    ("mnist-mlp", "train_mnist.py", ["--network", "mlp", "--num-epochs", "2", "--num-examples", "1000",
                                     "--batch-size", "50", "--disp-batches", "5", "--lr", "0.002"] + COMMON, True),
    ("mnist-lenet", "train_mnist.py", ["--network", "lenet", "--num-epochs", "1", "--num-examples", "1000",
                                       "--batch-size", "50", "--disp-batches", "5", "--lr", "0.002"] + COMMON, True),
    ("cifar10-resnet20", "train_cifar10.py", ["--network", "resnet", "--num-layers", "20", "--num-epochs", "1",
                                              "--num-examples", "256", "--batch-size", "32", "--disp-batches",
                                              "2", "--top-k", "3"] + COMMON, True),
    ("imagenet-synthetic-resnet18", "train_imagenet.py",
     ["--benchmark", "1", "--network", "resnet", "--num-layers", "18", "--image-shape", "3,32,32",
      "--num-classes", "10", "--num-examples", "160", "--batch-size", "16", "--num-epochs", "1",
      "--disp-batches", "2"] + COMMON, True),
    ("imagenet-rec-resnet18", "train_imagenet.py",
     ["--network", "resnet", "--num-layers", "18", "--num-epochs", "2", "--lr", "0.02", "--model-prefix", CKPT]
     + REC + COMMON, True),
    ("fine-tune-resnet18", "fine-tune.py",
     ["--pretrained-model", "{work}/mxnet{seed0}/resnet18", "--load-epoch", "2", "--num-epochs", "3",
      "--network", "resnet"] + REC + COMMON, True),
    ("score-resnet18", "score.py", ["--model", "imagenet1k-resnet-18", "--data-val", "{data}/imagenet_val.rec",
                                    "--image-shape", "3,32,32", "--batch-size", "16", "--rgb-mean",
                                    "123.68,116.779,103.939", "--gpus", ""], False),
]
# MXNet's own spread, the yardstick: another seed, and the same seed on MXNet's native CPU kernels
# (its default build runs convolution, BatchNorm, ... through MKL-DNN / oneDNN).
NATIVE = {"MXNET_MKLDNN_ENABLED": "0"}

SPEEDOMETER = re.compile(r"Epoch\[(\d+)\] Batch \[([0-9-]+)\]\tSpeed: [^\t\n]*samples/sec((?:\t[^\t\n=]+=[^\t\n]+)*)")
EPOCH_METRIC = re.compile(r"Epoch\[(\d+)\] (Train|Validation)-([^=\s]+)=(\S+)")
SCORE_METRIC = re.compile(r"\('([^']+)', ([-+0-9.eE]+|nan)\)")


def parse_accuracies(log: str) -> dict:
    """{line label: value} of every accuracy a script logged, in log order: `E0 B[0-5] accuracy`
    (Speedometer), `E0 Train accuracy`, `E0 Validation top_k_accuracy_5`, `score accuracy`. Metrics
    whose name lacks 'acc' (cross-entropy, ...) are left out."""
    out = {}
    for line in log.splitlines():
        m = SPEEDOMETER.search(line)
        if m:
            for pair in m.group(3).split("\t")[1:]:
                name, _, val = pair.partition("=")
                out[f"E{m.group(1)} B[{m.group(2)}] {name}"] = float(val)
            continue
        m = EPOCH_METRIC.search(line)
        if m:
            out[f"E{m.group(1)} {m.group(2)} {m.group(3)}"] = float(m.group(4))
            continue
        m = SCORE_METRIC.search(line)
        if m:
            out[f"score {m.group(1)}"] = float(m.group(2))
    return {k: v for k, v in out.items() if "acc" in k.rsplit(" ", 1)[1]}


def largest_difference(a: dict, b: dict) -> tuple:
    """(max |a - b| over the labels both have, the labels only one has)."""
    both = [k for k in a if k in b]
    diff = max((abs(a[k] - b[k]) for k in both), default=0.0)
    return diff, sorted(set(a) ^ set(b))


def compare(mxnet: dict, jbind: dict, yardsticks: dict) -> dict:
    """One case's verdict: jbind against MXNet at the same seed; the tolerance is MXNet's own
    spread, the largest difference between `mxnet` and any of `yardsticks` (other MXNet runs: a
    second seed, other kernels). A case where jbind's lines are not MXNet's, or that logged no
    accuracy, fails."""
    diff, unmatched = largest_difference(mxnet, jbind)
    spreads = {k: largest_difference(mxnet, v)[0] for k, v in yardsticks.items() if v}
    tol = max(spreads.values(), default=None)
    if not mxnet or unmatched:
        verdict = "FAIL (lines differ: " + ", ".join(unmatched[:4]) + ")" if mxnet else "FAIL (no accuracy logged)"
    elif diff == 0:
        verdict = "same"
    elif tol is None:
        verdict = "? (no MXNet spread measured)"
    else:
        verdict = "ok" if diff <= tol + 1e-6 else "FAIL"
    return {"max_diff": diff, "tolerance": tol, "spreads": spreads, "verdict": verdict, "unmatched": unmatched}


def table(results: list) -> str:
    """Each case's lines side by side (MXNet, jbind, |diff|, then the yardstick runs), then its
    largest difference, tolerance and verdict."""
    names = list(dict.fromkeys(k for r in results for k in r["yardsticks"]))
    rows = [f"{'case / line':<40} {'MXNet':>8} {'jbind':>8} {'|diff|':>8} " + " ".join(f"{n:>13}" for n in names)]
    for r in results:
        rows.append(f"{r['case']} ({r['script']})")
        mx, jb = r["mxnet"], r["jbind"]
        for k in list(mx) + [k for k in jb if k not in mx]:
            a, b = mx.get(k), jb.get(k)
            d = abs(a - b) if None not in (a, b) else None
            cells = [f"{'-' if c is None else f'{c:.4f}':>8}" for c in (a, b, d)]
            cells += [f"{_cell(r['yardsticks'].get(n), k):>13}" for n in names]
            rows.append(f"  {k:<38} " + " ".join(cells))
        c = r["compare"]
        tol = "-" if c["tolerance"] is None else f"{c['tolerance']:.4f}"
        rows.append(f"  => largest |diff| {c['max_diff']:.4f}, tolerance (MXNet's spread) {tol}: {c['verdict']}")
    return "\n".join(rows)


def _cell(acc, key) -> str:
    return "-" if not acc or key not in acc else f"{acc[key]:.4f}"


def fill(argv: list, **names) -> list:
    return [a.format(**names) for a in argv]


def child(argv: list) -> None:
    """`imgclf_accuracy.py child SEED SCRIPT ARGS...`: seed every generator, run SCRIPT as __main__."""
    seed, script, args = int(argv[0]), os.path.abspath(argv[1]), argv[2:]
    import random
    import types
    sys.path.insert(0, os.path.dirname(script))
    try:
        import requests  # noqa: F401
    except ImportError:
        sys.modules["requests"] = types.ModuleType("requests")
    import numpy as np
    import mxnet as mx
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":   # train_mnist.py reads with np.fromstring(bytes)
        text = np.fromstring
        np.fromstring = lambda s, dtype=float, count=-1, sep="": (
            np.frombuffer(s, dtype, count).copy() if sep == "" else text(s, dtype, count, sep=sep))
    make = mx.io.ImageRecordIter

    def unshuffled(**kwargs):
        return make(**dict(kwargs, shuffle=False))
    mx.io.ImageRecordIter = unshuffled
    mx.random.seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    sys.argv = [script] + args
    import runpy
    runpy.run_path(script, run_name="__main__")


def run_case(args, run: str, lib: str, seed: int, case, work: str, data: str, env_extra=None) -> tuple:
    """One run (named `run`: its checkpoints go to work/run/) -> (its log, error or None)."""
    _, script, argv, _ = case
    from _common import peer_environment
    env = dict(peer_environment(lib, ROOT, front=(os.path.join(work, "alias"),)), **(env_extra or {}))
    py = args.python_jbind if lib == "jbind" else args.python_mxnet
    os.makedirs(os.path.join(work, run), exist_ok=True)
    cmd = [py, os.path.abspath(__file__), "child", str(seed), script]
    cmd += fill(argv, data=data, work=work, run=run, seed0=args.seed)
    if args.core >= 0 and shutil.which("taskset"):
        cmd = ["taskset", "-c", str(args.core)] + cmd
    try:
        p = subprocess.run(cmd, cwd=os.path.join(work, "scripts"), env=env, capture_output=True, text=True,
                           timeout=args.timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "", f"{type(e).__name__}: {e}"
    log = p.stdout + p.stderr
    return log, (log[-2500:] or f"exit {p.returncode}") if p.returncode else None


def runs_of(case, seed: int) -> list:
    """(run name, library, seed, extra environment) of one case: MXNet first (its checkpoint is
    what fine-tune and score read), jbind, then the yardsticks."""
    out = [(f"mxnet{seed}", "mxnet", seed, None), (f"jbind{seed}", "jbind", seed, None)]
    if case[3]:
        out.append((f"mxnet{seed + 1}", "mxnet", seed + 1, None))
    return out + [(f"mxnet{seed}-native", "mxnet", seed, NATIVE)]


def prepare(args, work: str) -> str:
    """The work folder: the scripts (copied), data/ (MNIST, CIFAR files where the scripts look),
    the alias package; -> the data folder."""
    from _common import write_alias
    shutil.copytree(args.examples, os.path.join(work, "scripts"))
    write_alias(os.path.join(work, "alias"))
    data = os.path.join(work, "data")
    subprocess.run([args.python_jbind, os.path.join(HERE, "make_image_data.py"), "--out", data, "--seed",
                    str(args.seed_data)], check=True, capture_output=True, env=dict(os.environ, PYTHONPATH=ROOT))
    local = os.path.join(work, "scripts", "data")
    os.makedirs(local, exist_ok=True)
    for f in os.listdir(os.path.join(data, "mnist")):
        shutil.copy(os.path.join(data, "mnist", f), local)
    for f in ("cifar10_train.rec", "cifar10_val.rec"):
        shutil.copy(os.path.join(data, f), local)
    return data


def place_checkpoint(work: str, seed: int) -> None:
    """MXNet's imagenet checkpoint (epoch 2) as score.py's model-zoo entry imagenet1k-resnet-18."""
    model = os.path.join(work, "scripts", "model")
    os.makedirs(model, exist_ok=True)
    src = os.path.join(work, f"mxnet{seed}", "resnet18")
    shutil.copy(src + "-symbol.json", os.path.join(model, "imagenet1k-resnet-18-symbol.json"))
    shutil.copy(src + "-0002.params", os.path.join(model, "imagenet1k-resnet-18-0000.params"))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["child"]:
        child(argv[1:])
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", default=os.path.expanduser(
        "~/.cache/jbind-mxnet-examples/example/image-classification"))
    p.add_argument("--python-mxnet", default="/tmp/mxvenv/bin/python")
    p.add_argument("--python-jbind", default=sys.executable)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seed-data", type=int, default=0)
    p.add_argument("--cases", default=",".join(c[0] for c in CASES), help="comma-separated subset")
    p.add_argument("--core", type=int, default=-1, help="pin each run to this core (-1: as started)")
    p.add_argument("--timeout", type=int, default=1800)
    p.add_argument("--keep", help="work in this folder and keep it (default: a temporary one, removed)")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    if not os.path.isfile(os.path.join(args.examples, "train_imagenet.py")):
        raise SystemExit(f"--examples {args.examples}: not MXNet 1.9.1's example/image-classification folder")
    if not os.path.isfile(args.python_mxnet):
        raise SystemExit(f"--python-mxnet {args.python_mxnet}: no such interpreter (pip install mxnet==1.9.1)")
    sys.path.insert(0, HERE)
    wanted = args.cases.split(",")
    if any(n.startswith(("fine-tune", "score")) for n in wanted) and "imagenet-rec-resnet18" not in wanted:
        wanted.insert(0, "imagenet-rec-resnet18")   # their checkpoint
    work = args.keep or tempfile.mkdtemp(prefix="imgclf_acc_")
    results = []
    try:
        data = prepare(args, work)
        for case in CASES:
            if case[0] not in wanted:
                continue
            if case[1] == "score.py":
                place_checkpoint(work, args.seed)
            logs, errors = {}, {}
            for run, lib, seed, extra in runs_of(case, args.seed):
                print(f"{case[0]}: {run}", flush=True)
                logs[run], err = run_case(args, run, lib, seed, case, work, data, extra)
                if err:
                    errors[run] = err
            acc = {k: parse_accuracies(v) for k, v in logs.items()}
            mx, jb = acc.pop(f"mxnet{args.seed}"), acc.pop(f"jbind{args.seed}")
            r = {"case": case[0], "script": case[1], "argv": case[2], "mxnet": mx, "jbind": jb, "yardsticks": acc,
                 "compare": compare(mx, jb, acc), "errors": errors}
            for k, v in errors.items():
                print(f"  {k} failed:\n{v}", flush=True)
            results.append(r)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("\n" + table(results))
    if args.json:
        from _common import write_json
        write_json(args.json, {"seed": args.seed, "seed_data": args.seed_data, "results": results}, indent=1)
    return 0 if results and all(r["compare"]["verdict"] in ("same", "ok") and not r["errors"]
                                for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
