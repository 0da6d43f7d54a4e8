"""End to end: the README's example for 200 batches, from process start, cold and warm.

    taskset -c 0 python benchmarks/e2e_bench.py [--batches 200] [--seeds 1,2,3] [--repeat N] [--json PATH]
        [--mxnet /path/to/mxnet-venv/bin/python]

Runs `examples/bucketing_rnn.py --max-batches N --num-epochs 1` in fresh processes:
first with an empty persistent cache directory (cold: every compile included), then
again with the cache that run filled (warm), for the first seed; then once per further
seed (warm) for the spread of the train perplexity; `--repeat N` runs the warm seeds N
times over, in turn, and reports each seed's median too (this machine is noisy). Reports, per run, the time from
process start to the first and to the last trained batch (the example measures it from
/proc) and the cumulative train perplexity over the N batches, next to MXNet 1.9.1's
figures for the same script on one core (issue #5: 200 batches in 31.5 s, first batch
1.7 s after start, perplexity 6498.5 / 6592.6 / 5665.5 for seeds 1..3).

With `--mxnet PYTHON` (an interpreter with mxnet 1.9.1), MXNet's own script
(`mxnet_bucketing.py`, OMP_NUM_THREADS=1) runs once per seed in the same session, timed
the same way: the baseline is then measured next to jbind instead of quoted.

The example runs as from an installed package: jbind's and the example's bytecode is
compiled first (pip does that at install), and the runs may write bytecode even where
the shell sets PYTHONDONTWRITEBYTECODE.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "bucketing_rnn.py")
MXNET = {"batches_s": 31.5, "first_batch_s": 1.7, "perplexity": {1: 6498.5, 2: 6592.6, 3: 5665.5}}

TIMES = re.compile(r"first batch ([\d.]+) s after process start; (\d+) batches in ([\d.]+) s")
PPL = re.compile(r"Epoch\[0\] Train-perplexity=([\d.]+)")
STEADY = re.compile(r"after the 10th batch: ([\d.]+) tokens/s")


def run_example(batches, seed, cache_dir, layers=2, mxnet=None):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if mxnet:
        cmd = [mxnet, os.path.join(HERE, "mxnet_bucketing.py"), "--max-batches", str(batches), "--seed", str(seed),
               "--num-layers", str(layers)]
        env["OMP_NUM_THREADS"] = "1"
    else:
        cmd = [sys.executable, EXAMPLE, "--max-batches", str(batches), "--num-epochs", "1", "--seed", str(seed),
               "--disp-batches", str(10 * batches), "--cache-dir", cache_dir, "--num-layers", str(layers)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise SystemExit(f"the example failed ({proc.returncode}):\n{out[-3000:]}")
    times, ppl = TIMES.search(out), PPL.search(out)
    if not times or not ppl:
        raise SystemExit(f"could not find the timing / perplexity lines in the example's output:\n{out[-3000:]}")
    steady = STEADY.search(out)
    return {"first_batch_s": float(times.group(1)), "batches": int(times.group(2)),
            "batches_s": float(times.group(3)), "perplexity": float(ppl.group(1)),
            "tokens_per_s_after_10": float(steady.group(1)) if steady else None}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--json", help="write the runs here (atomically)")
    p.add_argument("--mxnet", help="a Python with mxnet 1.9.1: measure MXNet's script in this run too")
    p.add_argument("--num-layers", type=int, default=2, help="LSTM layers (MXNet's reference figures: 2)")
    p.add_argument("--repeat", type=int, default=1, help="warm runs per seed (seeds taken in turn)")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    root = os.path.dirname(HERE)
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(root, "jbind"), os.path.dirname(EXAMPLE)],
                   check=True, stdout=subprocess.DEVNULL)
    runs = []
    with tempfile.TemporaryDirectory(prefix="jbind-e2e-cache-") as cache:
        for i, seed in enumerate([seeds[0]] + seeds * args.repeat):
            kind = "cold" if i == 0 else "warm"
            r = run_example(args.batches, seed, cache, args.num_layers)
            r.update(kind=kind, seed=seed)
            runs.append(r)
            reference = args.num_layers == 2 and args.batches == 200  # what the figures are for
            ref = MXNET["perplexity"].get(seed) if reference else None
            print(f"{kind:4s} seed {seed}: first batch {r['first_batch_s']:.2f} s, {r['batches']} batches "
                  f"{r['batches_s']:.2f} s from process start"
                  + (f" (MXNet {MXNET['batches_s']} s: {r['batches_s'] / MXNET['batches_s']:.2f}x)"
                     if reference else "")
                  + _steady(r) + f", train perplexity {r['perplexity']:.1f}"
                  + (f" (MXNet seed {seed}: {ref})" if ref else ""), flush=True)
    if args.repeat > 1:
        for seed in seeds:
            warm = [r for r in runs if r["kind"] == "warm" and r["seed"] == seed]
            firsts = [r["first_batch_s"] for r in warm]
            total = statistics.median(r["batches_s"] for r in warm)
            print(f"warm seed {seed}, median of {len(warm)}: first batch {statistics.median(firsts):.2f} s "
                  f"({', '.join(f'{x:.2f}' for x in firsts)}), {args.batches} batches {total:.2f} s", flush=True)
    if args.mxnet:
        for seed in seeds:
            r = run_example(args.batches, seed, None, args.num_layers, mxnet=args.mxnet)
            r.update(kind="mxnet", seed=seed)
            runs.append(r)
            print(f"MXNet seed {seed}: first batch {r['first_batch_s']:.2f} s, {r['batches']} batches "
                  f"{r['batches_s']:.2f} s from process start" + _steady(r)
                  + f", train perplexity {r['perplexity']:.1f}", flush=True)
    if args.num_layers != 2 or args.batches != 200:
        return _write(args.json, runs)
    lo, hi = min(MXNET["perplexity"].values()), max(MXNET["perplexity"].values())
    ppls = [r["perplexity"] for r in runs if r["kind"] != "mxnet"]
    print(f"perplexity after {args.batches} batches: jbind {min(ppls):.1f}..{max(ppls):.1f}, "
          f"MXNet seeds 1..3 {lo}..{hi}; all inside: {all(lo <= x <= hi for x in ppls)}")
    _write(args.json, runs)


def _steady(r) -> str:
    rate = r["tokens_per_s_after_10"]
    return "" if rate is None else f", {rate:.0f} tokens/s after the 10th batch"


def _write(path, runs):
    if path:
        from jbind.io_util import atomic_write_bytes
        atomic_write_bytes(path, json.dumps({"mxnet": MXNET, "runs": runs}, indent=1).encode())
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
