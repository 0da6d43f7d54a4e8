"""`jbind-bench imgclf`: MXNet 1.9.1's own example/image-classification scripts
(`train_imagenet.py --benchmark 1` samples/s, `benchmark_score.py` images/s) run by jbind and by
MXNet 1.9.1, one core each.

The runs are benchmarks/image_classification.py's (see its docstring for the pinned command);
MXNet's Python comes from JBIND_BENCH_MXNET_PYTHON (default: that script's). The figures are
throughputs with MXNet's as the baseline, so `ratio` is jbind / MXNet (above 1: jbind faster).
Without MXNet's scripts the runs are jbind's own equivalent, said in every figure's note.
"""
from __future__ import annotations

from ._report import Figure
from ._setup import BenchError, import_benchmark

BASELINE = "MXNet 1.9.1"


def configs(cfg) -> list:
    """(network, side) pairs measured: every network at 224 (quick: 32), resnet also at 64."""
    sides = (32,) if cfg.quick else (224, 64)
    nets = cfg.imgclf_networks or import_benchmark("image_classification").NETWORKS
    return [(n, s) for n in nets for s in sides if s in (224, 32) or n.startswith("resnet")]


def figure_names(cfg) -> list:
    return [f"imgclf.{net}.{side}.b{n}.{kind}" for net, side in configs(cfg) for n in cfg.imgclf_batches
            for kind in (("score", "train") if n > 1 else ("score",))]


def argv(cfg) -> list:
    out = ["--networks", ",".join(dict.fromkeys(n for n, _ in configs(cfg))),
           "--sizes", ",".join(map(str, dict.fromkeys(s for _, s in configs(cfg)))),
           "--batches", ",".join(map(str, cfg.imgclf_batches)), "--reps", str(cfg.imgclf_reps)]
    if cfg.imgclf_examples:
        out += ["--examples", cfg.imgclf_examples]
    return out + (["--quick"] if cfg.quick else [])


def run(cfg) -> list:
    bench = import_benchmark("image_classification")
    unknown = sorted(set(cfg.imgclf_networks) - set(bench.NETWORKS))
    if unknown:
        raise BenchError(f"imgclf --networks: unknown {unknown}; choose from {list(bench.NETWORKS)}")
    report = bench.run(argv(cfg))
    notes = "; ".join(report["notes"])
    figs, errors = [], []
    for c in report["configs"]:
        net, side = c["network"], int(c["image_shape"].rsplit(",", 1)[1])
        errors += [f"{net} {c['image_shape']} {k}: {v[-1500:]}" for k, v in c["errors"].items()
                   if k.startswith("jbind")]
        for n, row in c["batches"].items():
            for kind, e in row.items():
                unit = "images/s" if kind == "score" else "samples/s"
                failed = c["errors"].get(f"mxnet {kind}" + ("" if kind == "score" else f" b{n}"), "")
                why = "; ".join(x for x in (notes, failed.strip().splitlines()[-1] if failed.strip() else "") if x)
                note = why if not e["mxnet"] else ("fallback: " + notes if report["meta"]["fallback"] else "")
                figs.append(Figure(f"imgclf.{net}.{side}.b{n}.{kind}", f"{net} 3,{side},{side} batch {n} {kind}",
                                   unit, e["jbind"], e["mxnet"], BASELINE, note))
    if errors or not figs:
        raise BenchError("imgclf: jbind could not run every network:\n" + ("\n".join(errors) or notes))
    return figs
