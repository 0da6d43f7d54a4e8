"""MXNet 1.9.1's own example/image-classification scripts, run by jbind and by MXNet 1.9.1.

The timed figures (issue 22) come from, on a quiet machine, one core:

    taskset -c 0 env OMP_NUM_THREADS=1 /work/main/.venv/bin/python benchmarks/image_classification.py \
        --python-mxnet /tmp/mxvenv/bin/python --json imgclf.json

(`jbind-bench imgclf` runs the same). The scripts are a copy of MXNet's repository at the tag
1.9.1, kept outside this repository: `--examples DIR` (the repository or its
example/image-classification folder), else `--cache` (default ~/.cache/jbind-mxnet-examples),
fetched there by `git clone --depth 1 --branch 1.9.1` when absent. For each network
(`--networks`: resnet-18, resnet-50, mobilenet, inception-bn) at image side 224 and, for
resnet, 64 (`--sizes`), and each batch size (`--batches` 1, 16, 32), each library runs, as its
own process pinned to `--core` (`taskset -c`) with OMP_NUM_THREADS=1:

- training: `train_imagenet.py --benchmark 1` (synthetic data) at batch 16 and 32; the figure
  is the Speedometer's samples/s over the intervals after the first (`--warmup` intervals are
  dropped: they hold jbind's compile);
- scoring: benchmark_score.py's own `score()` (5 warm-up forward calls, 10 timed) `--reps`
  times per batch; images/s.

jbind runs the same files with `import mxnet` resolved to this checkout's jbind by an alias
package written into a temporary folder. The report has each median and the ratio jbind /
MXNet (above 1: jbind is faster). Without MXNet (no `--python-mxnet`) only jbind runs, with a
note. Without the scripts (no copy, no network) the report says so and runs jbind's own
equivalent (benchmarks/imgclf_run.py: the Gluon model zoo's resnet18_v1, resnet50_v1 and
mobilenet1.0 through Module; inception-bn has none) for both libraries. `--quick` is a smoke
run: resnet-18 at side 32, batch 1 and 2, one repeat.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from _common import interpreter_missing, peer_environment, write_alias, write_json  # noqa: E402
from zoo_bench import cpu_name  # noqa: E402

TAG = "1.9.1"
REPO = "https://github.com/apache/mxnet"
NETWORKS = ("resnet-18", "resnet-50", "mobilenet", "inception-bn")
SPEED = re.compile(r"Batch \[[0-9-]+\]\s+Speed: ([0-9.eE+-]+) samples/sec")


def parse_speedometer(text: str) -> list:
    """samples/s of every Speedometer line (MXNet's and jbind's format) in a training log."""
    return [float(m.group(1)) for m in SPEED.finditer(text)]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--networks", default=",".join(NETWORKS), help="comma-separated, from " + ", ".join(NETWORKS))
    p.add_argument("--sizes", default="224,64", help="image sides; sides other than 224 apply to resnet only")
    p.add_argument("--batches", default="1,16,32", help="batch sizes; batch 1 is scored, not trained")
    p.add_argument("--reps", type=int, default=3, help="score() calls per batch (median reported)")
    p.add_argument("--disp-batches", type=int, default=5, help="batches per Speedometer interval")
    p.add_argument("--intervals", type=int, default=5, help="Speedometer intervals measured after the warm-up")
    p.add_argument("--warmup", type=int, default=1, help="first Speedometer intervals dropped")
    p.add_argument("--examples", help="MXNet 1.9.1's repository or its example/image-classification folder")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/jbind-mxnet-examples"),
                   help="where the scripts are fetched when --examples is not given")
    p.add_argument("--no-fetch", action="store_true", help="never run git clone (use the copy or the fallback)")
    p.add_argument("--core", type=int, default=0, help="the one CPU core every run is pinned to (-1: none)")
    p.add_argument("--only", default="jbind,mxnet", help="comma-separated subset of jbind,mxnet")
    p.add_argument("--python-jbind", default=sys.executable)
    p.add_argument("--python-mxnet", default=os.environ.get("JBIND_BENCH_MXNET_PYTHON",
                                                            "/tmp/mxvenv/bin/python"))
    p.add_argument("--timeout", type=int, default=3600, help="seconds allowed to each run")
    p.add_argument("--quick", action="store_true", help="smoke sizes: resnet-18, side 32, batch 1 and 2")
    p.add_argument("--json", metavar="PATH", help="write the whole report here")
    return p


def find_scripts(args, notes: list) -> str | None:
    """The example/image-classification folder, fetched into --cache if needed; None with a note."""
    cands = [args.examples] if args.examples else [args.cache]
    for c in cands:
        for d in (c, os.path.join(c, "example", "image-classification")):
            if all(os.path.isfile(os.path.join(d, f)) for f in ("train_imagenet.py", "benchmark_score.py")):
                return os.path.abspath(d)
    if args.examples:
        notes.append(f"--examples {args.examples}: no train_imagenet.py and benchmark_score.py there")
        return None
    if args.no_fetch or not shutil.which("git"):
        notes.append(f"MXNet's scripts are not in {args.cache} and fetching is off (--no-fetch or no git)")
        return None
    parent = os.path.dirname(os.path.abspath(args.cache))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="mxnet_examples_", dir=parent)     # renamed into place when complete
    cmd = ["git", "clone", "--depth", "1", "--branch", TAG, "--filter=blob:none", "--sparse", REPO, tmp]
    print("fetching: " + " ".join(cmd), flush=True)
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
        subprocess.run(["git", "-C", tmp, "sparse-checkout", "set", "example/image-classification"],
                       check=True, capture_output=True, text=True, timeout=600)
        if os.path.exists(args.cache):
            raise OSError(f"{args.cache} exists but holds no scripts; remove it or pass --examples")
        os.replace(tmp, args.cache)
    except (OSError, subprocess.SubprocessError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        err = getattr(e, "stderr", None) or str(e)
        notes.append(f"MXNet's scripts are not in {args.cache} and `git clone --branch {TAG} {REPO}` failed: "
                     f"{err.strip().splitlines()[-1] if err.strip() else e}")
        return None
    return os.path.join(args.cache, "example", "image-classification")


def environment(lib: str, alias_dir: str) -> dict:
    return peer_environment(lib, ROOT, front=(alias_dir,))


def mxnet_missing(args, alias_dir) -> str | None:
    why = interpreter_missing(args.python_mxnet, "mxnet", environment("mxnet", alias_dir))
    return f"MXNet skipped: {why} (--python-mxnet; pip install mxnet==1.9.1)" if why else None


def _call(args, lib, alias_dir, cmd, cwd) -> tuple:
    """-> (stdout + stderr, error or None) of one pinned run."""
    pin = ["taskset", "-c", str(args.core)] if shutil.which("taskset") and args.core >= 0 else []
    py = args.python_jbind if lib == "jbind" else args.python_mxnet
    try:
        proc = subprocess.run(pin + [py] + cmd, cwd=cwd, env=environment(lib, alias_dir), capture_output=True,
                              text=True, timeout=args.timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "", f"{type(e).__name__}: {e}"
    log = proc.stdout + proc.stderr
    return log, (log[-3000:].strip() or f"exit {proc.returncode}") if proc.returncode else None


def train(args, lib, alias_dir, scripts, net, side, n) -> dict:
    """samples/s of each Speedometer interval after the warm-up, from the script's log."""
    batches = args.disp_batches * (args.warmup + args.intervals) + 1   # Speedometer starts after batch 0
    if scripts:
        name, _, layers = net.partition("-") if net.startswith("resnet") else (net, "", "")
        cmd = ["train_imagenet.py", "--benchmark", "1", "--network", name, "--batch-size", str(n),
               "--image-shape", f"3,{side},{side}", "--num-epochs", "1", "--num-examples", str(batches * n),
               "--disp-batches", str(args.disp_batches), "--num-classes", "1000"]
        cmd += ["--num-layers", layers] if layers else []
        cwd = scripts
    else:
        cmd = [os.path.join(HERE, "imgclf_run.py"), "fallback-train", "--network", net, "--side", str(side),
               "--batches", str(n), "--disp-batches", str(args.disp_batches),
               "--intervals", str(args.warmup + args.intervals), "--out", os.path.join(alias_dir, "train.json")]
        cwd = alias_dir
    t0 = time.perf_counter()
    log, err = _call(args, lib, alias_dir, cmd, cwd)
    speeds = parse_speedometer(log)
    if not err and len(speeds) <= args.warmup:
        err = f"{len(speeds)} Speedometer line(s) in the log, need more than {args.warmup}:\n{log[-2000:]}"
    res = {"command": cmd, "wall_s": time.perf_counter() - t0}
    return dict(res, error=err) if err else dict(res, samples_per_s=speeds[args.warmup:], warmup=speeds[:args.warmup])


def score(args, lib, alias_dir, scripts, net, side, batches) -> dict:
    out = os.path.join(alias_dir, f"score_{lib}.json")
    mode = ["score", "--scripts", scripts] if scripts else ["fallback-score"]
    cmd = [os.path.join(HERE, "imgclf_run.py")] + mode + ["--network", net, "--side", str(side), "--batches",
                                                          ",".join(map(str, batches)), "--reps", str(args.reps),
                                                          "--out", out]
    t0 = time.perf_counter()
    log, err = _call(args, lib, alias_dir, cmd, alias_dir)
    if err or not os.path.isfile(out):
        return {"command": cmd, "error": err or f"no result file:\n{log[-2000:]}"}
    with open(out) as f:
        res = json.load(f)
    os.remove(out)
    return {"command": cmd, "wall_s": time.perf_counter() - t0, "images_per_s": res["images_per_s"]}


def _entry(runs: dict, key: str) -> dict:
    med = {lib: statistics.median(r) if r else None for lib, r in runs.items()}
    j, m = med.get("jbind"), med.get("mxnet")
    return {"jbind": runs.get("jbind"), "mxnet": runs.get("mxnet"), "jbind_median": j, "mxnet_median": m,
            "ratio": j / m if j and m else None, "unit": key}


def bench_config(args, libs, alias_dir, scripts, net, side, batches) -> dict:
    rep = {"network": net, "image_shape": f"3,{side},{side}", "errors": {}, "batches": {}}
    scored = {}
    for lib in libs:
        print(f"  {net} {side}: {lib} score", flush=True)
        scored[lib] = score(args, lib, alias_dir, scripts, net, side, batches)
        if "error" in scored[lib]:
            rep["errors"][f"{lib} score"] = scored[lib]["error"]
    for n in batches:
        row = {}
        ok = {lib: r["images_per_s"].get(str(n)) for lib, r in scored.items() if "error" not in r}
        if ok:
            row["score"] = _entry(ok, "images/s")
        if n > 1:
            trained = {}
            for lib in libs:
                print(f"  {net} {side} batch {n}: {lib} train", flush=True)
                r = train(args, lib, alias_dir, scripts, net, side, n)
                if "error" in r:
                    rep["errors"][f"{lib} train b{n}"] = r["error"]
                else:
                    trained[lib] = r["samples_per_s"]
            if trained:
                row["train"] = _entry(trained, "samples/s")
        rep["batches"][str(n)] = row
    return rep


def table(report: dict) -> str:
    rows = ["%-13s %-9s %5s %-5s %11s %11s %7s" % ("network", "shape", "batch", "kind", "jbind", "mxnet", "ratio")]
    f = lambda x, p=1: "-" if x is None else f"{x:.{p}f}"  # noqa: E731
    for c in report["configs"]:
        for n, row in c["batches"].items():
            for kind, e in row.items():
                rows.append("%-13s %-9s %5s %-5s %11s %11s %7s" % (c["network"], c["image_shape"], n, kind,
                            f(e["jbind_median"]), f(e["mxnet_median"]), f(e["ratio"], 2)))
        rows += [f"{c['network']} {c['image_shape']} {k} failed: {v.strip().splitlines()[-1] if v.strip() else '?'}"
                 for k, v in c["errors"].items()]
    return "\n".join(rows + ["(images/s for score, samples/s for train; ratio jbind / MXNet, above 1: jbind faster)"]
                     + [f"note: {t}" for t in report["notes"]])


def run(argv=None) -> dict:
    p = build_parser()
    if p.parse_args(argv).quick:      # smoke sizes replace the defaults; options given still win
        p.set_defaults(networks="resnet-18", sizes="32", batches="1,2", reps=1, disp_batches=1, intervals=1)
    args = p.parse_args(argv)
    nets = [n for n in args.networks.split(",") if n]
    unknown = sorted(set(nets) - set(NETWORKS) - {"tiny"})
    if unknown:
        raise SystemExit(f"--networks: unknown {unknown}; choose from {list(NETWORKS)}")
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
        batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        raise SystemExit(f"--sizes {args.sizes!r} / --batches {args.batches!r}: comma-separated integers") from None
    if not batches or min(batches) < 1 or not sizes or min(sizes) < 8:
        raise SystemExit("--batches: each at least 1; --sizes: each at least 8")
    libs = [lib for lib in args.only.split(",") if lib]
    if set(libs) - {"jbind", "mxnet"} or "jbind" not in libs:
        raise SystemExit(f"--only {args.only}: jbind and optionally mxnet")
    notes = []
    alias_dir = tempfile.mkdtemp(prefix="imgclf_")
    try:
        write_alias(alias_dir)
        scripts = find_scripts(args, notes)
        if scripts is None:
            notes.append("FALLBACK: jbind's own equivalent ran (imgclf_run.py: Gluon model zoo networks through "
                         "Module), not MXNet's scripts")
        elif "tiny" in nets:
            raise SystemExit("--networks tiny exists only in the fallback (without MXNet's scripts)")
        why = mxnet_missing(args, alias_dir) if "mxnet" in libs else None
        if why:
            notes.append(why)
            libs.remove("mxnet")
        report = {"meta": {"argv": sys.argv[1:] if argv is None else list(argv), "cpu": cpu_name(),
                           "core": args.core, "scripts": scripts, "tag": TAG, "fallback": scripts is None,
                           "batches": batches, "reps": args.reps, "disp_batches": args.disp_batches,
                           "intervals": args.intervals, "warmup": args.warmup,
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, "notes": notes, "configs": []}
        for net in nets:
            if scripts is None and net == "inception-bn":
                notes.append("inception-bn: no equivalent without MXNet's scripts (not in the Gluon model zoo)")
                continue
            for side in sizes:
                if side != 224 and not net.startswith(("resnet", "tiny")):
                    continue
                report["configs"].append(bench_config(args, libs, alias_dir, scripts, net, side, batches))
    finally:
        shutil.rmtree(alias_dir, ignore_errors=True)
    report["ok"] = bool(report["configs"]) and not any(c["errors"].get(k) for c in report["configs"]
                                                       for k in c["errors"] if k.startswith("jbind"))
    print("\n" + table(report), flush=True)
    if args.json:
        write_json(args.json, report, indent=1)
        print(f"wrote {args.json}")
    return report


def main(argv=None) -> int:
    return 0 if run(argv)["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
