"""Gluon model zoo networks served and trained as MXNet 1.x checkpoints: jbind against MXNet 1.9.1.

The timed figures (issue 19 A) come from, on a quiet machine, one core:

    taskset -c 0 env OMP_NUM_THREADS=1 /work/main/.venv/bin/python benchmarks/zoo_bench.py \
        --python-mxnet /tmp/mxvenv/bin/python --json zoo.json

(`jbind-bench zoo` runs the same). For each model of benchmarks/zoo_export.py (resnet18_v1,
resnet50_v1, resnet50_v2, mobilenet1.0, mobilenetv2_1.0, densenet121, inceptionv3 at 299 x 299,
squeezenet1.1, vgg11_bn, alexnet; 224 x 224 otherwise):

1. the checkpoint is exported once into `--cache` (default ~/.cache/jbind-zoo, never the
   repository) by MXNet 1.9.1's own Gluon model zoo (`zoo_export.py` under `--python-mxnet`),
   or by jbind's where MXNet is absent (then said in a note);
2. benchmarks/zoo_run.py serves it under jbind and under MXNet 1.9.1, one process per
   library and model, both pinned to `--core` (`taskset -c`) with OMP_NUM_THREADS=1 (XLA's
   Eigen pool off): `load_checkpoint`, `Module(label_names=None)`, `bind(for_training=False)`,
   `set_params`, `forward(is_train=False)` at each batch size; then one training step
   (SoftmaxOutput head, forward, backward, SGD with momentum 0.9 through the Module);
3. it reports per model and batch the first call (bind + first forward: jbind's compile),
   the steady median over `--reps`, the ratio jbind / MXNet of the medians, and checks in
   the same run that the outputs agree to 1e-4 relative (largest difference over the largest
   magnitude): jbind's and MXNet's inference outputs with each other and with the exporter's
   own output on the check input (row 0 of every batch), and the first training step's
   output and weight change with MXNet's (not for models with Dropout, whose masks differ).

A library that cannot run (MXNet not installed) is skipped with a note. `--quick` is the
CI smoke size: the `tiny` network at batch 1 and 2, two repeats, exported into a temporary
folder.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import zoo_export  # noqa: E402
from _common import interpreter_missing, peer_environment, write_json  # noqa: E402

TOLERANCE = 1e-4
LIBS = ("jbind", "mxnet")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--models", default=",".join(zoo_export.ZOO), help="comma-separated (tiny: a smoke network)")
    p.add_argument("--batches", default="1,32", help="comma-separated batch sizes")
    p.add_argument("--reps", type=int, default=10, help="steady inference calls per batch (median reported)")
    p.add_argument("--train-reps", type=int, default=5, help="steady training steps per batch (0: no training)")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke defaults: tiny network, batch 1 and 2, 2 repeats, a temporary cache")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/jbind-zoo"), help="exported checkpoints")
    p.add_argument("--export-with", choices=("auto", "mxnet", "jbind"), default="auto",
                   help="whose model zoo exports missing checkpoints (auto: MXNet if it runs)")
    p.add_argument("--core", type=int, default=0, help="the one CPU core every run is pinned to")
    p.add_argument("--only", default=",".join(LIBS), help="comma-separated subset of jbind,mxnet")
    p.add_argument("--python-jbind", default=sys.executable)
    p.add_argument("--python-mxnet", default=os.environ.get("JBIND_BENCH_MXNET_PYTHON",
                                                            "/tmp/mxvenv/bin/python"))
    p.add_argument("--timeout", type=int, default=3600, help="seconds allowed to each library's run of a model")
    p.add_argument("--json", metavar="PATH", help="write the whole report here")
    return p


def _pin(args) -> list:
    return ["taskset", "-c", str(args.core)] if shutil.which("taskset") and args.core >= 0 else []


def environment(lib: str) -> dict:
    return peer_environment(lib, ROOT)   # first calls are cold compiles, as MXNet's are cold binds


def mxnet_missing(args) -> str | None:
    """Why MXNet 1.9.1 cannot run here, or None."""
    why = interpreter_missing(args.python_mxnet, "mxnet", environment("mxnet"))
    return f"MXNet skipped: {why} (--python-mxnet; pip install mxnet==1.9.1)" if why else None


def export(args, names, exporter) -> dict:
    """Export what the cache lacks; -> {model: error} for those that could not be exported."""
    missing = [n for n in names if not zoo_export.exported(args.cache, n)]
    if not missing:
        return {}
    py = args.python_mxnet if exporter == "mxnet" else args.python_jbind
    cmd = [py, os.path.join(HERE, "zoo_export.py"), "--out", args.cache, "--lib", exporter,
           "--models", ",".join(missing)]
    print("exporting: " + " ".join(cmd), flush=True)
    out = subprocess.run(cmd, env=environment(exporter), capture_output=True, text=True, timeout=args.timeout)
    if out.returncode != 0:
        err = (out.stdout[-1000:] + out.stderr[-2000:]).strip()
        return {n: f"export by {exporter} failed: {err}" for n in missing if not zoo_export.exported(args.cache, n)}
    return {}


def write_inputs(folder: str, name: str, check_data, batches) -> None:
    """data_N / label_N for each batch size; row 0 of every batch is the exporter's check input."""
    import numpy as np
    rng = np.random.default_rng(zoo_export.SEED)
    classes = 10 if name == "tiny" else 1000
    for n in batches:
        data = rng.uniform(-1, 1, (n,) + tuple(check_data.shape[1:])).astype(np.float32)
        data[0] = check_data[0]
        np.save(os.path.join(folder, f"data_{n}.npy"), data)
        np.save(os.path.join(folder, f"label_{n}.npy"), rng.integers(0, classes, (n,)).astype(np.float32))


def run_lib(args, lib, prefix, folder, batches) -> dict:
    out = os.path.join(folder, f"{lib}.json")
    py = args.python_jbind if lib == "jbind" else args.python_mxnet
    cmd = _pin(args) + [py, os.path.join(HERE, "zoo_run.py"), "--lib", lib, "--prefix", prefix,
                        "--inputs", folder, "--batches", ",".join(map(str, batches)), "--reps", str(args.reps),
                        "--train-reps", str(args.train_reps), "--out", out]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=environment(lib), capture_output=True, text=True, timeout=args.timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{type(e).__name__}: {e}", "command": cmd}
    if proc.returncode != 0 or not os.path.isfile(out):
        return {"error": (proc.stdout[-1000:] + proc.stderr[-3000:]).strip() or f"exit {proc.returncode}",
                "command": cmd}
    with open(out) as f:
        res = json.load(f)
    res["command"], res["wall_s"] = cmd, time.perf_counter() - t0
    return res


def rel_err(a, b) -> float:
    """Largest absolute difference over the largest magnitude of the reference `b`."""
    import numpy as np
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    scale = float(np.abs(b).max()) if b.size else 0.0
    return float(np.abs(a - b).max()) / scale if scale > 0 else float(np.abs(a - b).max())


def _check(a, b) -> dict:
    e = rel_err(a, b)
    return {"rel_err": e, "ok": e <= TOLERANCE}


def _times(res: dict | None, kind: str, n: int) -> dict | None:
    r = (res or {}).get(kind, {}).get(str(n))
    if not r:
        return None
    return {"first_s": r["first_s"], "median_s": statistics.median(r["steady_s"]) if r["steady_s"] else None,
            "samples_s": r["steady_s"]}


def compare(folder, name, batches, runs, check, has_dropout) -> dict:
    """Times, ratios and output checks per batch size and kind (infer, train)."""
    import numpy as np
    load = lambda lib, kind, n: (np.load(os.path.join(folder, f"{lib}_infer_{n}.npy")) if kind == "infer"  # noqa
                                 else dict(np.load(os.path.join(folder, f"{lib}_train_{n}.npz"))))
    ok = {lib: runs.get(lib) is not None and "error" not in runs[lib] for lib in LIBS}
    out = {}
    for n in batches:
        row = {}
        for kind in ("infer", "train"):
            t = {lib: _times(runs.get(lib), kind, n) if ok[lib] else None for lib in LIBS}
            if not any(t.values()):
                continue
            entry = dict(t)
            j, m = t["jbind"], t["mxnet"]
            entry["ratio"] = j["median_s"] / m["median_s"] if j and m and m["median_s"] else None
            entry["first_ratio"] = j["first_s"] / m["first_s"] if j and m and m["first_s"] else None
            checks = {}
            if kind == "infer":
                for lib in LIBS:
                    if t[lib]:
                        checks[f"{lib}_vs_export"] = _check(load(lib, kind, n)[:1], check["output"])
                if j and m:
                    checks["jbind_vs_mxnet"] = _check(load("jbind", kind, n), load("mxnet", kind, n))
            elif j and m and not has_dropout:
                a, b = load("jbind", kind, n), load("mxnet", kind, n)
                checks["jbind_vs_mxnet_output"] = _check(a["output"], b["output"])
                checks["jbind_vs_mxnet_weight_change"] = _check(a["delta"], b["delta"])
            elif j and m:
                entry["note"] = "training outputs not compared: the model has Dropout (random masks differ)"
            entry["checks"] = checks
            row[kind] = entry
        out[str(n)] = row
    return out


def bench_model(args, name, batches, libs, exporter, export_errors) -> dict:
    paths = zoo_export.files(args.cache, name)
    rep = {"input": list(zoo_export.input_shape(name)), "exported_by": exporter, "notes": []}
    if name in export_errors:
        rep["error"] = export_errors[name]
        return rep
    import numpy as np
    check = np.load(paths["check"])
    with open(paths["symbol"]) as f:
        has_dropout = '"Dropout"' in f.read()
    folder = tempfile.mkdtemp(prefix=f"zoo_{name}_")
    try:
        write_inputs(folder, name, check["data"], batches)
        runs = {}
        for lib in libs:
            print(f"  {name}: {lib}", flush=True)
            runs[lib] = run_lib(args, lib, paths["prefix"], folder, batches)
            if "error" in runs[lib] and lib == "jbind":
                rep["error"] = f"jbind failed: {runs[lib]['error'][-3000:]}"
            elif "error" in runs[lib]:
                rep["notes"].append(f"{lib} failed: {runs[lib]['error'][-1500:]}")
        rep["runs"] = {lib: {k: r.get(k) for k in ("version", "import_s", "wall_s", "command")}
                       for lib, r in runs.items() if "error" not in r}
        rep["batches"] = compare(folder, name, batches, runs, check, has_dropout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return rep


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return "?"
    name = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "?")
    return name + (" (AVX-512)" if " avx512f" in text else "")


def _ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def table(report: dict) -> str:
    rows = ["%-16s %5s %-5s %10s %10s %7s %9s %9s  %s" % ("model", "batch", "kind", "jbind ms", "mxnet ms",
                                                          "ratio", "jb 1st s", "mx 1st s", "checks")]
    for name, m in report["models"].items():
        if "error" in m:
            rows.append(f"{name:16s} error: {m['error'].splitlines()[-1] if m['error'] else '?'}")
            continue
        for n, row in m.get("batches", {}).items():
            for kind, e in row.items():
                j, x = e["jbind"] or {}, e["mxnet"] or {}
                ratio = "-" if e["ratio"] is None else f"{e['ratio']:.2f}"
                checks = " ".join(f"{k}={'ok' if c['ok'] else 'FAIL'}({c['rel_err']:.1e})"
                                  for k, c in e["checks"].items()) or e.get("note", "-")
                first = lambda d: "-" if not d else f"{d['first_s']:.2f}"  # noqa: E731
                rows.append("%-16s %5s %-5s %10s %10s %7s %9s %9s  %s" % (
                    name, n, kind, _ms(j.get("median_s")), _ms(x.get("median_s")), ratio, first(j), first(x), checks))
    return "\n".join(rows + [f"note: {t}" for t in report["notes"]])


def all_checks_pass(report: dict) -> bool:
    return all(c["ok"] for m in report["models"].values() for row in m.get("batches", {}).values()
               for e in row.values() for c in e["checks"].values())


def run(argv=None) -> dict:
    p = build_parser()
    if p.parse_args(argv).quick:      # smoke sizes replace the defaults; options given still win
        p.set_defaults(models="tiny", batches="1,2", reps=2, train_reps=2, cache=None)
    args = p.parse_args(argv)
    temp_cache = None
    if args.cache is None:
        args.cache = temp_cache = tempfile.mkdtemp(prefix="zoo_quick_")
    names = [m for m in args.models.split(",") if m]
    unknown = sorted(set(names) - set(zoo_export.ZOO) - {"tiny"})
    if unknown:
        raise SystemExit(f"--models: unknown {unknown}; choose from {list(zoo_export.ZOO) + ['tiny']}")
    batches = [int(b) for b in args.batches.split(",") if b]
    libs = [lib for lib in args.only.split(",") if lib]
    if set(libs) - set(LIBS) or "jbind" not in libs:
        raise SystemExit(f"--only: {libs}: jbind and optionally mxnet")
    notes = []
    why = mxnet_missing(args) if "mxnet" in libs or args.export_with != "jbind" else None
    if why:
        notes.append(why)
        libs = [lib for lib in libs if lib != "mxnet"]
    exporter = args.export_with if args.export_with != "auto" else ("jbind" if why else "mxnet")
    if exporter == "mxnet" and why:
        raise SystemExit(f"--export-with mxnet: {why}")
    if exporter == "jbind":
        notes.append("checkpoints missing from the cache are exported by jbind's model zoo, not MXNet's")
    os.makedirs(args.cache, exist_ok=True)
    report = {"meta": {"argv": sys.argv[1:] if argv is None else list(argv), "cpu": cpu_name(), "core": args.core,
                       "cache": args.cache, "batches": batches, "reps": args.reps, "train_reps": args.train_reps,
                       "tolerance": TOLERANCE, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")},
              "notes": notes, "models": {}}
    try:
        errors = export(args, names, exporter)
        for name in names:
            report["models"][name] = bench_model(args, name, batches, libs, exporter, errors)
    finally:
        if temp_cache:
            shutil.rmtree(temp_cache, ignore_errors=True)
    report["ok"] = all_checks_pass(report) and not any("error" in m for m in report["models"].values())
    print("\n" + table(report), flush=True)
    if args.json:
        write_json(args.json, report, indent=1)
        print(f"wrote {args.json}")
    return report


def main(argv=None) -> int:
    return 0 if run(argv)["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
