"""Process memory while binding thousands of distinct shapes (issue 9: bounded memory).

    taskset -c 0 /work/venv/bin/python benchmarks/rss_bench.py [--binds 3000] [--bounds 64,none]
                                                                 [--every 250] [--json PATH]

For each bound (`mx.compile.set_max_entries`; `none` = unbounded), a fresh child process
binds a small MLP (FullyConnected 32 - relu - FullyConnected 10 - SoftmaxOutput) at
`--binds` distinct input shapes, (1 + i % 50, 8 + i // 50) for i = 0, 1, ... (every one
new, none larger than 50 x 68, so the growth measured is per shape, not per element),
runs one inference forward on each and drops the executor. Every `--every` binds it records the resident set size
(VmRSS from /proc/self/status), the compile-cache entries and evictions, jbind's
zero-buffer cache and the live jax arrays. Prints one table per bound and a final
line; `--json` writes every sample (atomically).
"""
import argparse
import gc
import json
import os
import subprocess
import sys
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--binds", type=int, default=3000)
parser.add_argument("--bounds", default="64,none", help="comma-separated max_entries; 'none' = unbounded")
parser.add_argument("--every", type=int, default=250)
parser.add_argument("--json", default=None)
parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
args = parser.parse_args()


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(bound):
    import jax
    import numpy as np

    import jbind as mx
    from jbind.ndarray import ndarray as nd_impl

    mx.compile.set_max_entries(10 ** 9 if bound == "none" else int(bound))
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=32, name="fc1"), act_type="relu")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=10, name="fc2"), name="softmax")
    samples = []

    def sample(i, t0):
        gc.collect()
        st = mx.compile.stats()
        samples.append({"binds": i, "rss_mb": round(rss_mb(), 1), "entries": st["entries"],
                        "evictions": st["evictions"], "zero_buffers": len(nd_impl._ZEROS),
                        "live_arrays": len(jax.live_arrays()), "seconds": round(time.perf_counter() - t0, 1)})
        print(json.dumps(samples[-1]), flush=True)

    t0 = time.perf_counter()
    sample(0, t0)
    for i in range(1, args.binds + 1):
        shape = (1 + (i - 1) % 50, 8 + (i - 1) // 50)
        exe = net.simple_bind(mx.cpu(), grad_req="null", data=shape)
        exe.arg_dict["data"][:] = np.ones(shape, np.float32)
        exe.forward()
        exe.outputs[0].asnumpy()
        del exe
        if i % args.every == 0 or i == args.binds:
            sample(i, t0)


def run(bound):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", bound, "--binds", str(args.binds),
           "--every", str(args.every)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    samples = []
    print(f"\nbound {bound}: {'binds':>6} {'RSS MB':>8} {'entries':>8} {'evicted':>8} {'zero bufs':>9} "
          f"{'live arrays':>11} {'s':>7}")
    for line in proc.stdout:
        s = json.loads(line)
        samples.append(s)
        print(f"{'':>{len(bound) + 7}} {s['binds']:>6} {s['rss_mb']:>8.1f} {s['entries']:>8} {s['evictions']:>8} "
              f"{s['zero_buffers']:>9} {s['live_arrays']:>11} {s['seconds']:>7.1f}", flush=True)
    if proc.wait():
        sys.exit(f"child for bound {bound} failed with {proc.returncode}")
    return samples


def main():
    if args.child:
        return child(args.child)
    bounds = args.bounds.split(",")
    print(f"{args.binds} distinct shapes of a small MLP, RSS sampled every {args.every} binds; one process "
          f"per bound")
    results = {b: run(b) for b in bounds}
    final = []
    for b, s in results.items():
        first = next(x for x in s if x["binds"] >= min(args.every, args.binds))
        slope = (s[-1]["rss_mb"] - first["rss_mb"]) / max(1, s[-1]["binds"] - first["binds"]) * 1000
        final.append(f"bound {b}: RSS {s[0]['rss_mb']:.0f} -> {s[-1]['rss_mb']:.0f} MB "
                     f"({slope:+.1f} MB per 1000 binds after the first {first['binds']})")
    print("\n" + "; ".join(final))
    if args.json:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from jbind.io_util import atomic_write_text
        atomic_write_text(args.json, json.dumps({"binds": args.binds, "every": args.every, "samples": results},
                                                indent=1) + "\n")


if __name__ == "__main__":
    main()
