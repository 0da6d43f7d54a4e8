"""`jbind-bench gluon`: the Gluon word language model (examples/gluon_word_lm.py) next to
the same script on Apache MXNet 1.9.1 and PyTorch's word_language_model, one core each.

The runs are benchmarks/gluon_lm_bench.py's; the peers' Pythons come from
JBIND_BENCH_MXNET_PYTHON and JBIND_BENCH_TORCH_PYTHON (defaults: that script's). A peer
that cannot run leaves its figure without a baseline and says why in a note."""
from __future__ import annotations

import os

from ._report import Figure
from ._setup import BenchError, import_benchmark

PEERS = (("mxnet", "MXNet 1.9.1, same script"), ("torch", "PyTorch word_language_model"))
NAMES = ("tokens_per_s_vs_mxnet", "tokens_per_s_vs_torch", "val_ppl_vs_mxnet", "val_ppl_vs_torch")


def figure_names(cfg) -> list:
    return [f"gluon.{n}" for n in NAMES]


def argv(cfg) -> list:
    """The bench script's arguments: its defaults, or its smoke sizes under --quick."""
    out = ["--quick"] if cfg.quick else []
    for lib, env in (("mxnet", "JBIND_BENCH_MXNET_PYTHON"), ("torch", "JBIND_BENCH_TORCH_PYTHON")):
        if os.environ.get(env):
            out += [f"--python-{lib}", os.environ[env]]
    return out


def _steady(r: dict, warmup: int) -> list:
    xs = r.get("tokens_per_s") or []
    return xs[warmup:] or xs[-1:]


def run(cfg) -> list:
    bench = import_benchmark("gluon_lm_bench")
    args = argv(cfg)
    warmup = bench.build_parser().parse_args(args).warmup_intervals if not cfg.quick else 1
    results = bench.run(args)
    mine = results["jbind"]
    if "error" in mine:
        raise BenchError("the Gluon word LM failed on jbind:\n" + mine["error"][-2000:])
    figs = []
    for lib, label in PEERS:
        peer = results.get(lib, {})
        ok = "error" not in peer and peer.get("tokens_per_s")
        note = "" if ok else f"{lib} did not run: {(peer.get('error') or 'not run').splitlines()[-1]}"
        figs.append(Figure(f"gluon.tokens_per_s_vs_{lib}", f"word LM tokens/s (jbind vs {lib})", "tokens/s",
                           _steady(mine, warmup), _steady(peer, warmup) if ok else None, label, note))
    for lib, label in PEERS:
        peer = results.get(lib, {})
        ok = "error" not in peer and peer.get("final_val_ppl") is not None
        figs.append(Figure(f"gluon.val_ppl_vs_{lib}", f"word LM final validation ppl (vs {lib})", "ppl",
                           [mine["final_val_ppl"]], [peer["final_val_ppl"]] if ok else None, label))
    return figs
