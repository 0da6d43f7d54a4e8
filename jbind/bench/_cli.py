"""The `jbind-bench` command line."""
from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time

from ._report import table, write_json
from ._setup import BenchError, Config, lm_vocab, lowering_name

ORDER = ("bind", "compile", "train", "step", "memory")


def _module(name):
    from . import _bind, _compile, _gluon, _imgclf, _memory, _step, _train, _zoo
    return {"bind": _bind, "compile": _compile, "train": _train, "step": _step, "memory": _memory,
            "gluon": _gluon, "zoo": _zoo, "imgclf": _imgclf}[name]


def _title(name: str, cfg: Config) -> str:
    lm = "x".join(map(str, cfg.lm_model[:2]))
    if name == "bind":
        b = cfg.bind_buckets
        return (f"bind: MXNet's executor-group benchmark, LSTM LM (mx.rnn) {cfg.bind_model[0]}x{cfg.bind_model[1]}, "
                f"batch {cfg.batch}, buckets {b[0]}..{b[-1]} sharing bucket {cfg.bind_default}; 1 and "
                f"{cfg.contexts} contexts")
    if name == "compile":
        return (f"compile: bucketing LM {lm} (embed {cfg.lm_model[2]}, vocab {lm_vocab()}), batch {cfg.batch}, "
                f"{cfg.compile_repeat} cold compile(s) per bucket; restart through JBIND_CACHE_DIR")
    if name == "train":
        from ._train_peers import folder
        peers = (f"; then its peers (ratio jbind / peer), {cfg.peer_batches} batches each, one process at a time "
                 f"on one core" if folder(cfg)[0] is not None else "")
        return (f"train: BucketingModule.fit, LM {lm} on examples/data/fortunes, batch {cfg.batch}, "
                f"{cfg.train_batches} batches x (1 + {cfg.train_repeat}) epochs{peers}")
    if name == "step":
        m = cfg.step_model
        return (f"step: one fused train step of the seed model ({m[0]}x{m[1]}, embed {m[2]}, vocab {m[3]}, "
                f"batch {cfg.batch}), {cfg.step_repeat} steps per bucket")
    if name == "gluon":
        return ("gluon: examples/gluon_word_lm.py on jbind, the same script on MXNet 1.9.1, PyTorch's "
                "word_language_model; one core each (benchmarks/gluon_lm_bench.py)")
    if name == "zoo":
        return (f"zoo: Gluon model zoo checkpoints through Module, jbind vs MXNet 1.9.1 (ratio jbind / MXNet), "
                f"batch {', '.join(map(str, cfg.zoo_batches))}; one core each (benchmarks/zoo_bench.py)")
    if name == "imgclf":
        return (f"imgclf: MXNet 1.9.1's train_imagenet.py --benchmark 1 (samples/s) and benchmark_score.py "
                f"(images/s), jbind vs MXNet (ratio jbind / MXNet); one core each "
                f"(benchmarks/image_classification.py)")
    return (f"memory: seed model, {len(cfg.memory_buckets)} buckets then {cfg.memory_groups} more groups "
            f"(one context)")


def expected_figures(cfg: Config, commands=ORDER) -> list:
    """Every figure name the given subcommands report for `cfg` (the smoke test checks them)."""
    return [name for c in commands for name in _module(c).figure_names(cfg)]


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", metavar="PATH", help="write every figure (min/median/max/samples, baseline) here")
    common.add_argument("--repeat", type=int, metavar="N", help="repeats of each measurement (overrides defaults)")
    common.add_argument("--quick", action="store_true", help="tiny sizes, a few seconds each (CI smoke)")
    common.add_argument("--plot", metavar="PATH", help="PNG of compile time per bucket and tokens/s (matplotlib)")
    common.add_argument("--contexts", type=int, metavar="N", help="contexts of the multi-context bind (default 2)")
    common.add_argument("--num-layers", type=int, metavar="N",
                        help="LSTM layers of the bucketing LM (compile, train; default 2)")
    p = argparse.ArgumentParser(prog="jbind-bench", description="jbind's benchmarks, each figure next to a "
                                "hand-written JAX baseline measured in the same run.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    helps = {"bind": "executor-group creation (MXNet's benchmark), first forward of new buckets, cache counts",
             "compile": "cold compile per bucket (rolled, unrolled) and warm restart via the persistent cache",
             "train": "bucketing LM training throughput on the bundled corpus",
             "step": "one train step of the seed model per bucket; binder overhead ratio",
             "memory": "parameter and aux bytes alive across buckets and groups",
             "gluon": "Gluon word LM vs MXNet 1.9.1 and PyTorch, one core each (needs their venvs)",
             "zoo": "Gluon model zoo CNNs, inference and a train step vs MXNet 1.9.1, one core each",
             "imgclf": "MXNet's image-classification scripts (train, score) vs MXNet 1.9.1, one core each",
             "all": "everything, briefly (not gluon, zoo, imgclf)"}
    subs = {name: sub.add_parser(name, parents=[common], help=text, description=text) for name, text in helps.items()}
    for name in ("train", "all"):
        t = subs[name]
        t.add_argument("--peers", metavar="DIR", help="the bucketing LM's peer scripts (MXNet 1.9.1, PyTorch), run "
                       "after jbind's figures; default ../shared/peers next to the checkout if there; 'none': off")
        t.add_argument("--python-mxnet", metavar="PY", help="MXNet 1.9.1's Python for the peers (default "
                       "$JBIND_BENCH_MXNET_PYTHON); a peer without its Python is skipped with a note")
        t.add_argument("--python-torch", metavar="PY", help="PyTorch's Python for the peers (default "
                       "$JBIND_BENCH_TORCH_PYTHON)")
    zoo = subs["zoo"]
    zoo.add_argument("--models", metavar="A,B", help="comma-separated model names (default: all ten)")
    zoo.add_argument("--batches", metavar="N,M", help="comma-separated batch sizes (default 1,32)")
    zoo.add_argument("--cache", metavar="DIR", help="exported checkpoints (default ~/.cache/jbind-zoo)")
    img = subs["imgclf"]
    img.add_argument("--networks", metavar="A,B", help="resnet-18,resnet-50,mobilenet,inception-bn (default all)")
    img.add_argument("--batches", metavar="N,M", help="comma-separated batch sizes (default 1,16,32)")
    img.add_argument("--examples", metavar="DIR", help="MXNet 1.9.1's example/image-classification (default: "
                     "~/.cache/jbind-mxnet-examples, cloned there when absent)")
    return p


def _batches(text, default) -> tuple:
    try:
        batches = tuple(int(b) for b in text.split(",") if b) if text else default
    except ValueError:
        raise BenchError(f"--batches {text!r}: give comma-separated integers such as 1,32") from None
    if not batches or min(batches) < 1:
        raise BenchError(f"--batches {text!r}: each batch size must be at least 1")
    return batches


def _imgclf_options(args, cfg: Config) -> Config:
    nets = tuple(n for n in args.networks.split(",") if n) if args.networks else cfg.imgclf_networks
    return dataclasses.replace(cfg, imgclf_networks=nets, imgclf_batches=_batches(args.batches, cfg.imgclf_batches),
                               imgclf_examples=args.examples or cfg.imgclf_examples)


def _zoo_options(args, cfg: Config) -> Config:
    try:
        batches = tuple(int(b) for b in args.batches.split(",") if b) if args.batches else cfg.zoo_batches
    except ValueError:
        raise BenchError(f"--batches {args.batches!r}: give comma-separated integers such as 1,32") from None
    if not batches or min(batches) < 1:
        raise BenchError(f"--batches {args.batches!r}: each batch size must be at least 1")
    models = tuple(m for m in args.models.split(",") if m) if args.models else cfg.zoo_models
    return dataclasses.replace(cfg, zoo_models=models, zoo_batches=batches, zoo_cache=args.cache or cfg.zoo_cache)


def _meta(args, cfg, seconds) -> dict:
    import jax
    dev = jax.devices()[0]
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    from ..compile import persistent_cache_dir
    return {"command": args.command, "argv": sys.argv[1:], "quick": cfg.quick, "config": cfg.to_json(),
            "jax": jax.__version__, "platform": dev.platform, "device": str(dev), "python": platform.python_version(),
            "machine": platform.machine(), "cpu_count": os.cpu_count(), "cpu_affinity": affinity,
            "loop_lowering": lowering_name(), "persistent_cache": persistent_cache_dir(),
            "seconds": seconds, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def run(argv=None) -> int:
    args = parser().parse_args(argv)
    commands = ORDER if args.command == "all" else (args.command,)
    if args.plot:
        from ._plot import require
        require()
        if not set(commands) & {"compile", "train", "step"}:
            raise BenchError(f"--plot draws compile time and tokens/s; `{args.command}` measures neither "
                             f"(use compile, train, step or all)")
    cfg = Config.quick_config(args.repeat) if args.quick else Config.full(args.command == "all", args.repeat)
    if args.contexts is not None:
        cfg = dataclasses.replace(cfg, contexts=args.contexts)
    if args.num_layers is not None:
        if args.num_layers < 1:
            raise BenchError(f"--num-layers {args.num_layers}: need at least one layer")
        cfg = dataclasses.replace(cfg, lm_model=(args.num_layers,) + tuple(cfg.lm_model[1:]))
    if args.command in ("train", "all"):
        cfg = dataclasses.replace(cfg, train_peers=args.peers or "", python_mxnet=args.python_mxnet or "",
                                  python_torch=args.python_torch or "")
        from ._train_peers import folder
        folder(cfg)                     # a wrong --peers fails now, not after jbind's figures
    if args.command == "zoo":
        cfg = _zoo_options(args, cfg)
    if args.command == "imgclf":
        cfg = _imgclf_options(args, cfg)
    from ..compile import persistent_cache_dir
    import jax
    print(f"jbind-bench {args.command}{' --quick' if cfg.quick else ''}: jax {jax.__version__} on "
          f"{jax.devices()[0].platform}, loop lowering {lowering_name()}", flush=True)
    if persistent_cache_dir():
        print(f"note: the persistent compilation cache is on ({persistent_cache_dir()}): cold compile figures "
              f"may be warm; unset JBIND_CACHE_DIR", flush=True)
    figures, seconds = [], {}
    for name in commands:
        t0 = time.perf_counter()
        figs = _module(name).run(cfg)
        seconds[name] = time.perf_counter() - t0
        figures += figs
        print("\n" + table(f"{_title(name, cfg)}  [{seconds[name]:.0f} s]", figs), flush=True)
    if args.json:
        write_json(args.json, _meta(args, cfg, seconds), figures)
        print(f"\nwrote {args.json}")
    if args.plot:
        from ._plot import plot
        plot(args.plot, figures, cfg.batch)
        print(f"wrote {args.plot}")
    return 0


def main(argv=None) -> None:
    """Entry point of `jbind-bench` and `python -m jbind.bench`."""
    try:
        code = run(argv)
    except BenchError as e:
        print(f"jbind-bench: error: {e}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)
