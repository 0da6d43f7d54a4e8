"""`jbind-bench zoo`: Gluon model zoo checkpoints served (`Module.forward`) and trained (one
SGD-momentum step) by jbind next to Apache MXNet 1.9.1, one core each, outputs checked.

The runs are benchmarks/zoo_bench.py's (see its docstring for the pinned command); MXNet's
Python comes from JBIND_BENCH_MXNET_PYTHON (default: that script's). Without MXNet the
figures have no baseline and say why in a note. Per model and batch size there are four
figures: steady inference and training-step medians (ms) and their first calls (s, bind +
first call: jbind's compile), each with MXNet's as the baseline, so `ratio` is jbind / MXNet.
"""
from __future__ import annotations

from ._report import Figure
from ._setup import BenchError, import_benchmark

KINDS = (("infer", "ms", "inference"), ("infer_first", "s", "inference first call"),
         ("train", "ms", "train step"), ("train_first", "s", "train first step"))
BASELINE = "MXNet 1.9.1"


def models(cfg) -> tuple:
    return cfg.zoo_models or import_benchmark("zoo_export").ZOO


def figure_names(cfg) -> list:
    return [f"zoo.{m}.b{n}.{k}" for m in models(cfg) for n in cfg.zoo_batches for k, _, _ in KINDS]


def argv(cfg) -> list:
    out = ["--models", ",".join(models(cfg)), "--batches", ",".join(map(str, cfg.zoo_batches)),
           "--reps", str(cfg.zoo_reps), "--train-reps", str(cfg.zoo_reps)]
    if cfg.zoo_cache:
        out += ["--cache", cfg.zoo_cache]
    return out + (["--quick"] if cfg.quick else [])   # --quick without --cache: a temporary cache


def _failed(entry: dict) -> str:
    bad = [f"{k} {c['rel_err']:.1e}" for k, c in entry.get("checks", {}).items() if not c["ok"]]
    return f"OUTPUTS DIFFER beyond {import_benchmark('zoo_bench').TOLERANCE:g}: {', '.join(bad)}" if bad else ""


def _figures(name: str, n: int, row: dict, skipped: str) -> list:
    figs = []
    for key, unit, label in KINDS:
        kind, first = key.split("_")[0], key.endswith("_first")
        entry = row.get(kind)
        if not entry or not entry["jbind"]:
            raise BenchError(f"zoo: {name} at batch {n} has no {kind} figure from jbind")
        pick = (lambda t: [t["first_s"]]) if first else (lambda t: [s * 1e3 for s in t["samples_s"]])
        base = pick(entry["mxnet"]) if entry["mxnet"] else None
        note = "; ".join(x for x in (_failed(entry), entry.get("note", "") if not first else "",
                                     "" if base else skipped) if x)
        figs.append(Figure(f"zoo.{name}.b{n}.{key}", f"{name} batch {n} {label}", unit, pick(entry["jbind"]),
                           base, BASELINE, note))
    return figs


def run(cfg) -> list:
    bench = import_benchmark("zoo_bench")
    known = import_benchmark("zoo_export").ZOO + ("tiny",)
    unknown = sorted(set(models(cfg)) - set(known))
    if unknown:
        raise BenchError(f"zoo --models: unknown {unknown}; choose from {list(known)}")
    report = bench.run(argv(cfg))
    skipped = "; ".join(report["notes"]) or "MXNet did not run"
    figs, errors = [], []
    for name, m in report["models"].items():
        if "error" in m:
            errors.append(f"{name}: {m['error'][-1500:]}")
            continue
        for n, row in m["batches"].items():
            figs += _figures(name, int(n), row, skipped)
    if errors:
        raise BenchError("zoo: jbind could not run every model:\n" + "\n".join(errors))
    return figs
