"""Gluon word language model: jbind, Apache MXNet 1.9.1 and PyTorch, one core each, one run.

The figures of benchmarks/RESULTS.md come from (on a quiet machine; each library runs
600 batches of 20 x 35 words, 2 x 200 LSTM, vocabulary 10,001, then the whole validation set):

    /work/main/.venv/bin/python benchmarks/gluon_lm_bench.py --core 0 \
        --python-mxnet /tmp/mxvenv/bin/python --python-torch /tmp/torchvenv/bin/python \
        --epochs 1 --max-batches 600 --log-interval 50 --json gluon_lm.json

(`jbind-bench gluon` runs the same with the defaults below.)

Runs, one after the other, each pinned to the same core (`taskset -c CORE`) with
OMP_NUM_THREADS=1 (and XLA/MKL limited to one thread):

  (a) examples/gluon_word_lm.py on jbind          (--python-jbind, default: this Python)
  (b) the same file under MXNet 1.9.1 (--mxnet)   (--python-mxnet, default /tmp/mxvenv/bin/python)
  (c) benchmarks/torch_word_lm.py                  (--python-torch, default /tmp/torchvenv/bin/python)

on the same corpus (examples/data/fortunes) with the same sizes and flags. Each script
logs tokens/s over every `--log-interval` batches; the steady figure is the median of
those intervals after the first `--warmup-intervals` (compiles, caches, allocator
warm-up), and the final perplexity is the last validation perplexity. Prints one table
with the ratios of jbind to each peer. Smoke run (seconds):

    python benchmarks/gluon_lm_bench.py --quick
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

from _common import peer_environment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLE = os.path.join(ROOT, "examples", "gluon_word_lm.py")
TORCH_SCRIPT = os.path.join(HERE, "torch_word_lm.py")
LIBRARIES = ("jbind", "mxnet", "torch")
EXTRA = ("jbind-imperative",)  # the same jbind run without hybridize() (issue 21 part 11), on request
MODEL_FLAGS = ("emsize", "nhid", "nlayers", "lr", "clip", "epochs", "batch_size", "bptt", "dropout",
               "log_interval", "max_batches", "max_valid_batches", "seed")
_SPEED = re.compile(r"\[Epoch (\d+) Batch (\d+)/\d+\] loss [\d.naif]+, ppl [\d.naif]+, ([\d.]+) tokens/s")
_VALID = re.compile(r"validation ppl ([\d.naif]+)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--core", type=int, default=0, help="the one CPU core every run is pinned to")
    p.add_argument("--only", default=",".join(LIBRARIES), help="comma-separated subset of jbind,mxnet,torch, or jbind-imperative (the "
                                                             "example with --no-hybridize)")
    p.add_argument("--python-jbind", default=sys.executable)
    p.add_argument("--python-mxnet", default="/tmp/mxvenv/bin/python")
    p.add_argument("--python-torch", default="/tmp/torchvenv/bin/python")
    p.add_argument("--warmup-intervals", type=int, default=2, help="logged intervals left out of the median")
    p.add_argument("--timeout", type=int, default=7200, help="seconds allowed to each run")
    p.add_argument("--json", metavar="PATH", help="write every run's intervals and summary here")
    p.add_argument("--quick", action="store_true", help="tiny sizes on a tiny slice of the corpus (smoke test)")
    p.add_argument("--emsize", type=int, default=200)
    p.add_argument("--nhid", type=int, default=200)
    p.add_argument("--nlayers", type=int, default=2)
    p.add_argument("--lr", type=float, default=20.0)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", "--batch_size", dest="batch_size", type=int, default=20)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--log-interval", "--log_interval", dest="log_interval", type=int, default=50)
    p.add_argument("--max-batches", "--max_batches", dest="max_batches", type=int, default=600)
    p.add_argument("--max-valid-batches", "--max_valid_batches", dest="max_valid_batches", type=int, default=None)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--seeds", help="comma-separated seeds (replaces --seed): each library runs once per seed, "
                                   "seeds interleaved; the table gives median tokens/s and the range of final "
                                   "perplexities, and whether jbind's median lies in MXNet's range")
    p.add_argument("--data", default=os.path.join(ROOT, "examples", "data", "fortunes"))
    return p


def quick(args) -> None:
    """Tiny sizes, and the corpus cut to its first lines, so that a smoke run takes seconds."""
    args.emsize = args.nhid = 16
    args.nlayers, args.batch_size, args.bptt = 1, 4, 5
    args.epochs, args.log_interval, args.max_batches, args.max_valid_batches = 1, 2, 8, 2
    args.warmup_intervals = 1
    small = tempfile.mkdtemp(prefix="gluon_lm_quick_")
    for name, lines in (("train.txt", 300), ("valid.txt", 60)):
        with open(os.path.join(args.data, name)) as src, open(os.path.join(small, name), "w") as dst:
            dst.writelines(line for _, line in zip(range(lines), src))
    args.data = small


def command(lib: str, args) -> list:
    flags = ["--data", args.data]
    for name in MODEL_FLAGS:
        value = getattr(args, name)
        if value is not None:
            flags += ["--" + name.replace("_", "-") if name != "batch_size" else "--batch_size", str(value)]
    if lib == "torch":
        py, script = args.python_torch, [TORCH_SCRIPT]
    else:
        py, script = (args.python_mxnet, [EXAMPLE, "--mxnet"]) if lib == "mxnet" else (args.python_jbind, [EXAMPLE])
        if lib == "jbind-imperative":
            script = [EXAMPLE, "--no-hybridize"]
    pin = ["taskset", "-c", str(args.core)] if shutil.which("taskset") else []
    return pin + [py] + script + flags


def environment(lib: str) -> dict:
    return peer_environment("jbind" if lib.startswith("jbind") else lib, ROOT, clear_peer_path=False)


def parse(log: str, warmup: int) -> dict:
    """Intervals of tokens/s, the steady median after `warmup` intervals, and perplexities."""
    speeds = [float(m.group(3)) for m in _SPEED.finditer(log)]
    valid = [float(v) for v in _VALID.findall(log)]
    steady = speeds[warmup:] or speeds[-1:]
    train_ppl = [float(m.group(0).split("ppl ")[1].split(",")[0]) for m in _SPEED.finditer(log)]
    return {"tokens_per_s": speeds, "steady_tokens_per_s": statistics.median(steady) if steady else None,
            "train_ppl": train_ppl, "val_ppl": valid, "final_val_ppl": valid[-1] if valid else None}


def run_one(lib: str, args) -> dict:
    cmd = command(lib, args)
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, env=environment(lib), capture_output=True, text=True, timeout=args.timeout,
                             cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"command": cmd, "error": f"{type(e).__name__}: {e}"}
    res = {"command": cmd, "seconds": time.perf_counter() - t0, "returncode": out.returncode,
           "log": out.stdout[-4000:]}
    if out.returncode != 0:
        res["error"] = (out.stdout[-1500:] + out.stderr[-2500:]).strip()
        return res
    res.update(parse(out.stdout, args.warmup_intervals))
    if res["steady_tokens_per_s"] is None or res["final_val_ppl"] is None:
        res["error"] = "no tokens/s or validation perplexity in the log:\n" + out.stdout[-1500:]
    return res


def summarize(runs: list) -> dict:
    """One library's runs over several seeds: the first run's record plus medians and ranges."""
    good = [r for r in runs if "error" not in r]
    if len(runs) == 1 or not good:
        return runs[0] if len(runs) == 1 else dict(runs[0], runs=runs)
    ppl = [r["final_val_ppl"] for r in good]
    return dict(good[0], runs=runs, steady_tokens_per_s=statistics.median(r["steady_tokens_per_s"] for r in good),
                final_val_ppl=statistics.median(ppl), val_ppl_range=[min(ppl), max(ppl)],
                seconds=statistics.median(r["seconds"] for r in good))


def ppl_verdict(results: dict) -> str:
    """Whether jbind's median final perplexity lies in the range of MXNet's over the seeds."""
    j, m = results.get("jbind", {}), results.get("mxnet", {})
    if "val_ppl_range" not in j or "val_ppl_range" not in m:
        return ""
    lo, hi = m["val_ppl_range"]
    inside = lo <= j["final_val_ppl"] <= hi
    return ("jbind's median final perplexity %.2f (its range %.2f..%.2f) lies %s MXNet 1.9.1's seed spread "
            "%.2f..%.2f" % (j["final_val_ppl"], *j["val_ppl_range"], "inside" if inside else "OUTSIDE", lo, hi))


def table(results: dict) -> str:
    rows = ["%-16s %10s %22s %8s  %s" % ("library", "tokens/s", "final ppl", "seconds", "jbind / this (tokens/s)")]
    j = results.get("jbind", {}).get("steady_tokens_per_s")
    for lib, r in results.items():
        if "error" in r:
            rows.append("%-16s failed: %s" % (lib, r["error"].splitlines()[-1] if r["error"] else "?"))
            continue
        ratio = "%.2fx" % (j / r["steady_tokens_per_s"]) if j and lib != "jbind" else ""
        ppl = "%.2f" % r["final_val_ppl"] + (" (%.2f..%.2f)" % tuple(r["val_ppl_range"]) if "val_ppl_range" in r else "")
        rows.append("%-16s %10.0f %22s %8.1f  %s" % (lib, r["steady_tokens_per_s"], ppl, r["seconds"], ratio))
    verdict = ppl_verdict(results)
    return "\n".join(rows + ([verdict] if verdict else []))


def run(argv=None) -> dict:
    args = build_parser().parse_args(argv)
    libs = [x for x in args.only.split(",") if x]
    bad = sorted(set(libs) - set(LIBRARIES + EXTRA))
    if bad:
        raise SystemExit(f"--only: unknown {bad}; choose from {list(LIBRARIES + EXTRA)}")
    if args.quick:
        quick(args)
    print("Gluon word LM, %d x %d LSTM (embed %d), batch %d, bptt %d, %s batches x %d epoch(s), core %d"
          % (args.nlayers, args.nhid, args.emsize, args.batch_size, args.bptt, args.max_batches, args.epochs,
             args.core), flush=True)
    seeds = [int(x) for x in args.seeds.split(",") if x] if args.seeds else [args.seed]
    runs = {lib: [] for lib in libs}
    try:
        for seed in seeds:
            args.seed = seed
            for lib in libs:
                print(f"running {lib}: {' '.join(command(lib, args))}", flush=True)
                runs[lib].append(run_one(lib, args))
    finally:
        if args.quick:
            shutil.rmtree(args.data, ignore_errors=True)
    results = {lib: summarize(rs) for lib, rs in runs.items()}
    print("\n" + table(results), flush=True)
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"argv": sys.argv[1:], "config": dict({k: getattr(args, k) for k in MODEL_FLAGS}, seeds=seeds),
                       "results": results, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, f, indent=1)
        os.replace(tmp, args.json)
        print(f"wrote {args.json}")
    return results


def main(argv=None) -> int:
    results = run(argv)
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
