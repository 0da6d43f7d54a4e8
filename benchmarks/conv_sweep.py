"""Sweep of convolution shapes: XLA's own convolution against jbind's alternative forms.

For each shape (channels x spatial size x batch x kernel x stride, dense, grouped and
depthwise) this times, in one process, the forward pass and the forward + gradient
(`jax.grad` with respect to data and weight) of every applicable form of
`jbind.ops._conv_fast` ('native' = `lax.conv_general_dilated`, 'taps' = shifted slices,
'patches' = im2col + one dot_general), checks they agree, and prints one line per shape:
the median times, the ratio native / best, the winner and the form jbind's rule picks.
The routing rule in `jbind/ops/_conv_fast.py` is read off this table.

    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/conv_sweep.py            # full sweep
    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/conv_sweep.py --quick    # a few shapes
    ... --json out.jsonl                                                      # rows as JSON

Timings on a shared machine are noisy: compare the ratios, measured in the same process,
not the absolute figures.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jbind.ops import _conv_fast as cf

MAX_FLOP = 2e9  # skip shapes whose forward is bigger than this (a slow shared core)


def _median_time(f, args, reps):
    jax.block_until_ready(f(*args))
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def cases(quick):
    """(kind, batch, C, F, groups, spatial, kernel, stride, pad)."""
    if quick:
        return [("dense", 1, 512, 512, 1, 7, 3, 1, 1), ("dense", 16, 512, 512, 1, 2, 3, 1, 1),
                ("dense", 1, 64, 64, 1, 56, 3, 1, 1), ("depthwise", 1, 64, 64, 64, 56, 3, 1, 1),
                ("depthwise", 1, 512, 512, 512, 14, 3, 2, 1), ("grouped", 1, 128, 128, 32, 28, 3, 1, 1)]
    out = []
    for n in (1, 16):
        for c in (64, 128, 256, 512):
            for s in (2, 4, 7, 14, 28, 56):
                out.append(("dense", n, c, c, 1, s, 3, 1, 1))
            out.append(("dense", n, c, c, 1, 7, 1, 1, 0))
        for c in (32, 64, 128, 256, 512, 1024):
            for s in (7, 14, 28, 56, 112):
                for st in (1, 2):
                    out.append(("depthwise", n, c, c, c, s, 3, st, 1))
        for c, g in ((128, 32), (256, 32), (64, 2)):
            for s in (7, 14, 28):
                out.append(("grouped", n, c, c, g, s, 3, 1, 1))
    return out


def run(case, reps, grad):
    kind, n, c, f, g, s, k, st, p = case
    stride, dilate, pad = (st, st), (1, 1), (p, p)
    out = (s + 2 * p - k) // st + 1
    flop = 2 * n * f * (c // g) * k * k * out * out
    if flop > MAX_FLOP or out < 1:
        return None
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((n, c, s, s)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((f, c // g, k, k)), jnp.float32) / math.sqrt(c // g * k * k)
    forms = ["native", "patches"] + (["taps"] if g == c else [])
    row = {"kind": kind, "batch": n, "channels": c, "groups": g, "spatial": s, "kernel": k, "stride": st,
           "pad": p, "gflop": flop / 1e9, "rule": cf.choose(x.shape, w.shape, g, stride, dilate, pad)}
    ref = None
    for form in forms:
        fwd = jax.jit(lambda x, w, form=form: cf.conv(x, w, stride, dilate, pad, g, form=form))
        y = fwd(x, w)
        if ref is None:
            ref = y
        else:
            np.testing.assert_allclose(np.asarray(y), np.asarray(ref), rtol=1e-4, atol=1e-4)
        row[f"fwd_{form}_ms"] = 1e3 * _median_time(fwd, (x, w), reps)
        if grad:
            loss = lambda x, w, form=form: jnp.sum(cf.conv(x, w, stride, dilate, pad, g, form=form) ** 2)  # noqa: E731
            bwd = jax.jit(jax.grad(loss, argnums=(0, 1)))
            row[f"grad_{form}_ms"] = 1e3 * _median_time(bwd, (x, w), max(3, reps // 2))
    for what in ("fwd", "grad") if grad else ("fwd",):
        times = {fm: row[f"{what}_{fm}_ms"] for fm in forms}
        best = min(times, key=times.get)
        row[f"{what}_best"] = best
        row[f"{what}_native_over_best"] = times["native"] / times[best]
        row[f"{what}_native_over_rule"] = times["native"] / times[row["rule"]]
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a handful of shapes")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--no-grad", action="store_true", help="time the forward only")
    ap.add_argument("--kind", choices=("dense", "depthwise", "grouped"), help="only shapes of this kind")
    ap.add_argument("--batch", type=int, help="only shapes of this batch size")
    ap.add_argument("--json", help="also write the rows, one JSON object a line, to this file")
    a = ap.parse_args(argv)
    rows = []
    print(f"{'kind':9} {'n':>3} {'C':>5} {'g':>5} {'HW':>4} {'k':>2} {'s':>2}  fwd ms native/patches/taps"
          f"   native/best  best     grad native/best best    rule", flush=True)
    for case in cases(a.quick):
        if (a.kind and case[0] != a.kind) or (a.batch and case[1] != a.batch):
            continue
        row = run(case, a.reps, not a.no_grad)
        if row is None:
            continue
        rows.append(row)
        t = "/".join(f"{row[f'fwd_{fm}_ms']:.2f}" if f"fwd_{fm}_ms" in row else "-"
                     for fm in ("native", "patches", "taps"))
        gr = (f"{row['grad_native_over_best']:8.2f}x {row['grad_best']:8}" if not a.no_grad else "")
        print(f"{row['kind']:9} {row['batch']:3} {row['channels']:5} {row['groups']:5} {row['spatial']:4} "
              f"{row['kernel']:2} {row['stride']:2}  {t:28} {row['fwd_native_over_best']:8.2f}x  "
              f"{row['fwd_best']:8} {gr} {row['rule']}", flush=True)
        if a.json:
            with open(a.json, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
